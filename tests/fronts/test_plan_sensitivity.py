"""Every docs/privacy.md sensitivity, read from dry-run plans under both neighbouring relations.

The oracle below is written from the docs/privacy.md table, independently of
``dpframe.core.sensitivity``: row unit with bounds [L, U], M = max(|L|, |U|), W = U - L, scaled by
the contribution bounds (R rows per unit and group, k groups per unit). A dry run charges
nothing, so these checks are exact and cheap; ``test_noise_spread.py`` checks that the noise
actually drawn follows the planned scale.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ._support import session

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")

RELATIONS = ("add_remove", "change_one")
EPS = 0.5
# dyadic bounds, so the fixed-point accumulation represents them exactly
BOUNDS = [(0.0, 10.0), (-10.0, 10.0), (-4.0, 10.0), (5.0, 10.0), (-10.0, -2.0), (-3.5, 2.25)]
UNITS = [(None, 1, 1), ("uid", 3, 1), ("uid", 3, 2), ("uid", 1, 2)]


def oracle(op: str, relation: str, lo: float = 0.0, hi: float = 1.0, rows: int = 1,
           groups: int = 1) -> tuple[float, int]:
    """(L1 sensitivity, coordinates a neighbour can move) from docs/privacy.md."""
    m, w = max(abs(lo), abs(hi)), hi - lo
    add = relation == "add_remove"
    if op == "count":
        return rows, 1
    if op in ("histogram", "groupby_count"):
        k = groups if op == "groupby_count" else 1
        return (rows * k, k) if add else (2 * rows * k, 2 * k)
    if op == "sum":
        if add:
            return rows * m, 1
        # docs/privacy.md: R * max(U - L, max(|L|, |U|)). A replaced unit's rows may also enter or
        # leave a filtered frame (as for the count), so one row can move the sum by M > U - L
        # when the bounds exclude 0 ([100, 101]: 101, not 1).
        return rows * max(w, m), 1
    if op == "groupby_sum":
        k = groups
        return (rows * k * m, k) if add else (rows * k * max(w, 2 * m), 2 * k)
    raise AssertionError(op)


def frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 60
    return pd.DataFrame({
        "x": rng.uniform(-20, 20, n),
        "n": rng.integers(-20, 20, n),
        "g": rng.choice(["a", "b", "c"], n),
        "uid": rng.integers(0, 20, n),
    })


def priv(relation: str, unit: str | None, rows: int, groups: int, bounds: tuple[float, float]):
    s = session(neighbouring=relation)
    kw = {} if unit is None else {"privacy_unit": unit, "max_rows_per_group": rows,
                                   "max_groups_per_unit": groups}
    return s, frame().dp(s, bounds={"x": bounds, "n": (-8, 8)},
                         keys={"g": ["a", "b", "c", "d"]}, **kw)


def _measure(plan: dict) -> dict:
    (m,) = plan["measures"]
    return m


def _check_real(m: dict, expected: float, changed: int) -> None:
    # granular noise: g = 2**-20 of the sensitivity (rounded down to a power of two); rounding
    # adds `changed` lattice steps to the integer sensitivity, at most changed * 2**-20 relative
    assert m["sensitivity"] == pytest.approx(expected, rel=1e-12)
    b = expected / EPS
    assert b <= m["noise_scale"] <= b * (1 + changed * 2.0**-20) * (1 + 1e-12)
    if changed <= 2:
        assert m["noise_scale"] <= b * (1 + 2.0**-19) * (1 + 1e-12)
    g = m["granularity"]
    assert math.log2(g) == int(math.log2(g)) and g <= expected * 2.0**-20


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize(("unit", "rows", "groups"), UNITS)
def test_count_scales(relation, unit, rows, groups):
    s, p = priv(relation, unit, rows, groups, (0.0, 10.0))
    exp, _ = oracle("count", relation, rows=rows)
    m = _measure(p.explain("count", epsilon=EPS))
    assert m["mechanism"] == "geometric" and m["granularity"] == 1.0
    assert m["noise_scale"] == exp / EPS
    m = _measure(p.explain("count", "x", epsilon=EPS))
    assert m["noise_scale"] == exp / EPS

    exp, _ = oracle("groupby_count", relation, rows=rows, groups=groups if unit else 1)
    m = _measure(p.explain("count", by="g", epsilon=EPS))
    assert m["noise_scale"] == exp / EPS

    exp, _ = oracle("histogram", relation, rows=rows)
    m = _measure(p.explain("histogram", "x", bins=[-20, -5, 0, 5, 20], epsilon=EPS))
    assert m["noise_scale"] == exp / EPS
    assert s.spent == (0.0, 0.0) and len(s.ledger) == 0


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize(("unit", "rows", "groups"), UNITS)
@pytest.mark.parametrize("bounds", BOUNDS)
def test_sum_scales(relation, unit, rows, groups, bounds):
    s, p = priv(relation, unit, rows, groups, bounds)
    exp, changed = oracle("sum", relation, *bounds, rows=rows)
    m = _measure(p.explain("sum", "x", epsilon=EPS))
    assert m["mechanism"] == "granular laplace"
    _check_real(m, exp, changed)

    exp, changed = oracle("groupby_sum", relation, *bounds, rows=rows,
                          groups=groups if unit else 1)
    m = _measure(p.explain("sum", "x", by="g", epsilon=EPS))
    _check_real(m, exp, changed)
    assert s.spent == (0.0, 0.0) and len(s.ledger) == 0


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize(("unit", "rows", "groups"), UNITS)
def test_integer_sum_scales(relation, unit, rows, groups):
    """Integer columns: geometric noise on the exact integer sum, scale = L1 / eps exactly."""
    _, p = priv(relation, unit, rows, groups, (0.0, 10.0))
    exp, _ = oracle("sum", relation, -8, 8, rows=rows)
    m = _measure(p.explain("sum", "n", epsilon=EPS))
    assert m["mechanism"] == "geometric" and m["granularity"] == 1.0
    assert m["noise_scale"] == exp / EPS
    exp, _ = oracle("groupby_sum", relation, -8, 8, rows=rows, groups=groups if unit else 1)
    m = _measure(p.explain("sum", "n", by="g", epsilon=EPS))
    assert m["noise_scale"] == exp / EPS


def test_integer_bounds_are_rounded_inwards():
    """An integer column clamped to [0.5, 9.5] can only hold 1..9: M = 9, not 9.5."""
    s = session()
    p = frame().dp(s, bounds={"n": (0.5, 9.5)})
    m = _measure(p.explain("sum", "n", epsilon=EPS))
    assert m["noise_scale"] == 9 / EPS


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize(("unit", "rows", "groups"), UNITS)
@pytest.mark.parametrize("bounds", [(0.0, 10.0), (-4.0, 10.0), (5.0, 10.0)])
def test_mean_scales(relation, unit, rows, groups, bounds):
    """Mean: one K-norm release of the sum of (x - midpoint) and the count (box K, at the
    whole epsilon), the box's half-widths the count's sensitivity and the centred sum's:
    ``S h`` under add_remove, ``2 S h`` under change_one (``S`` the unit's rows), which is the
    sum oracle's over ``[-h, h]``."""
    lo, hi = bounds
    half = (hi - lo) / 2
    _, p = priv(relation, unit, rows, groups, bounds)
    m = _measure(p.explain("mean", "x", epsilon=EPS))
    cnt, _ = oracle("count", relation, rows=rows)
    sm, changed = oracle("sum", relation, -half, half, rows=rows)
    assert m["mechanism"] == "k-norm (box, joint)" and m["epsilon"] == EPS
    assert m["joint"]["coordinates"]["count:x"]["sensitivity"] == cnt
    assert m["sensitivity"] == pytest.approx(sm, rel=1e-12)
    # epsilon' = epsilon / (1 + changed / D) - 2**-40, D = Delta / g >= 2**20
    assert cnt / EPS <= m["count_noise_scale"] <= cnt / EPS * (1 + changed * 2.0**-19)
    b = sm / EPS
    assert b <= m["noise_scale"] <= b * (1 + changed * 2.0**-19) * (1 + 1e-12)

    k = groups if unit else 1
    m = _measure(p.explain("mean", "x", by="g", epsilon=EPS))
    cnt, _ = oracle("groupby_count", relation, rows=rows, groups=k)
    sm, changed = oracle("groupby_sum", relation, -half, half, rows=rows, groups=k)
    assert m["joint"]["coordinates"]["count:x"]["sensitivity"] == cnt
    assert cnt / EPS <= m["count_noise_scale"] <= cnt / EPS * (1 + changed * 2.0**-19)
    assert m["sensitivity"] == pytest.approx(sm, rel=1e-12)


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize(("agg", "q", "add", "change"), [
    ("max", 1.0, 1, 1), ("min", 0.0, 1, 1), ("median", 0.5, 1, 2), ("quantile", 0.25, 3, 4),
])
@pytest.mark.parametrize(("unit", "rows", "groups"), UNITS)
def test_quantile_plans(relation, agg, q, add, change, unit, rows, groups):
    """Max / min / quantiles: exponential mechanism over 2**16 cells of the bounds, never
    Laplace.

    The utility -max(0, d #below - q_n n, q_n n - d (#below + #in)) (minus the distance from
    q n to a cell's ranks, scaled by q's denominator d to stay integral) moves by
    max(q_n, d - q_n) when a row is added or removed and by d when one is replaced.
    """
    _, p = priv(relation, unit, rows, groups, (0.0, 120.0))
    call = {"max": lambda **kw: p.max("x", **kw), "min": lambda **kw: p.min("x", **kw),
            "median": lambda **kw: p.median("x", **kw),
            "quantile": lambda **kw: p.quantile("x", q, **kw)}[agg]
    m = _measure(call(epsilon=EPS, dry_run=True))
    assert m["mechanism"].startswith("exponential")
    assert "noise_scale" not in m
    assert m["candidates"] == 1 << 16 and m["grid_step"] == pytest.approx(120 / (1 << 16))
    per = add if relation == "add_remove" else change
    assert m["utility_sensitivity"] == per * rows


@pytest.mark.parametrize("relation", RELATIONS)
def test_private_key_selection_plan(relation):
    """Key selection of a count of rows (3 rows per unit: not the unit count): a separate
    truncated-geometric selection at per-key budget (eps_sel / k', delta / k'), k' = k
    (add_remove) or 2k (change_one), half of epsilon by default; its probabilities reach 1
    where the recurrence of Desfontaines et al. (2022) does. Under change_one (k' = 4) the
    Gaussian threshold (L2 sqrt(k') = 2) releases keys from fewer units: it is chosen (issue
    44), its threshold below the half-probability count of the truncated geometric. A given
    ``selection_share`` asks for this split (without it the planner may threshold the count
    of rows itself: issue 47, tests/core/test_rows_stability.py)."""
    s, p = priv(relation, "uid", 3, 2, (0.0, 10.0))
    plan = p.explain("count", by="g", keys="private", epsilon=1.0, delta=1e-6, selection_share=0.5)
    sel = plan["key_selection"]
    k = 2 if relation == "add_remove" else 4
    assert sel["epsilon"] == 0.5
    assert sel["released_count_is_thresholded"] is False
    eps, d = 0.5 / k, 1e-6 / k
    pi, n, half = 0.0, 0, None
    while pi < 1.0:
        rest = 1 - pi - d
        pi = min(1.0, math.exp(eps) * pi + d, 1 - math.exp(-eps) * rest if rest > 0 else 1.0)
        n += 1
        half = n if half is None and pi >= 0.5 else half
    if relation == "add_remove":
        assert sel["mechanism"] == "truncated geometric key selection"
        assert abs(sel["threshold"] - n) <= 1
    else:
        assert sel["mechanism"].startswith("Gaussian threshold")
        assert sel["l2_sensitivity"] == pytest.approx(2.0) and sel["threshold"] < half - 1
    m = _measure(plan)
    cnt, _ = oracle("groupby_count", relation, rows=3, groups=2)
    assert m["noise_scale"] == cnt / 0.5
    assert s.spent == (0.0, 0.0)


@pytest.mark.parametrize("relation", RELATIONS)
def test_agg_splits_epsilon_by_weight(relation):
    _, p = priv(relation, None, 1, 1, (-10.0, 10.0))
    plan = p.explain("agg", {"x": ["sum", "mean"], "n": "sum"}, by="g", epsilon=1.2,
                     weights=[2, 1, 1])
    assert plan["charge_epsilon"] == 1.2
    eps = [m["epsilon"] for m in plan["measures"]]
    assert eps == pytest.approx([0.6, 0.3, 0.3])
    exp, _ = oracle("groupby_sum", relation, -10, 10)
    assert plan["measures"][0]["noise_scale"] == pytest.approx(exp / 0.6, rel=2.0**-18)
