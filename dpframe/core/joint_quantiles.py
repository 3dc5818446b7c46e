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
rate of :meth:`~dpframe.core.mechanisms.ExponentialSpec.acceptance_rate`), which is
``epsilon'``-DP (McSherry and Talwar 2007). The released values are a uniform point of each
chosen cell, sorted (post-processing). ``epsilon' = epsilon (1 - 2**-7)``: the rest pays for
the sampler's floating-point error below.

**Sampling (dynamic program, log space).** ``alpha_1(c) = -rate |P(c) - G_1|`` and
``alpha_j(c) = log sum_{k <= c} exp(alpha_{j-1}(k) - rate |P(c) - P(k) - G_j|)``, ``G_j = T_j
- T_{j-1}``. Splitting the ``k`` at ``P(k) <= P(c) - G_j`` makes each kernel a product
``exp(+-rate P(k)) exp(-+rate (P(c) - G_j))``: a prefix log-sum-exp (``logaddexp.accumulate``)
and a range log-sum-exp (a disjoint sparse table: sums of positive terms only, no
cancellation), ``O(m C log C)`` for ``C`` candidates. Then ``c_m`` is drawn with weights
``exp(alpha_m(k) - rate |D n - P(k) - G_{m+1}|)`` and each ``c_{j-1}`` given ``c_j`` with
``exp(alpha_{j-1}(k) - rate |P(c_j) - P(k) - G_j|)``, ``k <= c_j``: the exact law of the
exponential mechanism when the ``alpha`` are exact (the conditionals telescope).

**Floating-point safety.** Each draw is exact given its computed log-weights: a float is a
dyadic rational, the gap to the row's largest is rounded *up* to a multiple of ``2**-20`` and
a uniformly proposed candidate is accepted with an exact Bernoulli(exp(-gap)) coin
(:func:`~dpframe.core.samplers.bernoulli_exp_neg`, rejection sampling: the output is exactly
proportional to the rounded weights, however small). The output lattice is the public cells.
What floating point changes is the log-weights themselves: each computed ``alpha`` is within
``gamma`` of the exact one, ``gamma <= (C + 4) * 2**-52 * M`` per layer (``C`` candidates, at
most ``2**15``; ``M`` the largest magnitude in the layer's sums, about ``rate D n`` because of
the factors ``exp(+-rate P)``; logaddexp's error is half an ulp of its result plus that of
``log1p(exp())``). Each of the ``m`` conditionals is then off by a factor
``exp(+-(2 m gamma + 2**-20))``, the output law by ``exp(+-2 m (2 m gamma + 2**-20))``, and
the release is ``epsilon' + 4 m (2 m gamma + 2**-20)``-DP. The plan keeps ``epsilon 2**-7``
aside for it. With ``rate D`` about ``epsilon / 3.6`` (nine deciles), that covers the
worst-case ``gamma`` up to about ``n = 2**30 * 3.6 / (8 m**2)``, some 6 million clamped rows
for nine levels (epsilon cancels; about 15 times more for a pair of levels). Past that, the proven
guarantee is the expression above (about ``1.01 epsilon`` at ``n = 10**7``, nine levels); the
errors actually made are random-walk sums far below this worst case. Local references per
block of candidates would remove the dependence on ``n``: not done yet.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from .mechanisms import ExponentialSpec
from .rng import RandomSource
from .samplers import bernoulli_exp_neg
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
#: The gaps' rounding: multiples of 2**-GAP_BITS, rounded up.
GAP_BITS = 20
_GAP_CAP = float(1 << 42)  # gaps beyond (weights below exp(-2**42)) are capped: int64 safe


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
    return max(1, per) * c.rows


@dataclass(frozen=True)
class JointQuantileSpec(ExponentialSpec):
    """The exponential mechanism of JointExp over nondecreasing candidate tuples. ``levels``
    nondecreasing, ``shifts`` their public rank shifts (zeros but for an interval's ends);
    ``n_candidates`` is the cells ``K``."""

    levels: tuple[Fraction, ...] = ()
    shifts: tuple[int, ...] = ()

    def acceptance_rate(self) -> tuple[int, int]:
        """The exact rate of :class:`ExponentialSpec` at ``epsilon (1 - FLOAT_SLACK)``."""
        return ExponentialSpec(self.epsilon * (1 - FLOAT_SLACK), self.utility_sensitivity,
                               self.n_candidates).acceptance_rate()

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
        parts = [sample_joint(c[i:i + step], self.levels, self.shifts, a / d, sub, rng)
                 for i in range(0, c.shape[0], step)]
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


def _sparse_table(v: F64) -> F64:
    """A disjoint sparse table of log-sum-exp over each row of ``v`` (width a power of two):
    ``T[h, g, i]`` is the log-sum-exp from ``i`` to the middle of its level-``h`` block (left
    half) or from the middle to ``i`` (right half)."""
    rows, size = v.shape
    levels = max(2, size.bit_length())
    table = np.full((levels, rows, size), -np.inf)
    table[0] = v
    for h in range(1, levels):
        half = 1 << (h - 1)
        blocks = v.reshape(rows, -1, 2, half).transpose(2, 3, 0, 1)  # side, pos, row, block
        left = np.logaddexp.accumulate(np.ascontiguousarray(blocks[0, ::-1]), axis=0)[::-1]
        right = np.logaddexp.accumulate(np.ascontiguousarray(blocks[1]), axis=0)
        table[h] = np.stack([left, right]).transpose(2, 3, 0, 1).reshape(rows, size)
    return table


def _range_lse(table: F64, lo: I64, hi: I64) -> F64:
    """log-sum-exp of ``v[g, lo..hi]`` (inclusive) per entry; ``-inf`` where ``lo > hi``."""
    g = np.broadcast_to(np.arange(lo.shape[0])[:, None], lo.shape)
    ok = lo <= hi
    lo_, hi_ = np.where(ok, lo, 0), np.where(ok, hi, 0)
    h = np.maximum(np.frexp((lo_ ^ hi_).astype(np.float64))[1], 1)  # bit length of lo ^ hi
    res = np.where(lo_ == hi_, table[0, g, lo_],
                   np.logaddexp(table[h, g, lo_], table[h, g, hi_]))
    return np.where(ok, res, -np.inf)


def _next_layer(alpha: F64, p: I64, gap: I64, rate: float) -> F64:
    """``alpha_j`` from ``alpha_{j-1}`` per row (module docstring); ``gap`` per row."""
    rows, size = alpha.shape
    thr = p - gap[:, None]
    split = np.stack([np.searchsorted(p[g], thr[g], side="right") for g in range(rows)]) - 1
    split = np.minimum(split, np.arange(size)[None, :])
    rp = rate * p.astype(np.float64)
    prefix = np.logaddexp.accumulate(alpha + rp, axis=1)
    part_a = np.where(split >= 0, np.take_along_axis(prefix, np.maximum(split, 0), axis=1),
                      -np.inf) - rate * thr
    padded = np.full((rows, 1 << max(1, (size - 1).bit_length())), -np.inf)
    padded[:, :size] = alpha - rp
    upto = np.broadcast_to(np.arange(size)[None, :], (rows, size))
    part_b = _range_lse(_sparse_table(padded), split + 1, upto) + rate * thr
    out: F64 = np.logaddexp(part_a, part_b)
    return out


def _draw(logw: F64, limit: I64, rng: RandomSource) -> I64:
    """One index per row, in ``[0, limit]``, drawn exactly proportionally to ``exp(w_i)``, ``w``
    the computed weights with their gaps to the row's largest (over ``[0, limit]``) rounded up
    to multiples of ``2**-GAP_BITS``: rejection from uniform proposals with exact
    Bernoulli(exp(-gap)) coins, the first accepted proposal of each row."""
    rows, size = logw.shape
    inside = np.arange(size)[None, :] <= limit[:, None]
    top = np.where(inside, logw, -np.inf).max(axis=1, keepdims=True)
    gap = np.minimum(np.where(inside, top - logw, _GAP_CAP), _GAP_CAP)
    num = np.ceil(gap * (1 << GAP_BITS)).astype(np.int64)
    out = np.zeros(rows, dtype=np.int64)
    active = np.arange(rows)
    batch = int(min(size, 256))
    while active.size:
        bound = np.repeat(limit[active] + 1, batch).astype(np.uint64)
        idx = rng.below(bound).astype(np.int64).reshape(active.size, batch)
        ok = bernoulli_exp_neg(num[active[:, None], idx].reshape(-1), 1 << GAP_BITS,
                               rng).reshape(active.size, batch)
        hit = ok.any(axis=1)
        first = ok.argmax(axis=1)
        out[active[hit]] = idx[hit, first[hit]]
        active = active[~hit]
    return out


def sample_joint(cells: I64, levels: Sequence[Fraction], shifts: Sequence[int], rate: float,
                 sub: int, rng: RandomSource) -> I64:
    """One draw of the joint mechanism per row of ``cells`` (a group's cell counts): the
    chosen candidate of each level (indices into the ``K (sub + 1)`` candidates),
    nondecreasing; shape ``(groups, m)``."""
    c = np.atleast_2d(np.asarray(cells, dtype=np.int64))
    rows, m = c.shape[0], len(levels)
    rho = candidate_ranks(c, sub)
    size = rho.shape[1]
    n = c.sum(axis=1)
    d, gaps = targets(n, levels, shifts)  # [rows, m + 1]
    p = d * rho
    alphas = [-rate * np.abs(p - gaps[:, :1]).astype(np.float64)]
    for j in range(1, m):
        alphas.append(_next_layer(alphas[-1], p, gaps[:, j], rate))
    out = np.zeros((rows, m), dtype=np.int64)
    end = (d * n)[:, None]
    last = alphas[-1] - rate * np.abs(end - p - gaps[:, m:]).astype(np.float64)
    out[:, m - 1] = _draw(last, np.full(rows, size - 1), rng)
    for j in range(m - 1, 0, -1):
        chosen = out[:, j]
        pc = np.take_along_axis(p, chosen[:, None], axis=1)
        w = alphas[j - 1] - rate * np.abs(pc - p - gaps[:, j:j + 1]).astype(np.float64)
        out[:, j - 1] = _draw(w, chosen, rng)
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
