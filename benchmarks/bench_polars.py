"""DP groupby-sum on a Polars frame vs Polars' own grouped sum, as ratios in one run.

Row level, 50 string keys, a float column: ``pl_df.dp(...).groupby("g").sum("x")`` (the
whole release: validation, charge, exact sums over Arrow batches, noise) against
``pl_df.group_by("g").agg(pl.col("x").sum())``. Target: <= 2x Polars. Also the same release
on ``pl_df.lazy()`` (streamed with ``collect_batches``) and on the pandas frame with the same
data, for reference. Best of N interleaved rounds (``_timing.best_of``); prints, never asserts.

    python benchmarks/bench_polars.py [--rows 10000000] [--repeat 3]
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


def make_frame(rows: int, seed: int = 0) -> object:
    import polars as pl

    rng = np.random.default_rng(seed)
    return pl.DataFrame({
        "g": pl.Series(np.array(KEYS)[rng.integers(0, 50, rows)], dtype=pl.String),
        "x": rng.uniform(0, 100, rows),
    })


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-pandas", action="store_true", help="skip the pandas reference")
    args = ap.parse_args()

    import polars as pl

    import dpframe as dpf

    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    df: pl.DataFrame = make_frame(args.rows)  # type: ignore[assignment]
    pdf = None if args.no_pandas else df.to_pandas()
    print(f"data: {args.rows:,} rows, 50 string keys ({time.perf_counter() - t0:.1f} s to make)",
          file=sys.stderr)
    session = dpf.Session(epsilon=1e9)
    opts = {"bounds": {"x": (0, 100)}, "keys": {"g": KEYS}}

    fns = {
        "polars group_by().agg(sum)": lambda: df.group_by("g").agg(pl.col("x").sum()),
        "dpframe pl.DataFrame.dp": lambda: df.dp(session, **opts).groupby("g").sum(
            "x", epsilon=1.0),
        "dpframe pl.LazyFrame.dp": lambda: df.lazy().dp(session, **opts).groupby("g").sum(
            "x", epsilon=1.0),
    }
    if pdf is not None:
        fns["dpframe pandas df.dp"] = lambda: pdf.dp(session, **opts).groupby("g").sum(
            "x", epsilon=1.0)
    best = best_of(fns, args.repeat)
    base = best["polars group_by().agg(sum)"]
    print(f"rows={args.rows:,}, 50 string keys, float column, best of {args.repeat}")
    print("| what | seconds | vs Polars |")
    print("| --- | --- | --- |")
    for name, t in best.items():
        print(f"| {name} | {t:.3f} | {t / base:.2f}x |")


if __name__ == "__main__":
    main()
