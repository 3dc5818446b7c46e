"""DP grouped count, sum and mean on a DuckDB relation vs DuckDB's own ``GROUP BY``, in one run.

Row level, 50 string keys, a float column, in a DuckDB table: ``rel.dp(...).groupby("g")
.count()``, ``.sum("x")`` and ``.mean("x")`` (the whole release: validation, charge, exact
aggregates, noise), pushed down into one DuckDB aggregation (:mod:`dpframe.backends.sql`) and,
with ``--batches``, through the Arrow batch path (the relation streamed as Arrow batches into
the scan backend), against ``SELECT g, count(*) / sum(x) / avg(x) FROM t GROUP BY g`` fetched
as Arrow; with ``--scan``, the same releases through ``dpf.scan`` of the Arrow table the
DuckDB table was made from. Best of N interleaved rounds (``_timing.best_of``); prints, never
asserts.

    python benchmarks/bench_duckdb.py [--rows 1000000] [--repeat 5] [--batches] [--scan]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from _timing import best_of

KEYS = [f"key_{i:02d}" for i in range(50)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--batches", action="store_true",
                    help="also the Arrow batch path (the push-down turned off)")
    ap.add_argument("--scan", action="store_true", help="also the dpf.scan reference")
    args = ap.parse_args()

    import duckdb
    import pyarrow as pa

    import dpframe as dpf
    import dpframe.fronts.duckdb
    from dpframe.backends import duckdb as backend

    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    data = pa.table({"g": pa.array(np.array(KEYS)[rng.integers(0, 50, args.rows)]),
                     "x": rng.uniform(0, 100, args.rows)})
    con = duckdb.connect()
    con.register("data", data)
    con.execute("CREATE TABLE t AS SELECT * FROM data")
    con.unregister("data")
    rel = con.table("t")
    threads = con.sql("SELECT current_setting('threads')").fetchall()[0]
    print(f"data: {args.rows:,} rows, 50 string keys ({time.perf_counter() - t0:.1f} s to make); "
          f"duckdb {duckdb.__version__}, {threads[0] if threads else '?'} threads",
          file=sys.stderr)
    session = dpf.Session(epsilon=1e12)
    opts = {"bounds": {"x": (0, 100)}, "keys": {"g": KEYS}}

    def release(what: str, batches: bool = False) -> Any:
        def run() -> Any:
            backend.PUSHDOWN = not batches
            try:
                g = rel.dp(session, **opts).groupby("g")
                return g.count(epsilon=1.0) if what == "count" else getattr(g, what)(
                    "x", epsilon=1.0)
            finally:
                backend.PUSHDOWN = True
        return run

    sqls = {"count": "count(*)", "sum": "sum(x)", "mean": "avg(x)"}
    fns: dict[str, Callable[[], Any]] = {}
    for what, agg in sqls.items():
        fns[f"duckdb GROUP BY {agg}"] = (
            lambda agg=agg: con.sql(f"SELECT g, {agg} FROM t GROUP BY g").to_arrow_table())
        fns[f"dpframe rel.dp {what} (push-down)"] = release(what)
        if args.batches:
            fns[f"dpframe rel.dp {what} (Arrow batches)"] = release(what, batches=True)
        if args.scan:  # the same releases on the Arrow table itself
            scan = dpf.scan(data)
            fns[f"dpframe dpf.scan(table) {what}"] = (
                lambda what=what, scan=scan: getattr(scan.dp(session, **opts).groupby("g"),
                                                     what)(*(() if what == "count" else ("x",)),
                                                           epsilon=1.0))
    best = best_of(fns, args.repeat)
    print(f"rows={args.rows:,}, 50 string keys, float column, best of {args.repeat}")
    print("| what | seconds | vs DuckDB's GROUP BY |")
    print("| --- | --- | --- |")
    for name, t in best.items():
        what = next(w for w, a in sqls.items() if f" {w} " in f"{name} " or a in name)
        base = best[f"duckdb GROUP BY {sqls[what]}"]
        print(f"| {name} | {t:.3f} | {t / base:.2f}x |")


if __name__ == "__main__":
    main()
