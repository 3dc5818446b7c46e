"""JointExp's dynamic program at a large ``n``: its float error against an exact recomputation
(Python's decimal at 60 digits) stays within the bound proven from public quantities only
(:func:`dpframe.core.joint_quantiles.float_error_bounds`), while the previous program's (one
global reference, factors ``exp(+-rate P)``) grows with ``n``."""

from __future__ import annotations

import decimal
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

import dpframe as dpf
from dpframe.core import joint_quantiles as jq
from dpframe.core.sensitivity import Contribution

DECILES = tuple(Fraction(i, 10) for i in range(1, 10))
CTX = decimal.Context(prec=60, Emin=-10**8)


def _rate() -> Fraction:
    usens = jq.joint_utility_sensitivity("add_remove", DECILES, Contribution())
    spec = jq.JointQuantileSpec(Fraction(1), usens, 4, DECILES, (0,) * 9)
    a, d = spec.acceptance_rate()
    return Fraction(a, d)


def _cells(n: int) -> np.ndarray:
    """Four cells, heavy ties in each (shares 0.15, 0.3, 0.3, 0.25 of ``n``) but for a few
    odd values: 256 candidates, prefix counts up to ``D n``."""
    c = np.asarray([15 * n // 100 + 1, 3 * n // 10 - 3, 3 * n // 10 + 5, 0], dtype=np.int64)
    c[3] = n - c[:3].sum()
    return c


def _exact_layers(p: np.ndarray, gaps: np.ndarray, rate: Fraction, m: int
                  ) -> list[list[Decimal]]:
    """Exact ``alpha_j`` (60 digits): ``rate L + ln sum exp(beta' + rate (I - L))`` term by
    term (terms below ``e**-300`` of the largest are left out: relative ``1e-130``)."""
    r = Decimal(rate.numerator, CTX) / Decimal(rate.denominator, CTX)
    pp = [int(v) for v in p]
    big = [-abs(v - int(gaps[0])) for v in pp]
    beta = [Decimal(0)] * len(pp)
    out = [[CTX.multiply(r, Decimal(b)) for b in big]]
    for j in range(1, m):
        g = int(gaps[j])
        nb, nbeta = [], []
        for c in range(len(pp)):
            ints = [big[k] - abs(pp[c] - pp[k] - g) for k in range(c + 1)]
            top = max(ints)
            tot = sum((CTX.exp(beta[k] + r * (ints[k] - top)) for k in range(c + 1)
                       if r * (top - ints[k]) < 300), Decimal(0))
            nb.append(top)
            nbeta.append(CTX.ln(tot))
        big, beta = nb, nbeta
        out.append([CTX.add(CTX.multiply(r, Decimal(b)), s)
                    for b, s in zip(big, beta, strict=True)])
    return out


def _old_alphas(p: np.ndarray, gaps: np.ndarray, rate: float, m: int) -> list[np.ndarray]:
    """The previous program (commit 133fb85): one global reference, prefix and range
    log-sum-exp of ``alpha +- rate P``, brute force here (same magnitudes, same roundings)."""
    rp = rate * p.astype(np.float64)
    alpha = -rate * np.abs(p - gaps[0]).astype(np.float64)
    out = [alpha]
    for j in range(1, m):
        thr = p - gaps[j]
        a = np.logaddexp.accumulate(alpha + rp)
        nxt = np.empty_like(alpha)
        for c in range(len(p)):
            s = min(int(np.searchsorted(p, thr[c], side="right")) - 1, c)
            pa = a[s] - rate * thr[c] if s >= 0 else -np.inf
            pb = np.logaddexp.reduce(alpha[s + 1:c + 1] - rp[s + 1:c + 1]) + rate * thr[c]
            nxt[c] = np.logaddexp(pa, pb)
        alpha = nxt
        out.append(alpha)
    return out


def _errors(n: int) -> tuple[float, float, float]:
    """(new error, its proven bound, old error): the largest ``|alpha_j - exact|`` over the
    layers, and ``(m - 1) gamma``."""
    rate = _rate()
    fr = float(rate)
    cells = _cells(n)
    sub = jq.sub_candidates(4)
    p, lays = jq.log_weights(cells[None, :], DECILES, (0,) * 9, fr, sub)
    _, gaps = jq.targets(np.asarray([n]), DECILES, (0,) * 9)
    exact = _exact_layers(p[0], gaps[0], rate, 9)
    old = _old_alphas(p[0], gaps[0], fr, 9)
    r = Decimal(rate.numerator, CTX) / Decimal(rate.denominator, CTX)
    new_err = old_err = 0.0
    for j, (big, beta) in enumerate(lays):
        for c in range(p.shape[1]):
            ref = exact[j][c]
            # the draws read alpha as (exact rate) L + beta: L an exact integer
            got = CTX.add(CTX.multiply(r, Decimal(int(big[0, c]))), Decimal(beta[0, c]))
            new_err = max(new_err, abs(float(got - ref)))
            old_err = max(old_err, abs(float(Decimal(old[j][c]) - ref)))
    gamma, _ = jq.float_error_bounds(9, p.shape[1])
    bound = 8 * gamma  # (m - 1) gamma, plus the rate's rounding (fr vs rate) inside gamma
    return new_err, bound, old_err


def test_float_error_bounded_whatever_n() -> None:
    """n = 2e7 clamped rows, nine deciles: the new program's error is within its proven
    bound (public: m, C, float64) and does not grow with n; the old one's grows about
    linearly with n (its bound was (C + 4) 2**-52 rate D n a layer)."""
    small = _errors(20_000)
    large = _errors(20_000_000)
    for new_err, bound, _ in (small, large):
        assert new_err <= bound
    assert large[0] <= max(100 * small[0], 1e-13)  # flat in n
    assert large[2] > 100 * max(small[2], 1e-16)  # the old error grows with n
    assert large[2] > 1000 * large[0]


def test_float_budget_refuses_a_tiny_epsilon_before_the_charge() -> None:
    """The reserve epsilon / 128 must cover the (public) float bound: else a ValidationError
    when the release is planned; the gaps' resolution refines with a small epsilon."""
    assert jq.gap_bits(Fraction(1), 9, 1 << 15) == jq.GAP_BITS
    assert jq.gap_bits(Fraction(1, 1000), 9, 1 << 15) > jq.GAP_BITS
    with pytest.raises(dpf.DPError):
        jq.gap_bits(Fraction(1, 10**9), 9, 1 << 15)
    assert jq.float_excess(9, 1 << 15, jq.GAP_BITS) < Fraction(1, 128)


def test_integer_gap_coin_is_exact_in_chunks() -> None:
    """Bernoulli(exp(-rate extra)) as a product of coins of at most ``rate X``: the
    frequency of 40,000 seeded draws within 4 standard errors of exp(-1.25) (a coin that
    dropped the last chunk, exp(-0.75), is 40 of them away)."""
    from dpframe.core.noise.rng import RandomSource

    rng = RandomSource(5, warn=False)
    got = jq._coin_int(np.full(40_000, 5, dtype=np.int64), Fraction(1, 4), 3, rng).mean()
    p = np.exp(-1.25)
    assert abs(got - p) < 4 * np.sqrt(p * (1 - p) / 40_000)


def test_large_n_draws_are_near_optimal() -> None:
    """n = 2e7 through the whole sampler (gaps up to rate D n, integer coins past X): each
    seeded draw's utility is within ``log(#tuples / 0.001) / rate`` of the best (about 1,700
    where a wrong draw at this n misses by millions)."""
    from dpframe.core.noise.rng import RandomSource

    n, rate = 20_000_000, _rate()
    cells = _cells(n)
    sub = jq.sub_candidates(4)
    p, lays = jq.log_weights(cells[None, :], DECILES, (0,) * 9, float(rate), sub)
    _, gaps = jq.targets(np.asarray([n]), DECILES, (0,) * 9)
    best = int((lays[-1][0] - np.abs(10 * n - p - gaps[:, -1:])).max())
    size = p.shape[1]
    slack = (math.lgamma(size + 9) - math.lgamma(10) - math.lgamma(size)
             + math.log(1000)) / float(rate)
    for seed in range(3):
        got = jq.sample_joint(cells[None, :], DECILES, (0,) * 9, rate, sub,
                              RandomSource(seed, warn=False))[0]
        u = jq.joint_utility(cells, got, DECILES, (0,) * 9, sub)
        assert best - slack <= u <= best
