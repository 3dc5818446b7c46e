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

    python benchmarks/bench_timing.py [--rows 1000000] [--repeat 7] [--clock cpu] [--before REV]

``--before REV`` adds, to each table, the same releases with the pandas backend's key codes and
the grouped count of git revision ``REV`` (``git show`` into this process), so that "now" and
"before" are timed in one run against the same text-only column.

A second table (issue 43, item 9) times pandas' own switch: a column of text alone is pandas'
``str`` dtype (Arrow-backed), one person's int makes it ``object``. It compares the ``str``
column with the ``object`` column holding one int, its text as repeated objects (a list of
constants, ``np.repeat``, a mapping: read by the objects' addresses now, by value before, the
"before" row patching the address path off in the same run) and as one object per row (text
parsed row by row, ``json.loads``: read by value, then and now).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import decimal
import importlib.util
import math
import subprocess
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


def releases(g: pd.Series, within: Callable[[], Any] = contextlib.nullcontext
             ) -> dict[str, Callable[[], Any]]:
    """The grouped counts timed: public (declared) keys and private keys, each run ``within``
    a context (:func:`at_revision`'s, or none)."""
    df = pd.DataFrame({"g": g})
    session = dpf.Session(epsilon=1e12, delta=0.5)

    def public() -> Any:
        with within():
            return df.dp(session, keys={"g": KEYS}).groupby("g").count(epsilon=1.0)

    def private() -> Any:
        with within():
            return df.dp(session).groupby("g", keys="private").count(epsilon=1.0, delta=1e-9)

    return {"public keys": public, "private keys": private}


def at_revision(rev: str) -> Callable[[], Any]:
    """A context running releases with the key codes (``declared_codes``, ``factorize``) of the
    pandas backend and the ``grouped_count`` of git revision ``rev``."""
    from unittest import mock

    from dpframe.backends.blocks import frames as backend
    from dpframe.core.exact import primitives

    root = Path(__file__).resolve().parents[1]
    loaded = {}
    for name, path in (("backends._before_pandas", "dpframe/backends/pandas.py"),
                       ("core._before_transform", "dpframe/core/exact/transform.py")):
        text = subprocess.run(["git", "-C", str(root), "show", f"{rev}:{path}"], check=True,
                              capture_output=True, text=True).stdout
        module_name = f"dpframe.{name}"
        spec = importlib.util.spec_from_loader(module_name, loader=None)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        module.__package__ = module_name.rpartition(".")[0]
        sys.modules[module_name] = module
        exec(compile(text, f"{rev}:{path}", "exec"), module.__dict__)
        loaded[path] = module
    old, old_transform = loaded.values()

    @contextlib.contextmanager
    def within() -> Any:
        with mock.patch.object(backend, "declared_codes", old.declared_codes), \
                mock.patch.object(backend, "factorize", old.factorize), \
                mock.patch.object(primitives, "grouped_count", old_transform.grouped_count):
            yield

    return within


def dtype_switch(rows: int, at: int, repeat: int, clock: Callable[[], float],
                 before: tuple[str, Callable[[], Any]] | None = None) -> None:
    """The second table: the ``str`` column of text alone against ``object`` columns holding
    one int (module docstring); ``before``: a revision's name and :func:`at_revision`."""
    from unittest import mock

    from dpframe.backends.blocks import frames as backend

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

    def by_value() -> Any:  # the address path off (every row read by value)
        return mock.patch.object(backend, "_BY_OBJECT_ROWS", rows + 1)

    cases = {name: releases(g) for name, g in columns.items()}
    cases["one int, repeated objects, by value (before)"] = releases(
        columns["one int, repeated objects (object dtype)"], by_value)
    if before is not None:
        for name in list(columns)[1:]:
            cases[f"{name}, at {before[0]}"] = releases(columns[name], before[1])
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
    ap.add_argument("--before", default=None,
                    help="git revision whose key codes and grouped count are timed too")
    args = ap.parse_args()
    rows = int(args.rows)
    at = rows - 1 if args.at is None else int(args.at)
    warnings.simplefilter("ignore")
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    before = None if args.before is None else (args.before, at_revision(args.before))
    versions: dict[str, Callable[[], Any]] = {"": contextlib.nullcontext}
    if before is not None:
        versions[f" (at {before[0]})"] = before[1]
    fns = {(odd + tag, q): fn for odd in ODD for tag, within in versions.items()
           for q, fn in releases(column(rows, odd, at), within).items()}
    best = best_of(fns, args.repeat, clock=clock)
    print(f"rows={rows:,}, object column of 50 text keys, odd value at row {at:,} "
          f"(best of {args.repeat}, interleaved, {args.clock} time)")
    queries = ("public keys", "private keys")
    print(f"| one row replaced by | {' | '.join(f'{q} (ms) | ratio' for q in queries)} |")
    print("| --- |" + " ---: | ---: |" * len(queries))
    for tag in versions:
        worst = dict.fromkeys(queries, 0.0)
        for odd in ODD:
            cells = []
            for q in queries:
                ratio = best[(odd + tag, q)] / best[("text only" + tag, q)]
                worst[q] = max(worst[q], ratio)
                cells.append(f"{best[(odd + tag, q)] * 1e3:.1f} | {ratio:.2f}")
            print(f"| {odd}{tag} | {' | '.join(cells)} |")
        print(f"largest ratio{tag}: " + ", ".join(f"{q} {worst[q]:.2f}x" for q in queries)
              + " (target <= 1.5x)")
    dtype_switch(rows, at, args.repeat, clock, before)


if __name__ == "__main__":
    main()
