"""Private-key counts where a unit has several rows per key (issue 47, item 8).

With ``max_rows_per_group=R`` declared, a lone count of rows is thresholded itself (the
stability histogram of OpenDP's ``make_count_by``: the count's geometric noise of scale
``min(T, k R) / epsilon`` at the whole epsilon, a key released when its noisy count clears the
least ``tau`` with ``k' P[R + Z >= tau] <= delta``) where the public rule of
``core/plan.py::_rows_beat_units`` prefers it to a split (half of epsilon selecting by units,
half counting: noise of scale ``2 min(T, k R) / epsilon``).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf

EPS, DELTA = 1.0, 1e-6


def _frame() -> pd.DataFrame:
    """40 keys of 1,000 units with 2 rows each: every key far above any threshold."""
    units = np.arange(40_000)
    return pd.DataFrame({"u": np.repeat(units, 2), "g": np.repeat(units % 40, 2)})


def _session(seed: int = 0, relation: str = "add_remove") -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(1e6, 0.5, seed=seed, neighbouring=relation)


def _plan(**opts: object) -> dict[str, object]:
    share = opts.pop("selection_share", None)
    priv = _frame().dp(_session(), privacy_unit="u", **opts)
    kw = {} if share is None else {"selection_share": share}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan: dict[str, object] = priv.explain("count", by="g", keys="private", epsilon=EPS,
                                               delta=DELTA, **kw)
    return plan


def _least_tau(scale: float, reach: int, keys: int) -> int:
    """The least tau with keys * P[reach + Z >= tau] <= DELTA (floats; a margin of 1e-9)."""
    p = math.exp(-1 / scale)
    tau = reach + 1
    while keys * p ** (tau - reach) / (1 + p) > DELTA * (1 - 1e-9):
        tau += 1
    return tau


@pytest.mark.parametrize("relation,keys,l1", [("add_remove", 4, 12)])
def test_rows_are_thresholded_at_reach_r(relation: str, keys: int, l1: int) -> None:
    priv = _frame().dp(_session(0, relation), privacy_unit="u", max_groups_per_unit=4,
                       max_rows_per_group=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = priv.explain("count", by="g", keys="private", epsilon=EPS, delta=DELTA)
    sel = plan["key_selection"]
    assert sel["released_count_is_thresholded"] is True
    assert sel["epsilon"] == EPS and sel["noise_scale"] == l1 / EPS
    assert plan["measures"][0]["noise_scale"] == l1 / EPS  # one noise, spent once
    assert sel["threshold"] == _least_tau(l1 / EPS, 3, keys)
    assert sel["delta_used"] <= DELTA
    if relation == "add_remove":
        assert sel["threshold"] == 178


@pytest.mark.parametrize("opts", [
    {"max_groups_per_unit": 4, "max_rows_per_group": 3, "selection_share": 0.5},  # asked
    {"max_rows_per_unit": 200, "max_groups_per_unit": 10},  # R not declared (= T)
    {"max_groups_per_unit": 4, "max_rows_per_group": 10},  # the midpoint rule: units win
])
def test_split_stays_where_asked_or_units_win(opts: dict[str, object]) -> None:
    plan = _plan(**opts)
    sel = plan["key_selection"]
    assert sel["released_count_is_thresholded"] is False  # type: ignore[index]
    assert sel["epsilon"] == EPS / 2  # type: ignore[index]


def test_released_counts_carry_the_whole_epsilon_noise() -> None:
    """40 keys x 12 seeds far above the threshold: every key released, the errors are the
    count's noise. Their mean absolute value is E|Z| = 2p / (1 - p^2) (11.99 at scale 12),
    within 5 standard errors (sd(|Z|) <= 12.1, n = 480: 2.8); the split's scale 24 (E|Z| 24)
    is told apart."""
    df = _frame()
    truth = df.groupby("g").size()
    errs = []
    for seed in range(12):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = df.dp(_session(seed), privacy_unit="u", max_groups_per_unit=4,
                        max_rows_per_group=3).groupby("g", keys="private").count(
                epsilon=EPS, delta=DELTA)
        assert len(out) == 40 and out.attrs["dp"]["key_selection"][
            "released_count_is_thresholded"]
        errs.append(out.to_numpy() - truth.loc[out.index].to_numpy())
    mae = float(np.abs(np.concatenate(errs)).mean())
    p = math.exp(-1 / 12)
    want = 2 * p / (1 - p * p)
    tol = 5 * 12.1 / math.sqrt(480)
    assert abs(mae - want) <= tol
    assert abs(mae - 2 * p ** 0.5 / (1 - p)) > tol  # E|Z| at scale 24


def test_one_sided_key_delta_is_at_reach_r() -> None:
    """The threshold is the least whose one-sided keys (R rows each, k' of them) stay within
    delta: one lower would exceed it; computed for one row (reach 1) it would be 2 lower and
    spend more than delta (the audit's broken control, finding 79)."""
    sel = _plan(max_groups_per_unit=4, max_rows_per_group=3)["key_selection"]
    tau = int(sel["threshold"])  # type: ignore[index]
    p = math.exp(-1 / 12)
    assert 4 * p ** (tau - 3) / (1 + p) <= DELTA < 4 * p ** (tau - 4) / (1 + p)
    assert 4 * p ** (tau - 2 - 3) / (1 + p) > DELTA


def test_no_key_hint_speaks_of_rows() -> None:
    df = pd.DataFrame({"u": [1, 1, 2], "g": ["a", "a", "b"]})
    with pytest.warns(dpf.NoKeysReleasedWarning, match="noisy count of rows"):
        df.dp(_session(), privacy_unit="u", max_groups_per_unit=4,
              max_rows_per_group=3).groupby("g", keys="private").count(epsilon=EPS,
                                                                       delta=DELTA)


def test_change_one_rows_rule_doubles_l1_and_keys() -> None:
    """Under change_one the thresholded count has L1 2 min(T, k R) and 2k one-sided keys (the
    public rule then prefers the split at these parameters)."""
    from fractions import Fraction

    from dpframe.core.plan import thresholded_count_selection
    from dpframe.core.query import Measure, Query
    from dpframe.core.sensitivity import contribution

    q = Query((Measure("count"),), Fraction(1), Fraction(1, 10**6), by=("g",),
              private_keys=True, privacy_unit="u", max_groups_per_unit=4, max_rows_per_group=3)
    sel = thresholded_count_selection(q, "change_one", contribution(None, 4, 3, True))
    assert sel.released_count and sel.noise is not None and sel.noise.scale == 24
    assert sel.threshold == _least_tau(24.0, 3, 8)
    plan = _frame().dp(_session(0, "change_one"), privacy_unit="u", max_groups_per_unit=4,
                       max_rows_per_group=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = plan.explain("count", by="g", keys="private", epsilon=EPS, delta=DELTA)
    assert d["key_selection"]["released_count_is_thresholded"] is False
