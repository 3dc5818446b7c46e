"""Several quantiles in one release: JointExp (Gillenwater, Joseph and Kulesza 2021,
"Differentially Private Quantiles", ICML), on dpframe's public cells, sampled exactly from
its dynamic program's log-weights.

**Candidates.** The ``K`` public cells of a quantile (:class:`~dpframe.core.aggregates.quantile.
CellGrid`), each split into ``S + 1`` sub-candidates ``(k, r)``, ``r = 0..S`` (``S`` =
:func:`sub_candidates`, public): a fixed, data-independent set of ``K (S + 1)`` candidates,
ordered by ``(k, r)``. With ``B_k`` the clamped values in cells before ``k``, ``N_k`` those in
``k`` and ``h = S // 2``, candidate ``(k, r)`` has the rank ``rho = B_k + min(r, N_k)`` for
``r <= h`` and ``B_k + max(min(r, N_k), N_k - S + r)`` for ``r > h``: a tie of up to ``S``
values inside a cell is read as spread over it (every rank ``B_k..B_k + N_k`` is a candidate's;
the candidates past ``N_k`` repeat the top one), a larger one by its ``h + 1`` lowest and
``S - h`` highest ranks, so a target rank near either end of a heavy tie stays in its cell.
Ranks are nondecreasing in the candidates' order, and adding one value to cell ``k*`` raises
``rho`` by ``delta = 0`` for the candidates of cells before ``k*``, by ``1`` for those after,
and inside ``k*`` by ``1[r >= N + 1]`` (``N < S``) or by ``1[r > h]`` (``N >= S``): ``delta``
is nondecreasing along the candidates (checked exhaustively in the tests).

**Utility.** An output is a nondecreasing tuple ``c_1 <= ... <= c_m`` of candidates for the
levels ``q_1 <= ... <= q_m`` (with public integer rank shifts ``s_j``, 0 unless an interval
asks for them). With ``D`` the levels' common denominator, ``a_j = D q_j``, the targets
``T_j = a_j n + D s_j`` (``T_0 = 0``, ``T_{m+1} = D n``) and ``P_j = D rho(c_j)``
(``P_0 = 0``, ``P_{m+1} = D n``), the utility is JointExp's, scaled to integers::

    U(c) = - sum_{j=1..m+1} | (P_j - P_{j-1}) - (T_j - T_{j-1}) |

(``D`` times the L1 distance between the counts between consecutive outputs and their
targets). **Sensitivity.** Adding a row moves every ``P_j`` by ``D delta_j``, ``delta``
nondecreasing from 0 (``j = 0``) to 1 (``j = m + 1``): one step of ``D``. The targets' gaps
move by ``a_j - a_{j-1}`` (summing to ``D``). So ``|Delta U| <= (D - g) + (D - g) = 2 (D -
g)`` where ``g`` is the gap at the step, at most ``2 (D - g_min)``; a unit with ``T`` rows:
``2 T (D - g_min)`` (a nondecreasing ``delta`` from 0 to ``T``: the worst split puts it all at
the smallest gap). Replacing rows (``change_one``): two such ``delta``, ``n`` unchanged:
``2 T D``. (:func:`joint_utility_sensitivity`.)

**Mechanism.** The exponential mechanism over the nondecreasing tuples (counting measure):
``P(c) ~ exp(rate U(c))`` with ``rate = a / d <= epsilon' / (2 Delta_U)`` (the exact dyadic
rate of :meth:`~dpframe.core.noise.mechanisms.ExponentialSpec.acceptance_rate`), which is
``epsilon'``-DP (McSherry and Talwar 2007). The released values are a uniform point of each
chosen cell, sorted (post-processing). ``epsilon' = epsilon (1 - 2**-7)``: the rest pays for
the sampler's floating-point error below, for every ``n``.

**Sampling (dynamic program, exact integers and bounded floats).**
``alpha_1(c) = -rate |P(c) - G_1|`` and
``alpha_j(c) = log sum_{k <= c} exp(alpha_{j-1}(k) - rate |P(c) - P(k) - G_j|)``,
``G_j = T_j - T_{j-1}``. Each is kept as ``alpha_j = rate L_j + beta_j``: ``L_j(c) = max_k
L_{j-1}(k) - |P(c) - P(k) - G_j|`` the exact integer maximum of the partial utilities
(int64), ``beta_j`` a float in ``[0, (j - 1) ln C]`` (the log of at most ``C**(j-1)`` terms
at most 1, one of them 1). Splitting the ``k`` at ``P(k) <= P(c) - G_j`` makes each kernel
``exp(+-rate P(k)) exp(-+rate (P(c) - G_j))``: a prefix and a range sum of ``exp(beta(k) +
rate W(k))``, ``W = L_{j-1} +- P`` integers, over a disjoint sparse table (sums of positive
terms only, no cancellation), ``O(m C log C)`` for ``C`` candidates. A partial sum is a pair
``(V, s)`` standing for ``rate V + s``: ``V`` the exact integer maximum of ``W`` over its
range, ``s`` in ``[-1, B]``, ``B = m ln C + 1``; two combine as ``V = max(V_1, V_2)``, ``s =
logaddexp(s_i + rate max(V_i - V, -X))``, ``rate X >= B + 60`` (the cap only over-counts a
term below ``e**-60`` of its sum's largest: a relative ``e**-59`` at most). No float ever
holds ``rate P`` or ``rate L``: every float is at most ``2 B + 61`` in magnitude. Then
``c_m`` is drawn with weights ``exp(alpha_m(k) - rate |D n - P(k) - G_{m+1}|)`` and each
``c_{j-1}`` given ``c_j`` with ``exp(alpha_{j-1}(k) - rate |P(c_j) - P(k) - G_j|)``, ``k <=
c_j``: the exact law of the exponential mechanism when the ``alpha`` are exact (the
conditionals telescope).

**Floating-point safety (whatever n).** A draw's log-weights are ``rate I(k) + beta(k)``
(``I`` an integer): the gap to the row's largest is ``rate (I_max - I(k))``, an integer times
the exact rate (its Bernoulli coin exact; chunks of ``X`` keep its numerators in int64), plus a
float part rounded *up* to a multiple of ``2**-g`` (``g >= 20``, public); a uniformly proposed
candidate is accepted with an exact Bernoulli(exp(-gap)) coin
(:func:`~dpframe.core.noise.samplers.bernoulli_exp_neg`, rejection sampling: the output is exactly
proportional to the rounded weights, however small). The output lattice is the public cells.
What floating point changes is the float parts, bounded from public quantities only (``m``,
``C``, float64's unit roundoff ``u = 2**-53``; :func:`float_error_bounds`): one combine adds
at most ``16 u (B + 60)`` (the float rate's rounding times ``X``, the product and the sum ``s +
rate Delta``, the subtraction inside logaddexp, its exp and log1p, its result's rounding and
the cap; log-sum-exp is 1-Lipschitz in the sup norm, so its inputs' errors pass through
unamplified); a layer's results are at most ``H + 2`` combines deep (``H = ceil(log2 C) <=
15``): ``gamma <= 16 (H + 2) u (B + 60)`` per layer, ``(j - 1) gamma`` for ``beta_j``; a
draw's float gap adds ``eps_d <= 8 u (B + 60)`` and the rounding ``2**-g``. Each of the ``m``
conditionals is then off by a factor ``exp(+-2 Delta)``, ``Delta = (m - 1) gamma + eps_d +
2**-g``, the output law by ``exp(+-2 m Delta)``, and the release is ``epsilon' + 4 m Delta``-DP
(:func:`float_excess`). The plan keeps ``epsilon 2**-7`` aside: ``g`` is the smallest ``>= 20``
with ``4 m 2**-g`` at most half of it, and a release whose ``4 m ((m - 1) gamma + eps_d)``
exceeds the other half is refused when planned, before any charge (:func:`gap_bits`: public
quantities only). Nine levels over ``2**15`` candidates: ``gamma`` about ``5e-12``, covered
for any epsilon above about ``4e-7``; ``n`` enters nowhere (the tests drive ``n = 2 10**7``
through the program against a 60-digit recomputation).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from ..errors import ValidationError
from .noise.mechanisms import ExponentialSpec
from .noise.rng import RandomSource
from .noise.samplers import Bools, bernoulli_exp_neg
from .sensitivity import Contribution, Relation

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: Candidates of a joint release at most (cells times sub-candidates), keeping the dynamic
#: program's tables (about 20 floats per candidate) within tens of MiB.
MAX_JOINT_CANDIDATES = 1 << 15
#: Sub-candidates per cell at most: a tie of up to this many values is resolved inside its cell.
MAX_SUB = 63
#: Candidates times groups of one batch of the dynamic program (its tables' memory).
BATCH_CANDIDATES = 1 << 17
#: Share of epsilon kept aside for the sampler's floating-point error (module docstring).
FLOAT_SLACK = Fraction(1, 1 << 7)
#: The gaps' rounding at least: multiples of 2**-GAP_BITS, rounded up (finer for a small
#: epsilon: :func:`gap_bits`).
GAP_BITS = 20
#: Unit roundoff of float64.
UNIT_ROUNDOFF = 2.0 ** -53
_NEG = -(1 << 61)  # the integer part of an empty sum (real ones stay within +-2**60)


def log_weight_bound(m: int, size: int) -> float:
    """``B = m ln C + 1``: every float part (``beta``, a partial sum's ``s``) is in
    ``[-1, B]`` (module docstring); public."""
    return m * math.log(max(2, size)) + 1.0


def float_error_bounds(m: int, size: int) -> tuple[float, float]:
    """``(gamma, eps_d)``: the float error added per layer of the dynamic program and the
    error of a draw's gap (module docstring), from public quantities only: the levels ``m``,
    the candidates ``C`` (``size``) and the float format."""
    unit = UNIT_ROUNDOFF * (log_weight_bound(m, size) + 60.0)
    depth = max(1, (size - 1).bit_length()) + 2
    return depth * 16 * unit, 8 * unit


def float_excess(m: int, size: int, gap_bits: int) -> float:
    """The epsilon the float arithmetic may add, ``4 m ((m - 1) gamma + eps_d + 2**-g)``."""
    gamma, eps_d = float_error_bounds(m, size)
    return 4 * m * ((m - 1) * gamma + eps_d + 2.0 ** -gap_bits)


def gap_bits(epsilon: Fraction, m: int, size: int) -> int:
    """The gaps' resolution ``g`` (public): the smallest ``g >= GAP_BITS`` with ``4 m 2**-g``
    at most half the reserve ``epsilon FLOAT_SLACK``. Raises :class:`ValidationError` (at
    planning, before any charge) when the reserve cannot cover :func:`float_excess`."""
    reserve = float(epsilon * FLOAT_SLACK)
    g = GAP_BITS
    while g < 40 and 4 * m * 2.0 ** -g > reserve / 2:
        g += 1
    if float_excess(m, size, g) > reserve * (1 - 1e-9):
        raise ValidationError(
            "epsilon is too small for a joint release of this many levels: its sampler's "
            "floating-point error would exceed epsilon / 128; raise epsilon or ask fewer levels")
    return g


def sub_candidates(cells: int) -> int:
    """``S``: sub-candidates per cell beyond the first (public: a function of the cells)."""
    return int(max(0, min(MAX_SUB + 1, MAX_JOINT_CANDIDATES // max(1, cells)) - 1))


def common_denominator(levels: Sequence[Fraction]) -> int:
    d = 1
    for q in levels:
        d = d * q.denominator // math.gcd(d, q.denominator)
    return d


def joint_utility_sensitivity(relation: Relation, levels: Sequence[Fraction],
                              c: Contribution) -> int:
    """``Delta_U`` of the joint utility (module docstring): ``2 T (D - g_min)`` under
    add_remove, ``2 T D`` under change_one, ``T`` a unit's rows."""
    d = common_denominator(levels)
    a = [0, *(int(q * d) for q in levels), d]
    g_min = min(y - x for x, y in itertools.pairwise(a))
    per = 2 * (d - g_min) if relation == "add_remove" else 2 * d
    return max(1, per) * c.rows_per_group


@dataclass(frozen=True)
class JointQuantileSpec(ExponentialSpec):
    """The exponential mechanism of JointExp over nondecreasing candidate tuples. ``levels``
    nondecreasing, ``shifts`` their public rank shifts (zeros but for an interval's ends);
    ``n_candidates`` is the cells ``K``."""

    levels: tuple[Fraction, ...] = ()
    shifts: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        # checked when the release is planned, before any charge: the rate and the float budget
        super().__post_init__()
        if self.levels:
            self.gap_bits()

    def acceptance_rate(self) -> tuple[int, int]:
        """The exact rate of :class:`ExponentialSpec` at ``epsilon (1 - FLOAT_SLACK)``."""
        return ExponentialSpec(self.epsilon * (1 - FLOAT_SLACK), self.utility_sensitivity,
                               self.n_candidates).acceptance_rate()

    def gap_bits(self) -> int:
        """The gaps' resolution of :func:`gap_bits`; raises :class:`ValidationError` when
        ``epsilon / 128`` cannot cover the float error (called when the release is planned)."""
        size = self.n_candidates * (sub_candidates(self.n_candidates) + 1)
        return gap_bits(self.epsilon, len(self.levels), size)

    def utility_error(self, level: float = 0.95) -> float:
        """A bound on the utility shortfall at ``level``: ``log(#tuples / beta) / rate``."""
        a, d = self.acceptance_rate()
        m = len(self.levels)
        cands = self.n_candidates * (sub_candidates(self.n_candidates) + 1)
        log_tuples = math.lgamma(cands + m) - math.lgamma(m + 1) - math.lgamma(cands)
        return (log_tuples + math.log(1 / (1 - level))) * d / a

    def choose_joint(self, cells: npt.ArrayLike, rng: RandomSource) -> I64:
        """The chosen cell of each level, per group (rows of ``cells``): shape
        ``(groups, m)``, nondecreasing along each row."""
        c = np.atleast_2d(np.asarray(cells, dtype=np.int64))
        if c.shape[0] == 0:
            return np.zeros((0, len(self.levels)), dtype=np.int64)
        a, d = self.acceptance_rate()
        sub = sub_candidates(c.shape[1])
        step = max(1, BATCH_CANDIDATES // (c.shape[1] * (sub + 1)))
        bits = self.gap_bits()
        parts = [sample_joint(c[i:i + step], self.levels, self.shifts, Fraction(a, d), sub, rng,
                              bits) for i in range(0, c.shape[0], step)]
        return np.concatenate(parts) // (sub + 1)


def candidate_ranks(cells: I64, sub: int) -> I64:
    """``rho`` of every candidate ``(k, r)`` in order, per row (module docstring): ``B_k +
    min(r, N_k)`` for ``r <= S // 2``, ``B_k + max(min(r, N_k), N_k - S + r)`` above."""
    c = np.atleast_2d(cells)
    below = np.cumsum(c, axis=1) - c
    r = np.arange(sub + 1, dtype=np.int64)[None, None, :]
    n = c[:, :, None]
    low = np.minimum(r, n)
    rho = below[:, :, None] + np.where(r <= sub // 2, low, np.maximum(low, n - sub + r))
    out: I64 = rho.reshape(c.shape[0], -1)
    return out if np.ndim(cells) == 2 else out[0]


def targets(n: npt.ArrayLike, levels: Sequence[Fraction], shifts: Sequence[int]
            ) -> tuple[int, I64]:
    """``(D, G)``: the common denominator and the target gaps ``G_1..G_{m+1}`` (per ``n``)."""
    d = common_denominator(levels)
    nn = np.asarray(n, dtype=np.int64)[..., None]
    a = np.asarray([0, *(int(q * d) for q in levels), d], dtype=np.int64)
    s = np.asarray([0, *shifts, 0], dtype=np.int64)
    t = a * nn + d * s
    return d, np.diff(t, axis=-1)


def _combine(v1: I64, s1: F64, v2: I64, s2: F64, rate: float, cap: int) -> tuple[I64, F64]:
    """The monoid of partial sums ``rate V + s`` (``V`` an exact integer, ``s`` a bounded
    float): ``V = max(V1, V2)`` and ``s = logaddexp(s_i + rate max(V_i - V, -X))``. Every float
    it touches is at most ``B + rate X`` in magnitude whatever ``n``."""
    v = np.maximum(v1, v2)
    t1 = s1 + rate * np.maximum(v1 - v, -cap)
    t2 = s2 + rate * np.maximum(v2 - v, -cap)
    s: F64 = np.logaddexp(t1, t2)
    return v, s


def _sparse_table(v: I64, s: F64, rate: float, cap: int) -> tuple[I64, F64]:
    """A disjoint sparse table of the monoid :func:`_combine` over each row (width a power
    of two): entry ``(h, g, i)`` sums from ``i`` to the middle of its level-``h`` block (left
    half) or from the middle to ``i`` (right half). Built level by level from the suffix and
    prefix sums of the level below: each entry is at most ``h`` combines deep."""
    rows, size = v.shape
    levels = max(2, size.bit_length())
    tv = np.full((levels, rows, size), _NEG, dtype=np.int64)
    ts = np.full((levels, rows, size), -np.inf)
    tv[0], ts[0] = v, s
    idx = np.arange(size)
    suf, pre = (v, s), (v, s)
    for h in range(1, levels):
        half = 1 << (h - 1)
        left = (idx & half) == 0
        tv[h] = np.where(left, suf[0], pre[0])
        ts[h] = np.where(left, suf[1], pre[1])
        if h == levels - 1:
            break
        start_right = (idx | half) & ~(half - 1)  # the right half's first entry
        end_left = (idx & ~(2 * half - 1)) + half - 1  # the left half's last entry
        sv, ss = _combine(suf[0], suf[1], suf[0][:, start_right], suf[1][:, start_right],
                          rate, cap)
        pv, ps = _combine(pre[0][:, end_left], pre[1][:, end_left], pre[0], pre[1], rate, cap)
        suf = (np.where(left, sv, suf[0]), np.where(left, ss, suf[1]))
        pre = (np.where(left, pre[0], pv), np.where(left, pre[1], ps))
    return tv, ts


def _range_sum(table: tuple[I64, F64], lo: I64, hi: I64, rate: float, cap: int
               ) -> tuple[I64, F64]:
    """The monoid sum over ``lo..hi`` (inclusive) per entry; empty (``_NEG``, ``-inf``) where
    ``lo > hi``: one combine of two table entries."""
    tv, ts = table
    g = np.broadcast_to(np.arange(lo.shape[0])[:, None], lo.shape)
    ok = lo <= hi
    lo_, hi_ = np.where(ok, lo, 0), np.where(ok, hi, 0)
    h = np.maximum(np.frexp((lo_ ^ hi_).astype(np.float64))[1], 1)  # bit length of lo ^ hi
    one = lo_ == hi_
    v, s = _combine(tv[h, g, lo_], ts[h, g, lo_], tv[h, g, hi_], ts[h, g, hi_], rate, cap)
    v = np.where(one, tv[0, g, lo_], v)
    s = np.where(one, ts[0, g, lo_], s)
    return np.where(ok, v, _NEG), np.where(ok, s, -np.inf)


def _pad_int(a: I64) -> I64:
    """``a`` padded with empty integer parts to a power-of-two width."""
    rows, size = a.shape
    out: I64 = np.full((rows, 1 << max(1, (size - 1).bit_length())), _NEG, dtype=np.int64)
    out[:, :size] = a
    return out


def _pad_float(a: F64) -> F64:
    """``a`` padded with ``-inf`` to a power-of-two width."""
    rows, size = a.shape
    out: F64 = np.full((rows, 1 << max(1, (size - 1).bit_length())), -np.inf)
    out[:, :size] = a
    return out


def _next_layer(lay: tuple[I64, F64], p: I64, gap: I64, rate: float, cap: int
                ) -> tuple[I64, F64]:
    """``(L_j, beta_j)`` from ``(L_{j-1}, beta_{j-1})`` per row (module docstring): ``alpha_j
    = rate L_j + beta_j``, ``L_j`` the exact integer maximum of the partial utilities,
    ``beta_j`` in ``[0, (j - 1) ln C]``; ``gap`` per row."""
    big, beta = lay
    rows, size = big.shape
    thr = p - gap[:, None]
    split = np.stack([np.searchsorted(p[g], thr[g], side="right") for g in range(rows)]) - 1
    upto = np.broadcast_to(np.arange(size)[None, :], (rows, size))
    split = np.minimum(split, upto)
    bpad = _pad_float(beta)
    below = _sparse_table(_pad_int(big + p), bpad, rate, cap)
    above = _sparse_table(_pad_int(big - p), bpad, rate, cap)
    va, sa = _range_sum(below, np.zeros_like(split), split, rate, cap)
    vb, sb = _range_sum(above, split + 1, upto, rate, cap)
    va = np.where(va == _NEG, _NEG, va - thr)
    vb = np.where(vb == _NEG, _NEG, vb + thr)
    out: tuple[I64, F64] = _combine(va, sa, vb, sb, rate, cap)
    return out


def _coin_int(extra: I64, rate: Fraction, cap: int, rng: RandomSource) -> Bools:
    """Exact Bernoulli(exp(-rate extra)) per entry (``extra >= 0`` integers), as a product of
    exact coins of at most ``rate X`` each (their numerators stay within int64)."""
    a, d = rate.numerator, rate.denominator
    ok = np.ones(extra.shape, dtype=bool)
    left = extra.astype(np.int64)
    while True:
        todo = np.flatnonzero(ok & (left > 0))
        if todo.size == 0:
            return ok
        chunk = np.minimum(left[todo], cap)
        ok[todo] = bernoulli_exp_neg(a * chunk, np.full(todo.size, d), rng)
        left[todo] -= chunk


def _draw(big: I64, beta: F64, limit: I64, rate: Fraction, cap: int, bits: int,
          rng: RandomSource) -> I64:
    """One index per row, in ``[0, limit]``, drawn exactly proportionally to ``exp(rate I_i
    + beta_i)`` with the float parts' gaps rounded up to multiples of ``2**-bits``: the gap of
    ``i`` is ``rate (I_max - I_i)``, exact (an integer times the exact rate), plus a float
    part of magnitude at most ``2 B + rate X + 1``. Rejection from uniform proposals with exact
    Bernoulli(exp(-gap)) coins, the first accepted proposal of each row."""
    rows, size = big.shape
    fr = float(rate)
    inside = np.arange(size)[None, :] <= limit[:, None]
    top_i = np.where(inside, big, _NEG).max(axis=1, keepdims=True)
    diff = np.where(inside, top_i - big, 0)
    near = np.minimum(diff, cap)
    w = beta - fr * near
    top = np.where(inside, w, -np.inf).max(axis=1, keepdims=True)
    num = np.ceil(np.where(inside, top - w, 0.0) * (1 << bits)).astype(np.int64)
    extra = diff - near
    out = np.zeros(rows, dtype=np.int64)
    active = np.arange(rows)
    batch = int(min(size, 256))
    while active.size:
        bound = np.repeat(limit[active] + 1, batch).astype(np.uint64)
        idx = rng.below(bound).astype(np.int64).reshape(active.size, batch)
        rr = active[:, None]
        ok = bernoulli_exp_neg(num[rr, idx].reshape(-1), 1 << bits, rng)
        far = np.flatnonzero(ok & (extra[rr, idx].reshape(-1) > 0))
        if far.size:
            ok[far] = _coin_int(extra[rr, idx].reshape(-1)[far], rate, cap, rng)
        ok = ok.reshape(active.size, batch)
        hit = ok.any(axis=1)
        first = ok.argmax(axis=1)
        out[active[hit]] = idx[hit, first[hit]]
        active = active[~hit]
    return out


def reach(m: int, size: int, rate: float) -> int:
    """``X``: integer gaps are capped at ``X`` inside the sums, ``rate X >= B + 60`` (a term
    beyond is below ``e**-60`` of its sum's largest); public."""
    return math.ceil((log_weight_bound(m, size) + 60.0) / rate) + 1


def log_weights(cells: I64, levels: Sequence[Fraction], shifts: Sequence[int], rate: float,
                sub: int) -> tuple[I64, list[tuple[I64, F64]]]:
    """The candidates' ``P`` and the dynamic program's layers ``(L_j, beta_j)``, ``alpha_j =
    rate L_j + beta_j`` (tests compare them with an exact recomputation)."""
    c = np.atleast_2d(np.asarray(cells, dtype=np.int64))
    m = len(levels)
    rho = candidate_ranks(c, sub)
    size = rho.shape[1]
    d, gaps = targets(c.sum(axis=1), levels, shifts)
    p = d * rho
    cap = reach(m, size, rate)
    lays = [(-np.abs(p - gaps[:, :1]), np.zeros(p.shape))]
    for j in range(1, m):
        lays.append(_next_layer(lays[-1], p, gaps[:, j], rate, cap))
    return p, lays


def sample_joint(cells: I64, levels: Sequence[Fraction], shifts: Sequence[int],
                 rate: Fraction | float, sub: int, rng: RandomSource,
                 bits: int = GAP_BITS) -> I64:
    """One draw of the joint mechanism per row of ``cells`` (a group's cell counts): the
    chosen candidate of each level (indices into the ``K (sub + 1)`` candidates),
    nondecreasing; shape ``(groups, m)``. ``rate`` exact (a float is read as the nearest
    fraction of denominator at most ``2**40``), ``bits`` the gaps' resolution."""
    exact = rate if isinstance(rate, Fraction) else Fraction(rate).limit_denominator(1 << 40)
    fr = float(exact)
    c = np.atleast_2d(np.asarray(cells, dtype=np.int64))
    rows, m = c.shape[0], len(levels)
    p, lays = log_weights(c, levels, shifts, fr, sub)
    size = p.shape[1]
    cap = reach(m, size, fr)
    n = c.sum(axis=1)
    d, gaps = targets(n, levels, shifts)
    out = np.zeros((rows, m), dtype=np.int64)
    end = (d * n)[:, None]
    big, beta = lays[-1]
    out[:, m - 1] = _draw(big - np.abs(end - p - gaps[:, m:]), beta, np.full(rows, size - 1),
                          exact, cap, bits, rng)
    for j in range(m - 1, 0, -1):
        chosen = out[:, j]
        pc = np.take_along_axis(p, chosen[:, None], axis=1)
        big, beta = lays[j - 1]
        out[:, j - 1] = _draw(big - np.abs(pc - p - gaps[:, j:j + 1]), beta, chosen, exact,
                              cap, bits, rng)
    return out


def joint_utility(cells: I64, chosen: I64, levels: Sequence[Fraction], shifts: Sequence[int],
                  sub: int) -> int:
    """The integer utility ``U`` of one chosen candidate tuple (tests and audits)."""
    c = np.asarray(cells, dtype=np.int64)
    rho = candidate_ranks(c, sub)
    n = int(c.sum())
    d, gaps = targets(n, levels, shifts)
    pts = np.concatenate([[0], d * rho[np.asarray(chosen)], [d * n]])
    return -int(np.abs(np.diff(pts) - gaps).sum())


__all__ = ["FLOAT_SLACK", "JointQuantileSpec", "candidate_ranks", "joint_utility",
           "joint_utility_sensitivity", "sample_joint", "sub_candidates"]
