"""Permute-and-flip's fast exact sampler (:mod:`dpframe.core.noise.permute_flip`).

The output law is checked against the closed form of permute-and-flip, and every check has a
companion run on the *same* draws against the law at twice the rate that must reject (the
check has the power to catch a wrong rate). Fixed seeds make the outcomes deterministic; the
thresholds (p > 1e-4 for the right law, p < 1e-4 for the wrong one, 5 standard errors) would
hold for almost every seed. The rare exact tie paths are driven by scripted random words.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats

from dpframe.core.noise import permute_flip as PF
from dpframe.core.noise.mechanisms import ExponentialSpec
from dpframe.core.noise.rng import InsecureSeedWarning, RandomSource
from dpframe.core.noise.samplers import _exp_bound, _floor_scaled, exp_neg_fixed
from tests.audit.findings_quant import pf_probabilities

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
P_MIN = 1e-4


def seeded(seed: int) -> RandomSource:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureSeedWarning)
        return RandomSource(seed=seed)


def pf_law(u: I64, a: int, den: int) -> F64:
    """Permute-and-flip's output law (gaps capped as the sampler caps them):
    ``P(i) = p_i * integral_0^1 prod_{j != i} (1 - p_j t) dt`` (candidate ``i`` accepted, and
    every accepted other later in the order: uniform priorities), the integrand a polynomial of
    degree ``m - 1`` integrated exactly by Gauss-Legendre with ``m`` nodes."""
    gap = np.minimum(u.max() - u, -(-64 * den // a)).astype(np.float64)
    p = np.exp(-(a / den) * gap)
    t, w = np.polynomial.legendre.leggauss(u.size + 1)
    t, w = (t + 1) / 2, w / 2
    f = 1 - np.outer(p, t)
    return p * ((np.prod(f, axis=0) / f) @ w)


def chi2_p(counts: I64, law: F64) -> float:
    """Chi-square p-value of ``counts`` against ``law`` (cells expecting < 5 pooled)."""
    expected = law * counts.sum()
    big = expected >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] < 5:  # pool the rare cells into the smallest kept one instead
        obs, exp = obs[:-1], exp[:-1]
        k = int(np.argmin(exp))
        obs[k] += counts[~big].sum()
        exp[k] += expected[~big].sum()
    return float(stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)


CASES = [  # (utilities, a, den): rate a / den
    ([0, 0, -1, -2, -4, -7, -40, -1000], 1, 2),  # two best, a long tail, capped gaps
    ([3, 1, 0, -2, 5, 5, 4, -1], 3, 7),  # a rate that is no dyadic fraction
    ([-abs(i) for i in range(-30, 31)], 1, 10),  # 61 candidates, many in play
    ([-(i << 13) for i in range(16)], 1, 1 << 15),  # cap 2**21: no threshold table
]


def test_reference_law_is_permute_and_flip() -> None:
    """The quadrature law equals the audit's Poisson-binomial law of permute-and-flip."""
    u = np.array([0, -1, -1, -3, 0, -6], dtype=np.int64)
    em = ExponentialSpec(Fraction(1), 1, u.size)  # rate 1/2
    assert np.allclose(pf_law(u, 1, 2), pf_probabilities(u, em), rtol=1e-12, atol=0)


@pytest.mark.parametrize(("utilities", "a", "den"), CASES)
def test_law_is_permute_and_flip(utilities: list[int], a: int, den: int) -> None:
    u = np.array(utilities, dtype=np.int64)
    n = 100_000
    out = PF.permute_and_flip(np.tile(u, (n, 1)), a, den, seeded(a * 31 + den))
    counts = np.bincount(out, minlength=u.size)
    assert chi2_p(counts, pf_law(u, a, den)) > P_MIN
    assert chi2_p(counts, pf_law(u, 2 * a, den)) < P_MIN  # power: twice the rate is caught


def test_rows_of_one_call_are_independent_and_each_exact() -> None:
    """Rows with different utilities (and so different accepted sets) in one call."""
    u1 = np.array([0, -1, -2, -3, -4, -5, -6, -7], dtype=np.int64)
    u2 = np.array([-7, 0, 0, 0, 0, 0, -1, -30], dtype=np.int64)
    n = 60_000
    out = PF.permute_and_flip(np.tile(np.stack([u1, u2]), (n, 1)), 1, 2, seeded(3)).reshape(n, 2)
    for k, u in enumerate((u1, u2)):
        counts = np.bincount(out[:, k], minlength=u.size)
        assert chi2_p(counts, pf_law(u, 1, 2)) > P_MIN
        assert chi2_p(counts, pf_law(u, 2, 2)) < P_MIN
    # independence across rows: the joint law is the product (4 x 8 table)
    joint = np.zeros((u1.size, u2.size), dtype=np.int64)
    np.add.at(joint, (out[:, 0], out[:, 1]), 1)
    law = np.outer(pf_law(u1, 1, 2), pf_law(u2, 1, 2)).reshape(-1)
    assert chi2_p(joint.reshape(-1), law) > P_MIN


def test_equal_utilities_give_a_uniform_choice() -> None:
    """Every candidate survives the first stage: the lazy shuffle over all of them is uniform."""
    m, n = 500, 20_000
    out = PF.permute_and_flip(np.zeros((n, m), dtype=np.int64), 1, 2, seeded(11))
    assert chi2_p(np.bincount(out, minlength=m), np.full(m, 1 / m)) > P_MIN


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 9])
def test_bernoulli_exp_neg_whole(n: int) -> None:
    """Bernoulli(exp(-n)); from n = 6 on the first threshold is 0, so every acceptance goes
    through the second (63-bit) stage."""
    draws = 400_000
    hits = int(PF.bernoulli_exp_neg_whole(np.full(draws, n), seeded(n)).sum())
    p = np.exp(-n)
    se = np.sqrt(draws * p * (1 - p))
    assert abs(hits - draws * p) < 5 * se
    wrong = np.exp(-n * 1.1)  # power: 10% off in the exponent is caught
    assert abs(hits - draws * wrong) > 5 * np.sqrt(draws * wrong * (1 - wrong))


def test_bernoulli_exp_neg_whole_certain_and_negligible() -> None:
    out = PF.bernoulli_exp_neg_whole(np.array([0] * 1000 + [70] * 100_000), seeded(2))
    assert out[:1000].all() and not out[1000:].any()
    with pytest.raises(ValueError):
        PF.bernoulli_exp_neg_whole(np.array([-1]), seeded(2))


def test_stage_thresholds_are_exact_floors() -> None:
    t8, low = PF.stage_thresholds()
    assert t8[0] == 256 and low[0] == 0
    for n in (1, 2, 5, 6, 30, 48, 49, 64):
        exact = _floor_scaled(_exp_bound(Fraction(n)), 0, 71)
        assert (int(t8[n]) << 63) | int(low[n]) == exact
        lo, hi = exp_neg_fixed(Fraction(n), 80)
        assert lo >> 9 <= exact <= hi >> 9


class Scripted(RandomSource):
    """A seeded source whose first words are given (then the seeded stream)."""

    def __init__(self, script: Iterable[int]) -> None:
        super().__init__(seed=0, warn=False)
        self.script = [int(w) for w in script]

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        head, self.script = self.script[:n], self.script[n:]
        rest = super().words(n - len(head))
        return np.concatenate([np.array(head, dtype=np.uint64), rest])


def _tie_words(n: int) -> tuple[int, int, int]:
    """The first word (its lowest byte ties ``T8[n]``), the 63-bit word (shifted left once:
    ties ``L63[n]``) and the next 64 bits of ``floor(2**135 e**-n)``."""
    t8, low = PF.stage_thresholds()
    nxt = _floor_scaled(_exp_bound(Fraction(n)), 0, 135) & ((1 << 64) - 1)
    assert 0 < nxt < (1 << 64) - 1
    return int(t8[n]), int(low[n]) << 1, nxt


@pytest.mark.parametrize("n", [1, 7])
def test_whole_coin_double_tie_is_decided_exactly(n: int) -> None:
    first, second, nxt = _tie_words(n)
    assert PF.bernoulli_exp_neg_whole(np.array([n]), Scripted([first, second, nxt - 1]))[0]
    assert not PF.bernoulli_exp_neg_whole(np.array([n]), Scripted([first, second, nxt + 1]))[0]


def test_permute_and_flip_tie_uses_the_cells_own_exponent() -> None:
    """Row [0, -2] at rate 1/2: the second cell has n = 1, f = 0. Its first two comparisons
    tie; the third word decides whether it is in A; then a shuffle word picking position 1
    returns it when (and only when) it is."""
    _, second, nxt = _tie_words(1)
    first = int(PF.stage_thresholds()[0][1]) << 8  # byte 0: cell 0 (n = 0); byte 1: cell 1
    pick_last = (1 << 32) - 1  # below(2) -> 1 (Lemire: the top half of w * 2)
    row = np.array([[0, -2]], dtype=np.int64)
    assert PF.permute_and_flip(row, 1, 2, Scripted([first, second, nxt - 1, pick_last]))[0] == 1
    assert PF.permute_and_flip(row, 1, 2, Scripted([first, second, nxt + 1, pick_last]))[0] == 0


def test_choose_is_the_fast_sampler_with_the_spec_rate() -> None:
    spec = ExponentialSpec(Fraction(3, 4), 2, 9)  # rate 3/16
    u = np.array([0, -3, -3, -9, -1, -20, 0, -5, -2], dtype=np.int64)
    n = 60_000
    counts = np.bincount(spec.choose(np.tile(u, (n, 1)), seeded(8)), minlength=u.size)
    assert spec.acceptance_rate() == (3, 16)
    assert chi2_p(counts, pf_law(u, 3, 16)) > P_MIN
    assert chi2_p(counts, pf_law(u, 6, 16)) < P_MIN
    assert spec.choose(np.zeros((0, 9), dtype=np.int64), seeded(8)).shape == (0,)


class Counting(RandomSource):
    """A seeded source that counts the 64-bit words drawn."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed=seed, warn=False)
        self.drawn = 0

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        self.drawn += max(n, 0)
        return super().words(n)


@pytest.mark.parametrize("spread", [0, 3, 1 << 30])
def test_a_grouped_median_draws_a_byte_per_cell(spread: int) -> None:
    """Randomness is the cost that cannot be vectorized away: a median over 2**16 cells per
    group draws about one byte per cell (one 64-bit word per 8 cells), whatever the data (all
    cells equal, a few in play, or one best and the rest capped); before, one 32-bit and one
    64-bit word per cell."""
    groups, m = 8, 1 << 16
    u = -np.abs(np.arange(m, dtype=np.int64) - m // 3)[None, :] * spread
    u = np.repeat(u, groups, axis=0)
    src = Counting(5)
    ExponentialSpec(Fraction(1), 1, m).choose(u, src)
    cells = groups * m
    assert cells / 8 <= src.drawn <= cells / 8 * 1.05 + 200
