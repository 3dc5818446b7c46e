"""DP key selection (``keys="private"``): the rules, their exact delta, and the selection.

Two rules, each with its proof; the planner (:mod:`dpframe.core.plan`) picks one per query from
public information only.

**Stability histogram** (Korolova et al. 2009; Wilson et al. 2020; OpenDP's ``make_count_by``
then a threshold). The released aggregate is the count of rows per key (of units where a unit
has one row per key): noisy counts ``c + Z`` with ``Z`` discrete Laplace of scale ``b = L1 /
epsilon`` (L1 = the count's: ``k'`` keys one neighbour can touch, ``min(T, k R)`` rows when a
unit has up to R rows per key, twice that under change_one; issue 47 item 8), released when ``c
+ Z >= tau``, and, only where asked (``coin=True``), when ``c + Z = tau - 1`` with probability
``q`` (an exact 64-bit coin spending the slack the integer threshold leaves). The released value
*is* the thresholded count: the budget is spent once.
*Proof.* Split the keys into common ones (in both neighbours) and the keys only one neighbour
has (at most ``k'`` in all, each of count ``<= reach`` there, ``reach = R`` rows of the one
unit, and absent, i.e. never released, from the other). The common part is a geometric mechanism
whose counts move by at most L1 in all (the unit's rows in common keys are part of its ``min(T,
k R)``) at scale ``L1 / epsilon``: epsilon-DP; releasing a noisy value or not is a function of
that value and an independent coin (post-processing). Each one-sided key is released with
probability ``P[reach + Z >= tau] + q P[reach + Z = tau - 1]`` (the most a count ``<= reach``
gives), and not at all in the other neighbour: that part is (0, sum of those)-DP both ways. The
parts use independent noise on disjoint keys, so basic composition gives (epsilon, delta_used)
with ``delta_used = k' (T(tau - reach) + q M(tau - reach - 1))``, ``T(t) = p^t / (1 + p)`` the
tail ``P[Z >= t]`` and ``M(s) = (1 - p) p^s / (1 + p)`` the mass ``P[Z = s]``, ``p = e^(-1/b)``.
``delta_used`` is computed with exact rationals from a rigorous enclosure of ``p``
(:func:`~dpframe.core.noise.samplers.exp_neg_fixed`), rounding every bound up: ``delta_used <=
delta``, and ``tau`` is the smallest integer for which it holds with ``q = 0``.

**Why no boundary coin where the count is released** (issue 32 c: recall >= the best peer's
AND released-count MAE <= the best peer's). Every rule that releases ``y = c + Z`` (the
geometric count at the whole epsilon) does so with some probability ``a(y)``; its delta is
``k' sum_y P[reach + Z = y] a(y)``, common keys cost nothing more (post-processing).

1. *Recall.* For ``c >= reach`` the likelihood ratio ``P[c + Z = y] / P[reach + Z = y]`` is
   nondecreasing in ``y``, so (Neyman-Pearson) the threshold ``tau`` with the boundary coin
   ``q_max`` releases every count with the highest probability any ``a`` allows at that delta:
   no rule in this family finds more keys, on any data. The only freedom left is
   ``q in [0, q_max]`` (or a higher ``tau``). Truncating the noise to ``[-K, K]`` (the
   truncated geometric of Desfontaines et al. 2022: delta ``P[Z = K]`` on every pair of
   counts, so the released count is no longer pure epsilon-DP) moves mass from the tails to
   the centre: counts far below ``tau`` are released less often, and no data-independent coin
   restores every count's release probability without costing more MAE than the truncation
   saves (benchmark, row level: K = 14, the same ``tau`` 15; recall 0.2057140 vs 0.2057141,
   MAE 0.857477 vs 0.857495; restoring every count needs a coin of 0.214: MAE 0.8579). At
   larger scales it lowers the integer threshold (``k' = 3``: 45 to 41): more recall for
   more MAE again. Not taken.
2. *MAE over released keys* is ``(E0 + q E1) / (R0 + q R1)``: expected error sum and number
   released without the coin (``E0, R0``) and among the keys at ``y = tau - 1`` (``E1, R1``).
   It rises with ``q`` iff ``e = E1 / R1 > E0 / R0``. ``e`` depends on the data: for flat
   counts the error given ``y`` is ``Z``'s, ``e = E|Z| =`` the MAE (a tie); for counts that
   thin out as they grow, as key sizes do, the keys at ``tau - 1`` are mostly smaller keys
   pushed up: ``e`` is larger (benchmark, row level: ``e = 0.914 > 0.8575``; with the coin
   MAE 0.8582 vs 0.8575, recall 0.2085 vs 0.2057). The MAE gap is exact, and +0.00078 +-
   0.00006 over 2,000 runs with paired seeds; five unpaired runs a side cannot resolve it
   (SE 0.015): docs/benchmarks/accuracy.md.
3. *Post-processing the released value* ``y -> g(y)`` is free (a function of the released
   value), but cannot help without betting on the data: under a flat prior on ``c`` the
   posterior of ``c`` given ``y`` is ``y - Z``, whatever the admission (it depends on ``y``
   and an independent coin only), so the MAE-optimal estimate, the posterior median, is ``y``
   itself: the flat-prior correction is 0. The upward bias ``b(c) = E[Z | c + Z >= tau]`` of
   released counts near ``tau`` is real, but removing it, ``y -> y - b(y)``, raises the
   benchmark's MAE (0.8712 vs 0.8575; ``b`` vanishes for large counts, which it leaves
   alone); even the oracle posterior median (the data's own count histogram as prior) is
   ``y`` for every released ``y`` from 15 to 86 (row level).

So no rule beats ``q = 0`` on both metrics on every data set, and ``q = 0`` is exactly
OpenDP's stability histogram at the smallest threshold whose true delta is ``<= delta``: the
same output distribution, a tie on both metrics on every data set. The released-count rule
therefore has no coin (``coin=False``, the default); a separate selection, whose released
values carry their own noise, keeps it (``coin=True``: recall only gains).

**Truncated geometric** (Desfontaines, Voss, Gipson and Mandayam 2022, Thm. 1). Where the
released aggregate is not a lone count (sums, means, several aggregates; a count of rows where
a unit has several rows in a key and the planner's public rule prefers units,
``_rows_beat_units`` in :mod:`dpframe.core.plan`), a separate selection is needed: a key
with ``n`` distinct units is kept with probability ``pi_n``, independently, where ``pi_0 = 0`` and
``pi_n = min(r pi_(n-1) + d, 1 - (1 - pi_(n-1) - d) / r, 1)`` with ``d = delta_sel / k'`` and
``r <= e^(epsilon_sel / k')`` rational, each ``pi_n`` rounded down to a multiple of 2**-64.
*Proof.* The four (epsilon/k', d)-DP inequalities between counts ``n - 1`` and ``n`` (for the
events kept / dropped, both ways) hold: the first two by construction (rounding down only
lowers ``pi_n``; ``r <= e^(eps/k')``), the other two because the sequence is nondecreasing
(the unrounded minimum exceeds ``pi_(n-1)``, a grid point, when ``pi_(n-1) < 1``). A key
absent from a neighbour has count 0 there and ``pi_0 = 0``. One neighbour moves at most ``k'``
keys' unit counts by one, so composing the ``k'`` independent per-key mechanisms gives
(epsilon_sel, delta_sel)-DP. Without the rounding this is the optimal per-key rule (the paper
shows no (eps, d)-DP per-key rule keeps any count with higher probability), so it dominates
a Laplace/geometric threshold with the same per-key budget ``(eps/k', d)``, which is what a
geometric threshold of scale ``k' / eps`` with ``d`` per key is.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from statistics import NormalDist
from typing import Literal

import numpy as np
import numpy.typing as npt

from .accounting import round_up
from .noise.gaussian import analytic_mu, analytic_sigma2, discrete_tail_upper
from .noise.mechanisms import NoiseSpec
from .noise.rng import RandomSource
from .noise.samplers import MAX_FAST_DEN, exp_neg_fixed

#: Selection probabilities and boundary coins are multiples of 2**-PROB_BITS (one 64-bit word).
PROB_BITS = 64
_ONE = 1 << PROB_BITS
#: Bits of the enclosures of ``p = e^(-1/b)`` and ``e^(-eps)`` (rigorous, rounded outward).
_ENCLOSURE_BITS = 256
#: Longest truncated-geometric table: beyond it (tiny per-key epsilon), the geometric threshold
#: rule is used instead (same guarantee, a few percent fewer keys).
MAX_TABLE = 1 << 16

Rule = Literal["stability histogram", "truncated geometric", "gaussian threshold"]


@dataclass(frozen=True)
class SelectionPlan:
    """How private keys are selected (public: shown by dry runs, recorded in provenance).

    ``rule == "stability histogram"``: keys whose noisy count (``noise``) is ``>= threshold``
    are released, those at ``threshold - 1`` with probability ``boundary / 2**64`` (0 where
    the count is released, module docstring); when
    ``released_count`` the released count measure is that same noisy count (the budget is spent
    once). ``rule == "truncated geometric"``: a key with ``n < threshold`` distinct units is
    kept with probability ``probs[n] / 2**64``, one with ``n >= threshold`` always.
    ``rule == "gaussian threshold"``: keys whose distinct-unit count plus discrete Gaussian
    ``noise`` is ``>= threshold`` are released (the noisy counts are not).
    ``delta_used`` is the exact delta the rule spends (``<= delta``)."""

    noise: NoiseSpec | None
    threshold: int
    epsilon: Fraction
    delta: Fraction
    rule: Rule = "stability histogram"
    boundary: int = 0
    released_count: bool = False
    delta_used: Fraction = Fraction(0)
    probs: tuple[int, ...] = field(default=(), repr=False)

    def describe(self) -> dict[str, object]:
        d: dict[str, object] = {
            "mechanism": _MECHANISMS[self.rule],
            "epsilon": float(self.epsilon), "delta": float(self.delta),
            "delta_used": float(self.delta_used), "threshold": self.threshold,
            "released_count_is_thresholded": self.released_count}
        if self.rule == "gaussian threshold" and self.noise is not None:
            d["noise_scale"] = self.noise.scale
            d["l2_sensitivity"] = float(self.noise.int_sensitivity)
            d["noise_delta"] = float(self.noise.delta)
        elif self.noise is not None:
            d["noise_scale"] = self.noise.scale
            d["boundary_probability"] = self.boundary / _ONE
        else:  # the count of units from which a key is kept with probability >= 1/2
            d["half_probability_count"] = next(
                (n for n, m in enumerate(self.probs) if 2 * m >= _ONE), self.threshold)
        return d

    def select(self, counts: npt.ArrayLike, rng: RandomSource
               ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int64] | None]:
        """Indices of the released keys, and (stability histogram) all the noisy counts.

        ``counts`` are exact distinct-unit counts per observed key (row counts where one row
        is one unit). The only place a key's release is decided."""
        c = np.asarray(counts, dtype=np.int64).reshape(-1)
        if self.noise is not None:
            noisy = np.asarray(self.noise.add_noise(c, Fraction(1), rng), dtype=np.int64)
            keep = noisy >= self.threshold
            if self.rule == "gaussian threshold":  # a key no unit counts is absent (proof)
                keep &= c > 0
            edge = np.flatnonzero(noisy == self.threshold - 1)
            if edge.size and self.boundary:
                keep[edge] = rng.words(edge.size) < np.uint64(self.boundary)
            return np.flatnonzero(keep), noisy
        keep = c >= self.threshold
        low = np.flatnonzero(~keep & (c > 0))
        if low.size:
            table = np.asarray(self.probs, dtype=np.uint64)
            keep[low] = rng.words(low.size) < table[c[low]]
        return np.flatnonzero(keep), None


_MECHANISMS: dict[str, str] = {
    "stability histogram": "stability histogram key selection (thresholded geometric count)",
    "truncated geometric": "truncated geometric key selection",
    "gaussian threshold": "Gaussian threshold key selection (distinct units per key)",
}


# -- exact arithmetic ---------------------------------------------------------------------------


def _enclose_exp_neg(x: Fraction) -> tuple[Fraction, Fraction]:
    """Rationals ``lo <= e^(-x) <= hi`` (x >= 0)."""
    lo, hi = exp_neg_fixed(x, _ENCLOSURE_BITS)
    den = 1 << _ENCLOSURE_BITS
    return Fraction(lo, den), Fraction(hi, den)


def _up(v: Fraction) -> Fraction:
    """``v >= 0`` rounded up to about :data:`_ENCLOSURE_BITS` significant bits: a multiple of
    ``2**-k``, ``k`` growing with ``log2(1 / v)``, so that a tiny value keeps its relative
    precision (a fixed ``2**-256`` grid would round every power below it up to ``2**-256``,
    and a threshold search for a smaller delta would never end) while the numerator stays
    below ``2**(_ENCLOSURE_BITS + 2)``."""
    num, den = v.numerator, v.denominator
    if num == 0:
        return v
    k = max(_ENCLOSURE_BITS, den.bit_length() - num.bit_length() + _ENCLOSURE_BITS)
    return Fraction(-((-num << k) // den), 1 << k)


def _pow_up(p: Fraction, t: int) -> Fraction:
    """An upper bound of ``p**t`` (0 <= p <= 1, t >= 0) with a bounded numerator: every
    product is rounded up by :func:`_up` (rounding up keeps a bound; its relative error is at
    most ``2**-255`` a step, and there are ``2 log2(t)`` steps)."""
    result, base = Fraction(1), _up(p)
    while t:
        if t & 1:
            result = _up(result * base)
        t >>= 1
        if t:
            base = _up(base * base)
    return result


def _log(v: Fraction) -> float:
    """``ln v`` (v > 0) to float precision, for any size of numerator and denominator (a
    float of ``v`` would underflow to 0 below ``5e-324``)."""
    return math.log(v.numerator) - math.log(v.denominator)


@dataclass(frozen=True)
class _Geometric:
    """Rigorous bounds on the discrete Laplace of integer scale ``b``: ``p = e^(-1/b)``."""

    p_lo: Fraction
    p_hi: Fraction

    @classmethod
    def of(cls, scale: Fraction) -> _Geometric:
        """Bounds of ``p = e^(-1/scale)``."""
        lo, hi = _enclose_exp_neg(1 / scale)
        return cls(lo, min(hi, Fraction(1)))

    def tail_up(self, t: int) -> Fraction:
        """Upper bound of ``P[Z >= t] = p^t / (1 + p)`` (t >= 0; increasing in p)."""
        return _pow_up(self.p_hi, t) / (1 + self.p_hi)

    def mass_up(self, s: int) -> Fraction:
        """Upper bound of ``P[Z = s] = (1 - p) p^s / (1 + p)`` (s >= 0): ``(1 - p)/(1 + p)``
        decreases in p, ``p^s`` increases."""
        return (1 - self.p_lo) / (1 + self.p_lo) * _pow_up(self.p_hi, s)


def stability_delta(noise: NoiseSpec, threshold: int, boundary: int, reach: int,
                    keys: int) -> Fraction:
    """The exact (rounded up) delta of the stability histogram: ``keys`` one-sided keys of
    count ``<= reach``, each released with ``P[reach + Z >= threshold] + q P[reach + Z =
    threshold - 1]``, ``q = boundary / 2**64`` (module docstring)."""
    g = _Geometric.of(noise.int_scale)
    t = threshold - reach
    if t <= 0:
        return Fraction(1)
    per_key = g.tail_up(t) + Fraction(boundary, _ONE) * g.mass_up(t - 1)
    return min(Fraction(1), keys * per_key)


def stability_threshold(noise: NoiseSpec, delta: Fraction, reach: int, keys: int,
                        coin: bool = False) -> tuple[int, int, Fraction]:
    """The smallest threshold ``tau >= reach + 1`` with ``stability_delta(tau, q=0) <=
    delta``, then (``coin``) the largest boundary coin ``q`` (in units of 2**-64) keeping it
    so, else ``q = 0``: ``(tau, boundary, delta_used)``. Without the coin this is OpenDP's
    rule at the true delta; the coin raises recall and, where the released value is this
    count, may raise its MAE (module docstring): use it only for a separate selection."""
    g = _Geometric.of(noise.int_scale)
    budget = delta / keys
    if g.p_hi >= 1:
        raise ValueError("noise scale too large for key selection")
    # float guess (ln p = -1/scale exactly), then exact steps: the guess only saves steps
    guess = -float(noise.int_scale) * (_log(budget) + math.log1p(float(g.p_hi)))
    t = max(1, math.floor(guess) - 2)
    while t > 1 and g.tail_up(t - 1) <= budget:
        t -= 1
    while g.tail_up(t) > budget:
        t += 1
    slack = budget - g.tail_up(t)
    boundary = 0
    mass = g.mass_up(t - 1)
    if coin and mass > 0:
        boundary = min(_ONE - 1, math.floor(slack / mass * _ONE))
    threshold = reach + t
    used = stability_delta(noise, threshold, boundary, reach, keys)
    assert used <= delta
    return threshold, boundary, used


def truncated_geometric_table(epsilon: Fraction, delta: Fraction) -> tuple[int, ...] | None:
    """``floor(2**64 pi_n)`` (or less) for ``n = 0 .. N - 1``, where ``pi_N`` is the first equal
    to 1, of the truncated-geometric rule at per-key budget ``(epsilon, delta)`` (module
    docstring), or None when the table would exceed :data:`MAX_TABLE` entries (or delta is
    below 2**-64).

    Integer arithmetic on ``W = 256``-bit fixed point, every step a lower bound of the exact
    recurrence's value (which keeps all four DP inequalities, see the module docstring):
    ``r = R / 2**W <= e^eps`` and ``1 / r`` replaced by ``E / 2**W >= e^(-eps)``; sums and
    products are floored, the subtracted term ceiled. The sequence increases strictly (each
    step adds at least ``floor(2**64 delta) >= 1``), so the loop ends."""
    w = _ENCLOSURE_BITS
    d = math.floor(delta * _ONE)  # 2**64 delta, rounded down
    if d < 1 or 2 * math.log(1 / float(delta)) / float(epsilon) > 2 * MAX_TABLE:
        return None
    hi = exp_neg_fixed(epsilon, w)[1]  # 2**w e^(-eps) <= hi
    big = (1 << (2 * w)) // max(hi, 1)  # R = floor(2**(2w) / hi) <= 2**w e^eps
    e_up = hi  # E = hi >= 2**w e^(-eps)
    probs: list[int] = []
    m = 0
    while m < _ONE:
        probs.append(m)
        if len(probs) > MAX_TABLE:
            return None
        nxt = min(_ONE, ((big * m) >> w) + d)
        rest = _ONE - m - d  # >= 2**64 (1 - pi - delta)
        if rest > 0:
            nxt = min(nxt, _ONE - (-((-e_up * rest) >> w)))
        if nxt <= m:  # cannot happen (see above); guards the loop regardless
            raise ArithmeticError("truncated geometric sequence stalled")
        m = nxt
    return tuple(probs)


def truncated_geometric_delta(table: tuple[int, ...], epsilon: Fraction) -> Fraction:
    """The smallest d for which the table satisfies the four (epsilon, d) inequalities between
    consecutive counts, computed exactly with ``e^epsilon`` bounded from below (for tests)."""
    e_hi = _enclose_exp_neg(epsilon)[1]
    r = 1 / e_hi
    pis = [Fraction(m, _ONE) for m in table] + [Fraction(1)]
    worst = Fraction(0)
    for a, b in itertools.pairwise(pis):
        worst = max(worst, b - r * a, (1 - a) - r * (1 - b), a - r * b, (1 - b) - r * (1 - a))
    return worst


# -- Gaussian thresholding ----------------------------------------------------------------------

#: Shares of a Gaussian selection's delta tried for the noise (the rest bounds the threshold's
#: tail): the one with the lowest float-estimated threshold is then proven.
NOISE_SHARES = tuple(Fraction(i, 20) for i in range(1, 20))


def half_count(plan: SelectionPlan) -> int:
    """The least distinct-unit count a key is released with probability >= 1/2 under ``plan``
    (public): the truncated geometric's first ``pi_n >= 1/2``; for a noisy threshold the
    threshold itself (the noise is symmetric: ``P[Z >= 0] >= 1/2 > P[Z >= 1]``)."""
    if plan.noise is None:
        return next((n for n, m in enumerate(plan.probs) if 2 * m >= _ONE), plan.threshold)
    return plan.threshold


def gaussian_threshold(sigma2: Fraction, delta: Fraction, reach: int, keys: int
                       ) -> tuple[int, Fraction]:
    """The smallest threshold ``tau >= reach + 1`` with ``keys * P[reach + Z >= tau] <=
    delta``, ``Z ~ N_Z(0, sigma2)``, by the proven tail bound
    :func:`~dpframe.core.noise.gaussian.discrete_tail_upper`: ``(tau, the delta it spends)``."""
    budget = delta / keys

    def fits(t: int) -> bool:
        return discrete_tail_upper(sigma2, t) <= budget

    z = -NormalDist().inv_cdf(max(float(budget), 1e-300))
    t = max(1, math.ceil(math.sqrt(float(sigma2)) * z))  # float guess: exact steps decide
    while t > 1 and fits(t - 1):
        t -= 1
    while not fits(t):
        t += 1
    used = keys * discrete_tail_upper(sigma2, t)
    assert used <= delta
    return reach + t, used


def _estimated_threshold(eps: float, delta: float, l2: float, keys: int, share: float) -> float:
    """The Gaussian threshold (less ``reach``) in floats, the noise at ``share`` of delta."""
    mu = analytic_mu(eps, share * delta)
    tail = (1 - share) * delta / keys
    if mu <= 0 or tail <= 1e-300:
        return math.inf
    return l2 / mu * -NormalDist().inv_cdf(tail)


def gaussian_selection(eps: Fraction, delta: Fraction, l2: Fraction, keys: int,
                       reach: int = 1, below: float = math.inf) -> SelectionPlan | None:
    """The Gaussian-threshold selection at (eps, delta) (docs/privacy.md#group-keys), or None
    when it cannot give a threshold below ``below`` (the other rule's :func:`half_count`) or
    its noise is out of the sampler's range.

    Distinct-unit counts per key get discrete Gaussian noise of L2 sensitivity ``l2``
    (``sqrt(k')``: one unit counts once in each of at most ``k'`` keys) at (eps, delta_n)
    (the analytic calibration, Theorem C of :mod:`dpframe.core.noise.gaussian`); a key is released
    when its noisy count is ``>= tau``, ``tau`` the least with ``keys * P[reach + Z >= tau]
    <= delta - delta_n`` (``keys`` keys one neighbour alone holds, each of count ``<=
    reach``). The split of delta is chosen from (eps, delta, l2, keys) alone."""
    e, d, s = float(eps), float(delta), float(l2)
    share = min(NOISE_SHARES, key=lambda f: _estimated_threshold(e, d, s, keys, float(f)))
    if reach + _estimated_threshold(e, d, s, keys, float(share)) >= below + 1:
        return None
    d_noise = delta * share
    sigma2 = analytic_sigma2(eps, d_noise, l2)
    if sigma2 is None or math.isqrt(sigma2.numerator // sigma2.denominator) + 1 > MAX_FAST_DEN:
        return None
    tau, used = gaussian_threshold(sigma2, delta - d_noise, reach, keys)
    if tau >= below:
        return None
    noise = NoiseSpec("gaussian", eps, d_noise, l2, Fraction(1), l2, int_sigma2=sigma2,
                      rho=round_up(l2 * l2 / (2 * sigma2)), integer=True)
    return SelectionPlan(noise, tau, eps, delta, "gaussian threshold", 0, False, d_noise + used)
