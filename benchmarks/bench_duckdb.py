"""DP grouped count and grouped mean on a DuckDB relation vs DuckDB's own ``GROUP BY``, in one run.

Row level, 50 string keys, a float column, in a DuckDB table: ``rel.dp(...).groupby("g")
.count()`` and ``.mean("x")`` (the whole release: validation, charge, the relation streamed as
Arrow batches into the scan backend, exact fixed-point sums, noise) against
``SELECT g, count(*) / avg(x) FROM t GROUP BY g`` fetched as Arrow; for reference, the same
releases through ``dpf.scan`` of the Arrow table the DuckDB table was made from (what the
adapter adds). Best of N interleaved rounds (``_timing.best_of``); prints, never asserts.

    python benchmarks/bench_duckdb.py [--rows 1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from _timing import best_of

KEYS = [f"key_{i:02d}" for i in range(50)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-scan", action="store_true", help="skip the dpf.scan reference")
    args = ap.parse_args()

    import duckdb
    import pyarrow as pa

    import dpframe as dpf

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

    fns = {
        "duckdb GROUP BY count(*)":
            lambda: con.sql("SELECT g, count(*) FROM t GROUP BY g").to_arrow_table(),
        "dpframe rel.dp count": lambda: rel.dp(session, **opts).groupby("g").count(epsilon=1.0),
        "duckdb GROUP BY avg(x)":
            lambda: con.sql("SELECT g, avg(x) FROM t GROUP BY g").to_arrow_table(),
        "dpframe rel.dp mean": lambda: rel.dp(session, **opts).groupby("g").mean(
            "x", epsilon=1.0),
    }
    if not args.no_scan:  # the adapter's cost: the same releases on the Arrow table itself
        scan = dpf.scan(data)
        fns["dpframe dpf.scan(table) count"] = lambda: scan.dp(session, **opts).groupby(
            "g").count(epsilon=1.0)
        fns["dpframe dpf.scan(table) mean"] = lambda: scan.dp(session, **opts).groupby(
            "g").mean("x", epsilon=1.0)
    best = best_of(fns, args.repeat)
    print(f"rows={args.rows:,}, 50 string keys, float column, best of {args.repeat}")
    print("| what | seconds | vs DuckDB's GROUP BY |")
    print("| --- | --- | --- |")
    for name, t in best.items():
        base = best["duckdb GROUP BY avg(x)" if "mean" in name or "avg" in name
                    else "duckdb GROUP BY count(*)"]
        print(f"| {name} | {t:.3f} | {t / base:.2f}x |")


if __name__ == "__main__":
    main()
