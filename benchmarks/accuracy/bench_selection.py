"""Accuracy of private key selection at a fixed budget (epsilon 1, delta 1e-6): the fraction of
true keys released (recall) and the mean absolute error of the released counts (MAE).

    python benchmarks/accuracy/bench_selection.py [--reps 5] [--before /path/to/old/checkout]
                                                 [--peers /dir/with/opendp]

Synthetic data (seed 0): 10,000 keys whose sizes follow a Zipf law (exponent 1.5, clipped at
5,000: many small keys, a few huge ones). Cases:

* ``row``: a row unit, ``groupby("g", keys="private").count()``.
* ``user-rows``: a privacy unit with 1 + Geometric(1/2) rows in its one key;
  ``max_rows_per_unit=1, max_groups_per_unit=1``: the count of units per key.
* ``user-k3``: 100,000 units, each with 3 rows whose keys are drawn by a Zipf(1.1) weight
  (so in at most 3 keys);
  ``max_groups_per_unit=3, max_rows_per_group=1`` (``max_rows_per_unit`` is now a unit's
  rows in the whole release, issue 32 a).
* ``row-sum``: a row-level sum (a separate selection is needed): recall only.

Each rule's recall and MAE are computed two ways: *exactly* (the expectation over the noise,
from the rule's selection probability per key size: no Monte Carlo error), and by running the
release ``--reps`` times (dpframe itself; OpenDP 0.16 itself when importable, from ``--peers``).
Rules: dpframe now (the plan it makes, read from a dry run), dpframe before issue 32 c (half of
epsilon for a geometric selection count, a second count at the other half), OpenDP's stability
histogram (``make_laplace_threshold`` on the exact counts, as ``make_count_by`` would give them:
at the smallest threshold its privacy map accepts, and at the threshold whose true delta is
<= 1e-6, one higher), and PipelineDP's truncated-geometric selection (re-implemented: its
recurrence at epsilon/2 per the default even split, then a count at epsilon/2), and dpframe's
stability histogram *with* the boundary coin (the rule before this change, not the default).

``--paired N`` (default 2,000; 200 with ``quick``) measures the coin's effect on the released
count's MAE with paired seeds: dpframe's own sampler (:class:`SelectionPlan.select`) run with
and without the coin on the same seed draws the same noise (the coin's words come after it),
so the difference is the coin's alone; its standard error is the paired runs' standard
deviation over sqrt(N). It also measures two post-processings of the released count (free in
privacy: functions of the released value): a data-independent debiasing ``y - b(y)`` with
``b(c) = E[Z | c + Z >= tau]`` the bias of a released count of true count ``c`` (geometric
noise law; the brief's ``c -> c - b(c)``), and the *oracle* posterior
median (the data's own count histogram as prior: a bound no data-independent estimator beats).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

HERE = Path(__file__).resolve()
sys.path.insert(0, os.environ.get("DPFRAME_BENCH_CHECKOUT", str(HERE.parents[2])))

import dpframe as dpf  # noqa: E402

EPS, DELTA = 1.0, 1e-6
NKEYS = 10_000
Counts = npt.NDArray[np.int64]


# -- data ----------------------------------------------------------------------------------------


def key_sizes(rng: np.random.Generator) -> Counts:
    return np.minimum(rng.zipf(1.5, NKEYS), 5000).astype(np.int64)


def make_case(case: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The frame of a case and the ``.dp`` options (the truth is computed from the frame)."""
    rng = np.random.default_rng(0)
    sizes = key_sizes(rng)
    if case in ("row", "row-sum"):
        g = np.repeat(np.arange(NKEYS), sizes)
        return pd.DataFrame({"g": g, "x": rng.random(g.size)}), {}
    if case == "user-rows":
        units = np.arange(int(sizes.sum()))
        g = np.repeat(np.arange(NKEYS), sizes)
        reps = rng.geometric(0.5, units.size)
        df = pd.DataFrame({"g": np.repeat(g, reps), "u": np.repeat(units, reps)})
        return df, {"privacy_unit": "u", "max_rows_per_unit": 1, "max_groups_per_unit": 1}
    assert case == "user-k3"
    w = 1.0 / np.arange(1, NKEYS + 1) ** 1.1
    w /= w.sum()
    n_units = 100_000
    keys = rng.choice(NKEYS, (n_units, 3), p=w)  # a unit's repeated key is one key
    df = pd.DataFrame({"g": keys.reshape(-1), "u": np.repeat(np.arange(n_units), 3)})
    return df, {"privacy_unit": "u", "max_rows_per_group": 1, "max_groups_per_unit": 3}


def true_counts(df: pd.DataFrame) -> pd.Series:
    """Distinct units per key (rows at row level)."""
    if "u" in df:
        return df.drop_duplicates(["g", "u"]).groupby("g").size()
    return df.groupby("g").size()


# -- exact expectations ----------------------------------------------------------------------------


def dlap(scale: float, width: float = 60.0
         ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Support and pmf of the discrete Laplace of ``scale`` (tails below e^-60 dropped)."""
    p = math.exp(-1.0 / scale)
    z = np.arange(-math.ceil(width * scale), math.ceil(width * scale) + 1)
    return z, (1 - p) / (1 + p) * p ** np.abs(z)


def mean_abs(scale: float) -> float:
    p = math.exp(-1.0 / scale)
    return 2 * p / (1 - p * p)


@dataclass
class Expected:
    recall: float
    mae: float | None


def expect_stability(n: Counts, scale: float, tau: int, q: float) -> Expected:
    """Release ``n + Z`` when ``>= tau`` (and at ``tau - 1`` with probability ``q``)."""
    z, pmf = dlap(scale)
    vals, inv = np.unique(n, return_inverse=True)
    y = vals[:, None] + z[None, :]
    w = pmf[None, :] * ((y >= tau) + q * (y == tau - 1))
    rel = w.sum(axis=1)[inv]
    err = (w * np.abs(z)[None, :]).sum(axis=1)[inv]
    return Expected(float(rel.mean()), float(err.sum() / rel.sum()))


def expect_split(n: Counts, prob: Callable[[Counts], npt.NDArray[np.float64]],
                 count_scale: float | None) -> Expected:
    """A separate selection (``prob`` per size), then an independent count of ``count_scale``."""
    rel = prob(n)
    return Expected(float(rel.mean()), None if count_scale is None else mean_abs(count_scale))


def geometric_threshold_prob(scale: float, tau: int) -> Callable[[Counts], npt.NDArray[np.float64]]:
    p = math.exp(-1.0 / scale)

    def prob(n: Counts) -> npt.NDArray[np.float64]:
        t = (tau - n).astype(np.float64)  # P[Z >= t]
        return np.where(t >= 0, p ** np.maximum(t, 0) / (1 + p),
                        1 - p ** np.maximum(1 - t, 0) / (1 + p))

    return prob


def truncated_geometric(eps: float, delta: float) -> npt.NDArray[np.float64]:
    """pi_n of Desfontaines et al. (2022) in floats (PipelineDP's rule), until it reaches 1."""
    pis = [0.0]
    while pis[-1] < 1.0:
        pi = pis[-1]
        rest = 1 - pi - delta
        pis.append(min(1.0, math.exp(eps) * pi + delta,
                       1 - math.exp(-eps) * rest if rest > 0 else 1.0))
    return np.asarray(pis)


def table_prob(table: npt.NDArray[np.float64]) -> Callable[[Counts], npt.NDArray[np.float64]]:
    def prob(n: Counts) -> npt.NDArray[np.float64]:
        return table[np.minimum(n, len(table) - 1)]
    return prob


def old_threshold(eps_sel: float, keys: int) -> int:
    """The threshold before issue 32 c: 1 + ceil(ln(delta (1 + p) / k) / ln p), at least 2."""
    p = math.exp(-eps_sel / keys)
    return max(2, 1 + math.ceil(math.log(DELTA * (1 + p) / keys) / math.log(p)))


# -- runs ------------------------------------------------------------------------------------------


def release(df: pd.DataFrame, opts: dict[str, Any], case: str, seed: int,
            dry_run: bool = False) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = dpf.Session(10.0, 1e-3, seed=seed)
        if case == "row-sum":
            g = df.dp(s, bounds={"x": (0.0, 1.0)}, **opts).groupby("g", keys="private")
            return g.sum("x", epsilon=EPS, delta=DELTA, dry_run=dry_run)
        g = df.dp(s, **opts).groupby("g", keys="private")
        return g.count(epsilon=EPS, delta=DELTA, dry_run=dry_run)


def measure_runs(case: str, reps: int) -> dict[str, float | None]:
    """Mean recall and MAE over ``reps`` releases by the importable dpframe."""
    df, opts = make_case(case)
    truth = true_counts(df)
    recalls, maes = [], []
    for seed in range(reps):
        out = release(df, opts, case, seed)
        recalls.append(len(out) / len(truth))
        if case != "row-sum" and len(out):
            maes.append(float(np.abs(out.to_numpy() - truth.loc[out.index].to_numpy()).mean()))
    return {"recall": float(np.mean(recalls)), "mae": float(np.mean(maes)) if maes else None}


def opendp_runs(case: str, reps: int
                ) -> tuple[int, dict[str, float | None], dict[str, float | None]] | None:
    """OpenDP's stability histogram (``make_laplace_threshold`` on exact counts): the smallest
    threshold ``t`` its privacy map accepts for delta, then ``reps`` runs at ``t`` and at
    ``t + 1``. OpenDP 0.16 releases a key when its noisy count is ``>= t`` but its map gives
    ``P[Z >= t]`` for a key of count 1, whose release probability is ``P[Z >= t - 1]``: the
    runs at ``t + 1`` are the ones whose delta is really <= 1e-6 (docs/benchmarks/accuracy.md).
    """
    try:
        import opendp.prelude as odp
    except ImportError:
        return None
    odp.enable_features("contrib")
    df, opts = make_case(case)
    k = opts.get("max_groups_per_unit", 1)
    truth = true_counts(df)
    data = {int(g): int(c) for g, c in truth.items()}  # exact counts: OpenDP adds the noise
    space = (odp.map_domain(odp.atom_domain(T=odp.i64), odp.atom_domain(T=odp.i64)),
             odp.l01inf_distance(odp.absolute_distance(T=odp.i64)))
    d_in = (k, k, 1)  # a unit moves at most k counts, each by one
    scale = float(k) / EPS
    t = 1
    while odp.m.make_laplace_threshold(*space, scale=scale, threshold=t).map(d_in)[1] > DELTA:
        t += 1

    def runs(threshold: int) -> dict[str, float | None]:
        meas = odp.m.make_laplace_threshold(*space, scale=scale, threshold=threshold)
        recalls, maes = [], []
        for _ in range(reps):
            out = meas(data)
            recalls.append(len(out) / len(truth))
            keys = np.fromiter(out.keys(), dtype=np.int64)
            noisy = np.fromiter(out.values(), dtype=np.float64)
            maes.append(float(np.abs(noisy - truth.loc[keys].to_numpy()).mean()))
        return {"recall": float(np.mean(recalls)), "mae": float(np.mean(maes))}

    return t, runs(t), runs(t + 1)


# -- the coin's trade, paired; post-processing the released count ---------------------------------


@dataclass
class Paired:
    reps: int
    diff: float  # mean of MAE(coin) - MAE(no coin), paired seeds
    se: float  # its standard error
    sd_one: float  # standard deviation of one run's MAE (no coin)


def paired_coin(case: str, reps: int) -> Paired:
    """MAE with minus without the boundary coin, dpframe's sampler on the same seeds."""
    from dpframe.core.noise.mechanisms import noise_spec
    from dpframe.core.noise.rng import RandomSource
    from dpframe.core.selection import SelectionPlan, stability_threshold
    df, opts = make_case(case)
    n = true_counts(df).to_numpy().astype(np.int64)
    k = opts.get("max_groups_per_unit", 1)
    noise = noise_spec("laplace", Fraction(k), Fraction(str(EPS)), integer=True)
    tau, q, _ = stability_threshold(noise, Fraction(str(DELTA)), 1, k, coin=True)
    plans = [SelectionPlan(noise, tau, Fraction(str(EPS)), Fraction(str(DELTA)), boundary=b)
             for b in (0, q)]
    diffs, ones = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(reps):
            maes = []
            for plan in plans:
                keep, noisy = plan.select(n, RandomSource(seed=10_000 + seed))
                assert noisy is not None
                maes.append(float(np.abs(noisy[keep] - n[keep]).mean()))
            diffs.append(maes[1] - maes[0])
            ones.append(maes[0])
    d = np.asarray(diffs)
    return Paired(reps, float(d.mean()), float(d.std(ddof=1) / math.sqrt(reps)),
                  float(np.std(ones, ddof=1)))


@dataclass
class PostProcessing:
    identity: float  # released-count MAE of y itself (no coin)
    debiased: float  # of the conditional-mean inversion
    oracle: float  # of the oracle posterior median
    oracle_same_until: int  # the oracle's estimate is y for every released y below this


def post_processing(case: str) -> PostProcessing:
    """Exact MAE over released keys (no coin) of three estimates ``g(y)`` of the count."""
    df, opts = make_case(case)
    n = true_counts(df).to_numpy().astype(np.int64)
    k = opts.get("max_groups_per_unit", 1)
    scale = k / EPS
    tau = release(df, opts, case, 0, dry_run=True)["key_selection"]["threshold"]
    z, pmf = dlap(scale)
    vals, cnt = np.unique(n, return_counts=True)
    ys = np.arange(tau, int(vals.max()) + z[-1] + 1)
    # weight of (y, c): keys of count c whose noisy count is y
    w = cnt[None, :] * np.interp(ys[:, None] - vals[None, :], z, pmf, left=0.0, right=0.0)
    # the debiasing c -> c - b(c), b(c) = E[Z | c + Z >= tau] (the bias of a released count
    # of true count c), plugged in at c = y: one step, data-independent
    tail = pmf[None, :] * ((ys[:, None] + z[None, :]) >= tau)
    g_deb = ys - (tail * z[None, :]).sum(axis=1) / tail.sum(axis=1)
    cum = np.cumsum(w, axis=1) / np.maximum(w.sum(axis=1, keepdims=True), 1e-300)
    g_or = vals[np.minimum((cum < 0.5).sum(axis=1), vals.size - 1)]
    total = w.sum()

    def mae(g: npt.NDArray[np.float64] | npt.NDArray[np.int64]) -> float:
        return float((w * np.abs(g[:, None] - vals[None, :])).sum() / total)

    moved = ys[(g_or != ys) & (w.sum(axis=1) > 0)]
    return PostProcessing(mae(ys), mae(g_deb), mae(g_or),
                          int(moved[0]) if moved.size else int(ys[-1]))


def truncated_noise(case: str) -> str:
    """The discrete Laplace truncated to ``[-K, K]`` (the truncated geometric of Desfontaines
    et al. 2022: it spends ``P[Z = K]`` of delta on every pair of counts, so the released count
    is no longer pure epsilon-DP), ``K`` the smallest whose edge mass is <= delta per key:
    exact recall and MAE at the untruncated rule's threshold, and at the smallest threshold
    the truncation allows (a one-row key reaches at most ``1 + K``); then the smallest
    data-independent coin at ``tau - 1`` that releases every count at least as often as the
    untruncated rule (the only way to match its recall on every data set), if one <= 1 is."""
    df, opts = make_case(case)
    n = true_counts(df).to_numpy().astype(np.int64)
    k = opts.get("max_groups_per_unit", 1)
    p, d = math.exp(-EPS / k), DELTA / k
    tau = release(df, opts, case, 0, dry_run=True)["key_selection"]["threshold"]
    big, pmf_big = dlap(k / EPS)
    K = next(K for K in range(1, 10_000)
             if p ** K / (p ** np.abs(np.arange(-K, K + 1))).sum() <= d)
    j = np.arange(-K, K + 1)
    m = p ** np.abs(j) / (p ** np.abs(j)).sum()
    tau_t = next(t for t in range(2, tau + 1) if m[1 + j >= t].sum() <= d)
    vals, cnt = np.unique(n, return_counts=True)
    y = vals[:, None] + j[None, :]

    def at(t: int, q: float) -> str:
        w = cnt[:, None] * m[None, :] * ((y >= t) + q * (y == t - 1))
        return f"recall {w.sum() / n.size:.7f}, MAE {(w * np.abs(j)).sum() / w.sum():.6f}"

    need = max((float(pmf_big[c + big >= tau].sum()) - float(m[c + j >= tau].sum()))
               / m[c + j == tau - 1].sum() for c in range(1, tau + K)
               if m[c + j == tau - 1].sum() > 0)
    base = expect_stability(n, k / EPS, tau, 0.0)
    coin = (f"with the coin {need:.3f} at {tau - 1} that releases every count at least as "
            f"often as the untruncated rule, {at(tau, need)}" if need <= 1 else
            "no coin <= 1 releases every count at least as often as the untruncated rule")
    return (f"Truncated geometric noise (K = {K}; untruncated at threshold {tau}: recall "
            f"{base.recall:.7f}, MAE {base.mae:.6f}): at threshold {tau} {at(tau, 0.0)}; at "
            f"its smallest threshold {tau_t} {at(tau_t, 0.0)}; {coin}.\n")


def coin_report(case: str, reps: int) -> str:
    """The paired coin measurement and the post-processings of ``case`` (markdown)."""
    pr = paired_coin(case, reps)
    pp = post_processing(case)
    return (f"\nThe boundary coin's effect on the released-count MAE, paired seeds "
            f"({pr.reps} pairs, dpframe's sampler): {pr.diff:+.5f} +- {pr.se:.5f} (standard "
            f"error; {abs(pr.diff) / pr.se:.1f} SE). One run's MAE has standard deviation "
            f"{pr.sd_one:.4f}, so two independent means of 5 runs differ by "
            f"{pr.sd_one * math.sqrt(2 / 5):.4f} (SE) by chance: the runs columns cannot "
            "resolve a gap of this size; the exact columns and the paired runs do.\n\n"
            "Post-processing the released count (free: a function of the released value; "
            "exact expectations, no coin): MAE of the count itself "
            f"{pp.identity:.4f}; debiased, y - b(y) with b(c) = E[Z | c + Z >= tau], "
            f"{pp.debiased:.4f}; the oracle posterior median (the data's own count histogram "
            f"as prior, not a usable rule) {pp.oracle:.4f}, equal to the noisy count for "
            f"every released value below {pp.oracle_same_until}.\n\n" + truncated_noise(case))


# -- the report ------------------------------------------------------------------------------------


OPENDP_FIXED = "OpenDP stability histogram, threshold with true delta <= 1e-6"
COIN = "dpframe with the boundary coin (before this change; not the default)"
SPLIT = "dpframe before issue 32 c (split budget)"


def coin_probability(scale: float, keys: int) -> float:
    """The largest boundary coin the slack of the threshold allows (``coin=True``)."""
    from dpframe.core.noise.mechanisms import noise_spec
    from dpframe.core.selection import stability_threshold
    noise = noise_spec("laplace", Fraction(keys), Fraction(keys) / Fraction(scale),
                       integer=True)
    return stability_threshold(noise, Fraction(str(DELTA)), 1, keys, coin=True)[1] / 2.0 ** 64
OPENDP_AS_RUN = "OpenDP 0.16 as its privacy map allows"


def exact_rows(case: str) -> list[tuple[str, str, Expected]]:
    """(rule, parameters, exact expectation) for every rule of ``case``."""
    df, opts = make_case(case)
    n = true_counts(df).to_numpy().astype(np.int64)
    k = opts.get("max_groups_per_unit", 1)
    plan = release(df, opts, case, 0, dry_run=True)
    sel = plan["key_selection"]
    rows: list[tuple[str, str, Expected]] = []
    if sel.get("noise_scale") is not None:
        e = expect_stability(n, sel["noise_scale"], sel["threshold"],
                             sel.get("boundary_probability", 0.0))
        if not sel.get("released_count_is_thresholded", False):
            e = Expected(e.recall, mean_abs(plan["measures"][0]["noise_scale"]))
        rows.append(("dpframe (this branch)", f"stability, tau {sel['threshold']}", e))
        if sel.get("released_count_is_thresholded"):
            q = coin_probability(sel["noise_scale"], k)
            rows.append((COIN, f"stability, tau {sel['threshold']}, coin {q:.3f} at "
                         f"{sel['threshold'] - 1}",
                         expect_stability(n, sel["noise_scale"], sel["threshold"], q)))
    else:
        eps_key = sel["epsilon"] / k
        rows.append(("dpframe (this branch)", f"truncated geometric at {eps_key:g}/key",
                     expect_split(n, table_prob(truncated_geometric(eps_key, DELTA / k)), None)))
    count_scale = None if case == "row-sum" else 2 * k / EPS
    tau_old = old_threshold(EPS / 2, k)
    rows.append((SPLIT, f"geometric tau {tau_old} at eps/2 + count",
                 expect_split(n, geometric_threshold_prob(2 * k / EPS, tau_old), count_scale)))
    if case != "row-sum" and sel.get("released_count_is_thresholded"):
        tau = sel["threshold"]  # the smallest threshold whose true delta is <= 1e-6
        rows.append((OPENDP_FIXED, f"count >= {tau}", expect_stability(n, k / EPS, tau, 0.0)))
        p = math.exp(-EPS / k)
        true_delta = k * p ** (tau - 2) / (1 + p)
        rows.append((OPENDP_AS_RUN, f"count >= {tau - 1} (true delta {true_delta:.3g})",
                     expect_stability(n, k / EPS, tau - 1, 0.0)))
    pipe = truncated_geometric(EPS / 2 / k, DELTA / k)
    rows.append(("PipelineDP truncated geometric (re-impl.)",
                 f"eps/2 selection ({len(pipe) - 1} to certainty) + count",
                 expect_split(n, table_prob(pipe), count_scale)))
    return rows


def before_runs(case: str, reps: int, checkout: str) -> dict[str, float | None]:
    env = {**os.environ, "DPFRAME_BENCH_CHECKOUT": checkout, "PYTHONPATH": checkout}
    out = subprocess.run([sys.executable, str(HERE), "--runs-json", case, "--reps", str(reps)],
                         env=env, check=True, capture_output=True, text=True)
    result: dict[str, float | None] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.4f}"


def report(reps: int, before: str | None, paired: int = 2000) -> str:
    """The tables of every case (markdown)."""
    out = [f"epsilon {EPS}, delta {DELTA:g}, {NKEYS} keys (Zipf 1.5 sizes), "
           f"exact expectations; runs: mean of {reps}"]
    for case in ("row", "user-rows", "user-k3", "row-sum"):
        out += [f"\n### {case}\n",
                "| rule | parameters | recall (exact) | MAE (exact) | recall (runs) | MAE (runs) |",
                "| --- | --- | --- | --- | --- | --- |"]
        runs: dict[str, dict[str, float | None]] = {"dpframe (this branch)":
                                                    measure_runs(case, reps)}
        if before and case != "row-sum":  # the coin rule's own runs (its selection of sums
            runs[COIN] = before_runs(case, reps, before)  # is unchanged)
        od = None if case == "row-sum" else opendp_runs(case, reps)
        if od is not None:
            runs[OPENDP_AS_RUN], runs[OPENDP_FIXED] = od[1], od[2]
        rows = exact_rows(case)
        for name, params, e in rows:
            r = runs.get(name, {})
            out.append(f"| {name} | {params} | {e.recall:.4f} | {fmt(e.mae)} | "
                       f"{fmt(r.get('recall'))} | {fmt(r.get('mae'))} |")
        if od is not None:
            out.append(f"\nOpenDP 0.16: smallest threshold its map accepts = {od[0]} (a key "
                       "is released when its noisy count is >= the threshold).")
        if case in ("row", "user-k3"):
            out.append(coin_report(case, paired))
        if case == "row":
            TARGETS.extend(_row_targets(rows))
        elif case != "row-sum":
            TARGETS.extend(_user_targets(case, rows))
    return "\n".join(out)


#: The issue-32 targets this section measured (filled by :func:`section`).
TARGETS: list[dict[str, Any]] = []


def _against_best_peer(rows: list[tuple[str, str, Expected]]
                       ) -> tuple[Expected, float, float]:
    """dpframe's expectations, and the best peer's recall and released-count MAE."""
    ours = next(e for n, _, e in rows if n == "dpframe (this branch)")
    peers = [e for n, _, e in rows if n in (OPENDP_FIXED, "PipelineDP truncated geometric "
                                                          "(re-impl.)")]
    return (ours, max(e.recall for e in peers),
            min(e.mae for e in peers if e.mae is not None))


def _row_targets(rows: list[tuple[str, str, Expected]]) -> list[dict[str, Any]]:
    """Item c at row level: recall >= the best peer's, released-count MAE <= the best peer's
    (peers at a true delta <= 1e-6; exact expectations)."""
    ours, best_recall, best_mae = _against_best_peer(rows)
    return [
        {"item": "c", "target": "row-level key selection: recall >= best peer",
         "measured": f"{ours.recall:.4f} vs {best_recall:.4f}",
         "met": ours.recall >= best_recall},
        {"item": "c", "target": "row-level key selection: released-count MAE <= best peer",
         "measured": f"{ours.mae:.4f} vs {best_mae:.4f}",
         "met": ours.mae is not None and ours.mae <= best_mae + 1e-9},
    ]


def _user_targets(case: str, rows: list[tuple[str, str, Expected]]) -> list[dict[str, Any]]:
    """Item c at user level: recall and released-count MAE within 3% of the best peer's."""
    ours, best_recall, best_mae = _against_best_peer(rows)
    return [
        {"item": "c", "target": f"user-level key selection ({case}): recall >= 0.97 x best peer",
         "measured": f"{ours.recall:.4f} vs {best_recall:.4f}",
         "met": ours.recall >= 0.97 * best_recall},
        {"item": "c", "target": f"user-level key selection ({case}): released-count MAE <= "
                                "1.03 x best peer",
         "measured": f"{ours.mae:.4f} vs {best_mae:.4f}",
         "met": ours.mae is not None and ours.mae <= 1.03 * best_mae},
    ]


def section(quick: bool = False) -> str:
    """The page's section (accuracy page convention): quick runs 1 release per case."""
    TARGETS.clear()
    reps = 1 if quick else 5
    body = report(reps, None, 200 if quick else 2000)
    head = ("## Key selection (`keys=\"private\"`)\n\n"
            f"`python benchmarks/accuracy/bench_selection.py --reps {reps}` (issue 32, item c). "
            "Synthetic data (seed 0): 10,000 keys whose sizes follow a Zipf law (exponent "
            "1.5, clipped at 5,000). **Recall** is the fraction of true keys released; **MAE** "
            "the mean absolute error of the released counts (over the released keys). The "
            "*exact* columns are expectations over the noise from each rule's release "
            "probability per key size (no Monte Carlo error: the numbers to compare); the "
            "*runs* columns average real releases (dpframe, and OpenDP when importable). "
            "PipelineDP's truncated-geometric selection is re-implemented (its recurrence). "
            "`--before <checkout of the previous rule>` adds the runs of the coin rule.\n\n"
            "**The rule.** Where the count is released, dpframe releases a key when its "
            "noisy count (discrete Laplace at the whole epsilon) is >= the smallest threshold "
            "whose true delta is <= delta, with no boundary coin: OpenDP's stability "
            "histogram at its true delta, so the two tie on both metrics on any data. The "
            "coin (admitting keys at threshold - 1 with the probability the slack delta "
            "allows) is the most recall any rule on this noisy count can have (Neyman-"
            "Pearson), but it raises the released-count MAE wherever key sizes thin out as "
            "they grow, as here: a trade, not a gain, so it is kept only for separate "
            "selections (sums, means), whose released values have their own noise. No "
            "post-processing of the released count helps without betting on the data's "
            "shape (derivation: `dpframe/core/selection.py`); the measurements below.\n")
    lines = [f"* {t['target']}: {t['measured']} — **{'met' if t['met'] else 'not met'}**"
             for t in TARGETS]
    return f"{head}\n{body}\n\nTargets (item c, exact expectations):\n\n" + \
        "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--before", help="a checkout of dpframe with the boundary coin to run")
    ap.add_argument("--peers", help="a directory holding opendp (pip install --target)")
    ap.add_argument("--paired", type=int, default=2000,
                    help="paired runs (with and without the boundary coin)")
    ap.add_argument("--section", action="store_true", help="print the page's section")
    ap.add_argument("--runs-json", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.peers:
        sys.path.append(a.peers)
    if a.runs_json:
        print(json.dumps(measure_runs(a.runs_json, a.reps)))
        return
    if a.section:
        print(section())
        return
    print(report(a.reps, a.before, a.paired))


if __name__ == "__main__":
    main()
