"""Local model: exact privacy of the randomizers, empirical checks, estimators, errors."""

from __future__ import annotations

import itertools
import math
import re
import warnings
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dpframe as dpf
from dpframe import local
from dpframe.core.noise.rng import InsecureSeedWarning, RandomSource
from dpframe.errors import ValidationError
from dpframe.local import _sampling as sampling
from dpframe.local._design import Design, exp_neg_bounds

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")


def _design(eps: float, k: int) -> Design:
    return Design(k=k, x=Fraction(repr(float(eps))))


# ------------------------------------------------------------------------------------------
# Exact output distributions: max log-ratio <= epsilon
# ------------------------------------------------------------------------------------------


def _krr_matrix(eps: float, k: int) -> np.ndarray:
    p, q = local.krr_probabilities(eps, k)
    return np.where(np.eye(k, dtype=bool), p, q)


def _max_log_ratio(matrix: np.ndarray) -> float:
    """max over outputs y and inputs x, x' of log P(y | x) / P(y | x') (rows are inputs)."""
    return float(np.max(np.log(matrix.max(axis=0)) - np.log(matrix.min(axis=0))))


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 2.0, 5.0, 12.0])
@pytest.mark.parametrize("k", [2, 3, 10, 50])
def test_krr_exact_log_ratio(eps: float, k: int) -> None:
    m = _krr_matrix(eps, k)
    np.testing.assert_allclose(m.sum(axis=1), 1.0, rtol=1e-12)
    assert _max_log_ratio(m) <= eps * (1 + 1e-12)
    assert _max_log_ratio(m) == pytest.approx(eps, rel=1e-9)  # tight: no wasted budget


@pytest.mark.parametrize("eps", [0.3, 1.0, 4.0])
def test_binary_rr_probabilities(eps: float) -> None:
    p, q = local.rr_probabilities(eps)
    assert p == pytest.approx(math.exp(eps) / (math.exp(eps) + 1), rel=1e-14)
    assert p + q == pytest.approx(1.0, rel=1e-15)
    assert _max_log_ratio(np.array([[p, q], [q, p]])) <= eps * (1 + 1e-12)


def test_two_coin_is_exactly_three_quarters() -> None:
    assert local.rr_probabilities(preset="two_coin") == (0.75, 0.25)
    design = Design(k=2, q=Fraction(1, 3))
    lut = sampling.lut(design, 8)
    assert (lut >= 0).all()  # no cell straddles 3/4: two fair bits decide
    assert int((lut == 0).sum()) == 192  # P(keep) = 192 / 256 = 3/4 exactly
    assert _max_log_ratio(np.array([[0.75, 0.25], [0.25, 0.75]])) == pytest.approx(math.log(3))


@pytest.mark.parametrize("eps", [0.5, 2.0, 6.0])
def test_rappor_exact_log_ratio(eps: float) -> None:
    k = 4
    p1, q1 = local.rappor_probabilities(eps)
    f = local.rappor_f(eps)
    assert f == pytest.approx(2 / (1 + math.exp(eps / 2)), rel=1e-14)
    assert (p1, q1) == pytest.approx((1 - f / 2, f / 2), rel=1e-14)
    outputs = list(itertools.product([0, 1], repeat=k))
    matrix = np.empty((k, len(outputs)))
    for x in range(k):
        onehot = np.eye(k, dtype=int)[x]
        for col, y in enumerate(outputs):
            same = np.asarray(y) == onehot
            p_one = np.where(np.asarray(y) == 1, p1, q1)  # P(bit = y_i) for the true bit
            matrix[x, col] = np.prod(np.where(same, np.maximum(p_one, 1 - p_one),
                                              np.minimum(p_one, 1 - p_one)))
    np.testing.assert_allclose(matrix.sum(axis=1), 1.0, rtol=1e-12)
    assert _max_log_ratio(matrix) <= eps * (1 + 1e-12)
    assert _max_log_ratio(matrix) == pytest.approx(eps, rel=1e-9)


@pytest.mark.parametrize(("eps", "k"), [(0.1, 2), (1.0, 10), (3.0, 33), (20.0, 5), (0.7, 300)])
def test_sampler_tables_realize_the_published_probabilities(eps: float, k: int) -> None:
    """The sampler's cut points (what it actually uses) match krr_probabilities to 2**-60."""
    design = _design(eps, k)
    p, q = local.krr_probabilities(eps, k)
    below, inside = sampling.edges(design, 64)
    assert len(below) == k - 1 and set(inside) == set(below)  # irrational cut points
    cuts = [Fraction(int(b), 2**64) for b in below]
    # c_j in (F_j / 2^64, (F_j + 1) / 2^64): bin widths known to within 2 * 2^-64
    widths = [cuts[0]] + [cuts[j] - cuts[j - 1] for j in range(1, k - 1)] + [1 - cuts[-1]]
    # the floats are the exact values rounded: within half an ulp (plus the 2^-63 above)
    assert abs(widths[0] - Fraction(p)) <= Fraction(math.ulp(p)) / 2 + Fraction(1, 2**63)
    for w in widths[1:]:
        assert abs(w - Fraction(q)) <= Fraction(math.ulp(q)) / 2 + Fraction(1, 2**63)
    # the 8/16-bit lookup table agrees with the 64-bit cut points
    m = 8 if k <= 32 else 16
    lut = sampling.lut(design, m)
    cut_cells = np.array([f >> (64 - m) for f in below])
    cells = np.arange(2**m)
    expected = (cut_cells[None, :] < cells[:, None]).sum(axis=1)
    expected[np.isin(cells, cut_cells)] = -1
    np.testing.assert_array_equal(lut, expected)


def test_exp_neg_bounds_are_rigorous() -> None:
    for x in [Fraction(1, 1000), Fraction(1), Fraction(repr(0.3)), Fraction(repr(7.25)),
              Fraction(repr(40.0))]:
        w = 120
        lo, hi = exp_neg_bounds(x, w)
        with localcontext() as ctx:
            ctx.prec = 120
            true = (-Decimal(x.numerator) / Decimal(x.denominator)).exp()
            scale = Decimal(2) ** w
            assert Decimal(lo) / scale <= true * (1 + Decimal(10) ** -100)
            assert Decimal(hi) / scale >= true * (1 - Decimal(10) ** -100)
        assert 0 <= hi - lo < 2 ** (w - 110)


# ------------------------------------------------------------------------------------------
# Empirical checks with fixed seeds
# ------------------------------------------------------------------------------------------


def _cp_bounds(c: np.ndarray, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson interval for binomial proportions."""
    lo = np.where(c > 0, stats.beta.ppf(alpha / 2, c, n - c + 1), 0.0)
    hi = np.where(c < n, stats.beta.ppf(1 - alpha / 2, c + 1, n - c), 1.0)
    return lo, hi


def _empirical_check(counts: np.ndarray, claimed_eps: float, expected: np.ndarray,
                     alpha: float = 1e-6) -> bool:
    """Passes when the samples are consistent with the claimed mechanism.

    ``counts[x, y]``: how often input x gave output y (same number of draws per input). Fails
    when a chi-square test rejects the exact distribution, or when a Clopper-Pearson lower
    confidence bound of some log P(y | x) / P(y | x') exceeds the claimed epsilon.
    """
    n = int(counts[0].sum())
    for row, exp in zip(counts, expected, strict=True):
        if stats.chisquare(row, exp * n).pvalue < alpha:
            return False
    lo, hi = _cp_bounds(counts, n, alpha / counts.size)
    with np.errstate(divide="ignore"):
        lcb = np.log(lo.max(axis=0)) - np.log(hi.min(axis=0))
    return bool(lcb.max() <= claimed_eps)


def _krr_counts(eps: float, k: int, n: int, seed: int) -> np.ndarray:
    values = np.repeat(np.arange(k), n)
    out = local.randomized_response(values, eps, categories=list(range(k)), seed=seed)
    return np.stack([np.bincount(out[x * n:(x + 1) * n], minlength=k) for x in range(k)])


@pytest.mark.parametrize(("eps", "k", "seed"), [(0.5, 2, 11), (1.0, 5, 12), (2.5, 12, 13),
                                                (0.2, 40, 14)])
def test_krr_empirical_agrees(eps: float, k: int, seed: int) -> None:
    counts = _krr_counts(eps, k, 30_000, seed)
    assert _empirical_check(counts, eps, _krr_matrix(eps, k))


def test_empirical_check_fails_for_a_wrong_epsilon() -> None:
    """The check has teeth: a mechanism running at a larger epsilon than claimed is caught,
    both by the distribution test and by the log-ratio lower confidence bound alone."""
    k, claimed, actual = 5, 1.0, 1.4
    counts = _krr_counts(actual, k, 30_000, seed=21)
    assert _empirical_check(counts, actual, _krr_matrix(actual, k))
    assert not _empirical_check(counts, claimed, _krr_matrix(claimed, k))
    # the privacy bound alone (ignoring the distribution test) also fails
    assert not _empirical_check(counts, claimed, _krr_matrix(actual, k))


def test_two_coin_empirical() -> None:
    values = np.repeat([0, 1], 40_000)
    out = local.randomized_response(values, preset="two_coin", seed=5)
    counts = np.stack([np.bincount(out[:40_000], minlength=2),
                       np.bincount(out[40_000:], minlength=2)])
    expected = np.array([[0.75, 0.25], [0.25, 0.75]])
    assert _empirical_check(counts, math.log(3), expected)


@pytest.mark.parametrize(("eps", "seed"), [(1.0, 31), (3.0, 32)])
def test_rappor_empirical_agrees(eps: float, seed: int) -> None:
    k, n = 3, 30_000
    values = np.repeat(np.arange(k), n)
    bits = local.rappor(values, eps, categories=list(range(k)), seed=seed)
    assert bits.shape == (k * n, k) and bits.dtype == bool
    p1, q1 = local.rappor_probabilities(eps)
    codes = bits @ (1 << np.arange(k))  # each bit vector as an integer 0..2^k - 1
    counts = np.stack([np.bincount(codes[x * n:(x + 1) * n], minlength=2**k) for x in range(k)])
    expected = np.empty((k, 2**k))
    for x in range(k):
        for y in range(2**k):
            b = (y >> np.arange(k)) & 1
            truth = np.arange(k) == x
            expected[x, y] = np.prod(np.where(truth, np.where(b == 1, p1, 1 - p1),
                                              np.where(b == 1, q1, 1 - q1)))
    assert _empirical_check(counts, eps, expected)
    assert not _empirical_check(counts, eps * 0.7, expected)


# ------------------------------------------------------------------------------------------
# Estimators: unbiased, variance formula within 10% of simulation
# ------------------------------------------------------------------------------------------


def _dataset(freqs: list[float], n: int) -> np.ndarray:
    counts = np.round(np.asarray(freqs) * n).astype(int)
    return np.repeat(np.arange(len(freqs)), counts)


def _check_estimates(ests: np.ndarray, ses: np.ndarray, lows: np.ndarray, ups: np.ndarray,
                     truth: np.ndarray, var_formula: np.ndarray) -> None:
    reps = ests.shape[0]
    mean, sd = ests.mean(axis=0), ests.std(axis=0, ddof=1)
    assert np.all(np.abs(mean - truth) <= 4 * sd / math.sqrt(reps)), (mean, truth)
    np.testing.assert_allclose(ests.var(axis=0, ddof=1), var_formula, rtol=0.10)
    np.testing.assert_allclose((ses**2).mean(axis=0), var_formula, rtol=0.10)
    coverage = ((lows <= truth) & (truth <= ups)).mean(axis=0)
    assert np.all(np.abs(coverage - 0.95) < 0.03), coverage


@pytest.mark.parametrize(("eps", "freqs", "seed"), [
    (1.0, [0.5, 0.3, 0.15, 0.05], 41),
    (0.5, [0.7, 0.3], 42),
    (3.0, [0.1, 0.2, 0.3, 0.1, 0.05, 0.05, 0.2], 43),
])
def test_krr_estimator_unbiased_and_variance(eps: float, freqs: list[float], seed: int) -> None:
    n, reps = 1000, 3000
    data = _dataset(freqs, n)
    n, k = data.size, len(freqs)
    truth = np.bincount(data, minlength=k) / n
    cats = list(range(k))
    reports = local.randomized_response(np.tile(data, reps), eps, categories=cats, seed=seed)
    res = [local.estimate_frequencies(r, eps, cats) for r in reports.reshape(reps, n)]
    ests = np.stack([r["estimate"].to_numpy() for r in res])
    ses = np.stack([r["std_error"].to_numpy() for r in res])
    lows = np.stack([r["lower"].to_numpy() for r in res])
    ups = np.stack([r["upper"].to_numpy() for r in res])
    p, q = local.krr_probabilities(eps, k)
    var_formula = (truth * p * (1 - p) + (1 - truth) * q * (1 - q)) / (n * (p - q) ** 2)
    _check_estimates(ests, ses, lows, ups, truth, var_formula)
    assert res[0].attrs["dp"]["mechanism"] == ("randomized_response" if k == 2 else "k_rr")


@pytest.mark.parametrize(("eps", "seed"), [(1.0, 51), (4.0, 52)])
def test_rappor_estimator_unbiased_and_variance(eps: float, seed: int) -> None:
    freqs = [0.4, 0.35, 0.2, 0.05]
    n, reps = 1000, 3000
    data = _dataset(freqs, n)
    k = len(freqs)
    truth = np.bincount(data, minlength=k) / n
    cats = [10, 20, 30, 40]
    values = np.asarray(cats)[np.tile(data, reps)]
    bits = local.rappor(values, eps, categories=cats, seed=seed).reshape(reps, n, k)
    res = [local.estimate_frequencies(b, eps, cats) for b in bits]
    assert res[0].attrs["dp"]["mechanism"] == "rappor"
    ests = np.stack([r["estimate"].to_numpy() for r in res])
    ses = np.stack([r["std_error"].to_numpy() for r in res])
    lows = np.stack([r["lower"].to_numpy() for r in res])
    ups = np.stack([r["upper"].to_numpy() for r in res])
    _, q1 = local.rappor_probabilities(eps)
    var_formula = np.full(k, q1 * (1 - q1) / (n * (1 - 2 * q1) ** 2))
    _check_estimates(ests, ses, lows, ups, truth, var_formula)


def test_two_coin_estimator() -> None:
    data = _dataset([0.8, 0.2], 4000)
    reports = local.randomized_response(data, preset="two_coin", seed=61)
    res = local.estimate_frequencies(reports, preset="two_coin")
    assert res.attrs["dp"]["p_keep"] == 0.75 and res.attrs["dp"]["preset"] == "two_coin"
    assert res.attrs["dp"]["epsilon"] == pytest.approx(math.log(3))
    assert (res["lower"] <= [0.8, 0.2]).all() and (res["upper"] >= [0.8, 0.2]).all()


# ------------------------------------------------------------------------------------------
# Simplex projection (post-processing)
# ------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-3, 3, allow_nan=False), min_size=1, max_size=12), st.integers(0, 99))
def test_project_simplex(v: list[float], seed: int) -> None:
    x = local.project_simplex(v)
    assert (x >= 0).all() and x.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(local.project_simplex(x), x, atol=1e-12)  # idempotent
    others = np.random.default_rng(seed).dirichlet(np.ones(len(v)), size=50)
    dist = np.linalg.norm(np.asarray(v) - x)
    assert (np.linalg.norm(np.asarray(v) - others, axis=1) >= dist - 1e-9).all()  # nearest


def test_estimate_with_projection() -> None:
    cats = list(range(6))
    data = _dataset([0.97, 0.03, 0.0, 0.0, 0.0, 0.0], 300)
    reports = local.randomized_response(data, 0.5, categories=cats, seed=71)
    raw = local.estimate_frequencies(reports, 0.5, cats)
    proj = local.estimate_frequencies(reports, 0.5, cats, project=True)
    assert (raw["estimate"] < 0).any()  # the unbiased estimator leaves the simplex here
    assert (proj["estimate"] >= 0).all() and proj["estimate"].sum() == pytest.approx(1.0)
    np.testing.assert_allclose(proj["unbiased"], raw["estimate"])
    assert (proj["lower"] >= 0).all() and (proj["upper"] <= 1).all()
    assert proj.attrs["dp"]["projected"] and not raw.attrs["dp"]["projected"]
    assert list(proj.columns[:4]) == ["estimate", "std_error", "lower", "upper"]


# ------------------------------------------------------------------------------------------
# Kinds in, kinds out; accessor; randomness source
# ------------------------------------------------------------------------------------------


def test_series_in_series_out() -> None:
    s = pd.Series(["yes", "no", "maybe"] * 50, index=np.arange(150) * 3 + 7, name="answer")
    out = local.randomized_response(s, 1.0, categories=["yes", "no", "maybe"], seed=1)
    assert isinstance(out, pd.Series) and out.index.equals(s.index) and out.name == "answer"
    assert out.dtype == s.dtype and set(out) <= {"yes", "no", "maybe"}
    bits = local.rappor(s, 1.0, categories=["yes", "no", "maybe"], seed=2)
    assert isinstance(bits, pd.DataFrame) and bits.index.equals(s.index)
    assert list(bits.columns) == ["yes", "no", "maybe"]
    assert all(dt == np.dtype(bool) for dt in bits.dtypes)
    est = local.estimate_frequencies(bits[["maybe", "yes", "no"]], 1.0)  # columns any order
    assert list(est.index) == ["maybe", "yes", "no"]


def test_other_kinds() -> None:
    arr = np.array([3, 5, 7, 5], dtype=np.int32)
    out = local.randomized_response(arr, 2.0, categories=[3, 5, 7], seed=1)
    assert isinstance(out, np.ndarray) and out.dtype == np.int32 and set(out) <= {3, 5, 7}
    lst = local.randomized_response(["a", "b", "a"], 2.0, categories=["a", "b", "c"], seed=1)
    assert isinstance(lst, list) and len(lst) == 3 and set(lst) <= {"a", "b", "c"}
    flags = local.randomized_response(np.array([True, False, True]), 1.0, seed=1)
    assert flags.dtype == bool
    flags_list = local.randomized_response([True, False], 1.0, [False, True], seed=1)
    assert all(isinstance(v, bool) for v in flags_list)
    ints01 = local.randomized_response(pd.Series([0, 1, 1], dtype="Int64"), 1.0, seed=1)
    assert ints01.dtype == "Int64"
    cat = pd.Series(pd.Categorical(["x", "y", "x"], categories=["x", "y", "z"]))
    cat_out = local.randomized_response(cat, 1.0, "categories", seed=3)  # opt-in: the dtype's
    assert isinstance(cat_out.dtype, pd.CategoricalDtype)
    assert list(cat_out.cat.categories) == ["x", "y", "z"]
    floats = local.randomized_response(np.array([1.5, 2.5]), 1.0, categories=[1.5, 2.5, 9], seed=1)
    assert floats.dtype == np.float64 and set(floats) <= {1.5, 2.5, 9.0}
    empty = local.randomized_response(np.array([], dtype=np.int64), 1.0, categories=[0, 1, 2])
    assert empty.size == 0


def test_accessor() -> None:
    df = pd.DataFrame({"answer": ["a", "b", "c", "a"] * 25, "x": range(100)},
                      index=pd.RangeIndex(100, 200))
    acc = local.LocalAccessor(df)
    col = acc.randomized_response("answer", epsilon=1.0, categories=["a", "b", "c"], seed=1)
    assert col.name == "answer" and col.index.equals(df.index)
    bits = acc.rappor("answer", 2.0, ["a", "b", "c"], seed=2)
    assert bits.shape == (100, 3) and bits.index.equals(df.index)
    est = local.LocalAccessor(df.assign(answer=col)).estimate_frequencies(
        "answer", 1.0, ["a", "b", "c"])
    assert list(est.index) == ["a", "b", "c"]
    with pytest.raises(ValidationError, match="unknown column"):
        acc.randomized_response("nope", 1.0, ["a", "b", "c"])
    with pytest.raises(ValidationError, match="column 'answer'") as err:
        acc.randomized_response("answer", 1.0, ["a", "b"], invalid="raise")
    assert "'c'" not in str(err.value)
    with pytest.raises(ValidationError, match="column 'answer'"):
        acc.rappor("answer", 1.0, ["a", "b"], invalid="raise")
    assert acc.randomized_response("answer", 1.0, ["a", "b"], seed=1).index.equals(df.index)
    assert acc.rappor("answer", 1.0, ["a", "b"], seed=1).shape == (100, 2)


def test_secure_by_default_and_seeded_warns() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = local.randomized_response(np.zeros(64, dtype=int), 0.1, categories=[0, 1, 2])
        b = local.randomized_response(np.zeros(64, dtype=int), 0.1, categories=[0, 1, 2])
    assert not np.array_equal(a, b)  # 2^-64-ish chance of a false failure
    with pytest.warns(InsecureSeedWarning):
        local.randomized_response(np.zeros(4, dtype=int), 1.0, categories=[0, 1], seed=3)
    x = np.arange(1000) % 4
    r1 = local.randomized_response(x, 1.0, categories=[0, 1, 2, 3], seed=9)
    r2 = local.randomized_response(x, 1.0, categories=[0, 1, 2, 3],
                                   rng=RandomSource(9, warn=False))
    np.testing.assert_array_equal(r1, r2)


class _ScriptedSource(RandomSource):
    """Returns scripted 64-bit words: drives the sampler into its rare undecided branches."""

    def __init__(self, script: list[int]) -> None:
        super().__init__(seed=0, warn=False)
        self.script = list(script)

    def words(self, n: int) -> np.ndarray:
        out = np.array([self.script.pop(0) for _ in range(n)], dtype=np.uint64)
        return out


@pytest.mark.parametrize("j", [1, 5, 9])
@pytest.mark.parametrize("tail", [0, 2**64 - 1, 0x8000_0000_0000_0000])
def test_rare_undecided_draws_are_resolved_exactly(j: int, tail: int) -> None:
    """Force U's first 64 bits onto a cut point's cell; the bin must follow the 128-bit cut."""
    design = _design(1.0, 10)
    f64 = sampling.edges(design, 64)[0][j - 1]
    f16 = f64 >> 48
    assert sampling.lut(design, 8)[f16 >> 8] == -1 and sampling.lut(design, 16)[f16] == -1
    every_byte = 0x0101_0101_0101_0101  # a byte repeated: read the same at any byte order
    script = [(f16 >> 8) * every_byte, (f16 & 0xFF) * every_byte, (f64 & (2**48 - 1)) << 16,
              tail, 0, 2**64 - 1]
    src = _ScriptedSource(script)
    d = int(sampling.draw_offsets(design, 1, src)[0])
    f128, strict = design.cut_floor(j, 128)
    assert strict
    prefix = (f64 << 64) | tail
    if prefix != f128:
        assert d == (j - 1 if prefix < f128 else j)
        assert len(src.script) == 2  # exactly one extra word was read
    # the randomized value is the input shifted by d
    src2 = _ScriptedSource(script)
    out = local.randomized_response(np.array([4]), 1.0, categories=list(range(10)), rng=src2)
    assert int(out[0]) == (4 + d) % 10


def test_large_epsilon_and_many_categories() -> None:
    x = np.arange(2000) % 500
    out = local.randomized_response(x, 40.0, categories=list(range(500)), seed=1)
    np.testing.assert_array_equal(out, x)  # P(change) ~ 500 e^-40
    p, q = local.krr_probabilities(800.0, 3)
    assert p == 1.0 and q == 0.0
    np.testing.assert_array_equal(
        local.randomized_response(np.array([0, 1, 2]), 800.0, categories=[0, 1, 2], seed=1),
        [0, 1, 2])


# ------------------------------------------------------------------------------------------
# Bad input: typed errors that never echo data values or counts
# ------------------------------------------------------------------------------------------


def _no_data_in(message: str, *secrets: str) -> None:
    for s in secrets:
        assert s not in message
    assert not re.search(r"\d", message), message  # no counts


@pytest.mark.parametrize("eps", [0, -1.0, float("nan"), float("inf"), True, "1.0", None,
                                 np.bool_(True), 1j])
def test_bad_epsilon(eps: object) -> None:
    with pytest.raises(ValidationError, match="epsilon"):
        local.randomized_response([0, 1], eps, categories=[0, 1])  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="epsilon"):
        local.rappor([0, 1], eps, categories=[0, 1])  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="epsilon"):
        local.estimate_frequencies([0, 1], eps, categories=[0, 1])  # type: ignore[arg-type]


@pytest.mark.parametrize("cats", [[], ["a"], ["a", "a"], [1, 1.0], ["a", None],
                                  [0.5, float("nan")], "ab", 5, [["a"], ["b"]]])
def test_bad_categories(cats: object) -> None:
    with pytest.raises(ValidationError):
        local.randomized_response(["a"], 1.0, categories=cats)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        local.rappor(["a"], 1.0, categories=cats)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        local.estimate_frequencies(["a", "a"], 1.0, categories=cats)  # type: ignore[arg-type]


@pytest.mark.parametrize("values", [
    pd.Series(["yes", "SECRET-77", "no"], name="answer"),
    np.array(["yes", "SECRET-77"], dtype=object),
    ["yes", "SECRET-77"],
    np.array([1, 2, 99]),
    np.array([1.0, 2.0, 99.5]),
    pd.Series(pd.Categorical(["yes", "SECRET-77"])),
])
def test_values_outside_categories(values: object) -> None:
    """Refused only on request (``invalid="raise"``) and by the estimators, which read reports."""
    cats = ["yes", "no"] if not isinstance(values, np.ndarray) or values.dtype == object \
        else [1, 2]
    for fn in (lambda: local.randomized_response(values, 1.0, categories=cats, invalid="raise"),
               lambda: local.rappor(values, 1.0, categories=cats, invalid="raise"),
               lambda: local.estimate_frequencies(values, 1.0, categories=cats)):
        with pytest.raises(ValidationError, match="outside the declared categories") as err:
            fn()
        _no_data_in(str(err.value), "SECRET", "99")


@pytest.mark.parametrize(("values", "cats"), [
    (pd.Series(["yes", None, "no"], name="answer"), ["yes", "no"]),
    (pd.Series([1.0, np.nan]), [1, 0]),
    (np.array([1.0, np.nan]), [1, 0]),
    (np.array(["yes", None], dtype=object), ["yes", "no"]),
    (["yes", None], ["yes", "no"]),
    ([1, float("nan")], [1, 0]),
    (pd.Series([1, None], dtype="Int64"), [1, 0]),
    (pd.Series(pd.Categorical(["yes", None])), ["yes", "no"]),
])
def test_missing_values(values: object, cats: list[object]) -> None:
    """Refused only on request (``invalid="raise"``) and by the estimators, which read reports."""
    with pytest.raises(ValidationError, match="missing") as err:
        local.randomized_response(values, 1.0, categories=cats, invalid="raise")
    _no_data_in(str(err.value))
    with pytest.raises(ValidationError, match="missing"):
        local.rappor(values, 1.0, categories=cats, invalid="raise")
    with pytest.raises(ValidationError, match="missing"):
        local.estimate_frequencies(values, 1.0, categories=cats)


def test_other_bad_arguments() -> None:
    with pytest.raises(ValidationError, match="declare categories"):
        local.randomized_response(["a", "b"], 1.0)
    with pytest.raises(ValidationError, match="declare categories"):
        local.randomized_response(np.array(["a", "b"]), 1.0)  # a string dtype is not binary
    with pytest.raises(ValidationError, match="outside"):  # binary default is {0, 1}
        local.randomized_response(np.array([0, 2]), 1.0, invalid="raise")
    for bad in ("Raise", "drop", None, ["raise"]):
        with pytest.raises(ValidationError, match="invalid must"):
            local.randomized_response([0, 1], 1.0, [0, 1], invalid=bad)  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="invalid must"):
            local.rappor([0, 1], 1.0, [0, 1], invalid=bad)  # type: ignore[arg-type]
    one_zero = np.array([0, 1])
    with pytest.raises(ValidationError, match="two_coin"):
        local.randomized_response(one_zero, 1.0, preset="two_coin")
    with pytest.raises(ValidationError, match="preset"):
        local.randomized_response(one_zero, 1.0, preset="three_coin")
    with pytest.raises(ValidationError, match="2 categories"):
        local.randomized_response(one_zero, preset="two_coin", categories=[0, 1, 2])
    local.randomized_response(one_zero, math.log(3), preset="two_coin", seed=1)  # consistent
    with pytest.raises(ValidationError, match="seed"):
        local.randomized_response(one_zero, 1.0, seed=1, rng=RandomSource(1, warn=False))
    with pytest.raises(ValidationError, match="one-dimensional"):
        local.randomized_response(np.zeros((2, 2), dtype=int), 1.0, categories=[0, 1])
    with pytest.raises(ValidationError, match="k must"):
        local.krr_probabilities(1.0, 1)
    with pytest.raises(ValidationError, match="method"):
        local.estimate_frequencies([0, 1], 1.0, method="laplace")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="'rr' needs"):
        local.estimate_frequencies([0, 1, 2], 1.0, categories=[0, 1, 2], method="rr")
    for ci in (0, 1, 1.5, True):
        with pytest.raises(ValidationError, match="ci"):
            local.estimate_frequencies([0, 1], 1.0, ci=ci)
    with pytest.raises(ValidationError, match="at least"):
        local.estimate_frequencies(np.array([1]), 1.0)
    bits = np.array([[1, 0], [0, 2]])
    with pytest.raises(ValidationError, match="bits") as err:
        local.estimate_frequencies(bits, 1.0, categories=["a", "b"])
    assert "2" not in str(err.value).replace("2-D", "")
    with pytest.raises(ValidationError, match="one column per category"):
        local.estimate_frequencies(pd.DataFrame({"a": [True], "b": [False]}), 1.0,
                                   categories=["a", "c"])
    with pytest.raises(ValidationError, match="required"):
        local.estimate_frequencies(np.zeros((3, 2), dtype=bool), 1.0)
    with pytest.raises(ValidationError):
        local.LocalAccessor([1, 2])  # type: ignore[arg-type]


def test_exported() -> None:
    assert dpf.local is local
    assert issubclass(ValidationError, dpf.DPError)


# ------------------------------------------------------------------------------------------
# Behaviour that does not depend on the values (docs/privacy.md): implied categories come from the
# dtype; a missing or undeclared value never refuses the batch, it reports uniformly
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("values", [
    [True, False, True], [True, False, 1], [1, 0, 1], [1.0, 0, True], [],
    np.array([True, False, 1], dtype=object), pd.Series([True, False, True], dtype=object),
    pd.Series(["a", "b"]),
])
def test_no_categories_without_a_binary_dtype(values: object) -> None:
    """Lists and object columns carry no dtype: without ``categories`` they are refused whatever
    their values (0.1 read bool or 0/1 from the values' types, so one respondent answering 1
    instead of True turned every report and the estimate's labels from bool into int)."""
    messages = set()
    for fn in (lambda: local.randomized_response(values, 1.0, seed=1),
               lambda: local.estimate_frequencies(values, 1.0)):
        with pytest.raises(ValidationError, match="declare categories") as err:
            fn()
        messages.add(str(err.value))
    declare = ("declare categories=[...], or for a pandas Categorical opt in to its dtype's "
               "categories with categories='categories'")
    assert messages == {
        f"values has no bool or numeric dtype (a list or an object column has none): {declare}",
        f"reports has no bool or numeric dtype (a list or an object column has none): {declare}"}


@pytest.mark.parametrize(("values", "cats", "out_type"), [
    (np.array([True, False, True]), [False, True], bool),
    (pd.Series([True, False, True], dtype="boolean"), [False, True], bool),
    (np.array([1, 0, 1], dtype=np.int8), [0, 1], int),
    (pd.Series([1.0, 0.0, 1.0]), [0, 1], int),
    (pd.Series([1, 0, 1], dtype="Int64"), [0, 1], int),
])
def test_implied_categories_come_from_the_dtype(values: object, cats: list[object],
                                                out_type: type) -> None:
    est = local.estimate_frequencies(values, 1.0)
    assert list(est.index) == cats and all(type(c) is out_type for c in est.index)
    out = local.randomized_response(values, 1.0, seed=1)
    assert out.dtype == values.dtype  # type: ignore[attr-defined]


@pytest.mark.parametrize("cats", [[False, True], [0, 1], [0.0, 1.0]])
@pytest.mark.parametrize("kind", ["list", "object array", "object Series"])
def test_true_one_and_one_point_zero_are_one_value(cats: list[object], kind: str) -> None:
    """With declared categories, every spelling of a value (True, 1, 1.0, np.int8(1)) reads as
    that category: the same reports under one seed, spelled as declared, never as the data."""
    spellings: list[list[object]] = [
        [True, False] * 50, [1, 0] * 50, [1.0, False] * 50, [np.int8(1), np.float64(0)] * 50,
        [True, 0, 1.0, False] * 25]
    outs = []
    for vals in spellings:
        v: object = vals if kind == "list" else (
            np.array(vals, dtype=object) if kind == "object array"
            else pd.Series(vals, dtype=object))
        out = local.randomized_response(v, 1.0, cats, seed=3)
        outs.append([(type(x), x) for x in out])
    assert all(o == outs[2] for o in outs[:3])  # same codes: identical reports, same types
    assert {t for o in outs for t, _ in o} == {type(cats[0])}
    est = [local.estimate_frequencies(pd.Series(vals, dtype=object), 1.0, cats)
           for vals in spellings]
    assert all(list(e.index) == cats and all(type(c) is type(cats[0]) for c in e.index)
               for e in est)


@pytest.mark.parametrize(("dtype", "k"), [(np.int8, 200), (np.uint8, 300), (np.int64, 5)])
def test_empty_input_has_the_dtype_of_any_other(dtype: type, k: int) -> None:
    """An empty batch comes back in the dtype a non-empty one of the same dtype does (0.1 gave
    an object array when the input dtype could not hold the largest category)."""
    cats = list(range(k))
    full = local.randomized_response(np.zeros(3, dtype), 1.0, cats, seed=1)
    empty = local.randomized_response(np.zeros(0, dtype), 1.0, cats, seed=1)
    assert empty.dtype == full.dtype and empty.shape == (0,)


_CATS = ["yes", "no", "unsure"]


def _invalid_kinds() -> list[object]:
    return [np.nan, None, pd.NA, pd.NaT, "maybe", ["yes"], {"yes": 1}, 1, True, 2.5,
            np.array(["yes"]), float("inf")]


@pytest.mark.parametrize("bad", _invalid_kinds())
@pytest.mark.parametrize("kind", ["object Series", "str Series", "list", "object array"])
def test_invalid_values_never_refuse_by_default(bad: object, kind: str) -> None:
    """One respondent's missing, undeclared or unhashable value: the batch completes, in the
    same kind, dtype, index and shape, and with one seed every other respondent's report is the
    one they give without it (the invalid respondent's randomness is drawn after the rest)."""
    base: list[object] = ["yes", "no", "unsure"] * 20

    def make(vals: list[object]) -> object:
        if kind == "object Series":
            return pd.Series(vals, dtype=object, index=np.arange(len(vals)) * 2, name="a")
        if kind == "str Series":
            return pd.Series([v if isinstance(v, str) else None for v in vals], dtype="str",
                             index=np.arange(len(vals)) * 2, name="a")
        if kind == "list":
            return vals
        return np.fromiter(vals, dtype=object, count=len(vals))

    d, d2 = make(base), make([*base[:-1], bad])
    for fn in (local.randomized_response, local.rappor):
        out, out2 = fn(d, 1.0, _CATS, seed=7), fn(d2, 1.0, _CATS, seed=7)
        assert type(out) is type(out2)
        if isinstance(out, pd.Series | pd.DataFrame):
            assert out.index.equals(d.index) and out2.index.equals(d.index)  # type: ignore
            assert str(pd.DataFrame(out).dtypes) == str(pd.DataFrame(out2).dtypes)
            out, out2 = out.to_numpy(), out2.to_numpy()
        if isinstance(out, np.ndarray):
            assert out.shape == out2.shape and out.dtype == out2.dtype
        assert len(out) == len(out2) == len(base)
        np.testing.assert_array_equal(np.asarray(out[:-1]), np.asarray(out2[:-1]))
        if fn is local.randomized_response:
            assert out2[-1] in _CATS and type(out2[-1]) is str


@pytest.mark.parametrize("values", [
    np.array([0.0, 1.0, np.nan]), np.array([0, 1, 7]), np.array([0, 1, -3], dtype=np.int8),
    np.array([True, False, True]), pd.Series([0, 1, None], dtype="Int64"),
    pd.Series([True, None, False], dtype="boolean"),
    pd.Series(pd.Categorical(["a", None, "zz"])),
])
def test_invalid_values_in_typed_columns(values: object) -> None:
    """Typed columns: NaN, NA, out-of-range numbers, an undeclared level, a bool with no
    declared category: reports among the categories, in the dtype a valid batch gets."""
    cats: list[object]
    if isinstance(values, pd.Series) and isinstance(values.dtype, pd.CategoricalDtype):
        cats, valid = ["a", "b"], pd.Series(pd.Categorical(["a", "b", "a"]))
    elif isinstance(values, np.ndarray) and values.dtype == bool:
        cats, valid = [False, "other"], np.array([False, False, False])  # True is undeclared
    else:
        cats = [0, 1]
        valid = (values.fillna(values.dtype.type(0)) if isinstance(values, pd.Series)
                 else np.where(np.isin(values, [0, 1]), values, 0).astype(values.dtype))
    out = local.randomized_response(values, 1.0, cats, seed=2)
    ref = local.randomized_response(valid, 1.0, cats, seed=2)
    assert out.dtype == ref.dtype and len(out) == 3
    assert set(np.asarray(out, dtype=object).tolist()) <= set(cats)
    bits = local.rappor(values, 1.0, cats, seed=2)
    assert bits.shape == (3, 2) and (np.asarray(bits).dtype == bool)
    with pytest.raises(ValidationError, match="missing or outside"):
        local.randomized_response(values, 1.0, cats, invalid="raise")


def test_invalid_raise_has_one_message_whatever_the_value() -> None:
    """Opt-in refusal: one message for every kind of invalid value, never quoting it."""
    messages = set()
    for bad in _invalid_kinds():
        values = pd.Series(["yes", "no", bad], dtype=object, name="answer")
        for fn in (local.randomized_response, local.rappor):
            with pytest.raises(ValidationError) as err:
                fn(values, 1.0, _CATS, invalid="raise")
            messages.add(str(err.value))
        with pytest.raises(ValidationError) as err:
            local.estimate_frequencies(values, 1.0, _CATS)  # reports: always refused
        messages.add(str(err.value))
    assert messages == {"values contains values that are missing or outside the declared "
                        "categories",
                        "reports contains values that are missing or outside the declared "
                        "categories"}


def _uniform_rejected(counts: np.ndarray, probs: np.ndarray, alpha: float = 1e-6) -> bool:
    """A chi-square goodness-of-fit test of ``counts`` against ``probs`` rejects at ``alpha``
    (with a fixed seed the test is deterministic; alpha bounds its false-alarm rate)."""
    return bool(stats.chisquare(counts, probs * counts.sum()).pvalue < alpha)


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_an_invalid_respondent_reports_uniformly(eps: float) -> None:
    """k-RR: invalid respondents (interleaved with valid ones) report every category with
    probability 1/k; the same check rejects what they would report as category 0, so it would
    catch invalid respondents mapped to a fixed category."""
    k, n = 4, 40_000
    cats = ["a", "b", "c", "d"]
    bad: list[object] = [np.nan, None, "zz", ["a"]] * (n // 4)
    values = pd.Series([v for pair in zip(bad, ["a"] * n, strict=True) for v in pair],
                       dtype=object)
    out = local.randomized_response(values, eps, cats, seed=101).to_numpy()
    codes = np.searchsorted(np.asarray(cats, dtype=object), out[0::2])
    counts = np.bincount(codes, minlength=k)
    assert not _uniform_rejected(counts, np.full(k, 1 / k))
    # the check has teeth: true category "a" (what mapping invalid to code 0 would report)
    valid = np.bincount(np.searchsorted(np.asarray(cats, dtype=object), out[1::2]), minlength=k)
    assert _uniform_rejected(valid, np.full(k, 1 / k))
    p, q = local.krr_probabilities(eps, k)
    assert not _uniform_rejected(valid, np.array([p, q, q, q]))  # and accepts the true law


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_an_invalid_respondent_rappor_encodes_a_uniform_category(eps: float) -> None:
    """RAPPOR: an invalid respondent's bit vector has the law of a uniformly random category's
    report, the mixture (1/k) sum_x P(bits | x); category 0's own law is rejected."""
    k, n = 3, 40_000
    values = np.array([None, float("nan"), "zz", ("t",)] * (n // 4), dtype=object)
    bits = local.rappor(values, eps, categories=["a", "b", "c"], seed=202)
    vec = bits @ (1 << np.arange(k))
    counts = np.bincount(vec, minlength=2**k)
    p1, q1 = local.rappor_probabilities(eps)
    law = np.empty((k, 2**k))
    for x in range(k):
        for y in range(2**k):
            b = (y >> np.arange(k)) & 1
            pr = np.where(np.arange(k) == x, p1, q1)
            law[x, y] = np.prod(np.where(b == 1, pr, 1 - pr))
    assert not _uniform_rejected(counts, law.mean(axis=0))
    assert _uniform_rejected(counts, law[0])  # a fixed category would be caught


def test_invalid_reports_are_reproducible_and_from_the_given_source() -> None:
    values = pd.Series(["yes", None, "zz", "no"] * 50, dtype=object)
    a = local.randomized_response(values, 1.0, _CATS, seed=5)
    b = local.randomized_response(values, 1.0, _CATS, rng=RandomSource(5, warn=False))
    pd.testing.assert_series_equal(a, b)
    bits_a = local.rappor(values, 1.0, _CATS, seed=5)
    np.testing.assert_array_equal(bits_a, local.rappor(values, 1.0, _CATS, seed=5))
    # the invalid respondents' reports do change with the seed (they are random, not fixed)
    c = local.randomized_response(values, 1.0, _CATS, seed=6)
    assert not a[values.isna()].equals(c[values.isna()])


def test_estimate_with_invalid_respondents_counts_them_uniformly() -> None:
    """E[estimate_j] = (1 - r) f_j + r / k for a share r of invalid respondents and shares f_j
    among the valid ones (as docs/local.md states), for k-RR and RAPPOR."""
    eps, k, n = 2.0, 4, 60_000
    cats = [0, 1, 2, 3]
    valid = np.repeat([0, 1, 2, 3], [24_000, 12_000, 6_000, 3_000])  # 45_000 valid
    values = np.concatenate([valid, np.full(n - valid.size, np.nan)])  # r = 1/4
    r, f = 0.25, np.bincount(valid, minlength=k) / valid.size
    expected = (1 - r) * f + r / k
    for est in (local.estimate_frequencies(local.randomized_response(values, eps, cats, seed=9),
                                           eps, cats),
                local.estimate_frequencies(local.rappor(values, eps, cats, seed=9), eps, cats)):
        # the stated std_error plus the variance of the invalid respondents' random category
        sd = np.sqrt(est["std_error"] ** 2 + r * (1 / k) * (1 - 1 / k) / n)
        assert (np.abs(est["estimate"] - expected) < 5 * sd).all(), (est, expected)


def test_auto_method_counts_the_declared_categories() -> None:
    """``method="auto"`` picks RR or k-RR by the number of *declared* categories (or the
    Categorical's own on the opt-in), never by the reports' levels: 0.1 read a Categorical's
    levels, so reports made a Categorical by ``astype("category")`` decided k, and the
    estimator, from the values."""
    reports = pd.Series(pd.Categorical(["a", "b"] * 50, categories=["a", "b", "c"]))
    out = dpf.local.estimate_frequencies(reports, 1.0, "categories")
    assert list(out.index) == ["a", "b", "c"] and out.attrs["dp"]["mechanism"] == "k_rr"
    out = dpf.local.estimate_frequencies(reports, 1.0, ["a", "b"])
    assert list(out.index) == ["a", "b"] and out.attrs["dp"]["mechanism"] == "randomized_response"
    with pytest.raises(ValidationError, match="categories='categories'"):
        dpf.local.estimate_frequencies(reports, 1.0)


# ------------------------------------------------------------------------------------------
# Categories are declared (or a Categorical's on explicit opt-in), never taken from the answers
# (issue 31; audit finding 52)
# ------------------------------------------------------------------------------------------

_CATEGORICALS = [
    pd.Series(["a", "b"] * 30).astype("category"),
    pd.Series(["a", "b"] * 30 + ["Smallville"]).astype("category"),  # one more level
    pd.Series(pd.Categorical([True, False], categories=[False, True])),
    pd.Series([], dtype="category"),
]


@pytest.mark.parametrize("values", _CATEGORICALS)
def test_a_categorical_without_categories_is_refused(values: pd.Series) -> None:
    """A Categorical's levels come from the answers (``astype("category")``): without
    ``categories=`` every function refuses it, with one message whatever its levels or values,
    before any randomness is drawn. 0.1 used the levels: one respondent answering "Smallville"
    made it a possible report of every respondent and binary RR 3-RR for everyone."""
    src, fresh = RandomSource(7, warn=False), RandomSource(7, warn=False)
    df = pd.DataFrame({"answer": values})
    calls = [lambda: local.randomized_response(values, 1.0, rng=src),
             lambda: local.randomized_response(values, 1.0, None, rng=src, invalid="raise"),
             lambda: local.estimate_frequencies(values, 1.0),
             lambda: local.estimate_frequencies(values, 1.0, method="krr"),
             lambda: df.dp.local.randomized_response("answer", 1.0, rng=src),
             lambda: df.dp.local.estimate_frequencies("answer", 1.0)]
    messages = set()
    for fn in calls:
        with pytest.raises(ValidationError, match="categories='categories'") as err:
            fn()
        messages.add(re.sub(r"^(values|reports|column 'answer') ", "", str(err.value)))
    assert messages == {"is a Categorical, whose categories may come from the answers: declare "
                        "categories=[...], or opt in to its dtype's categories with "
                        "categories='categories'"}
    np.testing.assert_array_equal(src.words(4), fresh.words(4))  # nothing drawn
    for fn in (lambda: local.rappor(values, 1.0, None, rng=src),  # type: ignore[arg-type]
               lambda: df.dp.local.rappor("answer", 1.0, None)):  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="categories='categories'"):
            fn()


def test_one_answer_changes_no_one_elses_report() -> None:
    """Declared categories (or the opt-in on a Categorical of a declared dtype): a respondent
    answering "Smallville" changes neither the category set, nor k, nor, under one seed, any
    other respondent's report; their own report is uniform over the declared categories."""
    answers = ["a", "b"] * 30
    dtype = pd.CategoricalDtype(["a", "b"])
    for d, d2, cats in [
        # a declared dtype has no level for an undeclared answer: it is missing there
        (pd.Series([*answers, "a"], dtype=dtype), pd.Series([*answers, None], dtype=dtype),
         "categories"),
        (pd.Series([*answers, "a"]).astype("category"),
         pd.Series([*answers, "Smallville"]).astype("category"), ["a", "b"]),
        (pd.Series([*answers, "a"]), pd.Series([*answers, "Smallville"]), ["a", "b"]),
    ]:
        out = local.randomized_response(d, 1.0, cats, seed=11)
        out2 = local.randomized_response(d2, 1.0, cats, seed=11)
        assert out.dtype == out2.dtype and set(out) | set(out2) <= {"a", "b"}
        pd.testing.assert_series_equal(out.iloc[:-1], out2.iloc[:-1])
        bits = local.rappor(d, 1.0, cats, seed=11)
        bits2 = local.rappor(d2, 1.0, cats, seed=11)
        assert list(bits.columns) == list(bits2.columns) == ["a", "b"]
        pd.testing.assert_frame_equal(bits.iloc[:-1], bits2.iloc[:-1])
        for rep in (out, out2):
            est = local.estimate_frequencies(rep, 1.0, cats)
            assert list(est.index) == ["a", "b"] and est.attrs["dp"]["categories"] == 2
            assert est.attrs["dp"]["mechanism"] == "randomized_response"


def test_the_categories_opt_in() -> None:
    """``categories="categories"`` reads a Categorical's declared categories (its dtype, public
    by the caller's say-so, as ``keys={"col": "categories"}`` centrally), for the randomizers,
    RAPPOR and the estimator alike; on anything else it is refused."""
    values = pd.Series(pd.Categorical(["x", "y", "x"] * 20, categories=["x", "y", "z"]))
    out = local.randomized_response(values, 1.0, "categories", seed=1)
    assert list(out.cat.categories) == ["x", "y", "z"] and set(out) <= {"x", "y", "z"}
    bits = local.rappor(values, 1.0, "categories", seed=1)
    assert list(bits.columns) == ["x", "y", "z"]
    est = local.estimate_frequencies(out, 1.0, "categories")
    assert list(est.index) == ["x", "y", "z"] and est.attrs["dp"]["mechanism"] == "k_rr"
    acc = pd.DataFrame({"c": values}).dp.local
    assert list(acc.rappor("c", 1.0, "categories", seed=1).columns) == ["x", "y", "z"]
    for other in (pd.Series(["x", "y"]), np.array([0, 1]), ["x", "y"],
                  pd.Series([True, False])):
        for fn in (local.randomized_response, local.rappor, local.estimate_frequencies):
            with pytest.raises(ValidationError, match=r"needs \w+ to be a pandas Categorical"):
                fn(other, 1.0, "categories")
    with pytest.raises(ValidationError, match="RAPPOR reports declare categories"):
        local.estimate_frequencies(bits, 1.0, "categories")
    with pytest.raises(ValidationError, match="or 'categories' for a Categorical"):
        local.randomized_response(values, 1.0, "levels")  # type: ignore[arg-type]
