"""Contribution bounds T (rows of a unit in the whole release), k (groups) and R (rows in one
group): the sensitivities of every subset, and the bounding that enforces them.

The table is written from docs/privacy.md by hand (grouped sum: L1 = min(T, k R) M, L2 <= min(T,
sqrt(k) R) M; change_one from the two moves). The property tests bound a worst-case unit
(every row at the extreme value, spread over many groups) with each backend's selection and
check that it never moves the exact aggregate by more than the planned sensitivity.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpframe.core.exact.bounding import bound_contributions, select_by_priority
from dpframe.core.exact.compute import NO_GROUP_LIMIT
from dpframe.core.plan import enforced_bounds
from dpframe.core.query import Measure, Query
from dpframe.core.sensitivity import (
    contribution,
    count_sensitivity,
    key_selection_sensitivity,
    quantile_group_share,
    quantile_utility_sensitivity,
    sum_sensitivity,
)

F = Fraction
LO, HI = F(0), F(10)  # M = 10, width = 10

# (T, k, R) -> grouped sum add_remove (L1, L2, Linf, changed), change_one (L1, L2). change_one's
# L2 is the exact supremum (issue 47): with M = width = 10 a group left by R rows at 10 and
# another joined by R rows at 10 (2 M**2 R**2 = 200 R**2) beat one group whose R rows move
# from 0 to 10 (width**2 R**2 = 100 R**2); T = 10 alone: sqrt(2) * 100 (200 before), T = 5 with
# R = 2: groups of 2, 2 and 1 rows each side, sqrt(200 * 9) (60 and 2 sqrt(600) before).
GROUPED_SUM = [
    ((10, None, None), (100, 100, 100, 10), (200, 100 * math.sqrt(2))),
    ((10, 3, None), (100, 100, 100, 3), (200, 100 * math.sqrt(2))),
    ((None, 3, 2), (60, 10 * 2 * math.sqrt(3), 20, 3), (120, 2 * math.sqrt(3 * 200))),
    ((5, 3, 2), (50, 30, 20, 3), (100, math.sqrt(1800))),
    ((None, None, 2), (20, 20, 20, 1), (40, 2 * math.sqrt(200))),
    ((5, None, 2), (50, 30, 20, 5), (100, math.sqrt(1800))),
    ((1, 4, 3), (10, 10, 10, 1), (20, math.sqrt(200))),
    ((7, 2, 2), (40, 10 * 2 * math.sqrt(2), 20, 2), (80, 2 * math.sqrt(400))),
]


@pytest.mark.parametrize("tkr,add,change", GROUPED_SUM)
def test_grouped_sum_sensitivity_table(tkr, add, change) -> None:
    c = contribution(*tkr, grouped=True)
    s = sum_sensitivity("add_remove", LO, HI, c, True)
    l1, l2, linf, changed = add
    assert float(s.l1) == l1 and float(s.linf) == linf and s.changed == changed
    assert float(s.l2) == pytest.approx(l2, rel=1e-8) and float(s.l2) >= l2 - 1e-9
    s = sum_sensitivity("change_one", LO, HI, c, True)
    assert float(s.l1) == change[0]
    assert float(s.l2) == pytest.approx(change[1], rel=1e-8) and float(s.l2) >= change[1] - 1e-9
    # docs/privacy.md's bound holds (ours may be tighter): L2 <= min(T, sqrt(k) R) M
    privacy_md = min(c.cap, math.sqrt(c.groups_per_unit) * c.rows_per_group) * 10
    assert float(sum_sensitivity("add_remove", LO, HI, c, True).l2) <= privacy_md + 1e-6


# (T, k, R) -> ungrouped rows, grouped count (L1, L2, Linf) add_remove and change_one L1, L2,
# key selection groups, quantile rows
COUNTS = [
    ((10, None, None), 10, (10, 10, 10), (20, 10 * math.sqrt(2)), 10, 10),
    ((10, None, 2), 2, (10, math.sqrt(20), 2), (20, math.sqrt(40)), 10, 2),
    ((5, 3, 2), 2, (5, 3, 2), (10, math.sqrt(18)), 3, 2),
    ((None, 3, 2), 2, (6, 2 * math.sqrt(3), 2), (12, 2 * math.sqrt(6)), 3, 2),
    ((3, 8, None), 3, (3, 3, 3), (6, 3 * math.sqrt(2)), 3, 3),
    ((None, None, 4), 4, (4, 4, 4), (8, 4 * math.sqrt(2)), 1, 4),
]


@pytest.mark.parametrize("tkr,ungrouped,add,change,keys,qrows", COUNTS)
def test_count_key_and_quantile_sensitivity_table(tkr, ungrouped, add, change, keys,
                                                  qrows) -> None:
    u = contribution(*tkr, grouped=False)
    assert float(count_sensitivity("add_remove", u, False).l1) == ungrouped
    assert float(count_sensitivity("change_one", u, False).l1) == ungrouped
    # ungrouped sums: rows * M, rows * max(W, M)
    assert sum_sensitivity("add_remove", LO, HI, u, False).l1 == ungrouped * 10
    g = contribution(*tkr, grouped=True)
    s = count_sensitivity("add_remove", g, True)
    assert (float(s.l1), float(s.linf)) == (add[0], add[2])
    assert float(s.l2) == pytest.approx(add[1], rel=1e-8) and float(s.l2) >= add[1] - 1e-9
    s = count_sensitivity("change_one", g, True)
    assert float(s.l1) == change[0]
    assert float(s.l2) == pytest.approx(change[1], rel=1e-8)
    assert key_selection_sensitivity("add_remove", g).l1 == keys
    assert key_selection_sensitivity("change_one", g).l1 == 2 * keys
    assert quantile_utility_sensitivity("add_remove", F(1, 2), g) == qrows
    assert quantile_utility_sensitivity("add_remove", F(1, 2), u) == ungrouped
    # grouped quantiles: each group's exponential mechanism gets eps * R / T (eps / k when
    # T = k R, as before T existed), half that under change_one
    assert quantile_group_share("add_remove", g) == F(g.rows_per_group, add[0])
    assert quantile_group_share("change_one", g) == F(g.rows_per_group, 2 * add[0])


def test_contribution_needs_a_rows_bound() -> None:
    with pytest.raises(ValueError):
        contribution(None, 3, None, grouped=True)


def _query(t, k, r, by=("g",)) -> Query:
    return Query((Measure("count"),), F(1), by=by, keys={"g": (0,)} if by else {},
                 privacy_unit="u", max_rows_per_unit=t, max_groups_per_unit=k,
                 max_rows_per_group=r)


@pytest.mark.parametrize("tkr,want", [
    ((10, None, None), (10, NO_GROUP_LIMIT, 10)),
    ((10, 3, None), (10, 3, 10)),
    ((10, 20, None), (10, NO_GROUP_LIMIT, 10)),
    ((None, 3, 2), (2, 3, None)),
    ((5, 3, 2), (2, 3, 5)),
    ((6, 3, 2), (2, 3, None)),       # T = k R: the total step cannot bind
    ((None, None, 2), (2, 1, None)),  # R alone: one group, as before T existed
    ((1, None, None), (1, NO_GROUP_LIMIT, 1)),
])
def test_enforced_bounds(tkr, want) -> None:
    q = _query(*tkr)
    c = contribution(*tkr, grouped=True)
    assert enforced_bounds(q, c) == want
    ungrouped = _query(*tkr, by=())
    rows = min(b for b in (tkr[0], tkr[2]) if b is not None)
    assert enforced_bounds(ungrouped, contribution(*tkr, grouped=False)) == (rows, 1, None)


# -- bounding enforces every bound, with both selections ---------------------------------------

bounds = st.tuples(st.one_of(st.none(), st.integers(1, 6)),
                   st.one_of(st.none(), st.integers(1, 4)),
                   st.one_of(st.none(), st.integers(1, 4))).filter(
                       lambda b: b[0] is not None or b[2] is not None)


def _unit_rows(draw_groups: list[int], n_units: int) -> tuple[np.ndarray, np.ndarray]:
    groups = np.asarray(draw_groups, dtype=np.int64)
    units = np.arange(groups.size, dtype=np.int64) % n_units
    return units, groups


def _bounded(units, groups, tkr, gen, how: str) -> np.ndarray:
    q = _query(*tkr)
    rows, k, total = enforced_bounds(q, contribution(*tkr, grouped=True))
    if how == "pandas":
        return bound_contributions(units, groups, rows, k, gen, total)
    row = gen.integers(0, 2**64, units.size, dtype=np.uint64)
    pair = _pair_prio(units, groups, int(gen.integers(1 << 62)))
    if how == "priority":
        return select_by_priority(units, groups, pair, row, k, rows, total)
    # pre-selection in two blocks (halves), then the final selection over what they kept
    half = units.size // 2
    keep = np.zeros(units.size, dtype=bool)
    pre_total = total if k >= NO_GROUP_LIMIT else None
    for sl in (slice(0, half), slice(half, units.size)):
        keep[sl] = select_by_priority(units[sl], groups[sl], pair[sl], row[sl], k, rows,
                                      pre_total)
    idx = np.flatnonzero(keep)
    out = np.zeros(units.size, dtype=bool)
    out[idx[select_by_priority(units[idx], groups[idx], pair[idx], row[idx], k, rows,
                               total)]] = True
    return out


def _pair_prio(units: np.ndarray, groups: np.ndarray, salt: int) -> np.ndarray:
    from dpframe.core.exact.hashing import keyed_priority
    return keyed_priority(units, groups, salt)


@settings(max_examples=150, deadline=None)
@given(tkr=bounds, groups=st.lists(st.integers(0, 7), min_size=1, max_size=60),
       n_units=st.integers(1, 3), seed=st.integers(0, 2**32 - 1),
       how=st.sampled_from(["pandas", "priority", "blocks"]))
def test_bounding_enforces_every_bound(tkr, groups, n_units, seed, how) -> None:
    units, g = _unit_rows(groups, n_units)
    keep = _bounded(units, g, tkr, np.random.default_rng(seed), how)
    c = contribution(*tkr, grouped=True)
    for u in range(n_units):
        mine = keep & (units == u)
        per_group = np.bincount(g[mine], minlength=8)
        assert mine.sum() <= c.cap
        assert per_group.max() <= c.rows_per_group
        assert np.count_nonzero(per_group) <= c.groups_per_unit
        t, k, r = tkr
        if t is not None:
            assert mine.sum() <= t
        if k is not None:
            assert np.count_nonzero(per_group) <= k
        if r is not None:
            assert per_group.max() <= r
        # nothing is dropped that no bound asks to drop: a unit within every bound keeps all
        all_rows = np.bincount(g[units == u], minlength=8)
        if (all_rows.sum() <= c.cap and all_rows.max() <= c.rows_per_group
                and np.count_nonzero(all_rows) <= c.groups_per_unit):
            assert mine.sum() == all_rows.sum()


@settings(max_examples=150, deadline=None)
@given(tkr=bounds, x=st.lists(st.integers(0, 7), min_size=1, max_size=40),
       y=st.lists(st.integers(0, 7), min_size=0, max_size=40),
       vals=st.sampled_from([(0, 10), (-10, 10), (5, 10), (-3, 1)]),
       seed=st.integers(0, 2**32 - 1), how=st.sampled_from(["pandas", "priority", "blocks"]))
def test_worst_case_unit_moves_aggregates_within_sensitivity(tkr, x, y, vals, seed,
                                                             how) -> None:
    """One unit's bounded rows, every value at an extreme of the bounds: under add_remove
    its per-group sums and counts are within the L1 / L2 / Linf sensitivities; under
    change_one so is the difference between it and any replacement unit's."""
    lo, hi = vals
    gen = np.random.default_rng(seed)
    c = contribution(*tkr, grouped=True)

    def vector(groups: list[int], value: int) -> tuple[np.ndarray, np.ndarray]:
        units = np.zeros(len(groups), dtype=np.int64)
        g = np.asarray(groups, dtype=np.int64)
        keep = (_bounded(units, g, tkr, gen, how) if len(groups)
                else np.zeros(0, dtype=bool))
        counts = np.bincount(g[keep], minlength=8).astype(float)
        return counts, counts * value

    for relation in ("add_remove", "change_one"):
        s = sum_sensitivity(relation, F(lo), F(hi), c, True)
        cs = count_sensitivity(relation, c, True)
        for vx in (lo, hi):
            cx, sx = vector(x, vx)
            if relation == "add_remove":
                diffs = [(cx, sx)]
            else:
                diffs = []
                for vy in (lo, hi):
                    cy, sy = vector(y, vy)
                    diffs.append((cy - cx, sy - sx))
            for dc, ds in diffs:
                assert np.abs(ds).sum() <= float(s.l1) + 1e-9
                assert math.sqrt((ds ** 2).sum()) <= float(s.l2) + 1e-9
                assert np.abs(ds).max() <= float(s.linf) + 1e-9
                assert np.abs(dc).sum() <= float(cs.l1) + 1e-9
                assert math.sqrt((dc ** 2).sum()) <= float(cs.l2) + 1e-9
                assert np.count_nonzero(ds) <= s.changed
                # grouped quantiles: per group eps * share, utility moved by <= a_g rows (of
                # R per unit of sensitivity): the losses add up to at most eps
                moved = cx if relation == "add_remove" else np.abs(dc) + 2 * np.minimum(
                    cx, dc + cx)
                assert quantile_group_share(relation, c) * F(int(moved.sum()),
                                                             c.rows_per_group) <= 1


def test_total_step_is_the_same_law_in_every_selection() -> None:
    """Group A holds 5 of a unit's rows, group B 1; R = 2, T = 2. Ranking the unit's rows by
    one uniform order keeps per group its first 2, then the first 2 of those: B's row is
    dropped exactly when it ranks 3rd or later of the 6 rows, so it is kept with probability
    2/6. Every selection (pandas' permutation, carried priorities, pre-selection in blocks)
    must give that law (fresh draws for the total step would keep it w.p. 2/3: the pandas path
    and the scans' carried priorities would then disagree)."""
    units = np.zeros(6, dtype=np.int64)
    groups = np.array([0, 0, 0, 1, 0, 0], dtype=np.int64)  # B's row in the middle
    n = 3000
    for how in ("pandas", "priority", "blocks"):
        gen = np.random.default_rng(123)
        kept_b = sum(bool(_bounded(units, groups, (2, None, 2), gen, how)[3]) for _ in range(n))
        p = 1 / 3
        sd = math.sqrt(p * (1 - p) / n)
        assert abs(kept_b / n - p) < 5 * sd, (how, kept_b / n)
