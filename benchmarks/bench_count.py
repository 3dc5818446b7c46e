"""Count of rows at 1e7 rows: the whole DP release (validation, plan, charge, noise, wrapping)
when no privacy unit, group or sample needs a pass over the data (target <= 1 ms), beside the
count of non-missing values of a column (one pass) and ``len(df)``.

    python benchmarks/bench_count.py [--rows 10000000] [--repeat 50]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import dpframe as dpf


def per_call(fn: object, repeat: int) -> float:
    for _ in range(3):
        fn()  # type: ignore[operator]
    t = time.perf_counter()
    for _ in range(repeat):
        fn()  # type: ignore[operator]
    return (time.perf_counter() - t) / repeat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=float, default=1e7)
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args()
    n = int(args.rows)
    df = pd.DataFrame({"x": np.random.default_rng(0).random(n)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        priv = df.dp(dpf.Session(1e12))
        rows = per_call(lambda: priv.count(epsilon=1.0), args.repeat)
        col = per_call(lambda: priv.count("x", epsilon=1.0), max(3, args.repeat // 10))
    plain = per_call(lambda: len(df), args.repeat)
    print(f"{n:,} rows, best-effort mean of {args.repeat} calls")
    print("| what | ms |")
    print("| --- | --- |")
    print(f"| dpframe count() (rows) | {rows * 1e3:.3f} |")
    print(f"| dpframe count('x') (non-missing, one pass) | {col * 1e3:.3f} |")
    print(f"| len(df) | {plain * 1e3:.4f} |")


if __name__ == "__main__":
    main()
