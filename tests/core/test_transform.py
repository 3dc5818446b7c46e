"""The shared transformations (core/exact/transform.py, core/exact/bounding.py): exact fixed-point
sums,
bounding by random sampling."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpframe.core.exact.bounding import bound_contributions
from dpframe.core.exact.compute import ComputeRequest, fixed_point_request
from dpframe.core.exact.primitives import compute_exact
from dpframe.core.exact.transform import (
    fixed_point,
    grouped_sum_exact,
    poisson_sample,
)

ADVERSARIAL = np.array([np.inf, -np.inf, np.nan, 1e308, -1e308, 5e-324, 2.0**53, 99.99999999999999,
                        100.0, 0.1, 0.2, 0.30000000000000004, -0.0, 1e-17, 100 - 1e-14])


@pytest.mark.parametrize("lo,hi", [(0.0, 100.0), (-3.5, 0.1), (-1e6, 1e12), (1e6, 1e6 + 1)])
def test_fixed_point_values_stay_within_integer_bounds(lo: float, hi: float) -> None:
    req = fixed_point_request("x", Fraction(repr(lo)), Fraction(repr(hi)), Fraction(0), False)
    v = fixed_point(ADVERSARIAL, req)
    assert np.all(v == np.rint(v))
    assert v.min() >= req.ilo and v.max() <= req.ihi
    # the integer bounds never exceed the declared bounds, so the sensitivity holds
    assert req.ilo * req.unit >= Fraction(repr(lo)) and req.ihi * req.unit <= Fraction(repr(hi))
    # a missing value counts as the bound nearest 0: nothing when 0 is inside the bounds
    assert np.isnan(ADVERSARIAL[2]) and v[2] == min(max(0, req.ilo), req.ihi)


def test_mean_shift_is_clipped_after_rounding() -> None:
    lo, hi = Fraction(1_000_000), Fraction(1_000_001)
    req = fixed_point_request("x", lo, hi, (lo + hi) / 2, False, with_count=True)
    v = fixed_point(ADVERSARIAL, req)
    assert v.min() >= req.ilo and v.max() <= req.ihi
    assert req.with_count


def test_neighbouring_exact_sums_differ_by_at_most_one_rows_bound() -> None:
    rng = np.random.default_rng(0)
    req = fixed_point_request("x", Fraction(0), Fraction(100), Fraction(0), False)
    x = np.concatenate([rng.uniform(-50, 150, 100_000), ADVERSARIAL])
    codes = rng.integers(0, 3, x.size)
    base = grouped_sum_exact(codes, fixed_point(x, req), 3, req.ihi)
    for extra in ADVERSARIAL:
        x2 = np.append(x, extra)
        c2 = np.append(codes, 1)
        s2 = grouped_sum_exact(c2, fixed_point(x2, req), 3, req.ihi)
        diff = [abs(int(a) - int(b)) for a, b in zip(base, s2, strict=True)]
        assert diff[0] == diff[2] == 0
        assert diff[1] <= max(abs(req.ilo), abs(req.ihi))


def test_grouped_sum_is_exact_for_large_integers() -> None:
    rng = np.random.default_rng(1)
    for max_abs in (2**20, 2**33, 2**50):
        v = rng.integers(-max_abs, max_abs + 1, 300_000).astype(np.float64)
        codes = rng.integers(-1, 4, v.size)
        got = grouped_sum_exact(codes, v, 4, max_abs)
        for g in range(4):
            want = sum(int(a) for a in v[codes == g])
            assert int(got[g]) == want


def test_grouped_sum_leaves_int64_only_when_a_total_could_outgrow_it() -> None:
    """Totals stay int64 while ``n * max_abs < 2**62``; past that they are exact Python ints."""
    small = grouped_sum_exact(np.array([0, 1, 1, -1]), np.array([3.0, -2.0, 5.0, 7.0]), 2, 5)
    assert small.dtype == np.int64 and small.tolist() == [3, 3]
    n, max_abs = 1 << 22, 1 << 40  # n * max_abs = 2**62: the int64 fast path must not be taken
    v = np.full(n, float(max_abs))
    got = grouped_sum_exact(np.zeros(n, dtype=np.int64), v, 1, max_abs)
    assert int(got[0]) == 1 << 62 and got.dtype == object
    got = grouped_sum_exact(np.zeros(n - 1, dtype=np.int64), v[1:], 1, max_abs)
    assert int(got[0]) == (1 << 62) - max_abs


@pytest.mark.parametrize("dropped", [False, True])
def test_grouped_sum_past_two_to_the_63_is_exact(dropped: bool) -> None:
    """Totals past int64 (2**23 rows at 2**40): the int64 partial sums go into the Python-int
    total before they can pass 2**62 (they wrapped around to about -2**63: finding 15), on
    the one-group path and on the bincount path (a dropped row)."""
    n, max_abs = (1 << 23) + (1 << 12), 1 << 40
    v = np.full(n, float(max_abs))
    codes = np.zeros(n, dtype=np.int64)
    if dropped:
        codes[0] = -1
    got = grouped_sum_exact(codes, v, 1, max_abs)
    assert got.dtype == object and int(got[0]) == (n - dropped) * max_abs > (1 << 63)


def test_float_summation_is_not_exact_but_ours_is() -> None:
    """A naive float sum of clamped values loses the low bits; the exact path does not."""
    v = np.array([2.0**52] + [1.0] * 1000 + [-(2.0**52)])
    codes = np.zeros(v.size, dtype=np.int64)
    assert int(grouped_sum_exact(codes, v, 1, 2**52)[0]) == 1000
    naive = 0.0
    for a in np.concatenate([v[:1], v[1:-1] * 0.5, v[-1:]]):
        naive += a
    assert naive != 500.0  # float accumulation drops the halves


def test_rows_per_unit_bound_holds_for_a_heavy_unit() -> None:
    gen = np.random.default_rng(2)
    units = np.concatenate([np.zeros(5000, dtype=np.int64), np.arange(1, 101)])
    keep = bound_contributions(units, None, 3, 1, gen)
    assert keep[:5000].sum() == 3
    assert keep[5000:].all()


def test_row_selection_is_uniform_not_first_k() -> None:
    gen = np.random.default_rng(3)
    units = np.zeros(5, dtype=np.int64)
    hits = np.zeros(5)
    trials = 6000
    for _ in range(trials):
        hits += bound_contributions(units, None, 2, 1, gen)
    # each of the 5 rows is kept with probability 2/5
    expected = np.full(5, trials * 2 / 5)
    assert stats.chisquare(hits, expected).pvalue > 1e-4
    # the same check rejects "first k" selection
    first_k = np.array([trials, trials, 0, 0, 0], dtype=float)
    assert stats.chisquare(first_k, expected).pvalue < 1e-4


def test_group_selection_is_uniform_over_distinct_groups_not_rows() -> None:
    """A unit with 1 row in group 0 and 50 rows in group 1 keeps either group w.p. 1/2."""
    gen = np.random.default_rng(4)
    units = np.zeros(51, dtype=np.int64)
    groups = np.array([0] + [1] * 50, dtype=np.int64)
    chose0 = 0
    trials = 3000
    for _ in range(trials):
        keep = bound_contributions(units, groups, 100, 1, gen)
        assert len(set(groups[keep])) == 1
        chose0 += int(keep[0])
    se = math.sqrt(trials * 0.25)
    assert abs(chose0 - trials / 2) < 5 * se
    assert abs(trials * 50 / 51 - trials / 2) > 5 * se  # row-weighted choice would fail


def test_groups_and_rows_bounds_together() -> None:
    gen = np.random.default_rng(5)
    rng = np.random.default_rng(6)
    units = rng.integers(0, 50, 20_000)
    groups = rng.integers(0, 10, 20_000)
    keep = bound_contributions(units, groups, 4, 2, gen)
    for u in range(50):
        sel = keep & (units == u)
        gs, cnt = np.unique(groups[sel], return_counts=True)
        assert len(gs) <= 2 and (cnt <= 4).all()
        assert len(gs) == 2 and (cnt == 4).all()  # bounds bind: exactly saturated


def test_missing_units_are_dropped() -> None:
    gen = np.random.default_rng(7)
    keep = bound_contributions(np.array([-1, 0, 0, 1]), None, 5, 1, gen)
    assert keep.tolist() == [False, True, True, True]


def test_poisson_sample_rate_and_whole_units() -> None:
    gen = np.random.default_rng(8)
    rate = Fraction(3, 8)
    rows = poisson_sample(None, 200_000, rate, gen)
    se = math.sqrt(200_000 * 3 / 8 * 5 / 8)
    assert abs(rows.sum() - 75_000) < 5 * se
    units = np.repeat(np.arange(20_000), 5)
    kept = poisson_sample(units, units.size, rate, gen).reshape(-1, 5)
    assert (kept.all(axis=1) | ~kept.any(axis=1)).all()  # whole units
    se_u = math.sqrt(20_000 * 3 / 8 * 5 / 8)
    assert abs(kept[:, 0].sum() - 7_500) < 5 * se_u
    with pytest.raises(ValueError):
        poisson_sample(None, 10, Fraction(1, 3), gen)


@pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")
@pytest.mark.parametrize("relation", ["add_remove", "change_one"])
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_narrow_bounds_far_from_zero_release(relation: str, op: str) -> None:
    """A sensitivity tiny next to the values' magnitude still releases (granularity is never
    finer than the accumulation unit) and the noise stays at least the planned scale."""
    import pandas as pd

    import dpframe as dpf

    df = pd.DataFrame({"x": np.full(1000, 1e6 + 0.0005)})
    s = dpf.Session(epsilon=10, seed=1, neighbouring=relation)  # type: ignore[arg-type]
    priv = df.dp(s, bounds={"x": (1e6, 1e6 + 0.001)})
    plan = getattr(priv, op)("x", epsilon=1.0, dry_run=True)
    m = plan["measures"][0]
    # a sum alone, or a mean's (centred sum, count) in one K-norm release at the whole epsilon
    assert m["noise_scale"] >= m["sensitivity"] / 1.0
    value = getattr(priv, op)("x", epsilon=1.0)
    assert math.isfinite(value)
    assert s.ledger["status"].tolist() == ["released"]


def test_single_group_sum_is_exact() -> None:
    rng = np.random.default_rng(9)
    for max_abs in (2**33, 2**50):
        v = rng.integers(-max_abs, max_abs + 1, 2_500_000).astype(np.float64)
        got = grouped_sum_exact(np.zeros(v.size, dtype=np.int64), v, 1, max_abs)
        assert int(got[0]) == sum(int(a) for a in v)


def test_counts_respect_dropped_rows_in_one_group() -> None:
    from dpframe.core.exact.transform import bucket_codes, grouped_count

    codes = np.array([0, -1, 0, 0, -1], dtype=np.int64)
    mask = np.array([True, True, False, True, True])
    assert grouped_count(codes, 1).tolist() == [3]
    assert grouped_count(codes, 1, mask).tolist() == [2]
    assert grouped_count(bucket_codes(codes, 1, mask), 1).tolist() == [2]  # pre-bucketed


# -- the one-pass ungrouped sum: the same integers as fixed_point, block by block ---------------

_BOUNDS = [(0.0, 100.0), (-3.5, 0.1), (-1e6, 1e12), (1e6, 1e6 + 1), (-(2.0**52), 2.0**52),
           (1e-200, 2e-200)]


def _reference(values: np.ndarray, req: object) -> tuple[int, int]:
    fx = fixed_point(values, req)  # type: ignore[arg-type]
    max_abs = max(abs(req.ilo), abs(req.ihi))  # type: ignore[attr-defined]
    total = grouped_sum_exact(np.zeros(values.size, dtype=np.int64), fx, 1, max_abs)
    return int(total[0]), int(np.count_nonzero(~np.isnan(values)))


@pytest.mark.parametrize("lo,hi", _BOUNDS)
@pytest.mark.parametrize("shifted", [False, True])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_fixed_point_total_is_fixed_point_summed(lo: float, hi: float, shifted: bool,
                                                 threads: int,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-pass total is the reference's, on one thread or split over several (the
    second range holds the block with missing values)."""
    from dpframe.core.exact import parallel
    from dpframe.core.exact.transform import BLOCK_ROWS, fixed_point_total

    monkeypatch.setattr(parallel, "THREADS", threads)
    monkeypatch.setattr(parallel, "MIN_ROWS_PER_THREAD", BLOCK_ROWS)
    assert len(parallel.row_ranges(3 * BLOCK_ROWS + 17, BLOCK_ROWS)) == threads

    rng = np.random.default_rng(11)
    flo, fhi = Fraction(repr(lo)), Fraction(repr(hi))
    shift = (flo + fhi) / 2 if shifted else Fraction(0)
    req = fixed_point_request("x", flo, fhi, shift, False, with_count=shifted)
    n = 3 * BLOCK_ROWS + 17  # several blocks and a ragged last one
    values = rng.uniform(lo - (hi - lo), hi + (hi - lo), n)
    values[rng.integers(0, n, 40)] = ADVERSARIAL[rng.integers(0, ADVERSARIAL.size, 40)]
    values[BLOCK_ROWS:2 * BLOCK_ROWS:997] = np.nan  # missing values in one block only
    got = fixed_point_total(values, req)
    assert got is not None
    assert got == _reference(values, req)


@pytest.mark.parametrize("lo,hi", _BOUNDS)
@pytest.mark.parametrize("shifted", [False, True])
@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("code_type", [np.int64, np.int8])
def test_grouped_fixed_point_total_is_the_general_path(lo: float, hi: float, shifted: bool,
                                                      threads: int, code_type: type,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-pass grouped sum gives the general path's integers (fixed_point, then
    grouped_sum_exact) and its non-missing counts (grouped_count), with dropped rows (code -1
    and code ng), missing values in one block, adversarial values, on one thread or three."""
    from dpframe.core.exact import parallel
    from dpframe.core.exact.transform import BLOCK_ROWS, grouped_count, grouped_fixed_point_total

    monkeypatch.setattr(parallel, "THREADS", threads)
    monkeypatch.setattr(parallel, "MIN_ROWS_PER_THREAD", BLOCK_ROWS)
    rng = np.random.default_rng(12)
    flo, fhi = Fraction(repr(lo)), Fraction(repr(hi))
    shift = (flo + fhi) / 2 if shifted else Fraction(0)
    req = fixed_point_request("x", flo, fhi, shift, False, with_count=True)
    n, ng = 3 * BLOCK_ROWS + 17, 7
    values = rng.uniform(lo - (hi - lo), hi + (hi - lo), n)
    values[rng.integers(0, n, 40)] = ADVERSARIAL[rng.integers(0, ADVERSARIAL.size, 40)]
    values[BLOCK_ROWS:2 * BLOCK_ROWS:997] = np.nan
    codes = rng.integers(-1, ng + 1, n).astype(code_type)  # -1 and ng: dropped
    got = grouped_fixed_point_total(codes, values, req, ng)
    assert got is not None
    max_abs = max(abs(req.ilo), abs(req.ihi))
    want = grouped_sum_exact(codes.astype(np.int64), fixed_point(values, req), ng, max_abs)
    assert got[0].tolist() == np.asarray(want).tolist()
    assert got[1].tolist() == grouped_count(codes.astype(np.int64), ng,
                                            ~np.isnan(values)).tolist()


def test_grouped_fixed_point_total_declines_what_it_cannot_sum_exactly() -> None:
    from dpframe.core.exact.transform import grouped_fixed_point_total

    codes = np.zeros(10, dtype=np.int64)
    req = fixed_point_request("x", Fraction(0), Fraction(10), Fraction(0), False)
    assert grouped_fixed_point_total(codes, np.arange(10, dtype=np.float32), req, 1) is None
    sq = fixed_point_request("x", Fraction(0), Fraction(1 << 52), Fraction(0), True)
    assert grouped_fixed_point_total(codes, np.arange(10.0), sq, 1) is None  # 2**52 per row


def test_the_grouped_release_takes_the_one_pass_sum(monkeypatch: pytest.MonkeyPatch) -> None:
    """A grouped sum and mean of a float column take the one-pass grouped total (what the
    test above proves equal to the general path), and give the general path's exact
    aggregates."""
    import pandas as pd

    from dpframe.backends.pandas import PandasBackend
    from dpframe.core.exact import primitives as transform  # the fixed-sum primitive calls it

    rng = np.random.default_rng(5)
    n = 20_000  # past SMALL_GROUPED_ROWS: smaller frames take the general path
    df = pd.DataFrame({"g": rng.choice(["a", "b", "c"], n), "x": rng.uniform(-5, 15, n)})
    df.loc[::97, "x"] = np.nan
    q = ComputeRequest((fixed_point_request("x", Fraction(0), Fraction(10), Fraction(5), False,
                                            with_count=True),), by=("g",),
                       keys={"g": ("a", "b", "c", "zz")})
    calls: list[int] = []
    real = transform.grouped_fixed_point_total
    monkeypatch.setattr(transform, "grouped_fixed_point_total",
                        lambda *a: calls.append(1) or real(*a))
    fast = PandasBackend(df).exact(q, None)
    monkeypatch.setattr(transform, "grouped_fixed_point_total", lambda *a: None)
    general = PandasBackend(df).exact(q, None)
    assert calls
    assert {k: v.tolist() for k, v in fast.values.items()} == {
        k: v.tolist() for k, v in general.values.items()}
    assert {k: v.tolist() for k, v in fast.counts.items()} == {
        k: v.tolist() for k, v in general.counts.items()}


def test_fixed_point_total_declines_what_it_cannot_sum_exactly() -> None:
    from dpframe.core.exact.transform import fixed_point_total

    req = fixed_point_request("x", Fraction(0), Fraction(10), Fraction(0), False)
    assert fixed_point_total(np.arange(10, dtype=np.float32), req) is None  # not float64
    sq = fixed_point_request("x", Fraction(0), Fraction(1 << 52), Fraction(0), True)
    assert fixed_point_total(np.arange(10, dtype=np.float64), sq) is None  # 2**52 per row


def test_the_ungrouped_release_takes_the_one_pass_sum(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is the path a plain ``priv.sum`` takes (so the equivalence above is what
    users get), and it finds the same exact total as the general path."""
    import warnings

    import pandas as pd

    import dpframe as dpf
    from dpframe.core.exact import primitives as transform  # the fixed-sum primitive calls it

    calls: list[tuple[int, int] | None] = []
    real = transform.fixed_point_total

    def spy(values: np.ndarray, req: object) -> tuple[int, int] | None:
        calls.append(real(values, req))  # type: ignore[arg-type]
        return calls[-1]

    monkeypatch.setattr(transform, "fixed_point_total", spy)
    x = np.random.default_rng(3).uniform(-5, 105, 200_000)
    x[::1000] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        priv = pd.DataFrame({"x": x}).dp(dpf.Session(100, seed=1), bounds={"x": (0, 100)})
    priv.mean("x", epsilon=1.0)
    assert len(calls) == 1 and calls[0] is not None
    req = fixed_point_request("x", Fraction(0), Fraction(100), Fraction(50), False, True)
    assert calls[0] == _reference(x, req)


# -- contribution bounding by carried priorities (Dask pre-selects per partition) ----------------


def _select_reference(u: np.ndarray, g: np.ndarray, pp: np.ndarray, rp: np.ndarray, groups: int,
                      rows: int) -> np.ndarray:
    keep = np.zeros(u.size, dtype=bool)
    for unit in np.unique(u):
        idx = np.flatnonzero(u == unit)
        # a unit's pairs in order of the top 24 bits of their priority, then of their group
        pairs = sorted({(int(pp[i]) >> 40, int(g[i])) for i in idx})[:groups]
        for p, grp in pairs:
            members = [i for i in idx if int(pp[i]) >> 40 == p and int(g[i]) == grp]
            for i in sorted(members, key=lambda i: int(rp[i]))[:rows]:
                keep[i] = True
    return keep


@pytest.mark.parametrize("groups,rows", [(1, 1), (1, 3), (2, 2), (3, 1), (9, 2)])
def test_select_by_priority_is_the_reference_and_pre_selects(groups: int, rows: int) -> None:
    from dpframe.core.exact.bounding import select_by_priority, select_drawing
    from dpframe.core.exact.hashing import keyed_priority

    rng = np.random.default_rng(groups * 10 + rows)
    n = 3000
    u = rng.integers(0, 200, n)
    g = rng.integers(0, 12, n)
    pp = keyed_priority(u, g, 99)
    tied = (u % 7 == 0) & (g == 1)  # ties between two groups of a unit: broken by the group
    pp[tied] = keyed_priority(u[tied], np.zeros_like(g[tied]), 99)
    rp = rng.integers(0, 2**63, n).astype(np.uint64)
    whole = select_by_priority(u, g, pp, rp, groups, rows)
    assert (whole == _select_reference(u, g, pp, rp, groups, rows)).all()
    # row priorities drawn on demand: the same selection, asking once for the rows of kept
    # pairs holding more than `rows` rows (the only priorities read), and returning them
    asked: list[np.ndarray] = []

    def draw(idx: np.ndarray) -> np.ndarray:
        asked.append(idx)
        return rp[idx]

    chosen = select_drawing(u, g, pp, draw, groups, rows)
    pair = u * 12 + g
    size = np.bincount(pair)
    heavy = np.flatnonzero(np.isin(pair, pair[whole]) & (size[pair] > rows))
    assert (chosen.keep == whole).all() and len(asked) == (1 if heavy.size else 0)
    assert np.array_equal(chosen.examined, heavy) and np.array_equal(chosen.priority, rp[heavy])
    # priorities that tie in their top 24 bits only: the smaller group wins
    close = pp.copy()
    close[tied] = keyed_priority(u[tied], np.zeros_like(g[tied]), 99) ^ np.uint64(1 << 39)
    assert (select_by_priority(u, g, close, rp, groups, rows)
            == _select_reference(u, g, close, rp, groups, rows)).all()
    # pre-selection in four blocks, then selection over what they kept: the same rows
    block = rng.integers(0, 4, n)
    pre = np.zeros(n, dtype=bool)
    for b in range(4):
        idx = np.flatnonzero(block == b)
        _, dense = np.unique(u[idx], return_inverse=True)
        pre[idx[select_by_priority(dense.astype(np.int64), g[idx], pp[idx], rp[idx], groups,
                                   rows)]] = True
    idx = np.flatnonzero(pre)
    again = np.zeros(n, dtype=bool)
    again[idx[select_by_priority(u[idx], g[idx], pp[idx], rp[idx], groups, rows)]] = True
    assert (again == whole).all()


def test_select_by_priority_draws_no_row_priority_under_the_bound() -> None:
    """No pair holds more than ``rows_per_group`` rows (after the choice of groups): no row
    priority is read, so none is drawn; a pair past the bound is drawn for, its rows only."""
    from dpframe.core.exact.bounding import select_drawing
    from dpframe.core.exact.hashing import keyed_priority

    def never(idx: np.ndarray) -> np.ndarray:
        raise AssertionError("a row priority was drawn")

    u = np.repeat(np.arange(100), 4)
    g = np.tile(np.arange(4), 100) // 2  # two pairs of two rows per unit
    pp = keyed_priority(u, g, 3)
    for groups_per_unit, rows_per_group in [(1, 2), (2, 2), (1, 5), (9, 3)]:
        chosen = select_drawing(u, g, pp, never, groups_per_unit, rows_per_group)
        assert chosen.examined.size == 0 and chosen.priority.size == 0
        assert chosen.keep.sum() == 100 * 2 * min(groups_per_unit, 2)
    # groups all kept, one row over the bound: the unit's pairs of more than one row only
    chosen = select_drawing(u, g, pp, lambda idx: idx.astype(np.uint64), 2, 1)
    assert np.array_equal(chosen.examined, np.arange(400))
    assert chosen.keep.sum() == 200


def test_select_by_priority_chooses_groups_and_rows_uniformly() -> None:
    """Keyed pair priorities with a fresh salt and uniform row priorities: each of a unit's four
    groups is kept with probability 1/4 and each of a pair's rows with probability 2/5
    (binomial tolerance, 5 standard deviations; a wrong rule fails it)."""
    from dpframe.core.exact.bounding import select_by_priority
    from dpframe.core.exact.hashing import keyed_priority

    u = np.zeros(4 * 5, dtype=np.int64)
    g = np.repeat(np.arange(4), 5)
    rng = np.random.default_rng(17)
    trials = 4000
    kept = np.zeros(u.size)
    for _ in range(trials):
        pp = keyed_priority(u, g, int(rng.integers(0, 2**63)))
        rp = rng.integers(0, 2**63, u.size).astype(np.uint64)
        kept += select_by_priority(u, g, pp, rp, 1, 2)
    p = 1 / 4 * 2 / 5
    sd = math.sqrt(trials * p * (1 - p))
    assert np.all(np.abs(kept - trials * p) < 5 * sd), kept




@pytest.mark.parametrize("groups_per_unit", [1, 2, 3, 4, 5, 9])
@pytest.mark.parametrize("huge_codes", [False, True])
def test_each_unit_keeps_its_pairs_of_least_key(groups_per_unit: int, huge_codes: bool) -> None:
    """Per-unit minima (up to 3 groups), the packed sort (more) and the fallback for group codes
    beyond 32 bits all keep each unit's pairs of least (top 24 bits of priority, group),
    including units with fewer pairs than ``groups_per_unit``, a group code of -1, and priorities
    that tie in their top 32 bits (the smaller group first)."""
    from dpframe.core.exact.bounding import _smallest_pairs
    from dpframe.core.exact.hashing import keyed_priority

    rng = np.random.default_rng(groups_per_unit)
    u = rng.integers(0, 300, 5000)
    g = rng.integers(-1, 12, 5000)
    if huge_codes:  # past the 32 bits an order key holds: the lexsort path
        g = np.where(g >= 0, g + (1 << 40), g)
    for salt in range(4):
        prio = keyed_priority(u, g, salt)
        if salt == 3:  # two distinct top parts only: ties everywhere, broken by the group
            prio = prio >> np.uint64(39)
        got = _smallest_pairs(u, prio, g, 300, groups_per_unit)
        want = np.zeros(u.size, dtype=bool)
        for a in range(300):
            idx = np.flatnonzero(u == a)
            # a dropped row's group (-1) comes after every group
            pairs = sorted({(int(prio[i]) >> 40, int(g[i]) % (1 << 64)) for i in idx})
            chosen = [k if k < 1 << 63 else k - (1 << 64) for _, k in pairs[:groups_per_unit]]
            want[idx[np.isin(g[idx], chosen)]] = True
        assert np.array_equal(got, want)


def test_pair_keys_order_by_top_bits_then_group() -> None:
    from dpframe.core.exact.bounding import pair_keys

    # the top 24 bits, then the group (-1 after every group); lower priority bits never count
    prio = np.array([5 << 40 | 7 << 32, 5 << 40 | 1, 4 << 40 | 9 << 35, 0], dtype=np.uint64)
    g = np.array([1, 2, 3, -1], dtype=np.int64)
    assert pair_keys(prio, g).tolist() == [5 << 32 | 1, 5 << 32 | 2, 4 << 32 | 3, 0xFFFFFFFF]
    keys = pair_keys(prio, g, compact=True)
    assert keys.dtype == np.uint32
    assert keys.tolist() == [5 << 8 | 1, 5 << 8 | 2, 4 << 8 | 3, 255]


def test_both_key_layouts_keep_the_same_pairs_even_on_ties() -> None:
    """A block takes compact keys when its largest group code is below 255: data one unit can
    change. Both layouts must keep the same pairs for every other unit, also when priorities
    tie in their top 24 bits and differ below (an order on 32 bits broke those ties apart from
    the compact one, so one unit's row in group 300 moved other units' choices)."""
    from dpframe.core.exact.bounding import _smallest_keys, pair_keys

    rng = np.random.default_rng(21)
    n = 6000
    u = rng.integers(0, 500, n)
    g = rng.integers(-1, 40, n)
    prio = np.empty(n, dtype=np.uint64)
    pair_prio: dict[tuple[int, int], int] = {}
    for i in range(n):  # one priority per pair; many pairs tie in their top 24 bits
        key = (int(u[i]), int(g[i]))
        pair_prio.setdefault(key, (int(rng.integers(0, 4)) << 40) | int(rng.integers(0, 1 << 40)))
        prio[i] = pair_prio[key]
    for groups in (1, 2, 3, 4, 7):
        full = _smallest_keys(u, pair_keys(prio, g), g, 500, groups, 39)
        compact = _smallest_keys(u, pair_keys(prio, g, compact=True), g, 500, groups, 39)
        assert np.array_equal(full, compact)


@pytest.mark.parametrize("nu", [2, 200, 5000])
@pytest.mark.parametrize("compact", [False, True])
def test_the_packed_sort_keeps_the_pairs_the_rounds_keep(nu: int, compact: bool) -> None:
    """The value sort of packed (unit, key) words (4+ groups) keeps exactly the pairs that
    rounds of per-unit minima keep, on units with fewer pairs than the bound, dropped rows
    (group -1) and keys that tie in their priority bits."""
    from dpframe.core.exact.bounding import _keys_up_to_threshold, pair_keys
    from dpframe.core.exact.hashing import keyed_priority

    rng = np.random.default_rng(nu)
    n = 20_000
    u = rng.integers(0, nu, n)
    g = rng.integers(-1, 30, n)
    prio = keyed_priority(u, g, 5) >> np.uint64(int(rng.integers(0, 2)) * 61)  # ties too
    key = pair_keys(prio, g, compact)
    bits = 32 if compact else 56
    if (nu - 1).bit_length() + bits > 64:  # units and keys past 64 bits: never packed
        pytest.skip("the release takes the rounds or the lexsort here")
    for k in (1, 2, 4, 7, 40):
        want = np.zeros(n, dtype=bool)  # k rounds of per-unit minima, the reference
        cand, done = key, key.dtype.type(np.iinfo(key.dtype).max)
        for _ in range(k):
            best = np.full(nu, done, dtype=key.dtype)
            np.minimum.at(best, u, cand)
            want |= (cand == best[u]) & (cand != done)
            cand = np.where(want, done, key)
        assert np.array_equal(_keys_up_to_threshold(u, key, nu, k, bits), want)


@pytest.mark.parametrize("ngroups", [3, 255, 256, 300])
def test_one_group_per_unit_is_the_pair_of_least_key(ngroups: int) -> None:
    """bound_contributions with one group per unit keeps, for each unit, the rows of its pair
    of least (top 24 bits of the keyed priority, group): compact keys up to 255 groups, 64-bit
    keys from 256, one order; rows of a dropped group (-1) stay dropped."""
    from dpframe.core.exact.hashing import keyed_priority

    rng = np.random.default_rng(ngroups)
    n = 6000
    units = rng.integers(0, 400, n)
    groups = rng.integers(0, ngroups, n)
    groups[::97] = -1
    gen = np.random.default_rng(5)
    salt = int(np.random.default_rng(5).integers(0, 2**63))  # the first draw: the pair salt
    keep = bound_contributions(units, groups, 10**6, 1, gen)
    shift = 40  # the top 24 bits, whichever key layout the block takes
    prio = keyed_priority(units, groups, salt) >> np.uint64(shift)
    for a in range(400):
        idx = np.flatnonzero((units == a) & (groups >= 0))
        if not idx.size:
            continue
        least = min((int(prio[i]), int(groups[i])) for i in idx)[1]
        assert keep[idx].tolist() == (groups[idx] == least).tolist()
    assert not keep[groups < 0].any()


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_one_group_per_unit_is_the_same_on_any_number_of_threads(
        threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The keys filled and the rows compared on several threads give the bits one thread
    gives (same seed), and each unit keeps exactly one of its groups."""
    from dpframe.core.exact import parallel
    rng = np.random.default_rng(8)
    n = 5 * parallel.BLOCK_ROWS + 3
    units = rng.integers(0, n // 4, n)
    groups = rng.integers(0, 200, n)  # codes past int8: an int16 table
    monkeypatch.setattr(parallel, "MIN_ROWS_PER_THREAD", 1 << 60)
    one = bound_contributions(units, groups, 1000, 1, np.random.default_rng(1))
    monkeypatch.setattr(parallel, "THREADS", threads)
    monkeypatch.setattr(parallel, "MIN_ROWS_PER_THREAD", parallel.BLOCK_ROWS)
    many = bound_contributions(units, groups, 1000, 1, np.random.default_rng(1))
    assert np.array_equal(one, many)
    kept = {(int(a), int(b)) for a, b in zip(units[many], groups[many], strict=True)}
    assert len(kept) == len({a for a, _ in kept}) == len(np.unique(units))


@pytest.mark.parametrize("rows_per_group,groups_per_unit", [(1000, 1), (2, 1), (3, 2), (1, 3)])
@pytest.mark.parametrize("dropped", [False, True])
def test_choosing_without_a_row_count_is_the_same_selection(
        rows_per_group: int, groups_per_unit: int, dropped: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With many more rows than units can keep pairs, groups are chosen among every unit's
    pairs with no count of rows per unit first. The selection must be the one the counting
    path makes from the same seed: same chosen pairs, same rows past ``rows_per_group``, busy
    and idle units, dropped rows. The test fails if either path draws differently or keeps a row
    the other drops."""
    from dpframe.core.exact import bounding
    rng = np.random.default_rng(12)
    n = 60_000
    units = rng.integers(0, 4_000, n)  # about 15 rows a unit: the counting-free path
    units[:50] = 4_000 + np.arange(50)  # units of one row: kept whole
    groups = rng.integers(0, 7, n)
    if dropped:
        units[rng.random(n) < 0.05] = -1
        groups[rng.random(n) < 0.05] = -1
    free = bound_contributions(units, groups, rows_per_group, groups_per_unit,
                               np.random.default_rng(4))
    monkeypatch.setattr(bounding, "CHOOSE_WITHOUT_COUNT", 10**9)  # always count first
    counted = bound_contributions(units, groups, rows_per_group, groups_per_unit,
                                  np.random.default_rng(4))
    assert np.array_equal(free, counted)
    ok = (units >= 0) & (groups >= 0)
    assert free[:50].tolist() == ok[:50].tolist() and not free[~ok].any()
    kept = np.flatnonzero(free)
    pairs = {(int(units[i]), int(groups[i])) for i in kept}
    per_unit = np.bincount([a for a, _ in pairs])
    assert per_unit.max() <= groups_per_unit
    assert np.bincount(units[kept] * 7 + groups[kept]).max() <= rows_per_group


class _Numbers:
    """One numeric column with no missing mask, as the primitives read columns."""

    def __init__(self, x: np.ndarray) -> None:
        self.x = x

    def numbers(self, name: str) -> tuple[np.ndarray, None]:
        return self.x, None

    def words(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        raise AssertionError("no distinct count here")

    def codes(self, name: str) -> np.ndarray:
        raise AssertionError("no unit column here")


def test_only_units_and_sampling_draw_at_random() -> None:
    """A release gets a sampling generator only when it bounds units or samples them
    (``draws_at_random``); without one the exact aggregates are the same, and a request that
    does draw refuses to run without one (an internal invariant, never reached by a release)."""
    req = fixed_point_request("x", Fraction(0), Fraction(10), Fraction(0), False)
    plain = ComputeRequest((req,), by=("g",), keys={"g": ("a", "b")})
    assert not plain.draws_at_random
    assert ComputeRequest((req,), privacy_unit="u").draws_at_random
    assert ComputeRequest((req,), sample_rate=Fraction(1, 2)).draws_at_random
    rng = np.random.default_rng(0)
    codes = rng.integers(-1, 2, 1000)
    x = rng.uniform(-5, 15, 1000)
    keys: list[tuple[object, ...]] = [("a",), ("b",)]
    without = compute_exact(plain, codes, keys, None, _Numbers(x), None)
    with_gen = compute_exact(plain, codes, keys, None, _Numbers(x), rng)
    key = req.key
    assert without.values[key].tolist() == with_gen.values[key].tolist()
    expected = [int(fixed_point(x[codes == g], req).sum()) for g in (0, 1)]
    assert without.values[key].tolist() == expected
    units = ComputeRequest((req,), by=("g",), keys={"g": ("a", "b")}, privacy_unit="u")
    with pytest.raises(AssertionError):
        compute_exact(units, codes, keys, np.arange(1000), _Numbers(x), None)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("compact", [True, False])
def test_fused_block_keys_are_pair_keys_of_keyed_priorities(dtype: type, compact: bool) -> None:
    """The cache-block path of the group choice (priorities and keys computed in two reused
    buffers) writes exactly ``pair_keys(keyed_priority(u, g))``, for group codes of any
    signed width, -1 included (``pair_keys`` is the block function on a copy: the key bits
    themselves are pinned by ``test_pair_keys_order_by_top_bits_then_group``)."""
    from dpframe.core.exact.bounding import _pair_keys_into, pair_keys
    from dpframe.core.exact.hashing import keyed_priority, priority_into

    rng = np.random.default_rng(5)
    u = rng.integers(0, 2**40, 5000)
    g = rng.integers(-1, 120, 5000)
    want = pair_keys(keyed_priority(u, g, 77), g, compact)
    z, scratch = np.empty(5000, dtype=np.uint64), np.empty(5000, dtype=np.uint64)
    priority_into(u, g.astype(dtype), 77, z, scratch)
    assert np.array_equal(z, keyed_priority(u, g, 77))
    got = _pair_keys_into(z, g.astype(dtype), compact, scratch)
    assert np.array_equal(got.astype(want.dtype), want)
    assert not np.array_equal(_pair_keys_into(keyed_priority(u, g, 78), g, compact, scratch)
                              .astype(want.dtype), want)


@pytest.mark.parametrize(("rows_per_group", "groups_per_unit"), [(10, 1), (1, 1), (2, 3), (50, 9)])
@pytest.mark.parametrize(("ngroups", "dtype"), [(51, np.int8), (300, np.int16)])
def test_narrow_group_codes_bound_like_int64_and_rows_match_the_mask(
        rows_per_group: int, groups_per_unit: int, ngroups: int, dtype: type) -> None:
    """Scans and Dask hand bounding the group codes in their narrow travelling type (int8 up
    to 127 groups, int16 past: compact and 64-bit order keys): the same selection as int64
    codes; the kept rows bounding lists on the way are the mask's."""
    from dpframe.core.exact.bounding import bound_rows

    rng = np.random.default_rng(8)
    units = rng.integers(0, 3000, 40_000)
    groups = rng.integers(-1, ngroups, 40_000)
    for seed in range(3):
        wide, rows = bound_rows(units, groups, rows_per_group, groups_per_unit,
                                np.random.default_rng(seed))
        narrow, rows8 = bound_rows(units, groups.astype(dtype), rows_per_group, groups_per_unit,
                               np.random.default_rng(seed))
        assert np.array_equal(wide, narrow)
        for listed in (rows, rows8):
            assert listed is None or np.array_equal(listed, np.flatnonzero(wide))
        assert np.array_equal(wide, bound_contributions(units, groups, rows_per_group,
                                                        groups_per_unit,
                                                        np.random.default_rng(seed)))


@pytest.mark.parametrize(("dtype", "parts"), [(np.uint8, 256), (np.uint8, 3), (np.uint16, 1000),
                                              (np.int64, 7), (np.uint8, 2)])
def test_partition_order_is_a_stable_sort_with_its_bounds(dtype: type, parts: int) -> None:
    from dpframe.backends.base import partition_order

    p = np.random.default_rng(1).integers(0, parts, 10_000).astype(dtype)
    order, bounds = partition_order(p, parts)
    want = np.zeros(parts + 1, dtype=np.intp)
    np.cumsum(np.bincount(p, minlength=parts), out=want[1:])
    assert np.array_equal(bounds, want)
    assert np.array_equal(order, np.argsort(p, kind="stable"))
    order, bounds = partition_order(p[:0], parts)
    assert order.size == 0 and not bounds.any()


@pytest.mark.parametrize("top", [40, 300, 2**33])
@pytest.mark.parametrize(("groups_per_unit", "rows_per_group"), [(1, 2), (3, 1), (12, 5)])
def test_keyed_pairs_select_as_their_priorities(top: int, groups_per_unit: int,
                                                rows_per_group: int) -> None:
    """Dask hands ``select_by_priority`` the inputs of the pair priorities (KeyedPairs), whose
    order keys are computed block by block: the same selection as the priorities themselves,
    for compact, 64-bit and sorted key layouts."""
    from dpframe.core.exact.bounding import KeyedPairs, select_by_priority
    from dpframe.core.exact.hashing import keyed_priority

    rng = np.random.default_rng(top)
    n = 20_000
    units = rng.integers(0, 3000, n)
    g = rng.integers(0, 8, n) * (top // 8)
    words = rng.integers(-2**63, 2**63 - 1, 3000, dtype=np.int64)[units]  # one word a unit
    rows = rng.integers(0, 2**64, n, dtype=np.uint64)
    want = select_by_priority(units, g, keyed_priority(words, g, 5), rows, groups_per_unit,
                              rows_per_group)
    got = select_by_priority(units, g, KeyedPairs(words, 5), rows, groups_per_unit, rows_per_group)
    assert np.array_equal(got, want)
    other = select_by_priority(units, g, KeyedPairs(words, 6), rows, groups_per_unit,
                               rows_per_group)
    # the salt matters where groups are chosen (fewer kept than 8): the comparison can fail
    assert np.array_equal(other, want) == (groups_per_unit >= 8)


@pytest.mark.parametrize("unit", [None, "u"])
def test_narrow_and_wide_group_codes_release_the_same(unit: str | None,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The pandas backend's narrow group codes (int8 for a large frame's 60 keys) and the
    int64 codes of the general path give the same releases under one seed, for every
    aggregate that reads codes: sums and means, counts, the grid of max and quantiles, bins,
    distinct values and distinct units (a code times a bin or unit count must not wrap)."""
    import warnings

    import pandas as pd

    import dpframe as dpf
    from dpframe.backends.blocks import frames as pandas_backend
    from dpframe.core.exact import transform
    rng = np.random.default_rng(9)
    n = 20_000
    keys = [f"k{i}" for i in range(60)]
    df = pd.DataFrame({"g": rng.choice(keys[:55], n), "x": rng.uniform(-5, 105, n),
                       "n": rng.integers(0, 30, n), "u": rng.integers(0, 4000, n)})

    def releases() -> list[object]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a seeded session warns: it is a test
            s = dpf.Session(epsilon=1e6, delta=1e-3, seed=4)
            p = df.dp(s, bounds={"x": (0, 100), "n": (0, 30)}, keys={"g": keys},
                      **({"privacy_unit": unit, "max_rows_per_unit": 3} if unit else {}))
            by = p.groupby("g")
            out = [by.sum("x", epsilon=1), by.mean("x", epsilon=1), by.count(epsilon=1),
                   by.max("x", epsilon=1), by.quantile("x", 0.3, epsilon=1),
                   by.count_distinct("n", epsilon=1),
                   p.groupby("g", keys="private").count(epsilon=1, delta=1e-6)]
        return [o.round(9).to_dict() for o in out]

    monkeypatch.setattr(pandas_backend, "SMALL_GROUPED_ROWS", 0)
    monkeypatch.setattr(transform, "SMALL_GROUPED_ROWS", 0)
    narrow = releases()
    monkeypatch.setattr(pandas_backend, "SMALL_GROUPED_ROWS", 10**9)
    monkeypatch.setattr(transform, "SMALL_GROUPED_ROWS", 10**9)
    assert releases() == narrow


def test_row_selection_packs_or_falls_back_to_the_same_rows() -> None:
    """Pair keys whose span does not pack beside the permutation (past 63 bits) take the
    unique-and-argsort path: the same rows from the same draw as the packed value sort."""
    from dpframe.core.exact.bounding import _select_rows

    rng = np.random.default_rng(4)
    units = rng.integers(0, 400, 6000)
    key = units * 16 + rng.integers(0, 16, 6000)
    rows = np.arange(6000, dtype=np.intp)
    spread = np.where(key % 2 == 0, key, key + (1 << 61))  # the same runs, a huge span
    for rows_per_group, total in ((1, None), (2, 3), (3, 100)):
        packed = _select_rows(key, rows, rows_per_group, np.random.default_rng(9), units, total)
        wide = _select_rows(spread, rows, rows_per_group, np.random.default_rng(9), units, total)
        assert np.array_equal(np.sort(packed), np.sort(wide))
        assert np.bincount(units[packed]).max() <= min(rows_per_group * 16, total or 10**9)
