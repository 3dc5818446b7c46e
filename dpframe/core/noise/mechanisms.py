"""Noise-adding mechanisms on exact integer lattices, with accuracy both ways.

Every real-valued release is *granular* (docs/privacy.md#noise): the exact value is an integer
count of a power-of-two unit ``u`` (the backends accumulate in fixed point); it is rounded to a
coarser power-of-two granularity ``g`` and released as ``g * (round(x / g) + Z)`` with ``Z`` exact
integer noise. Rounding moves each coordinate by less than one step of ``g``, so the integer
sensitivity is ``floor(Delta / g) + c`` (L1) or ``Delta / g + sqrt(c)`` (L2), ``c`` being the
number of coordinates a neighbour can change; an integer release (g = 1) keeps ``Delta`` as it
is for the Gaussian (an L2 norm such as ``sqrt(10)`` is not rounded up to 4: issue 47). The
reachable outputs form the same lattice for every input, which defeats Mironov's (2012)
floating-point attack; converting the final integer to a float is post-processing.

* Laplace: ``Z`` two-sided geometric with scale ``Delta_int / epsilon`` is epsilon-DP for L1
  sensitivity ``Delta_int`` (Ghosh, Roughgarden, Sundararajan 2009).
* Gaussian: ``Z`` discrete Gaussian with variance ``sigma^2`` is rho-zCDP with
  ``rho = Delta_2^2 / (2 sigma^2)`` for integer L2 sensitivity ``Delta_2`` (Canonne, Kamath,
  Steinke 2020, Thm 4), and (epsilon, delta)-DP by the analytic Gaussian's curve up to a
  proven factor (:mod:`dpframe.core.noise.gaussian`, Theorem C). A release asked for at
  (epsilon, delta) gets the smaller of the two sigmas (the analytic one, 7% below the zCDP
  route's at (1, 1e-6)), and records the rho its noise has.
* Exponential mechanism: permute-and-flip (McKenna and Sheldon 2020), epsilon-DP for utilities
  of sensitivity ``Delta_u``, sampled exactly with Bernoulli(exp(-x)) coins, a byte of
  randomness per candidate (:mod:`dpframe.core.noise.permute_flip`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Literal

import numpy as np
import numpy.typing as npt

from ...errors import ValidationError
from ..accounting import round_up, zcdp_rho_for_epsilon
from ..numbers import power_of_two_at_most
from .discrete_gaussian import discrete_gaussian
from .gaussian import Part, analytic_sigma2
from .permute_flip import permute_and_flip
from .rng import RandomSource
from .samplers import MAX_FAST_DEN, discrete_laplace, round_scale_up

Kind = Literal["laplace", "gaussian"]

#: The noise granularity is 2**-GRANULARITY_BITS of the sensitivity (rounded down to a power of
#: two): rounding then costs at most a factor (1 + 2**-20) of noise and moves a value by at most
#: 2**-21 * epsilon noise scales.
GRANULARITY_BITS = 20
#: The exponential mechanism's acceptance rate epsilon / (2 Delta_u) is a fraction a / d with
#: a, d <= 2**EM_RATE_BITS (the exact Bernoulli(exp(-x)) sampler takes denominators <= 2**40).
EM_RATE_BITS = 40
#: The range of released integers (int64): an exact noisy integer past it saturates.
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def granularity_for(sensitivity: Fraction) -> Fraction:
    """Noise granularity g for a real-valued release: a power of two near sensitivity / 2**20."""
    return power_of_two_at_most(sensitivity) / (1 << GRANULARITY_BITS)


def normal_quantile(p: float) -> float:
    """Inverse standard normal CDF by bisection on erfc (analysis only, never sampling)."""
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if 0.5 * math.erfc(-mid / math.sqrt(2)) < p:
            lo = mid
        else:
            hi = mid
    return hi


@lru_cache(maxsize=1024)
def rho_for(epsilon: Fraction, delta: Fraction) -> Fraction:
    """The zCDP budget of a Gaussian release asked for at (epsilon, delta) (cached: pure)."""
    return zcdp_rho_for_epsilon(epsilon, delta)


@dataclass(frozen=True)
class NoiseSpec:
    """A fully determined additive-noise release, computed from public parameters only.

    ``granularity`` g is the output lattice step (1 for integer results); ``int_sensitivity``
    the sensitivity in units of g after rounding (L1 for Laplace, L2 for Gaussian);
    ``int_scale`` the Laplace scale in units of g, ``int_sigma2`` the Gaussian variance.
    """

    kind: Kind
    epsilon: Fraction
    delta: Fraction
    sensitivity: Fraction
    granularity: Fraction
    int_sensitivity: Fraction
    int_scale: Fraction = Fraction(0)
    int_sigma2: Fraction = Fraction(0)
    rho: Fraction | None = None
    integer: bool = False

    @functools.cached_property
    def scale(self) -> float:
        """The noise scale in output units: Laplace b, or Gaussian sigma (computed once: plans
        are cached, so their noise is reused release after release)."""
        g = float(self.granularity)
        if self.kind == "laplace":
            return g * float(self.int_scale)
        return g * math.sqrt(float(self.int_sigma2))

    @property
    def std(self) -> float:
        """Standard deviation of the noise in output units."""
        if self.kind == "laplace":
            p = math.exp(-1.0 / float(self.int_scale))
            return float(self.granularity) * math.sqrt(2 * p) / (1 - p)
        return self.scale

    def half_width(self, level: float = 0.95) -> float:
        """Smallest A with P(|noise| <= A) >= level (exact for the discrete Laplace); each
        level's answer is remembered on the (immutable) spec."""
        known: dict[float, float] = self.__dict__.setdefault("_half_widths", {})
        if level not in known:
            known[level] = self._half_width(level)
        return known[level]

    def _half_width(self, level: float) -> float:
        alpha = 1.0 - level
        g = float(self.granularity)
        if self.kind == "laplace":
            # P(|Z| > a) = 2 p^(a+1) / (1 + p) for the discrete Laplace with p = exp(-1/t).
            t = float(self.int_scale)
            p = math.exp(-1.0 / t)
            if p == 0.0:  # scale so small that the noise is 0 with probability 1 - 2 e^(-1/t)
                return 0.0
            a = math.ceil(math.log(alpha * (1 + p) / 2) / math.log(p) - 1 - 1e-12)
            return g * max(a, 0)
        sigma = math.sqrt(float(self.int_sigma2))
        # discrete Gaussian tails are within a factor (1 + 2e^{-2 pi^2 sigma^2}) of the
        # continuous ones for sigma >= 1 (CKS 2020, Sec. 2); add one lattice step for safety.
        return g * (math.ceil(sigma * normal_quantile(1 - alpha / 2)) + 1)

    def add_noise(self, exact: npt.ArrayLike, unit: Fraction, rng: RandomSource) -> np.ndarray:
        """Release ``exact`` (integers counting ``unit``) with this noise.

        Returns int64 values for integer releases, float64 otherwise (multiples of g).
        """
        vals = np.asarray(exact)
        n = vals.size
        ratio = self.granularity / unit
        if ratio.denominator != 1:
            raise ValueError("granularity must be an integer multiple of the accumulation unit")
        m = ratio.numerator
        if self.kind == "laplace":
            z = discrete_laplace(self.int_scale, n, rng)
        else:
            z = discrete_gaussian(self.int_sigma2, n, rng)
        z = z.reshape(vals.shape)
        if vals.dtype != object and m < (1 << 61) and (
                n == 0 or int(np.abs(vals).max()) < (1 << 60)):
            x = vals.astype(np.int64)
            # round half up to the lattice of g: floor((x + m/2) / m), exact in int64
            lattice = (x + m // 2) // m if m > 1 else x
            noisy: np.ndarray = lattice + z
        else:  # Python ints (very large exact sums)
            noisy = np.array([(int(v) * 2 + m) // (2 * m) + int(e)
                              for v, e in zip(vals.reshape(-1), z.reshape(-1), strict=True)],
                             dtype=object).reshape(vals.shape)
        if self.integer:
            if noisy.dtype == object:  # past int64 (sums beyond 2**63): the released integer
                # saturates at int64's limits, post-processing of the exact noisy value; the
                # result's dtype stays int64 whatever the data (never object for huge sums)
                noisy = np.array([min(max(int(v), _INT64_MIN), _INT64_MAX)
                                  for v in noisy.reshape(-1)],
                                 dtype=np.int64).reshape(noisy.shape)
            return np.asarray(noisy, dtype=np.int64)
        # conversion to float is post-processing of the exact integer release
        return np.asarray(noisy, dtype=np.float64) * float(self.granularity)

    def release_real(self, values: npt.ArrayLike, rng: RandomSource) -> np.ndarray:
        """The granular mechanism on real values: round each to the lattice g Z (exactly: g is a
        power of two), then add exact integer noise in units of g. Outputs lie on g Z whatever
        the input, so no output is reachable from one input and not from another."""
        x = np.asarray(values, dtype=np.float64)
        if not np.isfinite(x).all():
            raise ValueError("values must be finite")
        g = float(self.granularity)
        lattice = np.rint(x / g)
        if np.abs(lattice).max(initial=0) >= 2.0**62:
            raise ValueError("values too large for this granularity")
        return self.add_noise(lattice.astype(np.int64), self.granularity, rng)


def noise_spec(
    kind: Kind,
    sensitivity: Fraction,
    epsilon: Fraction,
    delta: Fraction = Fraction(0),
    *,
    changed: int = 1,
    integer: bool = False,
    rho: Fraction | None = None,
    min_granularity: Fraction | None = None,
) -> NoiseSpec:
    """Calibrate noise for ``sensitivity`` (L1 for Laplace, L2 for Gaussian) at (eps, delta).

    ``changed`` bounds how many coordinates one neighbour can change; ``integer`` says the exact
    values are integers with integer sensitivity, released without rounding (g = 1). For
    Gaussian noise, ``rho`` (a share of a query's zCDP budget) overrides the calibration from
    (epsilon, delta). ``min_granularity`` (the accumulation unit of fixed-point sums) keeps g a
    multiple of the unit the exact values count, at the price of a little more noise when the
    sensitivity is tiny next to the values' magnitude.
    """
    if epsilon <= 0:  # a Gaussian share whose zCDP conversion at this delta gives epsilon 0
        raise ValidationError("epsilon is too small for this release at this delta: raise "
                              "epsilon or lower delta")
    if sensitivity <= 0:
        raise ValueError("sensitivity must be positive")
    if integer:
        g = Fraction(1)
        int_sens = _integer_sensitivity(kind, sensitivity)
    else:
        g = granularity_for(sensitivity)
        if min_granularity is not None and g < min_granularity:
            g = min_granularity
        if kind == "laplace":
            int_sens = Fraction(math.floor(sensitivity / g) + changed)
        else:
            int_sens = sensitivity / g + _sqrt_up(changed)
    if kind == "laplace":
        try:
            scale = round_scale_up(int_sens / epsilon)
        except ValueError:
            raise ValidationError(
                "epsilon is too small for this sensitivity: the noise scale exceeds what the "
                "exact sampler supports") from None
        return NoiseSpec("laplace", epsilon, delta, sensitivity, g, int_sens, int_scale=scale,
                         integer=integer)
    if delta <= 0:
        raise ValueError("the Gaussian mechanism needs delta > 0")
    rho, sigma2 = _gaussian_variance(int_sens, epsilon, delta, rho)
    if math.isqrt(sigma2.numerator // sigma2.denominator) + 1 > MAX_FAST_DEN:
        raise ValidationError(
            "epsilon or delta is too small for this sensitivity: the Gaussian noise exceeds what "
            "the exact sampler supports")
    return NoiseSpec("gaussian", epsilon, delta, sensitivity, g, int_sens, int_sigma2=sigma2,
                     rho=rho, integer=integer)


def _integer_sensitivity(kind: Kind, sensitivity: Fraction) -> Fraction:
    """The sensitivity of an integer release (g = 1). L1 of an integer vector is an integer,
    so Laplace's is rounded up; its L2 norm need not be (``sqrt(k) R``), and the discrete
    Gaussian's guarantees hold for any real bound on it (CKS 2020, Thm 4; Theorem C of
    :mod:`dpframe.core.noise.gaussian`), so it is kept exact, never rounded up (issue 47)."""
    return Fraction(math.ceil(sensitivity)) if kind == "laplace" else sensitivity


def _gaussian_variance(int_sens: Fraction, epsilon: Fraction, delta: Fraction,
                       rho: Fraction | None) -> tuple[Fraction, Fraction]:
    """(rho, sigma^2) of a Gaussian release, sigma^2 in lattice units.

    With ``rho`` given (a share of a query's block), sigma^2 = Delta^2 / (2 rho) rounded up: the
    achieved rho is at most the planned one. Without, the least sigma of two proofs for
    (epsilon, delta): zCDP (:func:`rho_for`) or the analytic curve (Theorem C of
    :mod:`dpframe.core.noise.gaussian`, checked in conservative arithmetic); either way the noise is
    rho-zCDP for the rho returned (Delta^2 / (2 sigma^2), rounded up)."""
    if rho is not None:
        return rho, _round_up(int_sens * int_sens / (2 * rho))
    rho = rho_for(epsilon, delta)
    sigma2 = _round_up(int_sens * int_sens / (2 * rho))
    analytic = analytic_sigma2(epsilon, delta, int_sens)
    if analytic is not None and analytic < sigma2:
        return round_up(int_sens * int_sens / (2 * analytic)), analytic
    return rho, sigma2


def gaussian_parts(specs: list[NoiseSpec | None]) -> list[Part]:
    """The (integer L2 sensitivity, variance) of each Gaussian spec, for Theorem C."""
    return [(s.int_sensitivity, s.int_sigma2) for s in specs
            if s is not None and s.kind == "gaussian"]


def _sqrt_up(c: int) -> Fraction:
    """sqrt(c) rounded up to a multiple of 2**-20."""
    r = math.isqrt(c * (1 << 40))
    if r * r < c * (1 << 40):
        r += 1
    return Fraction(r, 1 << 20)


def _round_up(x: Fraction) -> Fraction:
    """x rounded up to a multiple of 2**-16 (at least 2**-16)."""
    return Fraction(max(math.ceil(x * (1 << 16)), 1), 1 << 16)


def epsilon_for_half_width(
    half_width: float,
    sensitivity: Fraction,
    level: float = 0.95,
    kind: Kind = "laplace",
    delta: Fraction = Fraction(0),
    integer: bool = False,
) -> float:
    """The smallest epsilon whose release has a ``level`` interval no wider than +/- half_width."""
    if half_width <= 0:
        raise ValueError("half_width must be positive")
    lo, hi = 1e-9, 1e6

    def width(e: float) -> float:
        spec = noise_spec(kind, sensitivity, Fraction(repr(e)), delta, integer=integer)
        return spec.half_width(level)

    if width(hi) > half_width:
        raise ValueError("no epsilon reaches that accuracy")
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        if width(mid) <= half_width:
            hi = mid
        else:
            lo = mid
        if hi / lo < 1 + 1e-6:
            break
    return hi


@dataclass(frozen=True)
class ExponentialSpec:
    """Permute-and-flip over a public candidate list with integer utilities.

    Utility ``u_i`` (integer) has sensitivity ``utility_sensitivity``; candidate i is accepted in
    random order with probability exp(epsilon (u_i - u_max) / (2 Delta_u)), computed exactly.
    With probability >= 1 - beta the output's utility is within
    ``2 Delta_u ln(m / beta) / epsilon`` of the best (McKenna and Sheldon 2020, Thm 2).
    """

    epsilon: Fraction
    utility_sensitivity: int
    n_candidates: int

    def __post_init__(self) -> None:
        # checked when the release is planned, before any charge
        self.acceptance_rate()

    def acceptance_rate(self) -> tuple[int, int]:
        """``(a, d)`` with ``a / d <= epsilon / (2 Delta_u)``, ``d <= 2**40``, ``a <= 2**40``:
        candidate i is accepted with probability exp(-(a / d) gap_i), exactly.

        The rate is epsilon / (2 Delta_u) itself when it fits the exact sampler, else rounded
        *down* to a dyadic fraction: that is permute-and-flip at some epsilon' <= epsilon, so
        still epsilon-DP. A rate below 2**-40 cannot be represented: that raises
        :class:`ValidationError` when the release is planned, before any charge.
        """
        r = self.epsilon / (2 * self.utility_sensitivity)
        cap = Fraction(1 << EM_RATE_BITS)
        if r >= cap:
            return 1 << EM_RATE_BITS, 1
        if r.denominator <= cap and r.numerator <= cap:
            return r.numerator, r.denominator
        shift = EM_RATE_BITS
        a = math.floor(r * (1 << shift))
        while a >= (1 << EM_RATE_BITS):
            shift -= 1
            a = math.floor(r * (1 << shift))
        if a == 0:
            raise ValidationError(
                "epsilon is too small for this exponential mechanism: epsilon / (2 x utility "
                "sensitivity) is below 2**-40; raise epsilon or lower max_rows_per_unit")
        return a, 1 << shift

    def utility_error(self, level: float = 0.95) -> float:
        """Utility shortfall bound holding with probability ``level``."""
        beta = 1 - level
        return 2 * self.utility_sensitivity * math.log(self.n_candidates / beta) / float(
            self.epsilon)

    @staticmethod
    def epsilon_for(utility_error: float, utility_sensitivity: int, n_candidates: int,
                    level: float = 0.95) -> float:
        """The epsilon whose utility shortfall bound at ``level`` is ``utility_error``
        (the inverse of :meth:`utility_error`)."""
        if utility_error <= 0 or not 0 < level < 1:
            raise ValueError("utility_error must be positive and level in (0, 1)")
        return 2 * utility_sensitivity * math.log(n_candidates / (1 - level)) / utility_error

    def choose(self, utilities: npt.NDArray[np.int64], rng: RandomSource) -> npt.NDArray[np.int64]:
        """One candidate index per row of ``utilities`` (shape groups x candidates), by
        permute-and-flip sampled exactly (:func:`~dpframe.core.noise.permute_flip.permute_and_flip`:
        its output law is the mechanism's, proved there; a few random bits per candidate)."""
        a, den = self.acceptance_rate()
        return permute_and_flip(utilities, a, den, rng)
