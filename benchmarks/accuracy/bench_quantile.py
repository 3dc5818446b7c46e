"""Accuracy of DP medians at epsilon 1 (issue 32 e): dpframe before and after, against Smith's
(2011) continuous exponential mechanism, which Tumult Analytics uses.

    python benchmarks/accuracy/bench_quantile.py [--reps 200] [--before /old/checkout]

Synthetic data (seed 0), bounds [0, 1000]:

* ``ungrouped``: 20,000 rows, Normal(500, 100) clipped to the bounds; ``median``.
* ``per group``: 20 groups of 1,000 rows, group g ~ Normal(310 + 20 g, 100) clipped;
  ``groupby("g").median`` with the 20 keys declared (each group at epsilon 1: parallel
  composition, as every peer does it).

MAE is the mean absolute error against the exact median of the clamped data, over ``--reps``
releases (and over groups). *Smith 2011* is this bench's own reference implementation of the
continuous mechanism (an interval between sorted clamped values, weight length x
exp(-epsilon |rank - n/2| / 2), then a uniform point): Tumult's mechanism, labelled as ours.
Tumult itself is not run by this bench (no peer is installed here; the issue's figures, on its
own data, are shown beside).
*dpframe before* is git main before the change (``--before``: a checkout; otherwise the
figures the issue measured). The coverage column is the share of 95% intervals (``ci=0.95``)
holding the empirical median; the ``ci=`` estimate itself gets half of epsilon.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve()
sys.path.insert(0, os.environ.get("DPFRAME_BENCH_CHECKOUT", str(HERE.parents[2])))

import dpframe as dpf  # noqa: E402

EPS = 1.0
LO, HI = 0.0, 1000.0
#: The issue's figures for dpframe before the change (used when no --before checkout).
ISSUE_BEFORE = {"ungrouped": 0.78, "per group": 0.664}
ISSUE_TUMULT = {"ungrouped": 0.016, "per group": 0.590}


def data() -> tuple[np.ndarray, pd.DataFrame]:
    gen = np.random.default_rng(0)
    x = np.clip(gen.normal(500, 100, 20_000), LO, HI)
    g = np.repeat(np.arange(20), 1000)
    y = np.clip(gen.normal(310 + 20 * g, 100), LO, HI)
    return x, pd.DataFrame({"x": y, "g": g})


def smith_median(x: np.ndarray, eps: float, gen: np.random.Generator) -> float:
    """Smith (2011): interval i between the i-th and (i+1)-th sorted clamped values (with the
    bounds at both ends) weighted by its length x exp(-eps |i - n/2| / 2); a uniform point."""
    z = np.concatenate([[LO], np.sort(np.clip(x, LO, HI)), [HI]])
    n = x.size
    i = np.arange(n + 1)
    logw = np.log(np.maximum(np.diff(z), 1e-300)) - eps * np.abs(i - n / 2) / 2
    logw[np.diff(z) <= 0] = -np.inf
    k = int(np.argmax(logw + gen.gumbel(size=logw.size)))
    return float(gen.uniform(z[k], z[k + 1]))


def _session(seed: int) -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(1e12, seed=seed)


def dpframe_errors(reps: int, grouped_reps: int) -> dict[str, float]:
    """MAE of dpframe's medians (whichever dpframe this process imports)."""
    x, df = data()
    priv = pd.DataFrame({"x": x}).dp(_session(1), bounds={"x": (LO, HI)})
    med = float(np.median(x))
    un = np.mean([abs(float(priv.median("x", epsilon=EPS)) - med) for _ in range(reps)])
    truth = df.groupby("g")["x"].median().to_numpy()
    gp = df.dp(_session(2), bounds={"x": (LO, HI)}, keys={"g": list(range(20))})
    gr = np.mean([np.abs(gp.groupby("g").median("x", epsilon=EPS).to_numpy() - truth).mean()
                  for _ in range(grouped_reps)])
    return {"ungrouped": float(un), "per group": float(gr)}


def coverage(reps: int, grouped_reps: int) -> dict[str, float]:
    """Share of 95% intervals that hold the empirical median (all of its points)."""
    x, df = data()

    def holds(lo: float, hi: float, v: np.ndarray) -> bool:
        s = np.sort(v)
        return bool(lo <= s[int(np.ceil(s.size / 2)) - 1] and hi >= s[s.size // 2])

    priv = pd.DataFrame({"x": x}).dp(_session(3), bounds={"x": (LO, HI)})
    hits = []
    for _ in range(reps):
        r = priv.median("x", epsilon=EPS, ci=0.95)
        hits.append(holds(r.lower, r.upper, x))
    gp = df.dp(_session(4), bounds={"x": (LO, HI)}, keys={"g": list(range(20))})
    ghits = []
    groups = [df.loc[df.g == g, "x"].to_numpy() for g in range(20)]
    for _ in range(grouped_reps):
        out = gp.groupby("g").median("x", epsilon=EPS, ci=0.95)
        ghits += [holds(out["lower"].iloc[g], out["upper"].iloc[g], groups[g])
                  for g in range(20)]
    return {"ungrouped": float(np.mean(hits)), "per group": float(np.mean(ghits))}


def smith_errors(reps: int, grouped_reps: int) -> dict[str, float]:
    x, df = data()
    gen = np.random.default_rng(5)
    med = float(np.median(x))
    un = np.mean([abs(smith_median(x, EPS, gen) - med) for _ in range(reps)])
    errs = []
    for _ in range(grouped_reps):
        for _g, part in df.groupby("g")["x"]:
            v = part.to_numpy()
            errs.append(abs(smith_median(v, EPS, gen) - float(np.median(v))))
    return {"ungrouped": float(un), "per group": float(np.mean(errs))}


def before_errors(checkout: str | None, reps: int, grouped_reps: int) -> tuple[dict[str, float],
                                                                               str]:
    if not checkout:
        return dict(ISSUE_BEFORE), "issue 32's figures"
    out = subprocess.run([sys.executable, str(HERE), "--only-dpframe", "--reps", str(reps),
                          "--grouped-reps", str(grouped_reps)], capture_output=True, text=True,
                         check=True, env={**os.environ, "DPFRAME_BENCH_CHECKOUT": checkout})
    return json.loads(out.stdout), f"measured on {checkout}"


def section(quick: bool = False, before: str | None = None, reps: int | None = None) -> str:
    reps = reps or (20 if quick else 200)
    greps = max(2, reps // 10)
    now, smith = dpframe_errors(reps, greps), smith_errors(reps, greps)
    old, how = before_errors(before, reps, greps)
    cov = coverage(max(10, reps // 2), max(1, greps // 2))
    rows = []
    for case in ("ungrouped", "per group"):
        met = "met" if now[case] <= smith[case] else "not met"
        rows.append(f"| median, {case} | {old[case]:.3f} | {now[case]:.4f} | {smith[case]:.4f} "
                    f"| {ISSUE_TUMULT[case]:.3f} | {cov[case]:.3f} | {met} |")
    return "\n".join([
        "## Quantiles: the median of a [0, 1000] column at epsilon 1",
        "",
        "20,000 rows Normal(500, 100) clipped to [0, 1000]; per group: 20 groups of 1,000 rows "
        "(Normal(310 + 20 g, 100)). MAE against the exact median of the clamped data over "
        f"{reps} releases ({greps} grouped releases, every group). *Smith 2011* is this "
        "bench's reference implementation of Tumult's continuous exponential mechanism; the "
        "Tumult column is the issue's measurement (Tumult is not installed here). Coverage: "
        "share of 95% `ci=` intervals holding the empirical median. Reproduce: "
        "`python benchmarks/accuracy/bench_quantile.py --before <old checkout>`.",
        "",
        f"| query | dpframe before ({how}) | dpframe MAE | Smith 2011 (ours) MAE | Tumult "
        "(issue) | 95% coverage | target: MAE <= Smith |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
    ])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--grouped-reps", type=int, default=None)
    ap.add_argument("--before", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only-dpframe", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.only_dpframe:
        print(json.dumps(dpframe_errors(a.reps, a.grouped_reps or max(2, a.reps // 10))))
        return
    print(section(a.quick, a.before, None if a.quick else a.reps))


if __name__ == "__main__":
    main()
