"""DP groupby-sum vs plain pandas, as ratios in one run (issue 4 targets).

Row level: 1e7 rows, 50 string keys, float column; DP groupby-sum should take <= 1.3x plain
``df.groupby("g")["x"].sum()``, and so should the unit-level one (1e6 units x 10 rows, bounded
by T, k and R: issue 32 a). Peak memory of the DP
release <= 2x plain pandas (measured per case in a fresh subprocess, stdlib ``resource``).
Also: DP max (exponential mechanism) error vs Laplace on the max. Prints; never asserts.

    python benchmarks/bench_groupby.py [--rows 10000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings

import numpy as np
import pandas as pd

KEYS = [f"key_{i:02d}" for i in range(50)]


def make_frame(rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "g": pd.array(np.array(KEYS)[rng.integers(0, 50, rows)], dtype="str"),
        "x": rng.uniform(0, 100, rows),
        "uid": np.repeat(np.arange(rows // 10), 10)[rng.permutation(rows)],
    })


def case(name: str, rows: int) -> dict[str, float]:
    """Run one case in this process; return seconds (best of 5)."""
    import dpframe as dpf

    warnings.simplefilter("ignore")
    df = make_frame(rows)
    session = dpf.Session(epsilon=1e9)
    times = []
    for _ in range(5):
        t = time.perf_counter()
        if name == "plain":
            df.groupby("g")["x"].sum()
        else:
            df.dp(session, bounds={"x": (0, 100)}, keys={"g": KEYS}, **OPTIONS[name]).groupby(
                "g").sum("x", epsilon=1.0)
        times.append(time.perf_counter() - t)
    return {"seconds": min(times)}


# the DP cases: a unit's rows in the release (T), its groups (k), its rows in one group (R)
OPTIONS: dict[str, dict[str, object]] = {
    "dp_row": {},
    "dp_unit": {"privacy_unit": "uid", "max_rows_per_unit": 10, "max_groups_per_unit": 50},
    "dp_unit_k1": {"privacy_unit": "uid", "max_rows_per_unit": 10, "max_groups_per_unit": 1},
    "dp_unit_tkr": {"privacy_unit": "uid", "max_rows_per_unit": 6, "max_groups_per_unit": 4,
                    "max_rows_per_group": 2},
}


def peak_mb(name: str, rows: int) -> tuple[float, float]:
    """(working MB, data MB): peak memory traced while one case runs in a fresh process on top
    of the frame (numpy and pandas allocations report to tracemalloc), and the frame's size."""
    code = (
        "import gc, sys, tracemalloc, warnings; warnings.simplefilter('ignore');"
        "sys.path.insert(0, 'benchmarks'); import bench_groupby as b; import dpframe as dpf;"
        f"df = b.make_frame({rows}); gc.collect(); name = {name!r};"
        "data = df.memory_usage(deep=True).sum();"
        "s = dpf.Session(epsilon=1e9);"
        "opts = b.OPTIONS.get(name);"
        "tracemalloc.start();"
        "r = (df.groupby('g')['x'].sum() if name == 'plain' else "
        "df.dp(s, bounds={'x': (0, 100)}, keys={'g': b.KEYS}, **opts)"
        ".groupby('g').sum('x', epsilon=1.0));"
        "print(tracemalloc.get_traced_memory()[1], data)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    work, data = out.stdout.strip().splitlines()[-1].split()
    return int(work) / 2**20, int(data) / 2**20


def max_accuracy(trials: int = 200) -> dict[str, float]:
    """Mean absolute error of DP max (EM) vs Laplace on the max, ages in [0, 120], eps=0.1."""
    import dpframe as dpf

    warnings.simplefilter("ignore")
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"age": np.clip(rng.normal(45, 15, 10_000), 0, 99).round()})
    s = dpf.Session(epsilon=1e9, seed=3)
    priv = df.dp(s, bounds={"age": (0, 120)})
    true = float(df["age"].max())
    em = [abs(priv.max("age", epsilon=0.1) - true) for _ in range(trials)]
    lap = np.abs(np.random.default_rng(2).laplace(0, 120 / 0.1, trials))
    return {"em_mae": float(np.mean(em)), "laplace_mae": float(np.mean(lap))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--case", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--no-memory", action="store_true")
    args = ap.parse_args()
    if args.case:
        print(json.dumps(case(args.case, args.rows)))
        return
    res = {}
    cases = ("plain", *OPTIONS)
    for name in cases:
        out = subprocess.run([sys.executable, __file__, "--rows", str(args.rows), "--case", name],
                             capture_output=True, text=True, check=True)
        res[name] = json.loads(out.stdout.strip().splitlines()[-1])["seconds"]
    mem = {} if args.no_memory else {n: peak_mb(n, args.rows) for n in cases}
    print(f"rows={args.rows:,}  50 string keys, float column (best of 5)")
    print(f"{'case':<11}{'seconds':>9}{'time ratio':>11}{'working MB':>12}{'data+work MB':>14}"
          f"{'mem ratio':>11}")
    for name in cases:
        r = res[name] / res["plain"]
        work, data = mem.get(name, (float("nan"), float("nan")))
        base = sum(mem["plain"]) if mem else float("nan")
        print(f"{name:<11}{res[name]:>9.3f}{r:>11.2f}{work:>12.0f}{work + data:>14.0f}"
              f"{(work + data) / base:>11.2f}")
    acc = max_accuracy()
    print(f"max of ages in [0,120], eps=0.1: EM mean abs error {acc['em_mae']:.1f}, "
          f"Laplace-on-max {acc['laplace_mae']:.0f}")


if __name__ == "__main__":
    main()
