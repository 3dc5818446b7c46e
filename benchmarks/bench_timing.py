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

A second table (issue 43, item 9) times pandas' own switch: a column of text alone is pandas'
``str`` dtype (Arrow-backed), one person's int makes it ``object``. It compares the ``str``
column with the ``object`` column holding one int, its text as repeated objects (a list of
constants, ``np.repeat``, a mapping: read by the objects' addresses now, by value before, the
"before" row patching the address path off in the same run) and as one object per row (text
parsed row by row, ``json.loads``: read by value, then and now).
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


def dtype_switch(rows: int, at: int, repeat: int, clock: Callable[[], float]) -> None:
    """The second table: the ``str`` column of text alone against ``object`` columns holding
    one int (module docstring)."""
    from unittest import mock

    from dpframe.backends import pandas as backend

    picks = np.random.default_rng(0).integers(0, 50, rows)
    repeated = [KEYS[i] for i in picks]  # 50 objects, each repeated
    parsed = [f"key_{i:02d}" for i in picks]  # one object per row
    columns = {
        "text only (str dtype)": pd.Series(repeated),
        "one int, repeated objects (object dtype)": pd.Series([*repeated[:at], 7,
                                                               *repeated[at + 1:]]),
        "one int, one object per row (object dtype)": pd.Series([*parsed[:at], 7,
                                                                 *parsed[at + 1:]]),
    }
    session = dpf.Session(epsilon=1e12, delta=0.5)

    def timed(g: pd.Series, by_value: bool) -> dict[str, Callable[[], Any]]:
        df = pd.DataFrame({"g": g})

        def run(call: Callable[[], Any]) -> Callable[[], Any]:
            def inner() -> Any:
                if not by_value:
                    return call()
                with mock.patch.object(backend, "_BY_OBJECT_ROWS", rows + 1):  # before
                    return call()
            return inner

        return {"public keys": run(lambda: df.dp(session, keys={"g": KEYS}).groupby(
            "g").count(epsilon=1.0)),
                "private keys": run(lambda: df.dp(session).groupby(
                    "g", keys="private").count(epsilon=1.0, delta=1e-9))}

    cases = {name: timed(g, False) for name, g in columns.items()}
    cases["one int, repeated objects, by value (before)"] = timed(
        columns["one int, repeated objects (object dtype)"], True)
    fns = {(case, q): fn for case, qs in cases.items() for q, fn in qs.items()}
    best = best_of(fns, repeat, clock=clock)
    print()
    print("pandas' dtype switch: a str column of text alone, and object columns with one int")
    print("| column | public keys (ms) | ratio | private keys (ms) | ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    base = "text only (str dtype)"
    for case in cases:
        cells = [f"{best[(case, q)] * 1e3:.1f} | {best[(case, q)] / best[(base, q)]:.2f}"
                 for q in ("public keys", "private keys")]
        print(f"| {case} | {' | '.join(cells)} |")


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
    dtype_switch(rows, at, args.repeat,
                 time.perf_counter if args.clock == "wall" else time.process_time)


if __name__ == "__main__":
    main()
