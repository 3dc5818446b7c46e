"""Permute-and-flip (McKenna and Sheldon 2020), sampled exactly with a few bits per candidate.

**The law.** Candidate ``i`` of a row has gap ``g_i >= 0`` to the row's best utility and is
accepted with probability ``p_i = exp(-x_i)``, ``x_i = (a / d) g_i`` (a rational), independently
of the others; visiting the candidates in a uniformly random order and returning the first
accepted one is permute-and-flip. Equivalently (draw the coins first: the order is independent
of them) the output is a uniformly random element of the accepted set ``S``: the first element
of ``S`` in a uniform order of all candidates is uniform on ``S``. A best candidate has
``p = 1``, so ``S`` is never empty.

**The factorization.** Write ``x_i = n_i + f_i`` with ``n_i = floor(x_i)`` and
``0 <= f_i < 1`` (``f_i = (a g_i - n_i d) / d``, exact integers). Then
``p_i = exp(-n_i) exp(-f_i)``, and candidate ``i`` is accepted iff two independent coins
succeed: ``W_i ~ Bernoulli(exp(-n_i))`` and ``E_i ~ Bernoulli(exp(-f_i))``. Let
``A = {i : W_i}``; then ``S = {i in A : E_i}``. Visiting ``A`` in a uniformly random order and
returning the first ``i`` whose ``E_i`` succeeds returns the first element of ``S`` in a
uniform order of ``A``, a uniform element of ``S`` again (``S`` is a subset of ``A``, and the
``E`` coins of unvisited candidates are never needed, so they are never drawn). That is
exactly permute-and-flip's law, with no floating-point probability anywhere:

* ``W_i`` is a lazy comparison of a uniform ``U_i`` with ``exp(-n_i)`` (the rule of
  :mod:`dpframe.core.noise.samplers`): its first 8 bits ``b`` against ``T8 = floor(2**8 e**-n)``
  (``b < T8`` accepts, ``b > T8`` rejects); on ``b == T8`` (probability ``2**-8``) 63 more bits
  against the next 63 bits of ``floor(2**71 e**-n)``, and on a further tie
  (probability ``2**-63``) ever more bits against rigorous enclosures of ``e**-n``, which is
  irrational for ``n >= 1``, so the comparison ends with probability 1. ``n = 0`` accepts.
  Each threshold is an exact floor (cached once); ``n >= 64`` shares the thresholds of
  ``n = 64`` (both 0, as from ``n = 50`` on: ``2**71 e**-50 < 1``); ties use the true ``n``.
* ``E_i`` is :func:`~dpframe.core.noise.samplers.bernoulli_exp_neg` of ``f_i`` (exact).
* The random order of ``A`` is a lazy Fisher-Yates shuffle per row: the ``v``-th visit takes a
  uniform one of the ``|A| - v`` unvisited candidates (:meth:`RandomSource.below`, exact).

**The cost.** Every candidate costs a few vectorized integer operations and one byte of
randomness (one 64-bit word per 8 candidates, against one 32-bit word, one 64-bit word and an
exact ``exp`` enclosure per candidate before); about ``2**-8`` of them take one more word.
Only ``A`` is gathered (``E|A| = sum exp(-n_i) <= e sum p_i``), and each visit succeeds with
probability ``exp(-f_i) > 1/e``, so a row needs at most ``e`` visits in expectation and
``r`` rows about ``log(r) / 0.46`` rounds of one visit each.

**Timing.** The per-candidate part, which dominates, is the same sequence of passes over all
``rows x candidates`` cells and the same number of random bytes whatever the utilities. What
varies with the data: the size of ``A`` (gathered and shuffled lazily: a few operations per
element, at most one per cell), the ``2**-8`` second stage (binomial in the number of
candidates with ``n >= 1``), and the number of visits, whose law is dominated by a geometric
one with success ``1/e`` whatever the data. None of them can make a release many times slower
than another of the same shape (docs/benchmarks/samplers.md: 1.24x of CPU time at most over
2**16 cells, all cells equal against a single best one, near the previous sampler's 1.16x),
and exact timing is outside the threat model (docs/privacy.md, Timing): no padding is added.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from .rng import RandomSource
from .samplers import (
    I64,
    MAX_FAST_DEN,
    Bools,
    _accept_words,
    _count_passed,
    _exp_bound,
    _floor_scaled,
    bernoulli_exp_neg,
)

#: Bits of the first comparison of each acceptance coin (one byte per candidate).
STAGE_BITS = 8
_LOW_BITS = 63  # bits of the second comparison (one 63-bit word)
_N_TOP = 64  # integer parts n >= _N_TOP share the (zero) thresholds of n = _N_TOP
_TABLE_CAP = 1 << 20  # capped gaps up to this use a cached threshold table per rate
U16 = npt.NDArray[np.uint16]


@functools.lru_cache(maxsize=1)
def stage_thresholds() -> tuple[U16, I64]:
    """``(T8, L63)`` for ``n = 0.._N_TOP``: ``T8[n] = floor(2**8 e**-n)`` and ``L63[n]`` the low
    63 bits of ``floor(2**71 e**-n)`` (whose top 8 bits are ``T8[n]``); exact floors of the
    irrational ``e**-n`` (:func:`~dpframe.core.noise.samplers._floor_scaled`). ``n = 0``
    (probability
    1) is stored as ``T8 = 2**8``: every byte is below it, and none ties."""
    bits = STAGE_BITS + _LOW_BITS
    t8 = [1 << STAGE_BITS]
    low = [0]
    for n in range(1, _N_TOP + 1):
        t = _floor_scaled(_exp_bound(Fraction(n)), 0, bits)
        t8.append(t >> _LOW_BITS)
        low.append(t & ((1 << _LOW_BITS) - 1))
    return np.array(t8, dtype=np.uint16), np.array(low, dtype=np.int64)


@functools.lru_cache(maxsize=16)
def _gap_thresholds(a: int, den: int, cap: int) -> U16:
    """``T8[min(floor(a g / den), _N_TOP)]`` for every capped gap ``g = 0..cap`` (a function of
    the public rate: cached), so that a cell's first threshold is one look-up of its gap."""
    n = np.arange(cap + 1, dtype=np.int64) * a // den
    return stage_thresholds()[0][np.minimum(n, _N_TOP)]


def _whole_coins(thr: U16, whole_of: Callable[[I64], I64], rng: RandomSource) -> Bools:
    """Exact Bernoulli(exp(-n_i)) given ``thr = T8[min(n_i, _N_TOP)]`` (module docstring: ``W``).
    ``whole_of(idx)`` returns the true ``n_i`` of the cells ``idx`` (only the ties need it)."""
    size = thr.size
    first = rng.words((size + 7) // 8).view(np.uint8)[:size]
    out = first < thr
    tie = np.flatnonzero(first == thr)  # probability 2**-8 per cell with n >= 1
    if tie.size:
        n = whole_of(tie)
        low = stage_thresholds()[1][np.minimum(n, _N_TOP)]
        w = _accept_words(rng, tie.size)
        out[tie] = w < low
        for k in np.flatnonzero(w == low):  # probability 2**-71 per cell
            prefix = (int(thr[tie[k]]) << _LOW_BITS) | int(w[k])
            out[tie[k]] = _count_passed(prefix, STAGE_BITS + _LOW_BITS, 0, 1,
                                        _exp_bound(Fraction(int(n[k]))), rng) == 0
    return out


def bernoulli_exp_neg_whole(n: npt.ArrayLike, rng: RandomSource) -> Bools:
    """Exact Bernoulli(exp(-n_i)) for integers ``n_i >= 0``, one random byte each; about
    ``2**-8`` of them draw one more 63-bit word, ``2**-71`` more than that."""
    nn = np.asarray(n, dtype=np.int64).reshape(-1)
    if nn.size and int(nn.min()) < 0:
        raise ValueError("bernoulli_exp_neg_whole needs n >= 0")
    thr = stage_thresholds()[0][np.minimum(nn, _N_TOP)]
    return _whole_coins(thr, lambda idx: nn[idx], rng)


def permute_and_flip(utilities: npt.ArrayLike, a: int, den: int, rng: RandomSource) -> I64:
    """One candidate index per row of ``utilities`` (rows x candidates, integers), chosen by
    permute-and-flip with acceptance ``exp(-(a / den) gap)``, exactly (module docstring: its
    law, its proof and its cost); ``a >= 1``, ``1 <= den <= 2**40``.

    Gaps are capped at ``C = ceil(64 den / a)``, where ``exp(-(a / den) C) <= e**-64``:
    capping is the mechanism run on the utility ``max(u_i, u_max - C)``, a maximum of two
    functions of sensitivity ``Delta_u``, so of sensitivity ``Delta_u`` too, with the same best
    candidates; it keeps ``a * gap <= 64 den + a <= 2**47`` in int64 whatever the data.
    """
    u = np.atleast_2d(np.asarray(utilities, dtype=np.int64))
    rows, m = u.shape
    if rows == 0:
        return np.zeros(0, dtype=np.int64)
    if not (1 <= a <= MAX_FAST_DEN and 1 <= den <= MAX_FAST_DEN):
        raise ValueError("permute_and_flip needs 1 <= a, den <= 2**40")
    cap = -(-64 * den // a)
    gap = (u.max(axis=1, keepdims=True) - u).reshape(-1)  # >= 0, a 0 in every row

    def whole_of(idx: I64) -> I64:
        return np.minimum(gap[idx], cap) * a // den

    if cap < _TABLE_CAP:
        thr = np.take(_gap_thresholds(a, den, cap), gap, mode="clip")  # clip: the cap
    else:
        thr = stage_thresholds()[0][np.minimum(whole_of(np.arange(gap.size)), _N_TOP)]
    coins = _whole_coins(thr, whole_of, rng)
    counts = coins.reshape(rows, m).sum(axis=1)  # |A| per row, >= 1: the best survives
    alive = np.flatnonzero(coins)  # A, sorted by row; shuffled in place below
    starts = np.cumsum(counts) - counts
    out = np.empty(rows, dtype=np.int64)
    active = np.arange(rows)
    v = 0
    while active.size:  # lazy Fisher-Yates: positions < v of each active row were rejected
        here = starts[active] + v
        there = here + rng.below(counts[active] - v).astype(np.int64)
        pick = alive[there]  # uniform among the row's unvisited candidates
        alive[there] = alive[here]
        frac = np.minimum(gap[pick], cap) * a % den  # f = x - floor(x), over den
        ok = bernoulli_exp_neg(frac, den, rng)
        out[active[ok]] = pick[ok] % m
        active = active[~ok]
        v += 1
    return out
