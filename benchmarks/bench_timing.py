"""Timing of one odd value: a grouped count over an object column of text keys, against the same
column with one row replaced by a value that is not text (issue 31, item 4; docs/privacy.md,
"Timing").

Mapping an object column to canonical form took a Python pass over every row as soon as one
value was not text (21 ms against 390 ms at 1e6 rows, 18.8x): a job's duration told whether
one person's row held such a value. The target: every case within 1.5x of the text-only column
at 1e6 rows, without slowing the text-only column. Prints milliseconds (best of ``--repeat``
interleaved rounds, so that outside load hits every case alike) and the ratio of each case to
the text-only column measured in the same run; never asserts. ``--clock cpu`` times the
process's CPU time instead of wall time: on a shared, loaded machine it is far less disturbed
by other processes. Figures are recorded in docs/benchmarks/timing.md.

    python benchmarks/bench_timing.py [--rows 1000000] [--repeat 7] [--clock cpu]
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import math
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from _timing import best_of

import dpframe as dpf

KEYS = [f"key_{i:02d}" for i in range(50)]

#: The value replacing one row, by name (None: the text-only column).
ODD: dict[str, object] = {
    "text only": None,
    "int": 7,
    "float": 1.5,
    "bool": True,
    "Decimal": decimal.Decimal("0.10"),
    "complex": complex(1, 0),
    "Timestamp": pd.Timestamp("2020-01-01"),
    "datetime": datetime.datetime(2020, 1, 1, 12),
    "np.datetime64": np.datetime64("2020-01-01"),
    "None": None,
    "NaN": math.nan,
    "list": [1, 2],
    "bytes": b"key_01",
}


def column(rows: int, odd: str, at: int) -> pd.Series:
    """``rows`` text keys in an object column, with row ``at`` replaced by ``ODD[odd]``."""
    values = np.array(KEYS, dtype=object)[np.random.default_rng(0).integers(0, 50, rows)]
    if odd != "text only":
        values[at] = ODD[odd]
    return pd.Series(values, dtype=object)


def releases(g: pd.Series) -> dict[str, Callable[[], Any]]:
    """The grouped counts timed: public (declared) keys and private keys."""
    df = pd.DataFrame({"g": g})
    session = dpf.Session(epsilon=1e12, delta=0.5)
    return {
        "public keys": lambda: df.dp(session, keys={"g": KEYS}).groupby("g").count(epsilon=1.0),
        "private keys": lambda: df.dp(session).groupby("g", keys="private").count(
            epsilon=1.0, delta=1e-9),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=float, default=1e6)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--at", type=float, default=None,
                    help="row of the odd value (default: the last, read after every other)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = ap.parse_args()
    rows = int(args.rows)
    at = rows - 1 if args.at is None else int(args.at)
    warnings.simplefilter("ignore")
    fns = {(odd, q): fn for odd in ODD for q, fn in releases(column(rows, odd, at)).items()}
    best = best_of(fns, args.repeat,
                   clock=time.perf_counter if args.clock == "wall" else time.process_time)
    print(f"rows={rows:,}, object column of 50 text keys, odd value at row {at:,} "
          f"(best of {args.repeat}, interleaved, {args.clock} time)")
    queries = ("public keys", "private keys")
    print(f"| one row replaced by | {' | '.join(f'{q} (ms) | ratio' for q in queries)} |")
    print("| --- |" + " ---: | ---: |" * len(queries))
    worst = dict.fromkeys(queries, 0.0)
    for odd in ODD:
        cells = []
        for q in queries:
            ratio = best[(odd, q)] / best[("text only", q)]
            worst[q] = max(worst[q], ratio)
            cells.append(f"{best[(odd, q)] * 1e3:.1f} | {ratio:.2f}")
        print(f"| {odd} | {' | '.join(cells)} |")
    print("largest ratio: " + ", ".join(f"{q} {worst[q]:.2f}x" for q in queries)
          + " (target <= 1.5x)")


if __name__ == "__main__":
    main()
