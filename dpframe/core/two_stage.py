"""The two-stage Gaussian mean: a pilot, a split chosen from it, combined by inverse variance.

A Gaussian mean releases a centred sum ``s`` (values minus the bounds' midpoint, one row moving
it by at most ``h``) and a count ``n`` per group; the mean is ``mid + r`` with ``r = s / n``.
With noise ``sigma_s`` on the sum and ``sigma_c`` on the count, the delta method gives

    Var(S / C) ~ (sigma_s^2 + r^2 sigma_c^2) / n^2.

**The split (Lemma S).** At ``sigma_s^2 = D_s^2 / (2 rho_s)`` and ``sigma_c^2 = D_c^2 /
(2 rho_c)`` with ``rho_s + rho_c = rho_2`` fixed, ``D_s^2 / rho_s + r^2 D_c^2 / rho_c`` is least
at ``rho_s / rho_c = D_s / (|r| D_c)``, where it is ``(D_s + |r| D_c)^2 / rho_2``. *Proof.*
Cauchy-Schwarz: ``(A^2 / x + B^2 / y)(x + y) >= (A + B)^2`` with equality iff ``x / y = A / B``.
[] The count's share is ``u / (1 + u)`` with ``u = |r| D_c / D_s``: none at ``r = 0``, half at
``|r| = h`` (add_remove, ``D_s = h D_c``). The best split depends on ``r`` only, not on ``n``.
Over the groups of one release the split is common, and ``sum_g (sigma_s^2 + r_g^2
sigma_c^2)`` (each group's variance times ``n_g^2``) is least at the same formula with ``r^2``
replaced by ``R^2``, the mean of ``r_g^2``, which the pilot estimates by ``sum_g (S_g^2 -
sigma_s1^2) / sum_g (C_g^2 - sigma_c1^2)`` (numerator and denominator unbiased: ``E[S^2] = s^2
+ sigma^2``), clipped to ``[0, h^2]``.

**Re-centring does not help (add_remove).** Centred at ``c`` in the bounds, a row moves the
sum by ``h_c = max(|hi - c|, |lo - c|) = h + |c - mid|`` and the shifted mean is ``mu - c``, so
the least variance is ``(h_c + |mu - c|)^2 D_c^2 / rho_2 >= (h + |mu - mid|)^2 D_c^2 / rho_2``
(the triangle inequality, equal for ``c`` between ``mid`` and ``mu``): the midpoint is optimal
and stage 2 keeps it. (Under change_one a sum's sensitivity is ``2h`` for every centre, where
re-centring on the pilot's mean would help; not done yet.)

**The release.** Stage 1 spends ``PILOT_SHARE`` of the measure's rho, half on the sum and half
on the count (today's equal split). Stage 2 spends the rest, split between sum and count by one
of :data:`SPLITS` candidate shares planned (with their noise) before the charge, the one that
minimises ``(V_S + R^2 V_C)(1 + 3 V_C / N^2)`` (:meth:`TwoStage.cost`): Lemma S's objective
with the combined variances ``V`` of both stages (the pilot's count already informs the mean)
and the second-order term of a noisy count, ``N^2`` the pilot's unbiased mean squared count
(at 50 rows and epsilon 1 a count's noise is not small next to it). It is a function of stage
1's released values only (post-processing), so the measure is an adaptive composition of a
``rho_1``- and a ``rho_2``-zCDP release, ``rho_1 + rho_2 = rho`` (Bun and Steinke 2016, Lemma
2.3; every candidate's rho is at most ``rho_2``). For (epsilon, delta) accounting the measure
states the parts of one candidate (``stated``) whose smoothed ``mu^2 = sum a^2 / (b - t^2)`` is
at least every kept candidate's at every smoothing width ``t^2`` of Theorem C
(:mod:`dpframe.core.noise.gaussian`) and of the accountant, with the same integer sensitivities: the
adaptive choice is then dominated by the stated event (Gaussian DP composes adaptively, Dong,
Roth and Su 2022). Candidates not so dominated are dropped before the charge.

**The estimate.** Both stages estimate the same sum and count with independent Gaussian noise:
``S = (S_1 / v_s1 + S_2 / v_s2) / (1 / v_s1 + 1 / v_s2)`` and ``C`` likewise (inverse variance,
the variances public or chosen by stage 1), and the mean is ``mid + S / C`` clipped.

**The interval (Theorem T).** At the true shifted mean ``r``, ``Z_1 = (S_1 - r C_1) / sd_1(r)``
is standard normal, and given stage 1 so is ``Z_2 = (S_2 - r C_2) / sd_2(r)`` (its scales are
fixed by stage 1): ``Z_1, Z_2`` are independent standard normals. With weights ``a(r)^2 =
p_1 / (p_1 + p_2)`` and ``b(r)^2 = 1 - a(r)^2`` that depend on ``r`` and public parameters only
(``p_i = 1 / sd_i(r)^2``, ``p_2`` that of the candidate the split would pick for ``R = |r|``),
``T(r) = a Z_1 + b Z_2`` is standard normal at the truth, so ``{r : |T(r)| <= z}`` covers it
with probability ``level`` exactly (the discrete noises matched to the continuous laws of their
variance, as in :mod:`dpframe.core.intervals`). Its hull over ``[-h, h]`` is released, widened
to hold the estimate; where nothing is accepted, the whole bounds. Weights that used stage 1's
chosen split would correlate with ``Z_1`` and lose the exact law. This module does not know
pandas.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from .noise.gaussian import T2_CANDIDATES
from .noise.mechanisms import NoiseSpec, normal_quantile
from .noise.rng import RandomSource

FloatArray = npt.NDArray[np.float64]

#: The pilot's share of a Gaussian mean's rho (stage 1).
PILOT_SHARE = Fraction(1, 10)
#: Candidate splits of stage 2's rho (the count's share: ``c_max * j / (SPLITS - 1)``, the
#: first ``c_max / (2 (SPLITS - 1))``), ``c_max = u / (1 + u)`` at ``u = h D_c / D_s``.
SPLITS = 17
#: Points of the grid on which the test of Theorem T is evaluated, then bisection steps.
GRID = 129
REFINE = 36

#: ``rho -> NoiseSpec``: the query's Gaussian noise for one statistic at a share of rho.
Calibrate = Callable[[Fraction], NoiseSpec]


@dataclass(frozen=True)
class Drawn:
    """A two-stage release's noisy values: the pilot's and stage 2's centred sums and counts
    (one per group) and the index of stage 2's split."""

    s1: FloatArray
    c1: FloatArray
    s2: FloatArray
    c2: FloatArray
    split: int


@dataclass(frozen=True)
class TwoStage:
    """A two-stage mean's public plan: the pilot's noises, stage 2's candidate (sum, count)
    noises by the count's share of ``rho_2``, and the index of the candidate the privacy event
    states (it dominates every candidate kept)."""

    pilot_share: Fraction
    rho: Fraction
    pilot_sum: NoiseSpec
    pilot_count: NoiseSpec
    shares: tuple[Fraction, ...]
    candidates: tuple[tuple[NoiseSpec, NoiseSpec], ...]
    stated: int
    h: float

    @property
    def rho2(self) -> Fraction:
        return self.rho * (1 - self.pilot_share)

    def choose(self, noisy_sum: FloatArray, noisy_count: FloatArray) -> int:
        """The candidate minimising :meth:`cost` for the pilot's ``R^2`` and mean squared
        count (module docstring): a function of stage 1's released values only. Never
        raises."""
        s = np.asarray(noisy_sum, dtype=np.float64).reshape(-1)
        c = np.asarray(noisy_count, dtype=np.float64).reshape(-1)
        with np.errstate(all="ignore"):  # noisy values only; overflow reads as unknown
            num = float(np.sum(s * s - self.pilot_sum.std ** 2))
            den = float(np.sum(c * c - self.pilot_count.std ** 2))
        if not (math.isfinite(num) and math.isfinite(den)) or den <= 0 or s.size == 0:
            return self.pick(self.h ** 2, 1.0)
        return self.pick(min(max(num, 0.0) / den, self.h ** 2), max(den / s.size, 1.0))

    def draw(self, exact_sum: npt.ArrayLike, exact_count: npt.ArrayLike, unit: Fraction,
             rng: RandomSource) -> Drawn:
        """Stage 1, the split it picks (:meth:`choose`, post-processing), then stage 2: the
        only place a two-stage mean's noise meets data. Every noise was planned before the
        charge; nothing here raises."""
        s1 = self.pilot_sum.add_noise(exact_sum, unit, rng).astype(np.float64)
        c1 = self.pilot_count.add_noise(exact_count, Fraction(1), rng).astype(np.float64)
        j = self.choose(s1, c1)
        sum2, count2 = self.candidates[j]
        s2 = sum2.add_noise(exact_sum, unit, rng).astype(np.float64)
        c2 = count2.add_noise(exact_count, Fraction(1), rng).astype(np.float64)
        return Drawn(s1, c1, s2, c2, j)

    def cost(self, j: int, r2: float, n2: float) -> float:
        """The error of the combined mean at candidate ``j``, times ``n^2``: ``(V_S + r2 V_C)
        (1 + 3 V_C / n2)``, the delta method's variance (Lemma S) with the second-order term of
        a noisy count (``E[1 / C^2] ~ (1 + 3 V_C / n^2) / n^2``), ``V_S, V_C`` the combined
        variances."""
        vs, vc = self.combined_variances(j)
        return (vs + r2 * vc) * (1 + 3 * vc / n2)

    def pick(self, r2: float, n2: float) -> int:
        """The candidate of least :meth:`cost` (public)."""
        return int(np.argmin([self.cost(j, r2, n2) for j in range(len(self.shares))]))

    def combine(self, s1: FloatArray, c1: FloatArray, s2: FloatArray, c2: FloatArray, j: int
                ) -> tuple[FloatArray, FloatArray]:
        """Inverse-variance combination of the two stages' (centred sum, count)."""
        a, b = self.candidates[j]
        ws1, ws2 = 1 / self.pilot_sum.std ** 2, 1 / a.std ** 2
        wc1, wc2 = 1 / self.pilot_count.std ** 2, 1 / b.std ** 2
        return (ws1 * s1 + ws2 * s2) / (ws1 + ws2), (wc1 * c1 + wc2 * c2) / (wc1 + wc2)

    def combined_variances(self, j: int) -> tuple[float, float]:
        a, b = self.candidates[j]
        return (1 / (1 / self.pilot_sum.std ** 2 + 1 / a.std ** 2),
                1 / (1 / self.pilot_count.std ** 2 + 1 / b.std ** 2))

    def weight(self, r: FloatArray) -> FloatArray:
        """``a(r)``: the pilot's weight in Theorem T's statistic (public: ``r`` and noise)."""
        r = np.abs(np.asarray(r, dtype=np.float64))
        p1 = 1 / (self.pilot_sum.std ** 2 + r * r * self.pilot_count.std ** 2)
        table = _reference(self)
        ref = np.interp(r, table[0], table[1])  # the picked candidate's sd_2(r)^2
        p2 = 1 / ref
        return np.asarray(np.sqrt(p1 / (p1 + p2)))

    def numerator(self, level: float) -> float:
        """``a`` with a first-order half-width of at most ``a / n`` over ``n`` rows, whatever
        the data and the split: the worst candidate at ``|r| = h``."""
        q = normal_quantile(1 - (1 - level) / 2)
        return max(q * math.sqrt(vs + self.h ** 2 * vc)
                   for vs, vc in (self.combined_variances(j) for j in range(len(self.shares))))


@functools.lru_cache(maxsize=64)  # public inputs only
def _reference(ts: TwoStage) -> tuple[FloatArray, FloatArray]:
    """``sd_2(r)^2`` of the candidate :meth:`TwoStage.pick` takes for ``R = |r|``, tabulated
    over ``[0, h]`` (piecewise constant between the breakpoints; the table is fine enough
    that linear interpolation only moves a weight, never the statistic's law)."""
    xs = np.linspace(0.0, ts.h, 1025)
    ys = np.empty_like(xs)
    for i, x in enumerate(xs):
        a, b = ts.candidates[ts.pick(float(x * x), math.inf)]
        ys[i] = a.std ** 2 + x * x * b.std ** 2
    return xs, ys


def _rho(parts: tuple[NoiseSpec, NoiseSpec]) -> Fraction:
    """The zCDP rho the parts' noise achieves (``Delta^2 / (2 sigma^2)`` in lattice units)."""
    return sum((p.int_sensitivity ** 2 / (2 * p.int_sigma2) for p in parts), Fraction(0))


def _smoothed(a: Fraction, b: Fraction, t2: Fraction) -> Fraction | None:
    return a * a / (b - t2) if b > t2 else None


def _gaps(part: NoiseSpec, top: NoiseSpec) -> list[Fraction] | None:
    """``a^2 / (b - t^2) - a^2 / (b_top - t^2)`` at every width the stated part can use (the
    stated part's ``b_top > t^2``); None where the candidate's cannot."""
    out = []
    for t2 in T2_CANDIDATES:
        mine, theirs = (_smoothed(part.int_sensitivity, part.int_sigma2, t2),
                        _smoothed(top.int_sensitivity, top.int_sigma2, t2))
        if theirs is None:
            continue  # the stated part cannot use this width: no bound relies on it
        if mine is None:
            return None
        out.append(mine - theirs)
    return out


def _dominated(parts: tuple[NoiseSpec, NoiseSpec], top: tuple[NoiseSpec, NoiseSpec]) -> bool:
    """Whether ``parts``' rho and smoothed ``mu^2`` are at most ``top``'s at every pair of
    smoothing widths ``(t_s^2, t_c^2)`` (the same integer sensitivities, so the same discrete
    penalties): the sum is separable, so this is ``max gap_sum <= min -gap_count``."""
    if any(p.int_sensitivity != q.int_sensitivity or p.granularity != q.granularity
           for p, q in zip(parts, top, strict=True)):
        return False
    if _rho(parts) > _rho(top):
        return False
    if _clearly_dominated(parts, top):
        return True
    gs, gc = _gaps(parts[0], top[0]), _gaps(parts[1], top[1])
    if gs is None or gc is None:
        return False
    return not gs or not gc or max(gs) <= -max(gc)


def _clearly_dominated(parts: tuple[NoiseSpec, NoiseSpec], top: tuple[NoiseSpec, NoiseSpec]
                       ) -> bool:
    """The test of :func:`_dominated` in floats, true only with a margin of 1e-9 of the
    values compared (far above float rounding); False when unsure (then exact arithmetic)."""
    worst = 0.0
    scale = 0.0
    for p, q in zip(parts, top, strict=True):
        a2, b, bq = float(p.int_sensitivity) ** 2, float(p.int_sigma2), float(q.int_sigma2)
        gaps = [a2 / (b - float(t2)) - a2 / (bq - float(t2)) for t2 in T2_CANDIDATES
                if b > float(t2) + 1 and bq > float(t2) + 1]
        if len(gaps) != len(T2_CANDIDATES):
            return False
        worst += max(gaps)
        scale += a2 / (bq - float(T2_CANDIDATES[-1]))
    return worst < -1e-9 * scale


def plan_two_stage(calibrate_sum: Calibrate, calibrate_count: Calibrate, sum_l2: Fraction,
                   count_l2: Fraction, rho: Fraction, h: float,
                   pilot_share: Fraction = PILOT_SHARE) -> TwoStage:
    """Every noise a two-stage mean may draw, before the charge (public inputs only).
    ``calibrate_*(rho)`` build the query's Gaussian noise of the sum and the count, whose L2
    sensitivities are ``sum_l2`` and ``count_l2`` (they raise the usual typed errors here,
    never later)."""
    rho1 = rho * pilot_share
    rho2 = rho - rho1
    pilot = (calibrate_sum(rho1 / 2), calibrate_count(rho1 / 2))
    u = Fraction(h) * count_l2 / sum_l2 if h > 0 else Fraction(1)
    c_max = min(u / (1 + u), Fraction(1, 2))
    shares = tuple([c_max / (2 * (SPLITS - 1))]
                   + [c_max * j / (SPLITS - 1) for j in range(1, SPLITS)])
    top = (calibrate_sum(rho2 * (1 - c_max)), calibrate_count(rho2 * c_max))
    # the others at the rho the stated parts achieve (their variances rounded up), so that
    # no candidate's rho exceeds the stated one's
    achieved = _rho(top)
    cands = (*((calibrate_sum(achieved * (1 - c)), calibrate_count(achieved * c))
               for c in shares[:-1]), top)
    stated = len(cands) - 1  # the largest count share: the count's smoothing costs most
    keep = [i for i, cand in enumerate(cands) if _dominated(cand, cands[stated])]
    return TwoStage(pilot_share, rho, pilot[0], pilot[1], tuple(shares[i] for i in keep),
                    tuple(cands[i] for i in keep), keep.index(stated), h)


def two_stage_interval(ts: TwoStage, s1: FloatArray, c1: FloatArray, s2: FloatArray,
                       c2: FloatArray, j: int, level: float, est: FloatArray
                       ) -> tuple[FloatArray, FloatArray]:
    """Theorem T's interval of the shifted mean per group (``[-h, h]``), widened to hold the
    shifted estimate ``est``; the whole bounds where no point or a single one is accepted."""
    h = ts.h
    q = normal_quantile(1 - (1 - level) / 2)
    a2, b2 = ts.candidates[j]
    vs1, vc1, vs2, vc2 = (ts.pilot_sum.std ** 2, ts.pilot_count.std ** 2, a2.std ** 2,
                          b2.std ** 2)
    s1, c1, s2, c2, est = (np.asarray(x, dtype=np.float64).reshape(-1)
                           for x in (s1, c1, s2, c2, est))

    def accepts(r: FloatArray, i: slice) -> npt.NDArray[np.bool_]:
        r = np.asarray(r, dtype=np.float64)
        sh = (-1, 1) if r.ndim == 2 else (-1,)
        z1 = (s1[i].reshape(sh) - r * c1[i].reshape(sh)) / np.sqrt(vs1 + r * r * vc1)
        z2 = (s2[i].reshape(sh) - r * c2[i].reshape(sh)) / np.sqrt(vs2 + r * r * vc2)
        w = ts.weight(r)
        return np.asarray(np.abs(w * z1 + np.sqrt(1 - w * w) * z2) <= q)

    grid = np.linspace(-h, h, GRID)
    step = grid[1] - grid[0]
    n = s1.size
    lower, upper = np.full(n, -h), np.full(n, h)
    chunk = 1024
    for start in range(0, n, chunk):
        sl = slice(start, min(start + chunk, n))
        ok = accepts(np.broadcast_to(grid, (sl.stop - sl.start, GRID)), sl)
        r0 = np.clip(est[sl], -h, h)
        ok0 = accepts(r0, sl)
        lo = np.where(ok.any(axis=1), grid[np.argmax(ok, axis=1)], np.inf)
        hi = np.where(ok.any(axis=1), grid[GRID - 1 - np.argmax(ok[:, ::-1], axis=1)], -np.inf)
        lo, hi = np.where(ok0, np.minimum(lo, r0), lo), np.where(ok0, np.maximum(hi, r0), hi)
        found = np.isfinite(lo)
        lo, hi = np.where(found, lo, -h), np.where(found, hi, h)
        below = np.maximum(-h, np.floor((lo + h) / step - 1e-9) * step - h)
        above = np.minimum(h, np.ceil((hi + h) / step + 1e-9) * step - h)
        lower[sl] = np.where(found & (lo > -h), _refine(accepts, sl, lo, below), lo)
        upper[sl] = np.where(found & (hi < h), _refine(accepts, sl, hi, above), hi)
    point = upper <= lower
    lower, upper = np.where(point, -h, lower), np.where(point, h, upper)
    return np.minimum(lower, est), np.maximum(upper, est)


def _refine(accepts: Callable[[FloatArray, slice], npt.NDArray[np.bool_]], sl: slice,
            inside: FloatArray, outside: FloatArray) -> FloatArray:
    """Bisection towards the boundary, keeping the last accepted point."""
    for _ in range(REFINE):
        mid = (inside + outside) / 2
        ok = accepts(mid, sl)
        inside, outside = np.where(ok, mid, inside), np.where(ok, outside, mid)
    return inside


def first_order(ts: TwoStage, s: FloatArray, c: FloatArray, j: int, level: float
                ) -> tuple[FloatArray, FloatArray]:
    """``r -+ z sd(r) / C`` from the combined values and variances (indicative, for releases
    without ``ci=``), in ``[-h, h]``; never of zero width."""
    h = ts.h
    vs, vc = ts.combined_variances(j)
    cc = np.maximum(np.asarray(c, dtype=np.float64), 1.0)
    r = np.clip(np.asarray(s, dtype=np.float64) / cc, -h, h)
    half = np.maximum(normal_quantile(1 - (1 - level) / 2) * np.sqrt(vs + r * r * vc) / cc,
                      1e-12 * h)
    return np.clip(r - half, -h, h - 1e-12 * h), np.clip(r + half, -h + 1e-12 * h, h)


__all__ = ["PILOT_SHARE", "SPLITS", "Drawn", "TwoStage", "first_order", "plan_two_stage",
           "two_stage_interval"]
