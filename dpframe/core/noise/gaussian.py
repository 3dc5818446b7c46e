"""The discrete Gaussian's (epsilon, delta) curve, proven, and its analytic calibration.

A Gaussian release asked for at (epsilon, delta) gets the least noise this module can *prove*
for the discrete Gaussian dpframe actually samples, not the looser zCDP route.

**Theorem A (analytic Gaussian; Balle and Wang 2018, Thm 8).** Continuous noise N(0, v_j) on
coordinate j, neighbours shifting the mean by a vector w with sum_j w_j^2 / v_j <= mu^2: the
privacy loss is N(m / 2, m) with m = sum_j w_j^2 / v_j, so the release is (eps, delta)-DP iff

    delta >= delta_c(eps, mu) = Phi(mu / 2 - eps / mu) - e^eps Phi(-mu / 2 - eps / mu),

and delta_c grows with mu. Independent blocks of Gaussian noise compose exactly: their mu^2 add
(Gaussian DP; Dong, Roth and Su 2022, Cor. 3.3), as rho = mu^2 / 2 does in zCDP.

**Lemma B (a discrete Gaussian is nearly a post-processed continuous one).** For t > 0 let
tau = 2 e^(-2 pi^2 t^2) / (1 - e^(-2 pi^2 t^2)) and K the randomized rounding from R to Z with
P(K(x) = z) = e^(-(z - x)^2 / (2 t^2)) / Theta(x), Theta(x) = sum_n e^(-(n - x)^2 / (2 t^2)).
K commutes with integer shifts. For s^2 > t^2 and an integer c, the law of K(X), X ~ N(c,
s^2 - t^2), is within a factor r = (1 + tau) / (1 - tau) of the discrete Gaussian N_Z(c, s^2)
at every point. *Proof.* Poisson summation: Theta(x) = sqrt(2 pi) t (1 + 2 sum_(k>=1)
e^(-2 pi^2 t^2 k^2) cos(2 pi k x)), within sqrt(2 pi) t [1 - tau, 1 + tau]. So P(K(X) = z) =
int phi_(s^2 - t^2)(x - c) e^(-(z - x)^2 / (2 t^2)) / Theta(x) dx lies in [1 / (1 + tau),
1 / (1 - tau)] phi_(s^2)(z - c) (a convolution of two Gaussian densities), while N_Z(c, s^2)(z)
= phi_(s^2)(z - c) / N with N = sum_n phi_(s^2)(n) in [1 - tau, 1 + tau] by the same identity
at s > t. []

**Theorem C (what dpframe uses).** Let a release add independent discrete Gaussians to integer
vectors: in part i, N_Z(0, s_i^2) on each coordinate, and neighbours move part i's integer
vector by w_i with ||w_i||_2 <= Delta_i. Let d = sum_i floor(Delta_i^2), 0 < t^2 < min s_i^2,
mu_c^2 = sum_i Delta_i^2 / (s_i^2 - t^2) and L = 2 tau / (1 - tau) >= ln r. Then for every
eps >= 2 d L the release is (eps, e^(d L) delta_c(eps - 2 d L, mu_c))-DP. *Proof.* An integer
vector of norm <= Delta has at most floor(Delta^2) non-zero coordinates; the others have the same
law under both neighbours, independent of the rest, so they leave the hockey-stick divergence
unchanged: at most d coordinates remain. With P, Q the two discrete laws and C_P, C_Q the
continuous ones of variances s_i^2 - t^2 around the same integer means, Lemma B gives
P(A) <= r^d K(C_P)(A) and K(C_Q)(A) <= r^d Q(A) for every set A, and Theorem A with
post-processing gives K(C_P)(A) <= e^eps' K(C_Q)(A) + delta_c(eps', mu_c). Chaining,
P(A) <= e^(eps' + 2 d ln r) Q(A) + r^d delta_c(eps', mu_c); the same holds with P and Q
swapped. [] The loss to the continuous curve is tiny: with t^2 = 4, tau < 1e-34.

Arithmetic. Calibration searches run in floats; every claim is then *checked* with
:func:`discrete_delta_bound`, an upper bound computed in 60-digit decimal arithmetic: Phi from
its power series (|z| <= 4 sqrt 2, with a proven tail bound) or from Laplace's continued
fraction for erfc (whose successive convergents bracket the value: all its elements are
positive), every input widened in the safe direction by a margin far above the rounding error.
Standard library only (no scipy at run time). This module does not know pandas.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

from ..accounting import round_up
from ..numbers import bisect_floats

#: (integer L2 sensitivity Delta_i, variance s_i^2) of one part of a release, lattice units.
Part = tuple[Fraction, Fraction]

#: The smoothing widths t^2 tried by Theorem C (the smallest bound wins; each is valid).
T2_CANDIDATES = (Fraction(1, 4), Fraction(1, 2), Fraction(1), Fraction(2), Fraction(4))

_PREC = 60
_REL = Decimal("1e-45")  # relative widening margin, >> accumulated rounding (~1e-55)
_SERIES_REL = Decimal("1e-52")  # the series' few hundred roundings of ~1e-60 each
_ABS = Decimal("1e-57")  # absolute margin on 1 - erfc / 2 (60-digit rounding near 1)


def _ctx() -> decimal.Context:
    return decimal.Context(prec=_PREC, rounding=decimal.ROUND_HALF_EVEN, Emax=decimal.MAX_EMAX,
                           Emin=decimal.MIN_EMIN,
                           traps=[decimal.InvalidOperation, decimal.DivisionByZero,
                                  decimal.Overflow])


def _pi() -> Decimal:
    """pi to 70 digits (the recipe of the decimal module's documentation)."""
    with decimal.localcontext(_ctx()) as ctx:
        ctx.prec = _PREC + 10
        t = s = Decimal(3)
        lasts = Decimal(0)
        n, na, d, da = 1, 0, 0, 24
        while s != lasts:
            lasts = s
            n, na = n + na, na + 8
            d, da = d + da, da + 32
            t = (t * n) / d
            s += t
        return +s


with decimal.localcontext(_ctx()):
    _SQRT_PI = _pi().sqrt()
    _SQRT2 = Decimal(2).sqrt()
    _PI2 = _pi() * _pi()


def _dec(x: Fraction) -> Decimal:
    with decimal.localcontext(_ctx()):
        return Decimal(x.numerator) / Decimal(x.denominator)


def _erfc_series(x: Decimal) -> tuple[Decimal, Decimal]:
    """Bounds on erfc(x) for 0 <= x <= 4: erf(x) = 2 e^(-x^2) / sqrt(pi) * sum_n T_n with
    T_0 = x, T_(n+1) = T_n 2 x^2 / (2n + 3) (positive terms); once the ratio q < 1 it only
    falls, so the tail after T_N is at most T_N q / (1 - q)."""
    with decimal.localcontext(_ctx()):
        x2 = x * x
        term, total, n = x, x, 0
        while True:
            q = 2 * x2 / (2 * n + 3)
            term = term * q
            total += term
            n += 1
            q_next = 2 * x2 / (2 * n + 3)
            if q_next < 1:
                tail = term * q_next / (1 - q_next)
                if tail <= total * Decimal("1e-50"):
                    break
        c = 2 * (-x2).exp() / _SQRT_PI
        erf_lo = c * total * (1 - _SERIES_REL)
        erf_hi = c * (total + tail) * (1 + _SERIES_REL)
        return max(1 - erf_hi, Decimal(0)), 1 - erf_lo


def _cf(x: Decimal, n: int) -> Decimal:
    """The n-th convergent of erfc(x) e^(x^2) sqrt(pi) = 1/(x + (1/2)/(x + 1/(x + (3/2)/...)))."""
    with decimal.localcontext(_ctx()):
        v = x
        for k in range(n, 1, -1):
            v = x + Decimal(k - 1) / 2 / v
        return 1 / v


def _erfc_cf(x: Decimal) -> tuple[Decimal, Decimal]:
    """Bounds on erfc(x) for x > 4 from Laplace's continued fraction: its elements are positive,
    so consecutive convergents bracket the value; more terms until they agree to 1e-47."""
    n = 16
    while True:
        a, b = _cf(x, n), _cf(x, n + 1)
        lo, hi = min(a, b), max(a, b)
        with decimal.localcontext(_ctx()):
            if hi - lo <= lo * Decimal("1e-47"):
                c = (-(x * x)).exp() / _SQRT_PI
                return c * lo * (1 - _REL), c * hi * (1 + _REL)
        n *= 2


def _erfc_bounds(x: Decimal) -> tuple[Decimal, Decimal]:
    return _erfc_series(x) if x <= 4 else _erfc_cf(x)


def _widen(z: Decimal, up: bool) -> Decimal:
    """``z`` moved by a margin larger than its rounding error, up or down."""
    with decimal.localcontext(_ctx()):
        m = abs(z) * _REL + Decimal("1e-50")
        return z + m if up else z - m


def phi_upper(z: Decimal) -> Decimal:
    """An upper bound on the standard normal CDF Phi(z) (z computed to ~1e-55 relative)."""
    z = _widen(z, up=True)
    with decimal.localcontext(_ctx()):
        if z <= 0:
            return _erfc_bounds(-z / _SQRT2)[1] / 2
        return min(1 - _erfc_bounds(z / _SQRT2)[0] / 2 + _ABS, Decimal(1))


def phi_lower(z: Decimal) -> Decimal:
    """A lower bound on Phi(z)."""
    z = _widen(z, up=False)
    with decimal.localcontext(_ctx()):
        if z <= 0:
            return _erfc_bounds(-z / _SQRT2)[0] / 2
        return max(1 - _erfc_bounds(z / _SQRT2)[1] / 2 - _ABS, Decimal(0))


def analytic_delta_upper(eps: Decimal, mu2: Fraction) -> Decimal:
    """An upper bound on delta_c(eps, mu) of Theorem A, mu^2 = ``mu2`` (eps >= 0)."""
    if mu2 <= 0:
        return Decimal(0)
    with decimal.localcontext(_ctx()):
        mu = _dec(mu2).sqrt() * (1 + _REL)  # delta_c grows with mu: round mu up
        a = mu / 2 - eps / mu
        b = -mu / 2 - eps / mu
        e_lo = eps.exp() * (1 - _REL)
        return max(phi_upper(a) - e_lo * phi_lower(b), Decimal(0))


def _tau_upper(t2: Fraction) -> Decimal:
    """An upper bound on Lemma B's tau for t^2 = ``t2``."""
    with decimal.localcontext(_ctx()):
        e = (-2 * _PI2 * _dec(t2)).exp()
        return 2 * e / (1 - e) * (1 + _REL)


def _shape(parts: Sequence[Part], t2: Fraction) -> tuple[int, Fraction] | None:
    """(d, mu_c^2) of Theorem C for smoothing width ``t2``; None when some s^2 <= t^2."""
    d = 0
    mu2 = Fraction(0)
    for sens, s2 in parts:
        if s2 <= t2:
            return None
        d += math.floor(sens * sens)
        mu2 += sens * sens / (s2 - t2)
    return d, mu2


def _bound_at(eps: Fraction, parts: Sequence[Part], t2: Fraction) -> Decimal | None:
    shape = _shape(parts, t2)
    if shape is None:
        return None
    d, mu2 = shape
    with decimal.localcontext(_ctx()):
        tau = _tau_upper(t2)
        lr = 2 * tau / (1 - tau) * (1 + _REL)  # >= ln((1 + tau) / (1 - tau))
        if d * lr > 1:  # a useless bound (factor e^(d L) > e)
            return None
        eps_c = _dec(eps) * (1 - _REL) - 2 * d * lr * (1 + _REL)
        if eps_c < 0:
            return None
        return (d * lr).exp() * (1 + _REL) * analytic_delta_upper(eps_c, mu2)


def discrete_delta_bound(eps: Fraction, parts: Sequence[Part]) -> Decimal:
    """A proven upper bound on the delta at ``eps`` of the discrete Gaussian release made of
    ``parts`` (Theorem C, the best of :data:`T2_CANDIDATES`); 1 when none applies."""
    best = Decimal(1)
    for t2 in _order(float(eps), parts):
        b = _bound_at(eps, parts, t2)
        if b is not None and b < best:
            best = b
    return best


def satisfies(eps: Fraction, delta: Fraction, parts: Sequence[Part]) -> bool:
    """True when Theorem C proves the release of ``parts`` (eps, delta)-DP (checked in
    conservative decimal arithmetic; stops at the first smoothing width that proves it)."""
    if eps <= 0 or delta <= 0:
        return False
    target = _dec(delta)
    for t2 in _order(float(eps), parts):
        b = _bound_at(eps, parts, t2)
        if b is not None and b <= target:
            return True
    return False


def discrete_tail_upper(s2: Fraction, m: int) -> Fraction:
    """A proven upper bound on ``P[Z >= m]`` for the discrete Gaussian ``Z ~ N_Z(0, s2)``
    (``m >= 1``), as a rational (key selection's threshold, :mod:`dpframe.core.selection`).

    *Proof.* With ``f(x) = e^(-x^2 / (2 s2))``, ``P[Z >= m] = sum_(z >= m) f(z) / N``,
    ``N = sum_z f(z) >= sqrt(2 pi s2) (1 - tau)`` (Lemma B's Poisson summation at ``x = 0``,
    ``t^2 = s2``). ``f`` is convex on ``[sqrt(s2), inf)``, so where ``m - 1/2 >= sqrt(s2)``,
    ``f(z) <= int_(z - 1/2)^(z + 1/2) f`` (Hermite-Hadamard) and the sum is at most
    ``int_(m - 1/2)^inf f = sqrt(2 pi s2) Phi(-(m - 1/2) / sqrt(s2))``; elsewhere ``f``
    decreases on ``[0, inf)``, so ``f(z) <= int_(z - 1)^z f`` and the sum is at most
    ``sqrt(2 pi s2) Phi(-(m - 1) / sqrt(s2))``. Hence ``P[Z >= m] <= Phi(-a / sqrt(s2)) /
    (1 - tau)`` with ``a = m - 1/2`` or ``m - 1``. Evaluated with :func:`phi_upper` (its
    argument widened past its rounding) and rounded up."""
    if m < 1:
        return Fraction(1)
    with decimal.localcontext(_ctx()):
        s = _dec(s2).sqrt()
        half = Decimal(m) - Decimal("0.5")
        a = half if half >= s * (1 + _REL) else Decimal(m - 1)
        tau = _tau_upper(s2) if s2 >= Fraction(1, 4) else Decimal(1)
        if tau >= 1:
            return Fraction(1)
        bound = phi_upper(-a / s) / (1 - tau) * (1 + _REL)
    num, den = bound.as_integer_ratio()
    return min(Fraction(1), Fraction(num, den))


# --------------------------------------------------------------------------------------------
# Float twins, for searches only (every result is checked by the decimal bound above)
# --------------------------------------------------------------------------------------------


def _log_phi(z: float) -> float:
    if z > -30:
        return math.log(0.5 * math.erfc(-z / math.sqrt(2)))
    # Mills ratio asymptotics (searches only)
    return -z * z / 2 - math.log(-z) - 0.5 * math.log(2 * math.pi) + math.log1p(-1 / (z * z))


def analytic_delta_float(eps: float, mu: float) -> float:
    """delta_c(eps, mu) of Theorem A in floats (searches only)."""
    if mu <= 0:
        return 0.0
    a, b = mu / 2 - eps / mu, -mu / 2 - eps / mu
    return max(math.exp(_log_phi(a)) - math.exp(eps + _log_phi(b)), 0.0)


def _penalty(t2: Fraction) -> float:
    tau = 2 * math.exp(-2 * math.pi**2 * float(t2))
    return 2 * tau / (1 - tau)


def _delta_float(eps: float, parts: Sequence[Part], t2: Fraction) -> float:
    shape = _shape(parts, t2)
    if shape is None:
        return 1.0
    d, mu2 = shape
    lr = _penalty(t2)
    if d * lr > 1 or eps - 2 * d * lr <= 0:
        return 1.0
    return math.exp(d * lr) * analytic_delta_float(eps - 2 * d * lr, math.sqrt(float(mu2)))


def delta_float(eps: float, parts: Sequence[Part]) -> float:
    """Theorem C's bound in floats, best smoothing width (searches only)."""
    return min(_delta_float(eps, parts, t2) for t2 in T2_CANDIDATES)


def _order(eps: float, parts: Sequence[Part]) -> list[Fraction]:
    """Smoothing widths, most promising first (by the float bound)."""
    return sorted(T2_CANDIDATES, key=lambda t2: _delta_float(eps, parts, t2))


def analytic_mu(eps: float, delta: float) -> float:
    """The largest mu with delta_c(eps, mu) <= delta (floats; 0 when none)."""
    lo, hi = 0.0, 1.0
    while analytic_delta_float(eps, hi) <= delta:
        lo, hi = hi, hi * 2
        if hi > 1e9:
            return lo
    return bisect_floats(lambda mu: analytic_delta_float(eps, mu) <= delta, lo, hi, 200)[0]


def _round_up16(x: Fraction) -> Fraction:
    """x rounded up to a multiple of 2**-16 (the sampler's variance grid)."""
    return Fraction(max(math.ceil(x * (1 << 16)), 1), 1 << 16)


@lru_cache(maxsize=1024)
def analytic_sigma2(eps: Fraction, delta: Fraction, sens: Fraction) -> Fraction | None:
    """The least variance s^2 (lattice units, a multiple of 2**-16) that Theorem C proves
    (eps, delta)-DP for one discrete Gaussian part of integer L2 sensitivity ``sens``; None
    when no smoothing width proves any (tiny noise: the zCDP route then applies)."""
    best: Fraction | None = None
    for t2 in T2_CANDIDATES:
        d = math.floor(sens * sens)
        lr = _penalty(t2)
        e = float(eps) - 2 * d * lr
        if d * lr > 1 or e <= 0:
            continue
        mu = analytic_mu(e, float(delta) * math.exp(-d * lr))
        if mu <= 0:
            continue
        s2 = _round_up16(Fraction(float(sens) ** 2 / mu**2 * (1 + 1e-12)) + t2)
        if best is None or s2 < best:
            best = s2
    for _ in range(8):  # the float search is accurate to ~1e-12: a step or two at most
        if best is None or satisfies(eps, delta, [(sens, best)]):
            return best
        best = _round_up16(best * (1 + Fraction(1, 10**9)) + Fraction(1, 1 << 16))
    return None  # pragma: no cover - the float search is far more accurate than this


def discrete_epsilon(parts: Sequence[Part], delta: Fraction) -> Fraction | None:
    """The least epsilon (rounded up to 15 significant digits) that Theorem C proves for the
    release of ``parts`` at ``delta``; None when none is found."""
    dl = float(delta)
    lo, hi = 0.0, 1.0
    while delta_float(hi, parts) > dl:
        lo, hi = hi, hi * 2
        if hi > 1e6:
            return None
    _, hi = bisect_floats(lambda e: delta_float(e, parts) > dl, lo, hi, 100)
    eps = round_up(Fraction(hi * (1 + 1e-12)))
    for _ in range(8):
        if satisfies(eps, delta, parts):
            return eps
        eps = round_up(eps * (1 + Fraction(1, 10**9)))
    return None  # pragma: no cover


__all__ = [
    "T2_CANDIDATES",
    "Part",
    "analytic_delta_float",
    "analytic_delta_upper",
    "analytic_mu",
    "analytic_sigma2",
    "delta_float",
    "discrete_delta_bound",
    "discrete_epsilon",
    "discrete_tail_upper",
    "phi_lower",
    "phi_upper",
    "satisfies",
]
