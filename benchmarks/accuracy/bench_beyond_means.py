"""Means and multi-statistic ``agg`` beyond the peers (issue 47, item 3): one joint K-norm
release of counts and centred sums.

    python benchmarks/accuracy/bench_beyond_means.py [--quick]

Five synthetic data sets (seeded) of different skews and bounds; each release is grouped over
``GROUPS`` public keys of ``ROWS`` rows each, so one release gives ``GROUPS`` independent
draws (the noise of different groups is independent). For the Laplace mean the reference is
the K-norm mechanism with the box hull of ``{+-(c, 1): |c| <= h}`` (Hardt and Talwar 2010),
prototyped in numpy with the continuous law (radius Gamma(3, 1 / epsilon), a point uniform in
the box) and the same estimator ``mid + S / C`` clipped to the bounds; the ratio of dpframe's
RMSE to it is the target (<= 1.03: the Monte Carlo error is about 1%), beside the separate
Laplace releases at epsilon / 2 each (dpframe before: 1.31-1.43x in the issue). The ``agg``
row is ``agg(n=("x", "size"), sx=("x", "sum"), sy=("y", "sum"))`` (and with ``"count"``,
x's non-missing values, a fourth coordinate) at epsilon 1, bounds
[0, 100] and [0, 1000]; the interval rows check the 95% coverage of the mean's interval
(binomial standard error about 0.005 at 2,000 groups).
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import dpframe as dpf

GROUPS = 10_000
ROWS = 50
EPS = 1.0
#: The prototypes' draws per group (their Monte Carlo error well below dpframe's run's).
PROTOTYPE_REPS = 10
TARGETS: list[dict[str, object]] = []

Maker = Callable[[np.random.Generator, int], np.ndarray]
#: name, bounds, values
DATA: list[tuple[str, tuple[float, float], Maker]] = [
    ("uniform [0, 100]", (0.0, 100.0), lambda g, n: g.uniform(0, 100, n)),
    ("exponential(10), bounds [0, 100]", (0.0, 100.0), lambda g, n: g.exponential(10, n)),
    ("lognormal income, bounds [0, 200000]", (0.0, 200_000.0),
     lambda g, n: g.lognormal(10.3, 0.8, n)),
    ("normal(50, 5), bounds [-100, 300]", (-100.0, 300.0), lambda g, n: g.normal(50, 5, n)),
    ("10 beta(5, 1), bounds [0, 10]", (0.0, 10.0), lambda g, n: 10 * g.beta(5, 1, n)),
]


def _frame(make: Maker, bounds: tuple[float, float], groups: int, seed: int) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    x = np.clip(make(g, groups * ROWS), *bounds)
    return pd.DataFrame({"g": np.repeat(np.arange(groups), ROWS), "x": x})


def _dpframe_mean(df: pd.DataFrame, bounds: tuple[float, float], seed: int,
                  groups: int, mechanism: str | None = None, ci: float | None = None
                  ) -> pd.DataFrame:
    s = dpf.Session(1e9, 0.5, seed=seed)
    p = df.dp(s, bounds={"x": bounds}, keys={"g": list(range(groups))})
    if mechanism == "gaussian":
        return p.groupby("g").mean("x", epsilon=EPS, delta=1e-6, mechanism="gaussian", ci=ci)
    return p.groupby("g").mean("x", epsilon=EPS, ci=ci)


def _prototype(true_sum: np.ndarray, n: int, bounds: tuple[float, float], seed: int,
               joint: bool) -> np.ndarray:
    """The K-norm (joint) or the separate Laplace releases (epsilon / 2 each), continuous."""
    lo, hi = bounds
    mid, h = (lo + hi) / 2, (hi - lo) / 2
    g = np.random.default_rng(seed)
    k = true_sum.size
    if joint:
        r = g.gamma(3, 1 / EPS, k)
        zs, zc = r * h * g.uniform(-1, 1, k), r * g.uniform(-1, 1, k)
    else:
        zs, zc = g.laplace(0, 2 * h / EPS, k), g.laplace(0, 2 / EPS, k)
    s, c = true_sum + zs, n + zc
    return np.clip(mid + s / np.maximum(c, 1.0), lo, hi)


def _rmse(est: np.ndarray, truth: np.ndarray) -> float:
    return float(np.sqrt(np.mean((np.asarray(est) - truth) ** 2)))


def laplace_means(groups: int) -> list[str]:
    rows = ["| data | dpframe RMSE | K-norm RMSE (prototype) | ratio | separate Laplace RMSE "
            "(eps/2 each) | separate / K-norm |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    ratios = []
    for i, (name, bounds, make) in enumerate(DATA):
        df = _frame(make, bounds, groups, seed=100 + i)
        truth = df.groupby("g").x.mean().to_numpy()
        centred = (df.groupby("g").x.sum() - ROWS * sum(bounds) / 2).to_numpy()
        ours = _rmse(_dpframe_mean(df, bounds, 10 + i, groups).to_numpy(), truth)
        reps = np.tile(centred, PROTOTYPE_REPS)
        kn = _rmse(_prototype(reps, ROWS, bounds, 200 + i, True), np.tile(truth, PROTOTYPE_REPS))
        sep = _rmse(_prototype(reps, ROWS, bounds, 300 + i, False),
                    np.tile(truth, PROTOTYPE_REPS))
        ratios.append(ours / kn)
        rows.append(f"| {name} | {ours:.4g} | {kn:.4g} | {ours / kn:.3f} | {sep:.4g} | "
                    f"{sep / kn:.2f} |")
    worst = max(ratios)
    TARGETS.append({"item": "47.3 Laplace mean at epsilon 1, 5 data sets: RMSE / K-norm's",
                    "target": "<= 1.03 (the K-norm's RMSE, up to Monte Carlo error of about "
                              "1% at 10,000 groups; 1.31-1.43x before)",
                    "measured": f"{min(ratios):.3f}-{worst:.3f}", "met": worst <= 1.03})
    return rows


def gaussian_means(groups: int) -> list[str]:
    rows = ["| data | dpframe RMSE (two-stage, 10% pilot) | optimal fixed split (oracle) | "
            "ratio |", "| --- | ---: | ---: | ---: |"]
    ratios = []
    from fractions import Fraction

    from dpframe.core.accounting import zcdp_rho_for_epsilon

    rho = float(zcdp_rho_for_epsilon(Fraction(EPS), Fraction(1, 10**6)))
    for i, (name, bounds, make) in enumerate(DATA):
        df = _frame(make, bounds, groups, seed=100 + i)
        truth = df.groupby("g").x.mean().to_numpy()
        ours = _rmse(_dpframe_mean(df, bounds, 40 + i, groups, "gaussian").to_numpy(), truth)
        lo, hi = bounds
        h, r = (hi - lo) / 2, np.abs(truth - (lo + hi) / 2)
        # sigma_s^2 + r^2 sigma_c^2 at the best split for each group's own r: (h + |r|)^2 / 2 rho
        oracle = float(np.sqrt(np.mean((h + r) ** 2) / (2 * rho))) / ROWS
        ratios.append(ours / oracle)
        rows.append(f"| {name} | {ours:.4g} | {oracle:.4g} | {ours / oracle:.2f} |")
    TARGETS.append({"item": "47.3 Gaussian mean: RMSE / the per-group oracle split's",
                    "target": "two-stage split (10% pilot, combined by inverse variance), "
                              "<= 1.15 (the oracle ignores the count's noise and the pilot; "
                              "equal split before: 1.1-1.4x, 1.27 on uniform data)",
                    "measured": f"{min(ratios):.2f}-{max(ratios):.2f}",
                    "met": max(ratios) <= 1.15})
    return rows


def agg_row(groups: int) -> list[str]:
    g = np.random.default_rng(9)
    df = pd.DataFrame({"g": np.repeat(np.arange(groups), 30),
                       "x": g.uniform(0, 100, groups * 30),
                       "y": g.uniform(0, 1000, groups * 30)})
    s = dpf.Session(1e9, seed=3)
    out = df.dp(s, bounds={"x": (0, 100), "y": (0, 1000)}, keys={"g": list(range(groups))}
                ).groupby("g").agg(n=("x", "count"), sx=("x", "sum"), sy=("y", "sum"),
                                   epsilon=EPS)
    truth = df.groupby("g").agg(n=("x", "count"), sx=("x", "sum"), sy=("y", "sum"))
    got = [_rmse(out[c].to_numpy(dtype=np.float64), truth[c].to_numpy()) for c in
           ("n", "sx", "sy")]
    s2 = dpf.Session(1e9, seed=4)
    out2 = df.dp(s2, bounds={"x": (0, 100), "y": (0, 1000)}, keys={"g": list(range(groups))}
                 ).groupby("g").agg(n=("x", "size"), sx=("x", "sum"), sy=("y", "sum"),
                                    epsilon=EPS)
    # no missing x here: the group's size is its count of x
    got2 = [_rmse(out2[c].to_numpy(dtype=np.float64), truth[c].to_numpy()) for c in
            ("n", "sx", "sy")]
    TARGETS.append({"item": "47.3 agg(count, sum x, sum y) at epsilon 1: RMSE",
                    "target": "2.6 / 181 / 1,834 (4.4 / 413 / 4,309 before)",
                    "measured": " / ".join(f"{v:,.3g}" for v in got2)
                    + " (rows: ('x', 'size'); ('x', 'count'): "
                    + " / ".join(f"{v:,.3g}" for v in got) + ")",
                    "met": got2[0] <= 2.6 * 1.05 and got2[1] <= 181 * 1.05
                    and got2[2] <= 1834 * 1.05})
    return ["| release | count RMSE | sum x RMSE | sum y RMSE |", "| --- | ---: | ---: | ---: |",
            "| before: three Laplace releases at epsilon 1/3 (analytic) | 4.24 | 424 | 4,243 |",
            "| target (issue 47) | 2.6 | 181 | 1,834 |",
            f"| dpframe: agg(n=(\"x\", \"size\"), sum x, sum y): the rows' count shared, "
            f"d = 3 | {got2[0]:.3g} | {got2[1]:,.4g} | {got2[2]:,.5g} |",
            f"| dpframe: agg(n=(\"x\", \"count\"), sum x, sum y): x's non-missing count is "
            f"a coordinate of its own, d = 4 | {got[0]:.3g} | {got[1]:,.4g} | {got[2]:,.5g} |"]


def variances(groups: int) -> list[str]:
    """var / std of 40 rows of N(6, 2.5) in [0, 10]: the joint release against the separate
    one (three Laplace releases at epsilon / 3), measured on this code with the joint planner
    switched off for the second run."""
    from dpframe.core import joint, plan
    from dpframe.core.exact.memo import RecentCache

    n = 40
    g = np.random.default_rng(8)
    df = pd.DataFrame({"g": np.repeat(np.arange(groups), n),
                       "x": np.clip(g.normal(6, 2.5, groups * n), 0, 10)})
    rows = ["| release (40 rows, bounds [0, 10]) | joint K-norm RMSE | separate Laplace RMSE | "
            "ratio | joint 90% coverage | separate 90% coverage |",
            "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for op in ("var", "std"):
        truth = getattr(df.groupby("g").x, op)().to_numpy()
        got = []
        for joined in (True, False):
            real = joint._candidates
            if not joined:
                joint._candidates = lambda ctx, plans: []  # type: ignore[assignment]
            plan._PLANS = RecentCache(plan.PLAN_CACHE_SIZE)
            try:
                s = dpf.Session(1e9, seed=50 + joined)
                out = getattr(df.dp(s, bounds={"x": (0, 10)}, keys={"g": list(range(groups))}
                                    ).groupby("g"), op)("x", epsilon=EPS, ci=0.9)
            finally:
                joint._candidates = real
                plan._PLANS = RecentCache(plan.PLAN_CACHE_SIZE)
            est = out.iloc[:, 0].to_numpy()
            cov = float(np.mean((out.lower.to_numpy() <= truth) & (truth <= out.upper.to_numpy())))
            got.append((_rmse(est, truth), cov))
        rows.append(f"| {op} | {got[0][0]:.4g} | {got[1][0]:.4g} | {got[1][0] / got[0][0]:.2f} | "
                    f"{got[0][1]:.4f} | {got[1][1]:.4f} |")
    return rows


def coverage(groups: int) -> list[str]:
    rows = ["| mean at 95% (bounds [0, 10], N(mu, 2.5)) | coverage | target |",
            "| --- | ---: | --- |"]
    ok = True
    for n, mu in ((20, 2.0), (21, 6.0), (100, 2.0)):
        g = np.random.default_rng(n)
        x = np.clip(g.normal(mu, 2.5, groups * n), 0, 10)
        df = pd.DataFrame({"g": np.repeat(np.arange(groups), n), "x": x})
        truth = df.groupby("g").x.mean().to_numpy()
        s = dpf.Session(1e9, seed=n)
        out = df.dp(s, bounds={"x": (0, 10)}, keys={"g": list(range(groups))}).groupby(
            "g").mean("x", epsilon=EPS, ci=0.95)
        cov = float(np.mean((out.lower.to_numpy() <= truth) & (truth <= out.upper.to_numpy())))
        se = math.sqrt(0.95 * 0.05 / groups)
        ok &= cov >= 0.95 - 3 * se
        rows.append(f"| n={n} mu={mu:g} | {cov:.4f} | >= {0.95 - 3 * se:.4f} |")
    TARGETS.append({"item": "47.3 K-norm mean: 95% interval coverage", "target": ">= 0.95 - 3 SE",
                    "measured": "see table", "met": ok})
    return rows


def section(quick: bool = False) -> str:
    TARGETS.clear()
    groups = 400 if quick else GROUPS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parts = [
            "## Beyond the peers: means and multi-statistic agg (issue 47, item 3)", "",
            "`python benchmarks/accuracy/bench_beyond_means.py` (module docstring: data and "
            f"method). Epsilon {EPS:g}; {groups:,} groups of {ROWS} rows per data set (the "
            "agg row: 30 rows); each group one independent draw.", "",
            "**Laplace mean: one K-norm release of (centred sum, count)**", "",
            *laplace_means(groups), "",
            "**Gaussian mean at (1, 1e-6): two stages** (a pilot at a tenth of rho picks stage "
            "2's split, the stages combined by inverse variance; the oracle is the best fixed "
            "split of rho between sum and count for each group's true mean, by the delta "
            "method: a bound no data-independent split reaches)",
            "", *gaussian_means(groups), "",
            "**agg at epsilon 1** (bounds [0, 100] and [0, 1000], values uniform)", "",
            *agg_row(groups), "",
            "**Intervals of the K-norm mean**", "", *coverage(groups), "",
            "**var / std: one K-norm release of (centred sum, count, shifted squares)** "
            f"({min(groups, 3000):,} groups)", "", *variances(min(groups, 3000)), "",
            "| target | measured | met |", "| --- | --- | --- |",
            *(f"| {t['item']}: {t['target']} | {t['measured']} | "
              f"{'met' if t['met'] else 'not met'} |" for t in TARGETS), ""]
    return "\n".join(parts)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    print(section(ap.parse_args().quick))
