"""Beyond the peers, issue 47 items 2 and 8: exact L2 sensitivities and unit-level private keys.

    python benchmarks/accuracy/bench_beyond_keys.py [--quick]

* **Item 2.** ``groupby("g").count(mechanism="gaussian")`` at (1, 1e-6) with
  ``max_rows_per_unit=10, max_rows_per_group=1`` (L2 sensitivity ``sqrt(10)``): dpframe's
  sigma (its plan) beside dp_accounting's least continuous sigma at that sensitivity (its PLD
  of the Gaussian mechanism, bisected), the PipelineDP figure of the issue (13.36).
* **Item 8.** ``groupby("g", keys="private").count(epsilon=1, delta=1e-6)`` with
  ``max_groups_per_unit=4, max_rows_per_group=3``. Data (seed 47): 100,000 units, each with
  4 key draws from 10,000 keys by Zipf(1.1) weights (a repeated key is one key), 1 to 3 rows
  (uniform) in each of its keys. Recall (the share of true keys released) and the MAE of the
  released counts over the released keys: exact expectations (from each rule's release
  probability per key: no Monte Carlo error) and runs (``reps`` releases). *Before*: the split
  (1/2 of epsilon to a Gaussian-threshold selection by distinct units, a count of rows at the
  other half), which ``selection_share=0.5`` still gives. OpenDP 0.16's stability histogram
  (``make_laplace_threshold`` on the exact row counts, ``d_in = (4, 12, 3)``, scale 12) is run
  in its venv (``benchmarks/peers/.venvs/opendp``, built by ``benchmarks/peers/run.py
  --setup``) at the smallest threshold its map accepts and one higher (whose true delta is
  <= 1e-6; docs/benchmarks/accuracy.md, key selection).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve()
sys.path.insert(0, os.environ.get("DPFRAME_BENCH_CHECKOUT", str(HERE.parents[2])))

import dpframe as dpf  # noqa: E402

EPS, DELTA = 1.0, 1e-6
K, R = 4, 3
OPENDP_PY = HERE.parents[1] / "peers" / ".venvs" / "opendp" / "bin" / "python"
#: The issue's figures (issue 47's table).
BEFORE_SIGMA, TARGET_SIGMA = 16.93, 13.36
BEFORE_MAE, TARGET_MAE = 24.2, 20.2

#: The issue-47 targets this section measured (filled by :func:`section`).
TARGETS: list[dict[str, Any]] = []


# -- item 2 ---------------------------------------------------------------------------------------


def _accounting_sigma(sens: float) -> float:
    """dp_accounting's least continuous Gaussian sigma at (EPS, DELTA) (PLD, bisection)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    def delta(sigma: float) -> float:
        d = pld.from_gaussian_mechanism(sigma, sensitivity=sens,
                                        value_discretization_interval=1e-4)
        return float(d.get_delta_for_epsilon(EPS))

    lo, hi = 4.0 * sens, 4.5 * sens
    for _ in range(20):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if delta(mid) <= DELTA else (mid, hi)
    return hi


def gaussian_row() -> tuple[float, float, float]:
    """(dpframe's sigma, its L2 sensitivity, dp_accounting's continuous sigma)."""
    df = pd.DataFrame({"u": np.arange(100) % 10, "g": np.arange(100) % 20})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = dpf.Session(10.0, 1e-3, seed=0)
        m = df.dp(s, privacy_unit="u", keys={"g": list(range(20))}, max_rows_per_unit=10,
                  max_rows_per_group=1).groupby("g").count(
            epsilon=EPS, delta=DELTA, mechanism="gaussian", dry_run=True)["measures"][0]
    sens = float(m["sensitivity"])
    return float(m["noise_scale"]), sens, _accounting_sigma(sens)


# -- item 8 ---------------------------------------------------------------------------------------


def make_data() -> pd.DataFrame:
    rng = np.random.default_rng(47)
    nk, n_units = 10_000, 100_000
    w = 1.0 / np.arange(1, nk + 1) ** 1.1
    w /= w.sum()
    keys = rng.choice(nk, (n_units, 4), p=w)
    pairs = pd.DataFrame({"g": keys.reshape(-1), "u": np.repeat(np.arange(n_units), 4)})
    pairs = pairs.drop_duplicates(ignore_index=True)
    reps = rng.integers(1, R + 1, len(pairs))
    return pairs.loc[pairs.index.repeat(reps)].reset_index(drop=True)


def _release(df: pd.DataFrame, seed: int, before: bool, dry_run: bool = False) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = dpf.Session(10.0, 1e-3, seed=seed)
        g = df.dp(s, privacy_unit="u", max_groups_per_unit=K,
                  max_rows_per_group=R).groupby("g", keys="private")
        extra = {"selection_share": 0.5} if before else {}
        return g.count(epsilon=EPS, delta=DELTA, dry_run=dry_run, **extra)


def _runs(df: pd.DataFrame, truth: pd.Series, reps: int, before: bool) -> tuple[float, float]:
    recalls, maes = [], []
    for seed in range(reps):
        out = _release(df, seed, before)
        recalls.append(len(out) / len(truth))
        maes.append(float(np.abs(out.to_numpy() - truth.loc[out.index].to_numpy()).mean()))
    return float(np.mean(recalls)), float(np.mean(maes))


def _dlap(scale: float) -> tuple[np.ndarray, np.ndarray]:
    p = math.exp(-1.0 / scale)
    z = np.arange(-math.ceil(60 * scale), math.ceil(60 * scale) + 1)
    return z, (1 - p) / (1 + p) * p ** np.abs(z)


def _expect_threshold(rows: np.ndarray, scale: float, tau: int) -> tuple[float, float]:
    """Exact recall and released-count MAE of ``rows + Z >= tau`` (Z discrete Laplace)."""
    z, pmf = _dlap(scale)
    vals, inv = np.unique(rows, return_inverse=True)
    w = pmf[None, :] * ((vals[:, None] + z[None, :]) >= tau)
    rel = w.sum(axis=1)[inv]
    err = (w * np.abs(z)[None, :]).sum(axis=1)[inv]
    return float(rel.mean()), float(err.sum() / rel.sum())


def _expect_split(units: np.ndarray, sel: dict[str, Any], count_scale: float
                  ) -> tuple[float, float]:
    """Exact recall of the Gaussian threshold on distinct units (continuity-corrected normal
    tails: the discrete Gaussian's are within 1e-30 of them at this sigma), and the count's
    E|Z| (independent of the selection)."""
    sigma, tau = float(sel["noise_scale"]), int(sel["threshold"])
    nd = NormalDist(0.0, sigma)
    rel = np.array([1 - nd.cdf(tau - u - 0.5) for u in units])
    p = math.exp(-1.0 / count_scale)
    return float(rel.mean()), 2 * p / (1 - p * p)


OPENDP_RUNNER = r"""
import json, sys
import numpy as np
import opendp.prelude as odp
odp.enable_features("contrib")
counts = json.load(open(sys.argv[1]))
reps, delta, scale = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
data = {int(k): int(v) for k, v in counts.items()}
space = (odp.map_domain(odp.atom_domain(T=odp.i64), odp.atom_domain(T=odp.i64)),
         odp.l01inf_distance(odp.absolute_distance(T=odp.i64)))
d_in = (4, 12, 3)
t = 3  # its map refuses a threshold below the l-infinity sensitivity
while odp.m.make_laplace_threshold(*space, scale=scale, threshold=t).map(d_in)[1] > delta:
    t += 1
out = {"threshold": t, "version": odp.__version__ if hasattr(odp, "__version__") else ""}
for name, thr in (("as_run", t), ("true_delta", t + 1)):
    meas = odp.m.make_laplace_threshold(*space, scale=scale, threshold=thr)
    recalls, maes = [], []
    for _ in range(reps):
        rel = meas(data)
        recalls.append(len(rel) / len(data))
        maes.append(float(np.mean([abs(v - data[k]) for k, v in rel.items()])))
    out[name] = [float(np.mean(recalls)), float(np.mean(maes))]
print("@@" + json.dumps(out))
"""


def opendp_runs(truth: pd.Series, reps: int) -> dict[str, Any] | None:
    """OpenDP's stability histogram on the exact row counts, in its venv (None without it)."""
    if not OPENDP_PY.exists():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "counts.json"
        path.write_text(json.dumps({str(k): int(v) for k, v in truth.items()}))
        r = subprocess.run([str(OPENDP_PY), "-c", OPENDP_RUNNER, str(path), str(reps),
                            repr(DELTA), repr(K * R / EPS)], capture_output=True, text=True,
                           timeout=1800, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    for line in r.stdout.splitlines():
        if line.startswith("@@"):
            result: dict[str, Any] = json.loads(line[2:])
            return result
    return {"error": r.stderr[-500:]}


def keys_rows(reps: int) -> dict[str, Any]:
    df = make_data()
    truth = df.groupby("g").size()
    units = df.drop_duplicates(["g", "u"]).groupby("g").size().loc[truth.index].to_numpy()
    plan_now = _release(df, 0, False, dry_run=True)
    plan_before = _release(df, 0, True, dry_run=True)
    sel = plan_now["key_selection"]
    assert sel["released_count_is_thresholded"]
    now_exact = _expect_threshold(truth.to_numpy(), float(sel["noise_scale"]),
                                  int(sel["threshold"]))
    before_exact = _expect_split(units, plan_before["key_selection"],
                                 float(plan_before["measures"][0]["noise_scale"]))
    return {"keys": len(truth), "rows": len(df), "threshold": int(sel["threshold"]),
            "before_sel": plan_before["key_selection"],
            "now_exact": now_exact, "before_exact": before_exact,
            "now_runs": _runs(df, truth, reps, False),
            "before_runs": _runs(df, truth, reps, True),
            "opendp_exact": _expect_threshold(truth.to_numpy(), K * R / EPS,
                                              int(sel["threshold"]) - 1),
            "opendp": opendp_runs(truth, reps)}


# -- the section ----------------------------------------------------------------------------------


def _pair(v: tuple[float, float] | list[float] | None) -> str:
    return "—" if v is None else f"{v[0]:.4f} / {v[1]:.2f}"


def section(quick: bool = False) -> str:
    TARGETS.clear()
    reps = 2 if quick else 5
    sigma, sens, acc = gaussian_row()
    k = keys_rows(reps)
    od = k["opendp"]
    od_ok = od is not None and "error" not in od
    od_mae = od["as_run"][1] if od_ok else k["opendp_exact"][1]
    true_mae = k["now_exact"][1]  # OpenDP at its true delta: the same output law (exact)
    TARGETS.extend([
        {"item": "47.2", "target": f"Gaussian count, T = 10, R = 1: sigma <= {TARGET_SIGMA} "
                                   "(continuous; a discrete Gaussian within 0.5%)",
         "measured": f"{sigma:.2f} (dp_accounting continuous {acc:.2f}; before {BEFORE_SIGMA})",
         "met": sigma <= 1.005 * TARGET_SIGMA},
        {"item": "47.8", "target": f"unit-level private keys (R = 3, k = 4): released-count MAE "
                                   f"<= OpenDP's at delta 1e-6 and <= {TARGET_MAE}",
         "measured": f"{k['now_exact'][1]:.4f} exact ({k['now_runs'][1]:.2f} runs) vs OpenDP "
                     f"{true_mae:.4f} at its true delta, {k['opendp_exact'][1]:.4f} as its map "
                     f"allows ({od_mae:.2f} runs); before {k['before_exact'][1]:.2f}",
         "met": k["now_exact"][1] <= min(true_mae, TARGET_MAE) + 1e-9},
        {"item": "47.8", "target": "unit-level private keys: recall no worse than before",
         "measured": f"{k['now_exact'][0]:.4f} vs {k['before_exact'][0]:.4f} (exact)",
         "met": k["now_exact"][0] >= k["before_exact"][0]},
    ])
    bs = k["before_sel"]
    lines = [
        "## Beyond the peers: exact L2 sensitivities and unit-level private keys (issue 47)",
        "",
        f"`python benchmarks/accuracy/bench_beyond_keys.py` (items 2 and 8). Epsilon {EPS:g}, "
        f"delta {DELTA:g}.",
        "",
        "| workload | before | dpframe now | reference | target |",
        "| --- | ---: | ---: | ---: | --- |",
        f"| Gaussian count, T = 10 and R = 1 (L2 {sens:.4f} = sqrt(10)): sigma | "
        f"{BEFORE_SIGMA} (L2 rounded up to 4) | {sigma:.2f} | dp_accounting (continuous, "
        f"PLD): {acc:.2f}; PipelineDP (issue): {TARGET_SIGMA} | {TARGET_SIGMA} |",
        f"| unit-level private keys (R = 3, k = 4): count MAE on released keys, exact / runs | "
        f"{k['before_exact'][1]:.2f} / {k['before_runs'][1]:.2f} | {k['now_exact'][1]:.2f} / "
        f"{k['now_runs'][1]:.2f} | OpenDP: {od_mae:.2f} | <= OpenDP's (issue: {TARGET_MAE}) |",
        f"| the same: recall, exact / runs | {k['before_exact'][0]:.4f} / "
        f"{k['before_runs'][0]:.4f} | {k['now_exact'][0]:.4f} / {k['now_runs'][0]:.4f} | "
        f"OpenDP: {od['as_run'][0] if od_ok else k['opendp_exact'][0]:.4f} | no worse than "
        "before |",
        "",
        f"Item 2: the sigma is the analytic Gaussian at the exact sensitivity plus the lattice's "
        f"proven correction (Theorem C of `dpframe/core/noise/gaussian.py`: +{sigma / acc - 1:.2%} "
        "over the continuous optimum, which a floating-point Gaussian such as PipelineDP's "
        "reaches without the protection against Mironov's attack).",
        "",
        f"Item 8, data: {k['keys']:,} keys, {k['rows']:,} rows (100,000 units, 1-3 rows per "
        f"unit and key). *Now*: the count of rows thresholded itself at {k['threshold']} "
        f"(scale {K * R / EPS:g}, one charge). *Before*: Gaussian-threshold selection by "
        f"distinct units at epsilon 0.5 (sigma {bs['noise_scale']:.2f}, threshold "
        f"{bs['threshold']}), then a count at scale {2 * K * R / EPS:g}. Exact columns: "
        "expectations over the noise; runs: means of "
        f"{reps} releases.",
        "",
        "| rule | recall (exact) | MAE (exact) | recall / MAE (runs) |",
        "| --- | --- | --- | --- |",
        f"| dpframe now | {k['now_exact'][0]:.4f} | {k['now_exact'][1]:.4f} | "
        f"{_pair(k['now_runs'])} |",
        f"| dpframe before (split) | {k['before_exact'][0]:.4f} | {k['before_exact'][1]:.4f} | "
        f"{_pair(k['before_runs'])} |",
        f"| OpenDP as its map allows (threshold {k['threshold'] - 1}) | "
        f"{k['opendp_exact'][0]:.4f} | {k['opendp_exact'][1]:.4f} | "
        f"{_pair(od['as_run']) if od_ok else '—'} |",
        f"| OpenDP at true delta <= 1e-6 (threshold {k['threshold']}) | "
        f"{k['now_exact'][0]:.4f} | {k['now_exact'][1]:.4f} | "
        f"{_pair(od['true_delta']) if od_ok else '—'} |",
        "",
        "The rows rule halves the released counts' noise (one charge at the whole epsilon) and "
        "ties OpenDP at its true delta on every data set (the same output law). Its recall "
        "depends on the rows per unit and key: the threshold counts rows (178, reached by a "
        "key of 89 units at 2 rows each) where the split's counts units (88 with probability "
        "1/2); here about 4% fewer keys. The planner's public rule "
        "(`core/plan.py::_rows_beat_units`) takes the rows rule when a key at the declared "
        "rows' midpoint needs at most 1/8 more units; `selection_share=` keeps the split.",
        "",
        "Targets: " + "; ".join(f"{t['target']}: {t['measured']} — "
                                f"**{'met' if t['met'] else 'not met'}**" for t in TARGETS),
        "",
    ]
    if od is not None and not od_ok:
        lines.insert(-2, f"(OpenDP's run failed: {od['error'][-200:]})")
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    print(section(quick=ap.parse_args().quick))
