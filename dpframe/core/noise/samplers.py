"""Exact samplers, vectorized across samples.

Every sampler consumes uniform words from a :class:`~dpframe.core.noise.rng.RandomSource` and
decides
every outcome by *exact* integer or rational comparisons, so the distribution of each output is
exactly the stated one (no floating-point approximation of probabilities; cf. Mironov 2012).
The reference algorithms are Canonne, Kamath and Steinke, *The Discrete Gaussian for
Differential Privacy* (NeurIPS 2020, "CKS"), Algorithms 1-3. The discrete Gaussian lives in
:mod:`dpframe.core.noise.discrete_gaussian` and permute-and-flip's sampler in
:mod:`dpframe.core.noise.permute_flip`; both build on the exact comparisons here.

**Lazy inversion (the fast path).** Let ``0 < F_0 < F_1 < ... < F_{K-1} < 1`` be cumulative
probabilities and ``U`` uniform on ``[0, 1)``. Then ``X = #{j : F_j <= U}`` has
``P(X = j) = F_j - F_{j-1}`` (with ``F_{-1} = 0``, ``F_K = 1``): inversion. We never need ``U``
or ``F_j`` in full. With the first ``b`` bits ``w`` of ``U`` (so ``U in [w, w + 1) / 2**b``) and
``T_j = floor(2**b F_j)``, computed exactly from rigorous interval bounds with Python integers
(see :func:`exp_neg_fixed`):

* ``T_j < w`` implies ``F_j < (T_j + 1) / 2**b <= w / 2**b <= U``: boundary ``j`` is passed;
* ``T_j > w`` implies ``F_j >= T_j / 2**b >= (w + 1) / 2**b > U``: boundary ``j`` is not passed;
* ``T_j == w`` (probability at most ``2**-b`` per boundary) is undecided: the sampler draws
  further bits of ``U`` and compares them with ever tighter rational bounds of ``F_j``
  (:func:`_count_passed`) until the comparison is decided, which happens with probability 1.

So ``X`` is computed exactly, with one ``b``-bit word in all but a ``2**-b`` fraction of cases;
the numpy fast path is just a table look-up (a guide table, then ``searchsorted``). Every
``F_j`` used here is a non-constant rational function, with rational coefficients, of some
``exp(-x)`` with rational ``x != 0``, which is transcendental (Lindemann); so ``F_j`` is
irrational and its floor ``T_j`` is determined at some finite precision.

**Two-sided geometric.** For ``q = exp(-x)``, the discrete Laplace ``P(Y = y) = (1 - q) / (1 + q)
q**|y|`` is built as ``Y = 0`` with probability ``(1 - q) / (1 + q)``, else ``+-(1 + G)`` with a
fair sign and ``G`` geometric (``P(G = g) = (1 - q) q**g``). ``G`` is split as ``2**k A + B``:
``A`` geometric with ratio ``q**(2**k)`` and ``B`` on ``[0, 2**k)`` with ``P(B = b) ~ q**b``
are independent, because ``q**(2**k a + b) = (q**(2**k))**a q**b`` and ``(a, b)`` ranges over a
product set; the bit-chunks of ``B`` are independent too (``q**b`` factorizes over the binary
digits of ``b``), so each chunk is one table inversion. ``k`` is chosen so that
``q**(2**k) <= e**-0.5`` (and ``> e**-1`` when ``k > 0``): the table for ``A`` stays short.

Timing varies with the random draws (and the first use of a scale builds its cached tables);
the data do not influence it beyond the noise scale, which is public.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from .rng import RandomSource

I64 = npt.NDArray[np.int64]
U32 = npt.NDArray[np.uint32]
Bools = npt.NDArray[np.bool_]
Interval = tuple[Fraction, Fraction]
Bound = Callable[[int, int], Interval]

#: Largest scale numerator (and Bernoulli denominator) the exact samplers accept.
MAX_FAST_DEN = 1 << 40
_CHUNK_BITS = 12  # largest chunk of B sampled by one table (4095 boundaries)
_TABLE_BITS = 31  # uniform bits per table inversion (uint32 arithmetic; the top bit is spare)
_LOW31 = np.uint32(0x7FFFFFFF)
_ACCEPT_BITS = 63  # uniform bits for single Bernoulli comparisons
_MAX_PREC = 1 << 15  # precision cap for table floors: unreachable for irrational boundaries


def round_scale_up(scale: Fraction, max_den: int = MAX_FAST_DEN) -> Fraction:
    """The smallest fraction ``>= scale`` whose numerator fits the fast sampler.

    Rounding a noise scale *up* only adds noise, so every guarantee computed with the requested
    scale still holds; callers report the returned scale.
    """
    if scale <= 0:
        raise ValueError("scale must be positive")
    if scale.numerator <= max_den and scale.denominator < (1 << 62):
        return scale
    if scale >= max_den >> 2:
        raise ValueError("noise scale too large for the exact sampler; use a coarser granularity")
    # k / 2**j with k <= max_den, rounding up: j >= 0 is chosen so that scale * 2**j < max_den / 2.
    j = (max_den.bit_length() - 2) - math.ceil(scale).bit_length()
    out = Fraction(math.ceil(scale * (1 << j)), 1 << j)
    assert out >= scale and out.numerator <= max_den
    return out


# --------------------------------------------------------------------------------------------
# Exact real arithmetic: rigorous enclosures of exp(-x) for rational x >= 0.
# --------------------------------------------------------------------------------------------


def exp_neg_fixed(x: Fraction, w: int) -> tuple[int, int]:
    """Integers ``lo <= 2**w * exp(-x) <= hi`` for rational ``x >= 0`` (``hi - lo <= 3``).

    Proof sketch. If ``x >= 0.7 (w + 1)`` then ``exp(-x) < 2**-(w + 1)`` (``e**0.7 > 2``):
    return ``(0, 1)``. Otherwise reduce ``y = x / 2**m <= 1/2`` and work in fixed point with
    ``g`` bits. Taylor terms ``t_n = 2**g y**n / n!`` are computed as
    ``t~_n = floor(t~_{n-1} y / n)``; by induction ``t_n - 2 < t~_n <= t_n`` (the error halves,
    ``y / n <= 1/2``, then at most 1 is added). The loop stops at the first ``t~_N = 0``, so
    ``t_N < 2``; the alternating series with decreasing terms has remainder at most ``t_N``.
    Hence ``|2**g exp(-y) - sum (-1)**n t~_n| < 2 (N + 1)``. Squaring ``m`` times with floor
    (lower end) and ceiling (upper end) keeps the enclosure, squaring being monotone on
    nonnegative numbers. The final shift to ``w`` bits rounds outward. Guard bits make the
    width at most 3; correctness never depends on the width, only termination does.
    """
    if x < 0:
        raise ValueError("x must be >= 0")
    one = 1 << w
    if x == 0:
        return one, one
    if 10 * x >= 7 * (w + 1):
        return 0, 1
    p, q = x.numerator, x.denominator
    m = 0
    while 2 * p > q << m:
        m += 1
    q <<= m
    g = w + m + 2 * (w + m).bit_length() + 8
    r = 1 << g
    term = r
    total = r
    n = 0
    while term:
        n += 1
        term = term * p // (q * n)
        total += -term if n & 1 else term
    err = 2 * (n + 1)
    lo = max(total - err, 0)
    hi = min(total + err, r)
    for _ in range(m):
        lo = (lo * lo) >> g
        hi = -((-(hi * hi)) >> g)
    sh = g - w
    return lo >> sh, -((-hi) >> sh)


def _exp_neg_interval(x: Fraction, prec: int) -> Interval:
    """Rationals ``lo <= exp(-x) <= hi`` with ``hi - lo < 2**-prec``."""
    lo, hi = exp_neg_fixed(x, prec + 2)
    den = 1 << (prec + 2)
    return Fraction(lo, den), Fraction(hi, den)


def _exp_bound(x: Fraction) -> Bound:
    """The bound function of the single boundary ``F_0 = exp(-x)``."""

    def bound(_j: int, prec: int) -> Interval:
        return _exp_neg_interval(x, prec)

    return bound


def _refined(raw: Callable[[int, int], Interval]) -> Bound:
    """Wrap an enclosure ``raw(j, p)`` (width -> 0 as ``p`` grows) so that width <= 2**-prec."""

    def bound(j: int, prec: int) -> Interval:
        p = prec + 8
        while True:
            lo, hi = raw(j, p)
            if hi - lo <= Fraction(1, 1 << prec):
                return lo, hi
            p += 64

    return bound


def _floor_scaled(bound: Bound, j: int, bits: int) -> int:
    """Exact ``floor(2**bits F_j)`` from enclosures of the irrational number ``F_j`` in (0, 1).

    ``lo <= F_j <= hi`` gives ``floor(2**bits lo) <= floor(2**bits F_j) <= floor(2**bits hi)``,
    and ``F_j < 1`` caps the floor at ``2**bits - 1`` (so ``F_j = 1 - e**-huge`` is settled even
    though no feasible precision separates it from 1).
    """
    top = (1 << bits) - 1
    prec = bits + 16
    while prec <= _MAX_PREC:
        lo, hi = bound(j, prec)
        a = (lo.numerator << bits) // lo.denominator
        if a == min((hi.numerator << bits) // hi.denominator, top):
            return a
        prec += 64
    raise ArithmeticError("threshold undetermined: boundary is not irrational")  # pragma: no cover


def _count_passed(prefix: int, bits: int, j0: int, j1: int, bound: Bound,
                  rng: RandomSource) -> int:
    """Exact ``#{j < j1 : F_j <= U}`` when ``F_j <= U`` is known for all ``j < j0``.

    ``U`` is uniform with first ``bits`` bits ``prefix``; further bits are drawn on demand. With
    ``U in [P, P + 1) / 2**B`` and ``F_j in [lo, hi]``: ``P / 2**B >= hi`` proves ``F_j <= U``;
    ``(P + 1) / 2**B <= lo`` proves ``F_j > U`` (and so for all later, larger ``F``); otherwise
    64 more bits of ``U`` are drawn. ``hi - lo <= 2**-(B + 2)``, so a further round is needed
    with probability below ``2**-62``: the loop ends with probability 1.
    """
    j = j0
    while j < j1:
        while True:
            lo, hi = bound(j, bits + 2)
            if Fraction(prefix, 1 << bits) >= hi:
                j += 1
                break
            if Fraction(prefix + 1, 1 << bits) <= lo:
                return j
            prefix = (prefix << 64) | int(rng.words(1)[0])
            bits += 64
    return j


class _Table:
    """Exact thresholds ``T_j = floor(2**bits F_j)`` for lazy inversion, with a guide table.

    ``thr`` (uint32) holds ``T_0 <= ... <= T_{K-1}`` and a sentinel ``2**bits`` (larger than
    any word); ``guide[h] = #{j : T_j < h * 2**gshift}`` is a lower bound of
    ``#{j : T_j < w}`` for every word ``w`` with ``w >> gshift == h``; ``bound`` encloses each
    ``F_j`` for undecided cases.
    """

    __slots__ = ("bits", "bound", "gshift", "guide", "size", "thr")

    def __init__(self, thresholds: list[int], bits: int, bound: Bound) -> None:
        self.size = len(thresholds)
        self.bits = bits
        self.bound = bound
        if bits > 31:  # pragma: no cover - internal invariant
            raise ValueError("tables use at most 31-bit words")
        self.thr: U32 = np.array([*thresholds, 1 << bits], dtype=np.uint32)
        if np.any(np.diff(self.thr.astype(np.int64)) < 0):  # pragma: no cover
            raise ArithmeticError("thresholds must be nondecreasing")
        hbits = min(bits, max(1, self.size.bit_length() + 2))
        self.gshift = np.uint32(bits - hbits)
        starts = np.arange(1 << hbits, dtype=np.int64) << (bits - hbits)
        self.guide: I64 = np.searchsorted(self.thr[:-1], starts, side="left").astype(np.intp)


#: Below this many words :func:`_invert` binary-searches the thresholds (the same count).
_SEARCH_BELOW = 256


def _invert(tab: _Table, w: U32, rng: RandomSource) -> I64:
    """Exact ``X = #{j : F_j <= U}`` for each ``bits``-bit prefix ``w`` of a uniform ``U``.

    The guide gives a lower bound of ``#{j : T_j < w}``; if ``T_x >= w`` it is the count (the
    thresholds are sorted), else one step or a ``searchsorted`` finds it. All ``j`` below the
    count are passed and all ``j`` with ``T_j > w`` are not (module docstring); the ``j`` with
    ``T_j == w`` (a contiguous run) are settled by :func:`_count_passed`.
    """
    if w.size <= _SEARCH_BELOW:  # few words: one binary search each is cheaper than the guide
        x = np.searchsorted(tab.thr, w, side="left")
        tie = tab.thr[x] == w
        return _settle_ties(tab, w, x, tie, rng) if tie.any() else x
    x = tab.guide[w >> tab.gshift]
    g = tab.thr[x]
    tie = g == w
    adv = np.flatnonzero(g < w)
    if adv.size:
        wa = w[adv]
        xa = x[adv] + 1
        ga = tab.thr[xa]
        more = np.flatnonzero(ga < wa)
        if more.size:
            xa[more] = np.searchsorted(tab.thr, wa[more], side="left")
            ga[more] = tab.thr[xa[more]]
        x[adv] = xa
        tie[adv] = ga == wa
    return _settle_ties(tab, w, x, tie, rng) if tie.any() else x


def _settle_ties(tab: _Table, w: U32, x: I64, tie: Bools, rng: RandomSource) -> I64:
    """Decide the words equal to a threshold (probability <= 2**-bits per boundary) exactly."""
    for i in np.flatnonzero(tie):
        wi, j0 = int(w[i]), int(x[i])
        j1 = j0
        while int(tab.thr[j1]) == wi:
            j1 += 1
        x[i] = _count_passed(wi, tab.bits, j0, j1, tab.bound, rng)
    return x


def _bernoulli_lazy(w: npt.NDArray[Any], thr: npt.NDArray[Any], bits: int,
                    x_of: Callable[[int], Fraction], rng: RandomSource) -> Bools:
    """Exact ``U_i < exp(-x_i)`` from ``bits``-bit prefixes ``w``, ``thr = floor(2**bits e**-x)``.

    ``w < thr`` proves acceptance and ``w > thr`` rejection (module docstring); ties are
    resolved with further bits by :func:`_count_passed` on the single boundary ``exp(-x_i)``.
    ``w`` and ``thr`` are integer arrays of one dtype. A probability of exactly 1 may use
    ``thr = 2**bits - 1`` instead of ``2**bits`` (to stay in the dtype's range): ``w < thr``
    still proves acceptance, ``w > thr`` cannot happen, and the tie ``w = thr`` is resolved
    exactly (accepted).
    """
    out = w < thr
    for i in np.flatnonzero(w == thr):  # probability 2**-bits
        out[i] = _count_passed(int(w[i]), bits, 0, 1, _exp_bound(x_of(int(i))), rng) == 0
    return out


def _table_words(rng: RandomSource, n: int) -> U32:
    """``n`` uniform 31-bit integers (uint32) for table inversion."""
    return rng.words32(n) & _LOW31


def _accept_words(rng: RandomSource, n: int) -> I64:
    """``n`` uniform 63-bit integers (int64) for single Bernoulli comparisons."""
    return (rng.words(n) >> np.uint64(1)).astype(np.int64)


# --------------------------------------------------------------------------------------------
# Tables for the geometric family. All are cached: they depend only on the (public) scale.
# --------------------------------------------------------------------------------------------


def _split_exponent(x: Fraction) -> int:
    """Smallest ``k >= 0`` with ``2**(k + 1) x >= 1``: then ``exp(-2**k x) <= e**-0.5``, and
    ``> e**-1`` unless ``k = 0``, so the geometric head table stays short."""
    # 2**(k + 1) >= q / p  <=>  2**(k + 1) >= ceil(q / p) =: c; the least such k + 1 is
    # (c - 1).bit_length(), so k is one less (and 0 when c <= 2).
    p, q = x.numerator, x.denominator
    return max(0, ((q + p - 1) // p - 1).bit_length() - 1)


def _threshold_table(bound: Bound) -> _Table:
    """Exact ``_TABLE_BITS``-bit thresholds of the boundaries ``F_0 < F_1 < ...`` until they
    reach the top of the word range (at most 64 of them)."""
    thr: list[int] = []
    cap = (1 << _TABLE_BITS) - 1
    while len(thr) < 64 and (not thr or thr[-1] < cap):
        thr.append(_floor_scaled(bound, len(thr), _TABLE_BITS))
    return _Table(thr, _TABLE_BITS, bound)


@functools.lru_cache(maxsize=128)
def _geometric_table(rate: Fraction) -> _Table:
    """Geometric, ratio ``Q = exp(-rate)``: ``F_j = 1 - Q**(j + 1)``; ``X = K`` means ``>= K``."""

    def raw(j: int, p: int) -> Interval:
        lo, hi = _exp_neg_interval(rate * (j + 1), p)
        return 1 - hi, 1 - lo

    return _threshold_table(_refined(raw))


@functools.lru_cache(maxsize=128)
def _laplace_head_table(x: Fraction, k: int) -> _Table:
    """Head of the discrete Laplace: zero, or ``A`` (ratio ``Q = q**(2**k)``), ``q = exp(-x)``.

    ``F_j = 1 - C Q**j`` with ``C = 2q / (1 + q)``: ``X = 0`` is ``Y = 0`` (probability
    ``1 - C = (1 - q) / (1 + q)``), ``X = j`` in ``[1, K)`` is ``A = j - 1`` and ``X = K`` is
    ``A >= K - 1``; ``P(X = j) = C (1 - Q) Q**(j - 1)`` = P(Y != 0) P(A = j - 1).
    """

    def raw(j: int, p: int) -> Interval:
        a_lo, a_hi = _exp_neg_interval(x, p + 4)
        n_lo, n_hi = _exp_neg_interval(x * (1 + j * (1 << k)), p + 4)
        return 1 - 2 * n_hi / (1 + a_lo), 1 - 2 * n_lo / (1 + a_hi)

    return _threshold_table(_refined(raw))


@functools.lru_cache(maxsize=96)  # about 200 KB each; three per large scale
def _chunk_table(y: Fraction, g: int) -> _Table:
    """``c`` in ``[0, 2**g)`` with ``P(c) ~ rho**c``, ``rho = exp(-y)``.

    ``F_c = (1 - rho**(c + 1)) / (1 - rho**G)``, ``G = 2**g``, ``c < G - 1``. Thresholds come from
    a fixed-point recurrence ``rho**(c + 1) = rho**c * rho`` with outward rounding (products of
    nonnegative enclosures enclose the product); any threshold the enclosure leaves undecided
    is recomputed from :func:`_exp_neg_interval` directly.
    """
    big = 1 << g

    def raw(c: int, p: int) -> Interval:
        # 1 / (1 - rho**G) < 2**41 (y >= 2**-40): 48 guard bits absorb the division
        e_lo, e_hi = _exp_neg_interval(y * (c + 1), p + 48)
        d_lo, d_hi = _exp_neg_interval(y * big, p + 48)
        if d_hi >= 1:
            return Fraction(0), Fraction(1)
        return (1 - e_hi) / (1 - d_lo), (1 - e_lo) / (1 - d_hi)

    bound = _refined(raw)
    bits = _TABLE_BITS
    wp = bits + 192
    one = 1 << wp
    r_lo, r_hi = exp_neg_fixed(y, wp)
    d_lo, d_hi = exp_neg_fixed(y * big, wp)
    den_lo, den_hi = one - d_hi, one - d_lo  # enclose 2**wp (1 - rho**G)
    if den_lo <= 0:  # pragma: no cover - rho**G <= exp(-2**-39) is far below 1
        raise ArithmeticError("chunk ratio too close to 1")
    thr: list[int] = []
    p_lo = p_hi = one
    for c in range(big - 1):
        p_lo = (p_lo * r_lo) >> wp
        p_hi = -((-(p_hi * r_hi)) >> wp)
        t_lo = ((one - p_hi) << bits) // den_hi
        t_hi = ((one - p_lo) << bits) // den_lo
        thr.append(t_lo if t_lo == t_hi else _floor_scaled(bound, c, bits))
    return _Table(thr, bits, bound)


@functools.lru_cache(maxsize=128)
def _chunks(x: Fraction, k: int) -> tuple[tuple[int, _Table], ...]:
    """Bit chunks ``(shift, table)`` covering ``B`` in ``[0, 2**k)`` for ratio ``exp(-x)``."""
    if k == 0:
        return ()
    count = -(-k // _CHUNK_BITS)
    sizes = [k // count + (1 if i < k % count else 0) for i in range(count)]
    out = []
    shift = 0
    for g in sizes:
        out.append((shift, _chunk_table(x * (1 << shift), g)))
        shift += g
    return tuple(out)


def _geometric_from_table(tab: _Table, n: int, rng: RandomSource) -> I64:
    """``n`` geometric draws from a :func:`_geometric_table` (memoryless beyond the table)."""
    out = np.zeros(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        x = _invert(tab, _table_words(rng, todo.size), rng)
        out[todo] += x
        todo = todo[x == tab.size]  # G >= K: G - K is again geometric (memoryless)
    return out


def _low_part(parts: tuple[tuple[int, _Table], ...], n: int, rng: RandomSource) -> I64:
    """``B`` in ``[0, 2**k)`` with ``P(B = b) ~ exp(-x b)``: independent chunks, one word each
    (``parts``: :func:`_chunks` of ``x`` and ``k``)."""
    b = np.zeros(n, dtype=np.int64)
    if not parts:
        return b
    words = (rng.words32(n * len(parts)) & _LOW31).reshape(len(parts), n)
    for row, (shift, tab) in zip(words, parts, strict=True):
        c = _invert(tab, row, rng)
        if shift:
            c <<= shift
        b += c
    return b


# --------------------------------------------------------------------------------------------
# Public samplers.
# --------------------------------------------------------------------------------------------


def geometric_exp_neg(rate: Fraction, n: int, rng: RandomSource) -> I64:
    """``n`` exact draws of ``G``, ``P(G = g) = (1 - e**-rate) e**(-rate g)``, rational rate.

    The rate must be at least ``2**-40`` (as for :func:`discrete_laplace`'s scale).
    ``G = 2**k A + B`` (module docstring): ``A`` by lazy inversion of a geometric table with
    ratio ``exp(-2**k rate)``, redrawn past the table (memorylessness), and ``B`` by chunks.
    """
    rate = Fraction(rate)
    if rate < Fraction(1, MAX_FAST_DEN):
        raise ValueError("rate must be at least 2**-40")
    k = _split_exponent(rate)
    a = _geometric_from_table(_geometric_table(rate * (1 << k)), n, rng)
    return (a << k) + _low_part(_chunks(rate, k), n, rng)


def geometric_exp_neg_one(n: int, rng: RandomSource) -> I64:
    """``n`` exact draws of ``V`` with ``P(V = v) = (1 - e**-1) e**-v``."""
    return geometric_exp_neg(Fraction(1), n, rng)


@functools.lru_cache(maxsize=1)
def _exp_neg_int_thresholds() -> I64:
    """``floor(2**63 e**-n)`` for ``n = 0..64`` (zero from ``n = 44`` on), ``n = 0`` clamped.

    ``n = 0`` is stored as ``2**63 - 1`` (see :func:`_bernoulli_lazy`: any threshold
    ``>= 2**bits - 1`` is valid for probability 1, since words never exceed it).
    """
    def bound(j: int, prec: int) -> Interval:
        return _exp_neg_interval(Fraction(j), prec)

    return np.array([(1 << _ACCEPT_BITS) - 1] + [_floor_scaled(bound, j, _ACCEPT_BITS)
                                                 for j in range(1, 65)], dtype=np.int64)


def _bernoulli_exp_neg_int(whole: I64, rng: RandomSource) -> Bools:
    """Exact Bernoulli(exp(-n_i)) for integers ``n_i >= 0``: one 63-bit comparison each.

    ``e**0 = 1`` uses the clamped threshold ``2**63 - 1`` (see :func:`_bernoulli_lazy`); for
    ``n >= 64`` the threshold is 0 and a zero word is resolved exactly with the true ``n``.
    """
    thr = _exp_neg_int_thresholds()[np.minimum(whole, 64)]
    w = _accept_words(rng, whole.size)
    return _bernoulli_lazy(w, thr, _ACCEPT_BITS, lambda i: Fraction(int(whole[i])), rng)


def bernoulli_exp_neg_one(n: int, rng: RandomSource) -> Bools:
    """``n`` exact Bernoulli(exp(-1)) draws: one 63-bit comparison each (ties resolved exactly)."""
    return _bernoulli_exp_neg_int(np.ones(n, dtype=np.int64), rng)


_FX = 31  # fixed-point bits of the exp tables below


@functools.lru_cache(maxsize=1)
def _exp_tables() -> tuple[tuple[I64, I64], ...]:
    """Rigorous fixed-point enclosures ``lo <= 2**31 exp(-x) <= hi`` for table arguments.

    In order: ``x = n`` (n = 0..32), ``x = i / 2**10``, ``i / 2**20``, ``i / 2**30``
    (i = 0..1023), and ``x = 2**-30`` (one entry).
    """

    def table(xs: list[Fraction]) -> tuple[I64, I64]:
        pairs = [exp_neg_fixed(v, _FX) for v in xs]
        return (np.array([p[0] for p in pairs], dtype=np.int64),
                np.array([p[1] for p in pairs], dtype=np.int64))

    return (
        table([Fraction(j) for j in range(33)]),
        table([Fraction(i, 1 << 10) for i in range(1024)]),
        table([Fraction(i, 1 << 20) for i in range(1024)]),
        table([Fraction(i, 1 << 30) for i in range(1024)]),
        table([Fraction(1, 1 << 30)]),
    )


def bernoulli_exp_neg(num: npt.ArrayLike, den: npt.ArrayLike, rng: RandomSource) -> Bools:
    """Exact Bernoulli(exp(-num_i / den_i)) for integers num_i >= 0, 1 <= den_i <= 2**40.

    One 32-bit word ``w`` per draw, compared lazily with an integer enclosure ``[lo, hi]`` of
    ``2**32 exp(-gamma)``. Proof sketch: write ``gamma = n + f / d`` and
    ``G = floor(2**30 f / d)`` (exact integer division), so ``f / d`` is in
    ``[G, G + 1) / 2**30`` and ``exp(-gamma)`` lies in
    ``(e**-n e**(-G / 2**30) e**(-2**-30), e**-n e**(-G / 2**30)]``. Splitting ``G`` into three
    10-bit digits, each factor is read from a table of rigorous enclosures
    (:func:`exp_neg_fixed`); products of nonnegative enclosures, rounded down for ``lo`` and up
    for ``hi``, enclose the product (``n > 32`` uses ``[0, e**-32]``). Then ``w + 1 <= lo``
    proves ``U < exp(-gamma)`` and ``w >= hi`` proves ``U >= exp(-gamma)``; the remaining
    ``O(2**-27)`` fraction is decided exactly by :func:`_count_passed` with the true rational
    ``gamma``. Outcomes never depend on rounding: only the rare slow path does more work.
    """
    nu = np.asarray(num, dtype=np.int64).reshape(-1)
    de = np.asarray(den, dtype=np.int64).reshape(-1)
    nu, de = np.broadcast_arrays(nu, de)
    if nu.size and (int(nu.min()) < 0 or int(de.min()) < 1 or int(de.max()) > MAX_FAST_DEN):
        raise ValueError("bernoulli_exp_neg needs num >= 0 and 1 <= den <= 2**40")
    (en_lo, en_hi), (a_lo, a_hi), (b_lo, b_hi), (c_lo, c_hi), (s_lo, _) = _exp_tables()
    whole = nu // de
    frac = nu - whole * de
    q1 = (frac << 20) // de  # frac < den <= 2**40: no overflow
    q2 = (((frac << 20) - q1 * de) << 10) // de  # remainder < den <= 2**40
    g = (q1 << 10) | q2  # floor(2**30 frac / den)
    i1, i2, i3 = g >> 20, (g >> 10) & 1023, g & 1023
    nn = np.minimum(whole, 32)
    lo = np.where(whole > 32, 0, en_lo[nn])
    hi = en_hi[nn]
    for t_lo, t_hi, idx in ((a_lo, a_hi, i1), (b_lo, b_hi, i2), (c_lo, c_hi, i3)):
        lo = (lo * t_lo[idx]) >> _FX
        hi = -((-(hi * t_hi[idx])) >> _FX)
    lo = (lo * int(s_lo[0])) >> _FX
    w = rng.words32(nu.size).astype(np.int64)
    out = (w + 1) <= (lo << 1)
    undecided = np.flatnonzero(~out & (w < (hi << 1)))
    for i in undecided:  # probability O(2**-27) per draw
        gamma = Fraction(int(nu[i]), int(de[i]))
        out[i] = _count_passed(int(w[i]), 32, 0, 1, _exp_bound(gamma), rng) == 0
    return out


@functools.lru_cache(maxsize=128)
def _laplace_tables(scale: Fraction) -> tuple[Fraction, int, _Table,
                                               tuple[tuple[int, _Table], ...]]:
    """``x = 1 / scale``, the split exponent ``k``, the head table and the low chunks of
    :func:`discrete_laplace` (one cache lookup a release: plans, hence scales, repeat)."""
    s, r = scale.numerator, scale.denominator
    if s <= 0:
        raise ValueError("scale must be positive")
    if s > MAX_FAST_DEN or r >= (1 << 62):
        raise ValueError("scale too fine for the exact sampler: round it up with round_scale_up")
    x = Fraction(r, s)
    k = _split_exponent(x)
    return x, k, _laplace_head_table(x, k), _chunks(x, k)


def discrete_laplace(scale: Fraction, n: int, rng: RandomSource) -> I64:
    """``n`` exact draws of the discrete Laplace (two-sided geometric) distribution.

    P(Y = y) proportional to exp(-|y| / scale) over the integers, for a rational ``scale = s/r``
    with s <= 2**40 (use :func:`round_scale_up` first). With ``q = exp(-r/s)``: one 32-bit word
    gives a fair sign (its top bit) and, by lazy inversion of its other 31 bits, either ``Y = 0``
    (probability ``(1 - q) / (1 + q)``) or ``A``; ``|Y| = 1 + 2**k A + B`` with ``B`` drawn by
    chunks. Then ``P(|Y| = m) = 2 (1 - q) q**m / (1 + q)`` for ``m >= 1``, exactly.
    """
    x, k, head, parts = _laplace_tables(Fraction(scale))
    u = rng.words32(n)
    hx = _invert(head, u & _LOW31, rng)
    tail = np.flatnonzero(hx == head.size)  # A >= K - 1: memoryless redraw
    if tail.size:
        hx[tail] += _geometric_from_table(_geometric_table(x * (1 << k)), tail.size, rng)
    zero = hx == 0
    y = hx - 1  # A
    if k:
        y <<= k
        y += _low_part(parts, n, rng)
    y += 1  # |Y| = 1 + 2**k A + B
    np.negative(y, out=y, where=u > _LOW31)  # the top bit of the head word is the sign
    y[zero] = 0
    return y


def discrete_laplace_pmf(y: npt.ArrayLike, scale: float) -> npt.NDArray[np.float64]:
    """Reference pmf of the discrete Laplace, for tests and accuracy statements."""
    p = math.exp(-1.0 / scale)
    yy = np.abs(np.asarray(y, dtype=np.float64))
    return (1 - p) / (1 + p) * np.power(p, yy)


def uniform_unit(n: int, rng: RandomSource) -> npt.NDArray[np.float64]:
    """``n`` independent uniform draws on the 2**-53 grid of ``[0, 1)`` (the top 53 bits of a
    word: every multiple of 2**-53 below 1 with probability 2**-53, exactly). Used for the
    position inside a quantile's chosen cell: post-processing of a DP choice, so its precision
    is an accuracy matter only."""
    return (rng.words(n) >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
