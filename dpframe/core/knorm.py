"""The K-norm mechanism with a box K: one joint release of counts and centred sums.

A mean is a centred sum over a count; ``agg(count, sum x, sum y)`` is a count and two sums of
the same rows. Releasing each coordinate with its own Laplace noise at a share of epsilon pays
for the coordinates separately, although one row moves all of them at once. The K-norm
mechanism (Hardt and Talwar 2010) pays once: with ``K`` the convex hull of the sensitivity set,
noise with density proportional to ``exp(-epsilon ||z||_K)`` is epsilon-DP.

**The box.** Coordinate ``i`` (a count, a sum of values centred on the bounds' midpoint) moves
by at most ``m_i`` per row (1 for a count, ``h = (hi - lo) / 2`` for a centred sum): one row
added or removed moves the vector by ``(c_1, ..., c_d)`` with ``|c_i| <= m_i``, a set whose
convex hull is the box ``prod [-m_i, m_i]``. Scaled by the contribution bound it is
``K = prod [-Delta_i, Delta_i]`` with ``Delta_i = S m_i`` for a count or a sum under
add/remove (``S = min(T, k R)``, one unit's rows in the release), ``Delta_i = 2 S m_i`` for a
sum under change-one, and the count's own L1 sensitivity under change-one (``S`` ungrouped,
``2 S`` grouped). ``||z||_K = max_i |z_i| / Delta_i``.

**Privacy (Theorem K).** Groups get independent draws, so one neighbour's loss is at most
``epsilon sum_g ||Delta_g||_K`` over the groups ``g`` it touches, ``Delta_g`` the change of
group ``g``'s vector. A unit with ``a_g`` rows in group ``g`` before and ``b_g`` after has
``|Delta_{g,i}| <= (a_g + b_g) m_i`` for a sum, ``|a_g - b_g|`` for a count (``sum a_g``,
``sum b_g <= S``). Add/remove (``b = 0`` or ``a = 0``): ``sum_g max_i |Delta_{g,i}| /
Delta_i <= sum_g a_g / S <= 1``. Change-one, grouped: ``sum_g (a_g + b_g) / (2 S) <= 1``;
ungrouped (one group, ``a, b <= S``): ``max((a + b) / (2 S), |a - b| / S) <= 1``. So every
neighbour is within K-norm 1, and the mechanism is epsilon-DP.

**No floating point (Mironov 2012).** As for :mod:`dpframe.core.noise.mechanisms`' granular noise,
the exact value of coordinate ``i`` (an integer count of its accumulation unit: counts are
integers, sums fixed-point, :func:`~dpframe.core.exact.compute.fixed_point_request`) is rounded to
a power-of-two lattice ``g_i Z`` (``g_i = 1`` for counts and integer sums, exact) and released
as ``g_i (x_i + Z_i)`` with ``Z`` an integer vector of pmf proportional to
``exp(-epsilon' max_i |Z_i| / D_i)``, ``D_i = Delta_i / g_i``. Rounding moves a coordinate by
less than one lattice step: with ``c`` groups touched and ``D_min`` the least rounded
``D_i``, ``sum_g max_i |Delta'_{g,i}| / D_i <= 1 + c / D_min``; the mechanism runs at
``epsilon' = epsilon / (1 + c / D_min) - 2**-40`` (the last term pays the sampler's rounding,
below). Translation invariance of the lattice keeps the normalizing constant the same for
every input, so the ratio of output probabilities is ``exp(epsilon' (||y - x'||_K -
||y - x||_K)) <= exp(epsilon' ||x - x'||_K)``, each release on the same lattice.

**Exact sampling.** ``Z`` is drawn by rejection from independent discrete Laplace
coordinates of scales ``t_i >= d D_i / epsilon'`` (exact, :func:`discrete_laplace`): since
``max_i u_i >= (1/d) sum_i u_i``, the exponent ``x(z) = epsilon' max_i |z_i| / D_i -
sum_i |z_i| / t_i`` is >= 0, and accepting with probability ``exp(-x(z))`` leaves the pmf
proportional to ``exp(-epsilon' max_i |z_i| / D_i)``. ``x(z)`` is computed as an exact
fraction and rounded *up* to a multiple of ``2**-40`` for the exact Bernoulli(exp(-x))
sampler (:func:`bernoulli_exp_neg`): the pmf is then ``exp(-epsilon' ||z||_K - e(z))`` with
``0 <= e(z) < 2**-40``, whose ratio at two points is within ``exp(2**-40)`` of the exact
K-norm's: the ``2**-40`` taken off epsilon above. Acceptance is about ``d! / d**d`` (1/2 for
a mean, 2/9 for a count and two sums).

**Accuracy.** The continuous K-norm with a box puts ``z = r u``, ``r ~ Gamma(d + 1,
1 / epsilon)`` and ``u`` uniform in ``K``: each coordinate has variance
``(d + 1)(d + 2) Delta_i**2 / (3 epsilon**2)``, uncorrelated. A mean (``d = 2``) gets
``4 Delta**2 / epsilon**2`` on its sum and its count, where Laplace noise at ``epsilon / 2``
each gives ``8 Delta**2 / epsilon**2``: half the variance. Intervals use that continuous law
(:func:`box_pivot_half_width`), the discrete noise matched to it as for Laplace noise.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np
import numpy.typing as npt

from ..errors import ValidationError
from .exact.compute import AggregateRequest
from .noise.rng import RandomSource
from .noise.samplers import bernoulli_exp_neg, discrete_laplace, round_scale_up
from .numbers import power_of_two_at_most

#: The sampler's rounding of the acceptance exponent: ``2**-ROUNDING_BITS`` (paid from epsilon).
ROUNDING_BITS = 40
#: The lattice of a rounded coordinate is a power of two near ``Delta / 2**JOINT_BITS``.
JOINT_BITS = 20
#: Most coordinates one joint release holds (acceptance ``d! / d**d`` falls fast with d).
MAX_COORDINATES = 6
#: Largest numerator the Bernoulli sampler takes in one draw (int64 arithmetic).
_BIG = 1 << 61

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Coordinate:
    """One coordinate of a joint release: its name (``"rows"``, ``"count:x"``, ``"sum:x"``),
    its box half-width ``sensitivity`` in output units, and its lattice ``granularity``;
    ``integer`` coordinates (counts, sums of integer columns) are exact integers with an
    integer half-width (no rounding)."""

    name: str
    sensitivity: Fraction
    granularity: Fraction
    integer: bool


@dataclass(frozen=True)
class BoxNormSpec:
    """A planned K-norm release with a box K (module docstring): public parameters only.

    ``epsilon`` is the budget it is charged (and is epsilon-DP for, Theorem K), ``changed`` the
    groups one neighbour can touch, ``rate`` the epsilon' the noise is drawn at, ``half_widths``
    the ``D_i`` in lattice units and ``scales`` the proposal's discrete Laplace scales."""

    epsilon: Fraction
    coordinates: tuple[Coordinate, ...]
    changed: int
    rate: Fraction
    half_widths: tuple[Fraction, ...]
    scales: tuple[Fraction, ...]

    @property
    def dimension(self) -> int:
        return len(self.coordinates)

    def index(self, name: str) -> int:
        """The position of the coordinate ``name``."""
        return next(i for i, c in enumerate(self.coordinates) if c.name == name)

    def radius_scale(self, name: str) -> float:
        """``Delta_i / epsilon'`` in output units: coordinate ``name``'s noise is this times
        ``r u_i`` with ``r ~ Gamma(d + 1, 1)`` and ``u_i`` uniform on ``[-1, 1]``."""
        i = self.index(name)
        return float(self.half_widths[i] * self.coordinates[i].granularity / self.rate)

    def std(self, name: str) -> float:
        """The continuous law's standard deviation of coordinate ``name``."""
        d = self.dimension
        return self.radius_scale(name) * math.sqrt((d + 1) * (d + 2) / 3)

    def half_width(self, name: str, level: float, times: float = 0.0,
                   other: str | None = None) -> float:
        """The ``level`` quantile of ``|z_name + times z_other|`` (continuous law; rounded up
        to the coordinate's lattice step for integer coordinates alone)."""
        beta = abs(times) * self.radius_scale(other) if other is not None else 0.0
        a = float(box_pivot_half_width(self.radius_scale(name), np.array([beta]),
                                       self.dimension, level)[0])
        c = self.coordinates[self.index(name)]
        return float(math.ceil(a)) if c.integer and other is None else a

    def sample(self, n: int, rng: RandomSource) -> npt.NDArray[np.int64]:
        """``n`` exact draws of ``Z`` (shape ``n x d``), by rejection (module docstring)."""
        d = self.dimension
        out = np.zeros((n, d), dtype=np.int64)
        todo = np.arange(n)
        while todo.size:
            z = np.stack([discrete_laplace(t, todo.size, rng) for t in self.scales], axis=1)
            keep = self._accept(z, rng)
            out[todo[keep]] = z[keep]
            todo = todo[~keep]
        return out

    @functools.cached_property
    def _integer_exponent(self) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
        """``(Q, A, C)`` with ``Q x(z) = max_i |z_i| A_i - sum_i |z_i| C_i`` in integers:
        ``A_i = Q epsilon' / D_i`` and ``C_i = Q / t_i``, ``Q`` their common denominator."""
        a = [self.rate / w for w in self.half_widths]
        c = [1 / t for t in self.scales]
        q = math.lcm(*(f.denominator for f in (*a, *c)))
        return q, tuple(int(f * q) for f in a), tuple(int(f * q) for f in c)

    def _accept(self, z: npt.NDArray[np.int64], rng: RandomSource) -> npt.NDArray[np.bool_]:
        """Bernoulli(exp(-x~(z))) per row, ``x~`` the exponent rounded up to ``2**-40``
        (exact integer arithmetic: Python integers in object arrays)."""
        scale = 1 << ROUNDING_BITS
        q, a, c = self._integer_exponent
        mag = np.abs(z).astype(object)
        top = np.max(np.stack([mag[:, i] * a[i] for i in range(mag.shape[1])], axis=1), axis=1)
        total = sum((mag[:, i] * c[i] for i in range(mag.shape[1])), np.zeros(len(z), object))
        nums = [-((-(int(v) << ROUNDING_BITS)) // q) for v in (top - total).tolist()]
        small = np.array([min(v, _BIG) for v in nums], dtype=np.int64)
        ok = bernoulli_exp_neg(small, np.full(len(nums), scale, dtype=np.int64), rng)
        for i in (j for j, v in enumerate(nums) if v > _BIG):  # never in practice (x > 2**21)
            rest = nums[i] - _BIG
            while ok[i] and rest > 0:
                step = min(rest, _BIG)
                ok[i] = bool(bernoulli_exp_neg([step], [scale], rng)[0])
                rest -= step
        return ok

    def _exponent(self, row: Sequence[int]) -> Fraction:
        """``x(z) = epsilon' max_i |z_i| / D_i - sum_i |z_i| / t_i`` (>= 0), exactly."""
        top = max(Fraction(abs(v)) / w for v, w in zip(row, self.half_widths, strict=True))
        return self.rate * top - sum((Fraction(abs(v)) / t
                                      for v, t in zip(row, self.scales, strict=True)),
                                     Fraction(0))

    def release(self, exact: Sequence[npt.ArrayLike], units: Sequence[Fraction],
                rng: RandomSource) -> list[np.ndarray]:
        """Every coordinate released jointly, per group: ``exact[i]`` counts ``units[i]``
        (integers); returns int64 arrays for integer coordinates, float64 otherwise (multiples
        of the coordinate's lattice step, converted after the exact integer release)."""
        vals = [np.asarray(v).reshape(-1) for v in exact]
        n = vals[0].size if vals else 0
        z = self.sample(n, rng)
        out: list[np.ndarray] = []
        for i, (v, unit, c) in enumerate(zip(vals, units, self.coordinates, strict=True)):
            ratio = c.granularity / unit
            if ratio.denominator != 1:
                raise ValueError("granularity must be an integer multiple of the unit")
            m = ratio.numerator
            lattice = [(int(x) * 2 + m) // (2 * m) if m > 1 else int(x) for x in v.tolist()]
            noisy = [a + int(b) for a, b in zip(lattice, z[:, i].tolist(), strict=True)]
            if c.integer:
                out.append(np.array([min(max(x, -(1 << 63)), (1 << 63) - 1) for x in noisy],
                                    dtype=np.int64))
            else:  # float conversion: post-processing of the exact lattice release
                out.append(np.array(noisy, dtype=np.float64) * float(c.granularity))
        return out


def coordinate(name: str, sensitivity: Fraction, integer: bool,
               unit: Fraction = Fraction(1)) -> Coordinate:
    """A coordinate of box half-width ``sensitivity``: integers exactly (lattice 1), others on
    a power-of-two lattice near ``sensitivity / 2**20``, a multiple of their accumulation
    ``unit``."""
    if integer:
        return Coordinate(name, Fraction(math.ceil(sensitivity)), Fraction(1), True)
    g = max(power_of_two_at_most(sensitivity) / (1 << JOINT_BITS), unit)
    return Coordinate(name, sensitivity, g, False)


def box_norm_spec(coordinates: Sequence[Coordinate], epsilon: Fraction,
                  changed: int) -> BoxNormSpec:
    """Plan the K-norm release of ``coordinates`` at ``epsilon`` (public: before any charge;
    ``ValidationError`` when the sampler cannot hold it)."""
    d = len(coordinates)
    if not 1 <= d <= MAX_COORDINATES:
        raise ValueError("a joint release holds 1 to 6 coordinates")
    widths = tuple(c.sensitivity / c.granularity for c in coordinates)
    rounded = [w for w, c in zip(widths, coordinates, strict=True) if not c.integer]
    inflate = 1 + Fraction(changed) / min(rounded) if rounded else Fraction(1)
    rate = _rate(epsilon / inflate)
    return BoxNormSpec(epsilon, tuple(coordinates), changed, rate, widths,
                       _proposal_scales(d, widths, rate))


def _rate(epsilon: Fraction) -> Fraction:
    """epsilon rounded down to a multiple of 2**-48, less the sampler's 2**-40."""
    rate = Fraction(math.floor(epsilon * (1 << 48)), 1 << 48) - Fraction(1, 1 << ROUNDING_BITS)
    if rate <= 0:
        raise ValidationError("epsilon is too small for this joint release: raise epsilon")
    return rate


def _proposal_scales(d: int, widths: Sequence[Fraction], rate: Fraction
                     ) -> tuple[Fraction, ...]:
    """The proposal's discrete Laplace scales, ``d D_i / epsilon'`` rounded up for the exact
    sampler (a larger scale keeps the acceptance exponent >= 0)."""
    try:
        return tuple(round_scale_up(d * w / rate) for w in widths)
    except ValueError:
        raise ValidationError("epsilon is too small for this sensitivity: the noise scale "
                              "exceeds what the exact sampler supports") from None


def gamma_survival(x: FloatArray, d: int) -> FloatArray:
    """``P(Gamma(d + 1, 1) > x)`` = ``e**-x sum_{k <= d} x**k / k!``."""
    x = np.minimum(x, 1000.0)  # P < e**-900 beyond: no overflow of the sum
    term = np.ones_like(x)
    total = np.ones_like(x)
    for k in range(1, d + 1):
        term = term * x / k
        total = total + term
    return np.exp(-x) * total


_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(96)


def _tail(a: FloatArray, big: FloatArray, small: FloatArray, d: int) -> FloatArray:
    """``P(Gamma(d + 1) |W| > a)`` with ``W = U_1 big + U_2 small`` (uniforms on [-1, 1]):
    ``|W|`` has density ``1 / big`` on ``[0, big - small]`` and a linear fall to 0 on
    ``[big - small, big + small]`` (Gauss-Legendre on each piece)."""
    a, big, small = a[:, None], big[:, None], small[:, None]
    x = (_NODES[None, :] + 1) / 2
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        flat_w = x * (big - small)
        flat = np.sum(_WEIGHTS / 2 * gamma_survival(a / np.maximum(flat_w, 1e-300), d),
                      axis=1) * ((big - small) / big)[:, 0]
        ramp_w = big - small + x * 2 * small
        dens = np.where(small > 0, (big + small - ramp_w) / (2 * big * np.maximum(small, 1e-300)),
                        0.0)
        ramp = np.sum(_WEIGHTS / 2 * dens * gamma_survival(a / np.maximum(ramp_w, 1e-300), d),
                      axis=1) * (2 * small)[:, 0]
    return flat + np.where(small[:, 0] > 0, ramp, 0.0)


@functools.lru_cache(maxsize=64)
def gamma_quantile(d: int, level: float) -> float:
    """The ``level`` quantile of Gamma(d + 1, 1), by bisection on :func:`gamma_survival`."""
    lo, hi = 0.0, 200.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if gamma_survival(np.array([mid]), d)[0] > 1 - level:
            lo = mid
        else:
            hi = mid
    return hi


def box_pivot_half_width(alpha: float, beta: FloatArray, d: int, level: float) -> FloatArray:
    """Per ``beta``, the ``a`` with ``P(|r (alpha u_1 + beta u_2)| > a) = 1 - level``, ``r ~
    Gamma(d + 1, 1)`` and ``u`` uniform on the box (two of its coordinates), rounded up by a
    relative 1e-9: the law of ``z_s - r z_c`` for two coordinates of a joint release."""
    beta = np.abs(np.asarray(beta, dtype=np.float64)).reshape(-1)
    big = np.maximum(alpha, beta)
    small = np.minimum(alpha, beta)
    if not np.any(big > 0):
        return np.zeros(beta.shape)
    tail = 1.0 - level
    lo = np.zeros(beta.shape)
    hi = (big + small) * gamma_quantile(d, level) * 1.01 + 1e-300
    for _ in range(64):
        mid = (lo + hi) / 2
        over = _tail(mid, big, small, d) > tail
        lo, hi = np.where(over, mid, lo), np.where(over, hi, mid)
    return np.where(big > 0, hi * (1 + 1e-9), 0.0)


__all__ = ["BoxNormSpec", "Coordinate", "box_norm_spec", "box_pivot_half_width", "coordinate",
           "gamma_quantile", "gamma_survival"]


@dataclass(frozen=True)
class JointSource:
    """Where a coordinate's exact integers come from: ``part`` (``"values"`` or ``"counts"``)
    of ``request``'s exact aggregates; with ``rows``, plus ``(rows - counts) * fill``: a sum
    over non-missing values read as a sum over every row, missing rows filled with the
    integer ``fill`` (the fixed-point integer of the value 0, inside ``[ilo, ihi]``)."""

    request: AggregateRequest
    part: Literal["values", "counts"]
    rows: AggregateRequest | None = None
    fill: int = 0


@dataclass(frozen=True)
class JointRelease:
    """One K-norm release shared by several measures of a query: the spec and, per
    coordinate, its source and accumulation unit."""

    spec: BoxNormSpec
    sources: tuple[JointSource, ...]
    units: tuple[Fraction, ...]
    #: the measures sharing it (their names, for the description)
    shared_by: tuple[str, ...]

    @property
    def requests(self) -> list[AggregateRequest]:
        """Every exact aggregate the coordinates read (deduplicated by the plan)."""
        out: list[AggregateRequest] = []
        for s in self.sources:
            out.append(s.request)
            if s.rows is not None:
                out.append(s.rows)
        return out


@dataclass(frozen=True)
class JointRole:
    """A measure's view of a joint release: its ``value`` coordinate (a count, or a centred
    sum), the ``count`` coordinate that carries the centre back (``value + shift * count``),
    or None."""

    release: JointRelease
    value: str
    count: str | None = None
    shift: float = 0.0
    #: the share of the query's epsilon this measure pooled into the joint release
    share: Fraction = Fraction(0)


__all__ += ["JointRelease", "JointRole", "JointSource"]
