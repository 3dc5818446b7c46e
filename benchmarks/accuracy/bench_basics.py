"""Basic releases at a fixed budget (issue 32, items d and g): count, sum, mean, grouped sum
(Laplace, epsilon 1) and a Gaussian sum at (1, 1e-6), sensitivity 100.

Synthetic data (seed 0): 10,000 rows, ``x`` uniform in [0, 100] (declared bounds (0, 100), so
a sum's sensitivity is 100), ``g`` one of 20 public groups. dpframe is run ``trials`` times
(fresh seeded sessions); RMSE, MAE and the coverage of its 95% interval (``ci=0.95``) against
the true value. The peer column is the analytic reference of the textbook mechanism every peer
implements for these queries (labelled *analytic*: Laplace of scale sensitivity / epsilon,
RMSE sqrt(2) b, MAE b; the analytic Gaussian of Balle and Wang 2018 for the Gaussian sum,
checked against Google's dp-accounting when it is installed).

    python benchmarks/accuracy/bench_basics.py [--trials 200]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve()
sys.path.insert(0, os.environ.get("DPFRAME_BENCH_CHECKOUT", str(HERE.parents[2])))

import dpframe as dpf  # noqa: E402

EPS, DELTA, M, ROWS, GROUPS = 1.0, 1e-6, 100.0, 10_000, 20
#: The issue's analytic Gaussian sigma at (1, 1e-6), sensitivity 100.
TARGET_SIGMA = 422.7
#: The issue-32 targets this section measured (filled by :func:`section`).
TARGETS: list[dict[str, object]] = []


def frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"x": rng.uniform(0, M, ROWS), "g": rng.integers(0, GROUPS, ROWS)})


def analytic_gaussian_sigma(eps: float, delta: float, sens: float) -> float:
    """Balle and Wang (2018), Theorem 8: the least sigma with
    Phi(s/(2 sigma) - eps sigma/s) - e^eps Phi(-s/(2 sigma) - eps sigma/s) <= delta."""
    from scipy.stats import norm

    def delta_of(sigma: float) -> float:
        a, b = sens / (2 * sigma), eps * sigma / sens
        return float(norm.cdf(a - b) - math.exp(eps) * norm.cdf(-a - b))

    lo, hi = 1e-6 * sens, 1e3 * sens
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if delta_of(mid) <= delta else (mid, hi)
    return hi


def dp_accounting_sigma(eps: float, delta: float, sens: float) -> float | None:
    """dp-accounting's Gaussian sigma for (eps, delta), when installed."""
    try:
        from dp_accounting.pld import privacy_loss_distribution as pld
    except ImportError:
        return None
    lo, hi = 0.1 * sens, 100.0 * sens
    for _ in range(60):
        mid = (lo + hi) / 2
        d = pld.from_gaussian_mechanism(mid, sensitivity=sens).get_delta_for_epsilon(eps)
        lo, hi = (lo, mid) if d <= delta else (mid, hi)
    return hi


def _session(seed: int) -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(1e6, 1e-3, seed=seed)


QUERIES: dict[str, Any] = {
    "count": lambda p: p.count(epsilon=EPS, ci=0.95),
    "sum": lambda p: p.sum("x", epsilon=EPS, ci=0.95),
    "mean": lambda p: p.mean("x", epsilon=EPS, ci=0.95),
    "grouped sum (per group)": lambda p: p.groupby("g").sum("x", epsilon=EPS, ci=0.95),
    "Gaussian sum (1, 1e-6)": lambda p: p.sum("x", epsilon=EPS, delta=DELTA,
                                              mechanism="gaussian", ci=0.95),
}


def truth(df: pd.DataFrame, name: str) -> np.ndarray:
    if name == "count":
        return np.array([len(df)], dtype=float)
    if name == "mean":
        return np.array([df["x"].mean()])
    if name.startswith("grouped"):
        return df.groupby("g")["x"].sum().reindex(range(GROUPS)).to_numpy()
    return np.array([df["x"].sum()])


def measure(df: pd.DataFrame, name: str, trials: int) -> tuple[float, float, float, float]:
    """RMSE, MAE, coverage of the 95% interval, and the noise scale of ``trials`` releases."""
    errs, covered, scale = [], [], 0.0
    want = truth(df, name)
    for seed in range(trials):
        p = df.dp(_session(seed), bounds={"x": (0.0, M)}, keys={"g": list(range(GROUPS))})
        r = QUERIES[name](p)
        if isinstance(r, pd.DataFrame):
            val, lo, hi = (r[c].to_numpy(dtype=float) for c in (r.columns[0], "lower", "upper"))
            scale = float(r.attrs["dp"]["measures"][0].get("noise_scale", 0.0)) \
                if "measures" in r.attrs["dp"] else float(r.attrs["dp"].get("noise_scale", 0))
        else:
            val, lo, hi = (np.array([float(v)]) for v in (r, r.lower, r.upper))
            scale = _scale(r.attrs["dp"])
        errs.append(val - want)
        covered.append((lo <= want) & (want <= hi))
    e = np.concatenate(errs)
    return (float(np.sqrt(np.mean(e ** 2))), float(np.mean(np.abs(e))),
            float(np.mean(np.concatenate(covered))), scale)


def _scale(prov: dict[str, Any]) -> float:
    if "noise_scale" in prov and prov["noise_scale"] is not None:
        return float(prov["noise_scale"])
    for m in prov.get("measures", []):
        if m.get("noise_scale") is not None:
            return float(m["noise_scale"])
    return float("nan")


def reference(name: str, sigma: float) -> tuple[float, float] | None:
    """(RMSE, MAE) of the textbook mechanism (analytic), None where there is none here."""
    if name == "count":
        return math.sqrt(2) / EPS, 1 / EPS
    if name in ("sum", "grouped sum (per group)"):
        return math.sqrt(2) * M / EPS, M / EPS
    if name.startswith("Gaussian"):
        return sigma, sigma * math.sqrt(2 / math.pi)
    return None


def section(quick: bool = False) -> str:
    """The page's section (accuracy page convention): ``quick`` runs 10 trials a query."""
    TARGETS.clear()
    trials = 10 if quick else 200
    df = frame()
    sigma = analytic_gaussian_sigma(EPS, DELTA, M)
    lines = ["## Counts, sums, means and the Gaussian sum", "",
             f"`python benchmarks/accuracy/bench_basics.py --trials {trials}` (issue 32, items "
             f"d and g). {ROWS:,} rows, `x` uniform in [0, 100] (bounds (0, 100): a sum's "
             f"sensitivity is 100), {GROUPS} public groups; epsilon 1 (delta 1e-6 for the "
             f"Gaussian sum); {trials} releases each. The reference is the textbook mechanism "
             "every peer implements (*analytic*, not a run of a peer): Laplace of scale "
             "sensitivity / epsilon, and the analytic Gaussian (Balle and Wang 2018).", "",
             "| query | dpframe RMSE | dpframe MAE | dpframe 95% coverage | dpframe noise scale "
             "| reference RMSE (analytic) | reference MAE (analytic) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name in QUERIES:
        rmse, mae, cov, scale = measure(df, name, trials)
        ref = reference(name, sigma)
        r1, r2 = ("—", "—") if ref is None else (f"{ref[0]:,.2f}", f"{ref[1]:,.2f}")
        lines.append(f"| {name} | {rmse:,.2f} | {mae:,.2f} | {cov:.3f} | {scale:,.2f} | {r1} "
                     f"| {r2} |")
        if name.startswith("Gaussian"):
            TARGETS.append({"item": "d", "target": "Gaussian sum at (1, 1e-6), sensitivity "
                            f"100: sigma <= {TARGET_SIGMA}", "measured": f"sigma {scale:.1f}",
                            "met": scale <= TARGET_SIGMA})
    acc = dp_accounting_sigma(EPS, DELTA, M)
    lines += ["", f"Analytic Gaussian sigma at (1, 1e-6), sensitivity 100: {sigma:.1f} "
              f"(this module's bisection of Balle and Wang's condition); dp-accounting: "
              f"{'not installed' if acc is None else f'{acc:.1f}'}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    print(section(a.quick))


if __name__ == "__main__":
    main()
