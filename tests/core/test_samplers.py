"""Statistical and exactness tests for the random source and the exact samplers.

Every goodness-of-fit check has a companion run on the *same* draws against a wrong reference
(a 1.1x scale, a shifted probability, a wider modulus) that must reject: it shows the check has
the power to catch the errors it is meant to catch. Draws use fixed seeds, so the outcomes are
deterministic; thresholds (p > 1e-4, 5 standard errors) would also hold for almost every seed.
"""

from __future__ import annotations

import math
import os
import pickle
import threading
import warnings
from collections.abc import Callable
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats

from dpframe.core.noise import discrete_gaussian as DG
from dpframe.core.noise import samplers as S
from dpframe.core.noise.rng import InsecureSeedWarning, RandomSource

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")

N = 200_000
P_MIN = 1e-4
Cdf = Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]]


def seeded(seed: int) -> RandomSource:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureSeedWarning)
        return RandomSource(seed=seed)


# ------------------------------------------------------------------------------------------
# Reference distributions (floating point is fine here: it only judges the samplers).
# ------------------------------------------------------------------------------------------


def laplace_cdf(scale: float) -> Cdf:
    """P(Y <= y) of the discrete Laplace: q**-y / (1 + q) for y < 0, 1 - q**(y+1) / (1 + q)."""
    q = math.exp(-1.0 / scale)

    def cdf(y: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        neg = np.exp(np.minimum(y, 0) / scale) / (1 + q)
        pos = 1 - np.exp(-(np.maximum(y, 0) + 1) / scale) / (1 + q)
        return np.where(y < 0, neg, pos)

    return cdf


def laplace_moments(scale: float) -> tuple[float, float]:
    """Variance and fourth central moment of the discrete Laplace (difference of geometrics)."""
    q = math.exp(-1.0 / scale)
    v = q / (-math.expm1(-1.0 / scale)) ** 2  # geometric variance
    return 2 * v, v * v * (24 + 2 * (1 - q) ** 2 / q)


def gaussian_table(sigma2: float) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Support and pmf of the discrete Gaussian, normalised over |y| <= 40 sigma + 10."""
    m = int(40 * math.sqrt(sigma2)) + 10
    ys = np.arange(-m, m + 1)
    logw = -(ys.astype(np.float64) ** 2) / (2 * sigma2)
    w = np.exp(logw - logw.max())
    return ys, w / w.sum()


def table_cdf(ys: npt.NDArray[np.int64], pmf: npt.NDArray[np.float64]) -> Cdf:
    c = np.cumsum(pmf)

    def cdf(y: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        i = np.searchsorted(ys, y, side="right") - 1
        return np.where(i < 0, 0.0, c[np.clip(i, 0, c.size - 1)])

    return cdf


# ------------------------------------------------------------------------------------------
# Checks.
# ------------------------------------------------------------------------------------------


def pooled_chisquare(observed: npt.NDArray[np.float64], expected: npt.NDArray[np.float64]) -> float:
    """Chi-square p-value after merging neighbouring bins until every expected count is >= 5."""
    obs, exp = [], []
    acc_o = acc_e = 0.0
    for o, e in zip(observed, expected, strict=True):
        acc_o += o
        acc_e += e
        if acc_e >= 5:
            obs.append(acc_o)
            exp.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0 or acc_o > 0:  # fold the remainder into the last bin
        if obs:
            obs[-1] += acc_o
            exp[-1] += acc_e
        else:
            obs, exp = [acc_o], [acc_e]
    if len(obs) < 2:
        return 1.0 if obs[0] == exp[0] else 0.0
    o_arr, e_arr = np.array(obs), np.array(exp)
    e_arr *= o_arr.sum() / e_arr.sum()
    return float(stats.chisquare(o_arr, e_arr).pvalue)


def integer_gof(samples: npt.NDArray[np.int64], cdf: Cdf, edges: npt.NDArray[np.int64]) -> float:
    """Goodness of fit over bins (-inf, e0], (e0, e1], ..., (e_last, inf) of integer samples."""
    edges = np.unique(edges)
    idx = np.searchsorted(edges, samples, side="left")
    observed = np.bincount(idx, minlength=edges.size + 1).astype(np.float64)
    c = cdf(edges.astype(np.float64))
    probs = np.diff(np.concatenate([[0.0], c, [1.0]]))
    return pooled_chisquare(observed, samples.size * probs)


def laplace_edges(scale: float) -> npt.NDArray[np.int64]:
    """Bin edges at the quantiles of the continuous Laplace, plus every integer near zero."""
    qs = stats.laplace(scale=scale).ppf(np.linspace(0.002, 0.998, 80))
    return np.unique(np.concatenate([np.floor(qs), np.arange(-12, 13)]).astype(np.int64))


def assert_moments(x: npt.NDArray[np.int64] | npt.NDArray[np.float64], mean: float,
                   var: float, mu4: float, k: float = 5.0) -> None:
    """Sample mean and (unbiased) variance within ``k`` standard errors of the true ones.

    Var(s**2) = mu4 / n - var**2 (n - 3) / (n (n - 1)) exactly, for the fourth central moment mu4.
    """
    n = x.size
    xf = x.astype(np.float64)
    assert abs(xf.mean() - mean) <= k * math.sqrt(var / n), (xf.mean(), mean)
    se_var = math.sqrt(mu4 / n - var * var * (n - 3) / (n * (n - 1)))
    assert abs(xf.var(ddof=1) - var) <= k * se_var, (xf.var(ddof=1), var, se_var)


def binomial_p(successes: int, n: int, p: float) -> float:
    """Two-bin chi-square p-value for ``successes`` out of ``n`` at probability ``p``."""
    if p >= 1.0:
        return 1.0 if successes == n else 0.0
    return pooled_chisquare(np.array([successes, n - successes], dtype=np.float64),
                            np.array([n * p, n * (1 - p)]))


# ------------------------------------------------------------------------------------------
# Random source.
# ------------------------------------------------------------------------------------------


def test_seed_warns_and_is_deterministic() -> None:
    with pytest.warns(InsecureSeedWarning):
        a = RandomSource(seed=1)
    b = seeded(1)
    assert not a.secure and not b.secure
    assert np.array_equal(a.words(100), b.words(100))
    assert np.array_equal(S.discrete_laplace(Fraction(10), 1000, a),
                          S.discrete_laplace(Fraction(10), 1000, b))
    assert np.array_equal(DG.discrete_gaussian(Fraction(7, 2), 1000, a),
                          DG.discrete_gaussian(Fraction(7, 2), 1000, b))
    assert not np.array_equal(seeded(2).words(10), seeded(1).words(10))


def test_a_sampling_generator_not_needed_still_takes_its_seed() -> None:
    """``needed=False`` skips making the generator, not drawing its seed: a seeded source's
    later draws (the noise) are the same whether or not a release bounds units."""
    a, b = seeded(5), seeded(5)
    assert a.sampling_generator(needed=False) is None
    gen = b.sampling_generator()
    assert isinstance(gen, np.random.Generator)
    assert np.array_equal(a.words(8), b.words(8))
    assert not np.array_equal(seeded(5).sampling_generator().integers(0, 2**62, 4),  # type: ignore[union-attr]
                              seeded(6).sampling_generator().integers(0, 2**62, 4))  # type: ignore[union-attr]


def test_default_source_is_secure_and_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        src = RandomSource()
    assert src.secure
    w = src.words(1000)
    assert w.dtype == np.uint64 and w.size == 1000 and np.unique(w).size == 1000
    assert src.words32(7).dtype == np.uint32 and src.words32(7).size == 7


def test_secure_buffer_never_shared_between_threads_or_copies() -> None:
    src = RandomSource()
    src.words(1)  # fills the buffer
    clone = pickle.loads(pickle.dumps(src))
    assert clone.secure and not np.array_equal(clone.words(4), src.words(4))
    seen: list[npt.NDArray[np.uint64]] = []
    lock = threading.Lock()

    def work() -> None:
        got = [src.words(3) for _ in range(500)]
        with lock:
            seen.extend(got)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    allw = np.concatenate(seen)
    assert np.unique(allw).size == allw.size


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_does_not_replay_parent_buffer() -> None:
    src = RandomSource()
    src.words(1)  # the buffer now holds unread bytes
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.write(w, src.words(4).tobytes())
        os._exit(0)
    os.close(w)
    child = os.read(r, 32)
    os.close(r)
    os.waitpid(pid, 0)
    assert child != src.words(4).tobytes()


@pytest.mark.parametrize("m", [1, 2, 8, 1 << 16, 1 << 32, 1 << 40, 3, 7, 1001,
                               (1 << 32) - 1, (1 << 33) + 1, 3 * (1 << 61) - 1])
def test_below_uniform(m: int) -> None:
    x = seeded(m % 9973).below(np.full(N, m, dtype=np.uint64))
    assert x.dtype == np.uint64 and int(x.max()) < m

    def gof(ref: int) -> float:
        if ref <= 64:
            obs = np.bincount(x.astype(np.int64), minlength=ref).astype(np.float64)
            return pooled_chisquare(obs, np.full(ref, N / ref))
        width = -(-ref // 64)
        obs = np.bincount((x // np.uint64(width)).astype(np.int64), minlength=64)
        counts = [min((j + 1) * width, ref) - j * width for j in range(64)]
        return pooled_chisquare(obs.astype(np.float64), N * np.array(counts, dtype=float) / ref)

    if m == 1:
        assert not x.any()
        return
    assert gof(m) > P_MIN
    assert gof(m + max(1, m // 10)) < P_MIN  # a 1.1x wider range must be rejected
    mf = float(m)
    var = (mf * mf - 1) / 12
    mu4 = (mf * mf - 1) * (3 * mf * mf - 7) / 240
    assert_moments(x.astype(np.float64), (mf - 1) / 2, var, mu4)


def test_below_mixed_moduli_in_one_call() -> None:
    mods = np.array([3, 10, 1 << 35, 5] * (N // 4), dtype=np.uint64)
    x = seeded(11).below(mods)
    assert bool((x < mods).all())
    for m in (3, 10, 5):
        sel = x[mods == m].astype(np.int64)
        obs = np.bincount(sel, minlength=m).astype(np.float64)
        assert pooled_chisquare(obs, np.full(m, sel.size / m)) > P_MIN


@pytest.mark.parametrize(("num", "den"), [(1, 3), (2, 7), (1 << 61, 3 * (1 << 60) + 1),
                                          (123_456_789, 1 << 32)])
def test_bernoulli_rational(num: int, den: int) -> None:
    b = seeded(num % 1000).bernoulli_rational(np.full(N, num, dtype=np.uint64),
                                              np.full(N, den, dtype=np.uint64))
    p = num / den
    k = int(b.sum())
    assert binomial_p(k, N, p) > P_MIN
    wrong = p * 1.1 if p < 0.5 else 1 - (1 - p) * 1.1
    assert binomial_p(k, N, wrong) < P_MIN
    assert abs(k / N - p) <= 5 * math.sqrt(p * (1 - p) / N)


def test_fair_bits() -> None:
    b = seeded(3).fair_bits(N + 13)
    assert b.size == N + 13 and b.dtype == np.bool_
    assert binomial_p(int(b.sum()), b.size, 0.5) > P_MIN
    assert binomial_p(int(b.sum()), b.size, 0.51) < P_MIN


# ------------------------------------------------------------------------------------------
# Exact arithmetic underneath the fast paths.
# ------------------------------------------------------------------------------------------


def dec_exp_neg(x: Fraction, digits: int = 80) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = digits
        return (-(Decimal(x.numerator) / Decimal(x.denominator))).exp()


def dec_floor_scaled(v: Decimal, bits: int) -> int | None:
    """floor(2**bits v), or None when v is too close to a multiple of 2**-bits to be sure."""
    with localcontext() as ctx:
        ctx.prec = 80
        s = v * (Decimal(2) ** bits)
        f = int(s.to_integral_value(rounding="ROUND_FLOOR"))
        if s - f < Decimal(10) ** -50 or (f + 1) - s < Decimal(10) ** -50:
            return None
        return f


def test_exp_neg_fixed_encloses_exp() -> None:
    rnd = np.random.default_rng(5)
    xs = [Fraction(0), Fraction(1), Fraction(1, 3), Fraction(1, 1 << 40), Fraction(45),
          Fraction(10**9, 7), Fraction(2**62 - 1, 2**61)]
    xs += [Fraction(int(a), int(b)) for a, b in zip(rnd.integers(0, 10**6, 60),
                                                     rnd.integers(1, 10**5, 60), strict=True)]
    for x in xs:
        for w in (8, 31, 63, 100, 200):
            lo, hi = S.exp_neg_fixed(x, w)
            with localcontext() as ctx:
                ctx.prec = 150
                exact = dec_exp_neg(x, 150) * (Decimal(2) ** w)
                assert Decimal(lo) <= exact <= Decimal(hi), (x, w)
            assert hi - lo <= 3
            flo, fhi = S._exp_neg_interval(x, w)
            assert fhi - flo < Fraction(1, 1 << w)


def test_split_exponent_is_the_least_k_of_its_definition() -> None:
    """The closed form equals the definition: the least k >= 0 with 2**(k + 1) x >= 1."""
    rnd = np.random.default_rng(11)
    xs = [Fraction(1, 1 << 40), Fraction(1, 2), Fraction(1, 3), Fraction(1), Fraction(5, 2),
          Fraction(1, (1 << 40) - 1), Fraction(3, 1 << 20), Fraction(1, (1 << 20) + 1)]
    xs += [Fraction(int(a), int(b)) for a, b in zip(rnd.integers(1, 10**4, 300),
                                                     rnd.integers(1, 10**12, 300), strict=True)]
    for x in xs:
        k = 0
        while x * (1 << (k + 1)) < 1:
            k += 1
        assert S._split_exponent(x) == k, x


def test_table_thresholds_are_exact_floors() -> None:
    x, k = Fraction(3, 7), 1  # scale 7/3
    head = S._laplace_head_table(x, S._split_exponent(x))
    assert S._split_exponent(x) == k
    q, qq = dec_exp_neg(x), dec_exp_neg(x * 2)
    for j in range(head.size):
        f = 1 - 2 * q * qq**j / (1 + q)
        want = dec_floor_scaled(f, 31)
        if want is not None:
            assert int(head.thr[j]) == want
    for y, g in ((Fraction(1, 1000), 6), (Fraction(1, 1 << 30), 12), (Fraction(3, 5), 9)):
        tab = S._chunk_table(y, g)
        assert tab.size == (1 << g) - 1
        den = 1 - dec_exp_neg(y * (1 << g))
        for c in list(range(min(tab.size, 70))) + list(range(tab.size - 20, tab.size)):
            want = dec_floor_scaled((1 - dec_exp_neg(y * (c + 1))) / den, 31)
            if want is not None:
                assert int(tab.thr[c]) == want, (y, g, c)
    thr = S._exp_neg_int_thresholds()
    for n in range(1, 65):
        assert int(thr[n]) == dec_floor_scaled(dec_exp_neg(Fraction(n)), 63)


def frac_part_scaled(v: Decimal, bits: int) -> float:
    with localcontext() as ctx:
        ctx.prec = 80
        s = v * (Decimal(2) ** bits)
        return float(s - int(s))


def test_tie_resolution_single_boundary() -> None:
    """Given the prefix w = floor(2**63 e**-1), U < e**-1 with probability frac(2**63 e**-1)."""
    rng = seeded(21)
    t = int(S._exp_neg_int_thresholds()[1])
    bound = S._exp_bound(Fraction(1))
    trials = 4000
    acc = sum(S._count_passed(t, 63, 0, 1, bound, rng) == 0 for _ in range(trials))
    p = frac_part_scaled(dec_exp_neg(Fraction(1)), 63)
    assert 0.05 < p < 0.95
    assert binomial_p(acc, trials, p) > P_MIN
    assert binomial_p(acc, trials, min(1.0, p + 0.1)) < P_MIN


def coarse_geometric_table(k: int = 12) -> S._Table:
    """Geometric(e**-1) thresholds at 8 bits: the top ones collide, so ties are frequent."""
    geo = S._geometric_table(Fraction(1))
    thr = [S._floor_scaled(geo.bound, j, 8) for j in range(k)]
    assert thr.count(255) >= 3  # a genuine cluster of equal thresholds
    return S._Table(thr, 8, geo.bound)


@pytest.mark.parametrize("search_below", [0, 10**9], ids=["guide", "binary-search"])
def test_lazy_inversion_with_frequent_ties(search_below: int,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """8-bit words tie with a threshold ~5% of the time; the law must still be exact (both
    inversion paths: the guide table for many words, binary search for few)."""
    monkeypatch.setattr(S, "_SEARCH_BELOW", search_below)
    tab = coarse_geometric_table()
    n = 40_000
    w = seeded(22).words32(n) >> np.uint32(24)
    x = S._invert(tab, w, seeded(23))

    def probs(rate: float) -> npt.NDArray[np.float64]:
        q = math.exp(-rate)
        return np.array([(1 - q) * q**j for j in range(tab.size)] + [q**tab.size])

    observed = np.bincount(x, minlength=tab.size + 1).astype(np.float64)
    assert pooled_chisquare(observed, n * probs(1.0)) > P_MIN
    assert pooled_chisquare(observed, n * probs(1 / 1.1)) < P_MIN


@pytest.mark.parametrize("search_below", [0, 10**9], ids=["guide", "binary-search"])
def test_tie_resolution_in_threshold_cluster(search_below: int,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Words equal to a clustered threshold resolve to the exact conditional law."""
    monkeypatch.setattr(S, "_SEARCH_BELOW", search_below)
    tab = coarse_geometric_table()
    j0 = int(np.searchsorted(tab.thr, 255, side="left"))
    trials = 3000
    got = S._invert(tab, np.full(trials, 255, dtype=np.uint32), seeded(24))
    # U in [255, 256) / 2**8: P(X >= j + 1) = P(U >= F_j) = 2**8 (1 - F_j) = 256 e**-(j + 1)
    tail = [min(1.0, 256 * math.exp(-(j + 1))) for j in range(j0, tab.size)]
    probs = [1 - tail[0]] + [tail[i] - tail[i + 1] for i in range(len(tail) - 1)] + [tail[-1]]
    observed = np.bincount(got - j0, minlength=len(probs)).astype(np.float64)
    assert observed.size == len(probs)
    assert pooled_chisquare(observed, trials * np.array(probs)) > P_MIN
    shifted = [probs[1], probs[0], *probs[2:]]  # swapping the two leading outcomes must fail
    assert pooled_chisquare(observed, trials * np.array(shifted)) < P_MIN


class ForcedWords(RandomSource):
    """A seeded source whose first ``words32`` call returns a fixed word (forces a tie)."""

    def __init__(self, seed: int, first: int) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InsecureSeedWarning)
            super().__init__(seed)
        self.first: int | None = first

    def words32(self, n: int) -> npt.NDArray[np.uint32]:
        if self.first is not None:
            out = np.full(n, self.first, dtype=np.uint32)
            self.first = None
            return out
        return super().words32(n)


def test_bernoulli_exp_neg_slow_path_is_exact() -> None:
    """A word inside the enclosure's undecided zone is settled with the exact conditional law."""
    gamma = Fraction(3, 10)
    v = dec_exp_neg(gamma)
    t32 = int(v * (Decimal(2) ** 32))
    trials = 3000
    rng = ForcedWords(23, t32)
    out = S.bernoulli_exp_neg(np.full(trials, 3), np.full(trials, 10), rng)
    p = frac_part_scaled(v, 32)
    assert 0.05 < p < 0.95
    assert binomial_p(int(out.sum()), trials, p) > P_MIN
    assert binomial_p(int(out.sum()), trials, min(1.0, p + 0.1)) < P_MIN


def test_gaussian_acceptance_tie_is_exact() -> None:
    """A 32-bit word equal to the acceptance threshold is settled with the conditional law."""
    a, b = 100, 1
    t = math.isqrt(a // b) + 1
    thr, complete, _ = DG._gauss_thresholds(a, b, t)
    assert complete
    y = 3
    p = dec_exp_neg(Fraction((y * t * b - a) ** 2, 2 * a * b * t * t))
    assert int(thr[y]) == int(p * (Decimal(2) ** 32))
    trials = 3000
    out = DG._gauss_accept(np.full(trials, y, dtype=np.int64), thr, a, b, t,
                          ForcedWords(26, int(thr[y])))
    frac = frac_part_scaled(p, 32)
    assert binomial_p(int(out.sum()), trials, frac) > P_MIN
    assert binomial_p(int(out.sum()), trials, min(1.0, frac + 0.1)) < P_MIN


@pytest.mark.parametrize("gamma", [Fraction(3, 10), Fraction(1), Fraction(7, 2),
                                   Fraction(2**40 - 3, 2**39), Fraction(20)], ids=str)
def test_bernoulli_exp_neg_fast_decisions_near_threshold(gamma: Fraction) -> None:
    """Words next to floor(2**32 e**-gamma) are decided exactly: accept iff w < threshold.

    For w != T = floor(2**32 e**-gamma) the outcome is determined by the first 32 bits alone
    (U < (w + 1) / 2**32 <= e**-gamma when w < T, U >= w / 2**32 > e**-gamma when w > T), so
    any slack in the fast enclosure shows up here deterministically.
    """
    t = int(dec_exp_neg(gamma) * (Decimal(2) ** 32))
    words = np.array([w for w in range(t - 80, t + 81) if w != t and 0 <= w < 1 << 32],
                     dtype=np.uint32)
    for w in words:
        got = S.bernoulli_exp_neg([gamma.numerator], [gamma.denominator],
                                  ForcedWords(int(w) % 1000, int(w)))
        assert bool(got[0]) == (int(w) < t), (gamma, int(w) - t)


@pytest.mark.parametrize("search_below", [0, 10**9], ids=["guide", "binary-search"])
def test_invert_matches_brute_force_on_boundary_words(search_below: int,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Away from ties, table inversion equals the count of thresholds below the word."""
    monkeypatch.setattr(S, "_SEARCH_BELOW", search_below)
    rng = seeded(25)
    for tab in (S._laplace_head_table(Fraction(3, 7), 1), S._chunk_table(Fraction(1, 1000), 8),
                S._geometric_table(Fraction(1, 2)), coarse_geometric_table()):
        thr = tab.thr[:-1].astype(np.int64)
        top = (1 << tab.bits) - 1
        cand = np.concatenate([thr - 1, thr + 1, thr - 2, thr + 2,
                               rng.words32(4000).astype(np.int64) >> (32 - tab.bits)])
        cand = cand[(cand >= 0) & (cand <= top) & ~np.isin(cand, thr)]
        got = S._invert(tab, cand.astype(np.uint32), rng)
        want = (thr[None, :] < cand[:, None]).sum(axis=1)
        assert np.array_equal(got, want)


# ------------------------------------------------------------------------------------------
# Samplers: goodness of fit and moments, each with a wrong-scale companion.
# ------------------------------------------------------------------------------------------

LAPLACE_SCALES = [Fraction(1, 3), Fraction(1), Fraction(7, 3), Fraction(10), Fraction(1000),
                  Fraction(2**20, 3), Fraction(2**35)]


@pytest.mark.parametrize("scale", LAPLACE_SCALES, ids=str)
def test_discrete_laplace(scale: Fraction) -> None:
    y = S.discrete_laplace(scale, N, seeded(scale.numerator % 10007))
    assert y.dtype == np.int64 and y.size == N
    b = float(scale)
    edges = laplace_edges(b)
    assert integer_gof(y, laplace_cdf(b), edges) > P_MIN
    assert integer_gof(y, laplace_cdf(1.1 * b), edges) < P_MIN
    var, mu4 = laplace_moments(b)
    assert_moments(y, 0.0, var, mu4)
    with pytest.raises(AssertionError):
        wvar, wmu4 = laplace_moments(1.1 * b)
        assert_moments(y, 0.0, wvar, wmu4)


@pytest.mark.parametrize("scale", [Fraction(7, 3), Fraction(2**20, 3)], ids=str)
def test_discrete_laplace_in_small_batches(scale: Fraction) -> None:
    """Releases draw a few values at a time (one per group), which takes the binary-search
    inversion path: the same law, with the same wrong-scale companion."""
    rng = seeded(scale.numerator % 10009)
    y = np.concatenate([S.discrete_laplace(scale, 50, rng) for _ in range(N // 50)])
    assert y.size == N // 50 * 50
    b = float(scale)
    edges = laplace_edges(b)
    assert integer_gof(y, laplace_cdf(b), edges) > P_MIN
    assert integer_gof(y, laplace_cdf(1.1 * b), edges) < P_MIN


def test_discrete_laplace_secure_source() -> None:
    y = S.discrete_laplace(Fraction(10), N, RandomSource())
    edges = laplace_edges(10.0)
    assert integer_gof(y, laplace_cdf(10.0), edges) > 1e-7
    assert integer_gof(y, laplace_cdf(11.0), edges) < 1e-7
    var, mu4 = laplace_moments(10.0)
    assert_moments(y, 0.0, var, mu4, k=7.0)


def test_discrete_laplace_small_and_empty() -> None:
    rng = seeded(4)
    assert S.discrete_laplace(Fraction(3), 0, rng).size == 0
    assert S.discrete_laplace(Fraction(3), 1, rng).shape == (1,)
    # scales so small that P(Y != 0) is about exp(-2**61): thresholds settle at 2**31 - 1
    assert not S.discrete_laplace(Fraction(1, 1 << 61), 10_000, rng).any()
    assert not S.geometric_exp_neg(Fraction(1 << 50), 10_000, rng).any()
    with pytest.raises(ValueError):
        S.geometric_exp_neg(Fraction(1, 1 << 41), 1, rng)
    with pytest.raises(ValueError):
        S.discrete_laplace(Fraction(1, 1 << 63), 1, rng)
    with pytest.raises(ValueError):
        S.discrete_laplace(Fraction(-1), 1, rng)


@pytest.mark.parametrize("rate", [Fraction(1), Fraction(1, 3), Fraction(5, 2),
                                  Fraction(1, 5000)], ids=str)
def test_geometric_exp_neg(rate: Fraction) -> None:
    g = S.geometric_exp_neg(rate, N, seeded(rate.denominator))
    assert int(g.min()) >= 0

    def cdf_for(r: float) -> Cdf:
        return lambda v: np.where(v < 0, 0.0, -np.expm1(-r * (np.maximum(v, 0) + 1)))

    r = float(rate)
    qs = stats.expon(scale=1 / r).ppf(np.linspace(0.002, 0.998, 60))
    edges = np.unique(np.concatenate([np.floor(qs), np.arange(0, 12)]).astype(np.int64))
    assert integer_gof(g, cdf_for(r), edges) > P_MIN
    assert integer_gof(g, cdf_for(r / 1.1), edges) < P_MIN
    q = math.exp(-r)
    v = q / (-math.expm1(-r)) ** 2
    assert_moments(g, q / (1 - q), v, v * v * (9 + (1 - q) ** 2 / q))


def test_geometric_exp_neg_one_and_bernoulli_exp_neg_one() -> None:
    rng = seeded(31)
    v = S.geometric_exp_neg_one(N, rng)
    q = math.exp(-1)
    obs = np.bincount(np.minimum(v, 12), minlength=13).astype(np.float64)
    exp = np.array([(1 - q) * q**i for i in range(12)] + [q**12]) * N
    assert pooled_chisquare(obs, exp) > P_MIN
    b = S.bernoulli_exp_neg_one(N, rng)
    assert binomial_p(int(b.sum()), N, q) > P_MIN
    assert binomial_p(int(b.sum()), N, math.exp(-1.1)) < P_MIN


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(3, 10), Fraction(1), Fraction(5, 2),
                                   Fraction(7)], ids=str)
def test_bernoulli_exp_neg(gamma: Fraction) -> None:
    b = S.bernoulli_exp_neg(np.full(N, gamma.numerator), np.full(N, gamma.denominator),
                            seeded(gamma.numerator + 100))
    p = math.exp(-float(gamma))
    k = int(b.sum())
    assert binomial_p(k, N, p) > P_MIN
    wrong = math.exp(-1.1 * float(gamma)) if gamma else math.exp(-0.01)
    assert binomial_p(k, N, wrong) < P_MIN
    assert abs(k / N - p) <= 5 * math.sqrt(max(p * (1 - p), 1e-12) / N)


def test_bernoulli_exp_neg_mixed_and_large_arguments() -> None:
    gammas = [(0, 1), (1, 3), (7, 5), (2**40 - 1, 2**40), (123, 45), (10**12, 7), (33, 1)]
    reps = N // len(gammas)
    num = np.repeat([g[0] for g in gammas], reps)
    den = np.repeat([g[1] for g in gammas], reps)
    b = S.bernoulli_exp_neg(num, den, seeded(41))
    for i, (a, d) in enumerate(gammas):
        sel = b[i * reps : (i + 1) * reps]
        p = math.exp(-a / d)
        if p < 1e-9:
            assert not sel.any()
            continue
        assert binomial_p(int(sel.sum()), reps, p) > P_MIN, (a, d)
    with pytest.raises(ValueError):
        S.bernoulli_exp_neg([1], [0], seeded(1))
    with pytest.raises(ValueError):
        S.bernoulli_exp_neg([-1], [1], seeded(1))


@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(2), Fraction(100),
                                    Fraction(12345, 7), Fraction(10**6)], ids=str)
def test_discrete_gaussian(sigma2: Fraction) -> None:
    n = N if sigma2 <= 10**4 else N // 4
    y = DG.discrete_gaussian(sigma2, n, seeded(sigma2.numerator % 997))
    s2 = float(sigma2)
    ys, pmf = gaussian_table(s2)
    qs = stats.norm(scale=math.sqrt(s2)).ppf(np.linspace(0.002, 0.998, 80))
    edges = np.unique(np.concatenate([np.floor(qs), np.arange(-6, 7)]).astype(np.int64))
    assert integer_gof(y, table_cdf(ys, pmf), edges) > P_MIN
    wys, wpmf = gaussian_table(s2 * 1.21)  # 1.1x the standard deviation
    assert integer_gof(y, table_cdf(wys, wpmf), edges) < P_MIN
    var = float((pmf * ys.astype(np.float64) ** 2).sum())
    mu4 = float((pmf * ys.astype(np.float64) ** 4).sum())
    assert_moments(y, 0.0, var, mu4)
    wvar = float((wpmf * wys.astype(np.float64) ** 2).sum())
    wmu4 = float((wpmf * wys.astype(np.float64) ** 4).sum())
    with pytest.raises(AssertionError):
        assert_moments(y, 0.0, wvar, wmu4)


def test_discrete_gaussian_large_sigma_uses_exact_fallback() -> None:
    """sigma2 = 10**8 exceeds the cached threshold table; the Python-int path takes over."""
    sigma2 = Fraction(10**8)
    _, complete, _ = DG._gauss_thresholds(10**8, 1, math.isqrt(10**8) + 1)
    assert not complete
    y = DG.discrete_gaussian(sigma2, 20_000, seeded(51))
    var = 1e8
    assert_moments(y, 0.0, var, 3 * var * var)
    with pytest.raises(AssertionError):
        assert_moments(y, 0.0, 1.21 * var, 3 * (1.21 * var) ** 2)


def test_round_scale_up() -> None:
    for s in (Fraction(1, 3), Fraction(2**50 + 1, 2**20), Fraction(1, 10**30), Fraction(10)):
        r = S.round_scale_up(s)
        assert r >= s and r.numerator <= S.MAX_FAST_DEN and r.denominator < 1 << 62
    assert S.round_scale_up(Fraction(10)) == 10
