"""The two-stage Gaussian mean (dpframe/core/two_stage.py): a pilot at a tenth of rho, stage 2
split by the pilot's values, the stages combined by inverse variance, Theorem T's interval.

Coverage by seeded simulation through ``TwoStage.draw`` (the release's own draws); tolerance 4
standard errors of a proportion over the groups."""

from __future__ import annotations

import dataclasses
import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core.aggregates.mean import MeanParams
from dpframe.core.intervals import mean_estimate
from dpframe.core.noise.rng import RandomSource
from dpframe.core.plan import plan_query
from dpframe.core.sensitivity import contribution, count_sensitivity, sum_sensitivity
from dpframe.core.two_stage import (
    PILOT_SHARE,
    SPLITS,
    TwoStage,
    _dominated,
    _rho,
    two_stage_interval,
)

LEVEL = 0.95
BOUNDS = (0.0, 10.0)
GROUPS = 4000


def _plan(epsilon: float = 1.0, delta: float = 1e-6, relation: str = "add_remove",
          **unit: int) -> tuple[TwoStage, Fraction, object]:
    frame = pd.DataFrame({"g": [0], "x": [0.0], "u": [0]})
    opts: dict[str, object] = {"bounds": {"x": BOUNDS}, "keys": {"g": [0, 1]}}
    if unit:
        opts.update(privacy_unit="u", **unit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        priv = frame.dp(dpf.Session(100, 0.5, neighbouring=relation, seed=1), **opts)
    query = priv.query("mean", "x", by="g", epsilon=epsilon, delta=delta,
                       mechanism="gaussian")
    plan = plan_query(query, relation, {"g": "int", "x": "float", "u": "int"})
    mp = plan.measures[0]
    assert isinstance(mp.params, MeanParams) and mp.params.two_stage is not None
    return mp.params.two_stage, mp.requests[0].unit, plan


@pytest.mark.parametrize("relation", ["add_remove", "change_one"])
@pytest.mark.parametrize("unit", [{}, {"max_rows_per_unit": 3, "max_groups_per_unit": 2,
                                       "max_rows_per_group": 2}])
def test_plan_spends_rho_once_with_todays_sensitivities(relation: str,
                                                         unit: dict[str, int]) -> None:
    """The pilot gets a tenth of rho, stage 2 the rest under every candidate split; the
    sensitivities are today's (L2 of a grouped centred sum and count, T, k, R); every
    candidate is dominated by the parts the event states, and none is dropped."""
    ts, _, plan = _plan(relation=relation, **unit)
    mp = plan.measures[0]  # type: ignore[attr-defined]
    req = mp.requests[0]
    c = contribution(*((unit["max_rows_per_unit"], unit["max_groups_per_unit"],
                        unit["max_rows_per_group"]) if unit else (1, 1, 1)), grouped=True)
    s_sum = sum_sensitivity(relation, req.ilo * req.unit, req.ihi * req.unit, c, True)
    s_cnt = count_sensitivity(relation, c, True)
    for a, b in [(ts.pilot_sum, ts.pilot_count), *ts.candidates]:
        assert a.sensitivity == s_sum.l2 and b.sensitivity == s_cnt.l2
    if unit and relation == "add_remove":  # T = 3 rows as 2 + 1 over k = 2 groups: sqrt(5) h
        assert float(s_sum.l2) == pytest.approx(math.sqrt(5) * 5, rel=1e-5)
    assert ts.pilot_sum.rho == ts.pilot_count.rho == ts.rho * PILOT_SHARE / 2
    assert len(ts.candidates) == SPLITS
    stated = ts.candidates[ts.stated]
    assert _rho((ts.pilot_sum, ts.pilot_count)) + _rho(stated) <= ts.rho
    for cand in ts.candidates:
        assert _dominated(cand, stated) and _rho(cand) <= _rho(stated)
    # the event states the pilot and the stated candidate: the accountant sees exactly these
    assert list(mp.mechanisms) == ["pilot_sum", "pilot_count", "sum", "count"]
    assert (mp.mechanisms["sum"], mp.mechanisms["count"]) == stated
    assert plan.cost.event is not None  # type: ignore[attr-defined]


def test_a_candidate_with_more_rho_is_not_dominated() -> None:
    """The domination check fails a candidate whose noise is smaller (the check can fail)."""
    ts, _, _ = _plan()
    a, b = ts.candidates[ts.stated]
    smaller = dataclasses.replace(b, int_sigma2=b.int_sigma2 * Fraction(99, 100))
    assert not _dominated((a, smaller), (a, b))


def test_split_follows_lemma_s() -> None:
    """Stage 2 alone: the count's share minimising ``sigma_s^2 + r^2 sigma_c^2`` is u / (1 + u),
    u = |r| D_c / D_s, within a grid step (the least share at r = 0, a half at |r| = h under
    add_remove). The pick, which counts the pilot's count too, never takes more."""
    ts, _, _ = _plan()
    h = ts.h
    assert ts.pick(0.0, math.inf) == 0
    assert ts.shares[ts.pick(h * h, math.inf)] == ts.shares[-1] == Fraction(1, 2)
    d_s, d_c = float(ts.pilot_sum.sensitivity), float(ts.pilot_count.sensitivity)
    step = float(ts.shares[-1]) / (SPLITS - 1)
    for r in (0.5, 1.5, 2.5, 4.0):
        alone = int(np.argmin([a.std ** 2 + r * r * b.std ** 2 for a, b in ts.candidates]))
        u = r * d_c / d_s
        assert abs(float(ts.shares[alone]) - u / (1 + u)) <= step
        assert ts.pick(r * r, math.inf) <= alone


def _draw(ts: TwoStage, unit: Fraction, n: int, mean: float, seed: int
          ) -> tuple[np.ndarray, ...]:
    mid, g = sum(BOUNDS) / 2, float(unit)
    exact_sum = np.full(GROUPS, round(n * (mean - mid) / g), dtype=np.int64)
    got = ts.draw(exact_sum, np.full(GROUPS, n, dtype=np.int64), unit,
                  RandomSource(seed, warn=False))
    s, c = ts.combine(got.s1, got.c1, got.s2, got.c2, got.split)
    est = mean_estimate(s, c, BOUNDS) - mid
    return got.s1, got.c1, got.s2, got.c2, got.split, est


def _coverage(ts: TwoStage, unit: Fraction, n: int, mean: float, seed: int,
              interval_plan: TwoStage | None = None) -> float:
    s1, c1, s2, c2, j, est = _draw(ts, unit, n, mean, seed)
    lo, hi = two_stage_interval(interval_plan or ts, s1, c1, s2, c2, j, LEVEL, est)
    r = mean - sum(BOUNDS) / 2
    return float(np.mean((lo <= r) & (r <= hi)))


@pytest.mark.parametrize(("n", "mean"), [(3, 9.0), (40, 7.3), (40, 5.0), (2000, 1.2)])
def test_interval_covers_the_level(n: int, mean: float) -> None:
    """Theorem T: exact coverage at the truth (up to the discrete noise); at n = 3 the interval
    is mostly the whole bounds, so it may cover more, never less."""
    ts, unit, _ = _plan()
    se = math.sqrt(LEVEL * (1 - LEVEL) / GROUPS)
    cov = _coverage(ts, unit, n, mean, seed=n + int(mean * 10))
    assert cov >= LEVEL - 4 * se, f"coverage {cov:.4f}"
    if n >= 40:
        assert cov <= LEVEL + 4 * se, f"coverage {cov:.4f}"


def test_interval_with_a_wrong_scale_fails_the_coverage_check() -> None:
    """The same check fails an interval computed with every noise scale halved (a plan at
    four times the rho): the tolerance has power."""
    ts, unit, _ = _plan()
    wrong, _, _ = _plan(epsilon=3.3)
    assert len(wrong.candidates) == len(ts.candidates)
    assert wrong.pilot_sum.std < 0.6 * ts.pilot_sum.std
    se = math.sqrt(LEVEL * (1 - LEVEL) / GROUPS)
    assert _coverage(ts, unit, 40, 7.3, seed=5, interval_plan=wrong) < LEVEL - 4 * se


def test_stages_combined_beat_the_pilot_and_stage_two_alone() -> None:
    """Inverse variance: the combined mean's error is below each stage's own."""
    ts, unit, _ = _plan()
    n, mean, mid = 200, 7.3, sum(BOUNDS) / 2
    s1, c1, s2, c2, _, est = _draw(ts, unit, n, mean, seed=11)
    truth = mean - mid

    def rmse(x: np.ndarray) -> float:
        return float(np.sqrt(np.mean((x - truth) ** 2)))

    alone1 = mean_estimate(s1, c1, BOUNDS) - mid
    alone2 = mean_estimate(s2, c2, BOUNDS) - mid
    assert rmse(est) < rmse(alone2) < rmse(alone1)


def _release(x: np.ndarray, ci: float | None = 0.95, **kw: object) -> pd.DataFrame:
    df = pd.DataFrame({"g": np.repeat(np.arange(200), x.size // 200), "x": x})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = dpf.Session(100, 1e-3, seed=4)
        return df.dp(s, bounds={"x": BOUNDS}, keys={"g": list(range(200))}).groupby(
            "g").mean("x", epsilon=1.0, delta=1e-6, mechanism="gaussian", ci=ci, **kw)


def test_release_states_both_stages_and_the_split_the_pilot_picked() -> None:
    """Provenance: the pilot's share, rho and scales, stage 2's range, the chosen split; data
    at the midpoint pick a small count share, data at a bound the most."""
    centred = _release(np.full(200 * 50, 5.0))
    m = centred.attrs["dp"]["measures"][0]
    two = m["two_stage"]
    assert two["pilot_share"] == 0.1 and two["pilot"]["rho"] == pytest.approx(0.1 * two["rho"])
    assert two["pilot"]["sum_noise_scale"] > 0 and two["pilot"]["count_noise_scale"] > 0
    lo_share, hi_share = two["stage2"]["count_share"]
    # about none for the count at r = 0 (a little more for its second-order term, 50 rows)
    assert lo_share <= m["released"]["stage2_count_share"] < 0.2
    at_bound = _release(np.full(200 * 50, 10.0)).attrs["dp"]["measures"][0]
    assert at_bound["released"]["stage2_count_share"] == hi_share == 0.5
    assert m["rho"] == pytest.approx(two["rho"])
    assert list(centred.columns) == ["x", "lower", "upper"]
    assert ((centred.lower <= centred.x) & (centred.x <= centred.upper)).all()


def test_dry_run_states_the_pilot_share_and_both_stages_scales() -> None:
    df = pd.DataFrame({"x": [1.0, 2.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = df.dp(dpf.Session(10, 1e-3, seed=1), bounds={"x": BOUNDS}).mean(
            "x", epsilon=1.0, delta=1e-6, mechanism="gaussian", dry_run=True)
    two = d["measures"][0]["two_stage"]
    assert two["pilot_share"] == 0.1
    assert two["pilot"]["sum_noise_scale"] > max(two["stage2"]["sum_noise_scale"])
    lo, hi = two["stage2"]["count_noise_scale"]
    assert 0 < lo < hi and two["stage2"]["count_share"] == [1 / 64, 0.5]


def test_pure_dp_mean_is_untouched() -> None:
    """Laplace-family means stay the K-norm joint release (no two stages)."""
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = df.dp(dpf.Session(10, seed=1), bounds={"x": BOUNDS}).mean("x", epsilon=1.0)
    m = out.attrs["dp"]["measures"][0]
    assert m["mechanism"] == "k-norm (box, joint)" and "two_stage" not in m


@pytest.mark.parametrize("frame", [pd.DataFrame({"x": pd.Series([], dtype=float)}),
                                   pd.DataFrame({"x": [np.nan, np.nan]}),
                                   pd.DataFrame({"x": [1e300, -1e300, 5.0]})])
def test_degenerate_data_release_noise_and_charge_the_stated_budget(frame: pd.DataFrame
                                                                   ) -> None:
    """Nothing raises after the charge: empty, all-missing and extreme columns release."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = dpf.Session(10, 1e-3, seed=2)
        out = frame.dp(s, bounds={"x": BOUNDS}).mean("x", epsilon=1.0, delta=1e-6,
                                                      mechanism="gaussian", ci=0.9)
    assert BOUNDS[0] <= float(out) <= BOUNDS[1]
    eps, delta = s.spent
    assert eps == pytest.approx(1.0) and delta == pytest.approx(1e-6)


def test_choose_never_raises() -> None:
    ts, _, _ = _plan()
    for s, c in ((np.array([]), np.array([])), (np.array([1e300]), np.array([1e300])),
                 (np.array([0.0]), np.array([0.0])), (np.array([-1e9, 1e9]), np.array([3, -2]))):
        assert 0 <= ts.choose(s, c) < len(ts.candidates)



def test_unit_level_grouped_release_uses_todays_l2_sensitivities() -> None:
    """A unit with T = 3 rows over k = 2 groups, R = 2: the pilot and stage 2 are calibrated to
    the exact L2 bounds (sqrt(5) rows of h for the sum, sqrt(5) for the count)."""
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"u": np.repeat(np.arange(300), 3), "g": rng.integers(0, 4, 900),
                       "x": rng.uniform(0, 10, 900)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = df.dp(dpf.Session(10, 1e-3, seed=5), bounds={"x": BOUNDS},
                    keys={"g": [0, 1, 2, 3]}, privacy_unit="u", max_rows_per_unit=3,
                    max_groups_per_unit=2, max_rows_per_group=2).groupby("g").mean(
            "x", epsilon=1.0, delta=1e-6, mechanism="gaussian", ci=0.9)
    m = out.attrs["dp"]["measures"][0]
    assert m["sensitivity"] == pytest.approx(math.sqrt(5) * 5, rel=1e-5)
    assert "two_stage" in m and len(out) == 4
    assert ((out.lower <= out.x) & (out.x <= out.upper)).all()


def test_gaussian_agg_means_use_two_stages_and_sums_do_not() -> None:
    """An agg shares no count with a Gaussian mean: its mean is two-stage, its sum one noise."""
    df = pd.DataFrame({"g": [0, 1] * 20, "x": np.linspace(0, 10, 40)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = df.dp(dpf.Session(10, 1e-3, seed=6), bounds={"x": BOUNDS},
                    keys={"g": [0, 1]}).groupby("g").agg({"x": ["sum", "mean"]}, epsilon=1.0,
                                                         delta=1e-6, mechanism="gaussian")
    sum_m, mean_m = out.attrs["dp"]["measures"]
    assert "two_stage" in mean_m and "released" in mean_m
    assert "two_stage" not in sum_m and "released" not in sum_m
