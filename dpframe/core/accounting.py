"""Privacy accounting: exact budget arithmetic, composition theorems and conversions.

Every cost is a :class:`PrivacyCost` of :class:`~fractions.Fraction` values, so budget
arithmetic is exact: ``to_fraction(0.01)`` is exactly ``1/100`` (floats are read through their
shortest decimal ``repr``), hence 100 charges of 0.01 fit a budget of 1.0 exactly and 101 do not.

Rounding rule (stated once, used everywhere). Results that are irrational (logarithms,
exponentials, square roots) are computed in 80-digit decimal arithmetic, whose elementary
functions are correctly rounded; a margin of ``(|terms| + 1) * 1e-60`` that dominates the
accumulated rounding error is added, and the value is rounded **up** to 15 significant decimal
digits (:data:`SIGNIFICANT_DIGITS`). A reported epsilon or delta is therefore never below the
true value of the theorem's formula, and is exact as a fraction from then on. Every rounding step
is monotone, so the functions here are monotone exactly where their formulas are.

This module does not know pandas.
"""

from __future__ import annotations

import decimal
import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any

from ..errors import ValidationError
from .numbers import bisect_floats, to_fraction, validate_delta, validate_epsilon
from .numbers import format_number as _fmt

#: Irrational results are rounded up to this many significant decimal digits.
SIGNIFICANT_DIGITS = 15

_PREC = 80
_MARGIN = Decimal("1e-60")
_ZERO = Fraction(0)
_ONE = Fraction(1)


# --------------------------------------------------------------------------------------------
# Costs
# --------------------------------------------------------------------------------------------


Number = int | float | Fraction | Decimal | numbers.Real


@dataclass(frozen=True, init=False)
class PrivacyCost:
    """The privacy cost of one release (or of a composition of releases).

    ``epsilon`` and ``delta`` are the (epsilon, delta)-DP guarantee. ``rho`` is set for Gaussian
    releases accounted in zero-concentrated DP: such a release is both ``rho``-zCDP and
    (epsilon, delta)-DP, and sessions compose the ``rho`` of Gaussian releases in zCDP. Stored
    values are exact Fractions; numbers given as floats are converted with :func:`to_fraction`
    (so ``PrivacyCost(0.01).epsilon == Fraction(1, 100)``); invalid ones raise
    ``ValidationError``.
    """

    epsilon: Fraction
    delta: Fraction
    rho: Fraction | None
    #: The release's privacy loss as a ``dpframe.core.accountant.PrivacyEvent`` (its noises),
    #: composed by the session's accountant; None: the generic (epsilon, delta) event. Not part
    #: of equality (the same guarantee).
    event: Any = field(default=None, compare=False)

    def __init__(self, epsilon: Number, delta: Number = 0, rho: Number | None = None, *,
                 event: Any = None) -> None:
        d = to_fraction(delta, "delta")
        if d > 1:
            raise ValidationError(f"delta must be at most 1, got {_fmt(d)}")
        object.__setattr__(self, "epsilon", to_fraction(epsilon, "epsilon"))
        object.__setattr__(self, "delta", d)
        object.__setattr__(self, "rho", None if rho is None else to_fraction(rho, "rho"))
        object.__setattr__(self, "event", event)

    @property
    def is_gaussian(self) -> bool:
        """True when the cost is accounted in zCDP (``rho`` is set)."""
        return self.rho is not None

    def as_floats(self) -> tuple[float, float]:
        """``(epsilon, delta)`` as floats, for display."""
        return float(self.epsilon), float(self.delta)


# --------------------------------------------------------------------------------------------
# Exact-upward evaluation helpers
# --------------------------------------------------------------------------------------------


def _ctx() -> decimal.Context:
    return decimal.Context(
        prec=_PREC,
        rounding=decimal.ROUND_HALF_EVEN,
        Emax=decimal.MAX_EMAX,
        Emin=decimal.MIN_EMIN,
        traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow],
    )


def _dec(x: Fraction) -> Decimal:
    """A Fraction as an 80-digit Decimal (correctly rounded; monotone in ``x``)."""
    with decimal.localcontext(_ctx()):
        return Decimal(x.numerator) / Decimal(x.denominator)


def _round_up(value: Decimal, scale: Decimal) -> Fraction:
    """``value`` plus the error margin, rounded UP to :data:`SIGNIFICANT_DIGITS` digits.

    ``scale`` bounds the magnitude of the terms ``value`` was computed from. Negative results
    are clamped to 0 (a privacy parameter is never negative).
    """
    with decimal.localcontext(_ctx()) as ctx:
        v = value + (abs(scale) + 1) * _MARGIN
        if v <= 0:
            return _ZERO
        quantum = Decimal(1).scaleb(v.adjusted() - SIGNIFICANT_DIGITS + 1)
        ctx.rounding = decimal.ROUND_CEILING
        v = v.quantize(quantum)
    return Fraction(v)


def _round_sig(x: Fraction, up: bool) -> Fraction:
    """``x`` rounded up (or down) to :data:`SIGNIFICANT_DIGITS` significant digits, exactly:
    the 80-digit quotient may itself be off by rounding, so step one quantum until the result
    is on the right side of ``x``. Non-positive ``x`` gives 0."""
    if x <= 0:
        return _ZERO
    with decimal.localcontext(_ctx()) as ctx:
        v = Decimal(x.numerator) / Decimal(x.denominator)
        quantum = Decimal(1).scaleb(v.adjusted() - SIGNIFICANT_DIGITS + 1)
        ctx.rounding = decimal.ROUND_CEILING if up else decimal.ROUND_FLOOR
        q = v.quantize(quantum)
    out, step = Fraction(q), Fraction(quantum)
    if up:
        while out < x:
            out += step
    else:
        while out > x:
            out -= step
    return out


def round_up(x: Fraction) -> Fraction:
    """``x`` rounded up to :data:`SIGNIFICANT_DIGITS` significant digits (for long fractions)."""
    return _round_sig(x, up=True)


# --------------------------------------------------------------------------------------------
# Composition theorems
# --------------------------------------------------------------------------------------------


def basic_composition(costs: Iterable[PrivacyCost]) -> PrivacyCost:
    """Basic sequential composition: epsilons add, deltas add.

    Theorem (Dwork, McSherry, Nissim, Smith 2006; Dwork & Roth 2014, Theorem 3.16): running
    mechanisms that are (eps_i, delta_i)-DP, even adaptively, is (sum eps_i, sum delta_i)-DP.
    zCDP also composes additively (Bun & Steinke 2016, Lemma 2.3), so if every cost has a
    ``rho`` the result carries ``sum rho_i`` too. Exact: no rounding.
    """
    eps = _ZERO
    delta = _ZERO
    rho: Fraction | None = _ZERO
    n = 0
    for c in costs:
        if not isinstance(c, PrivacyCost):
            raise ValidationError(f"costs must be PrivacyCost values, not {type(c).__name__}")
        n += 1
        eps += c.epsilon
        delta += c.delta
        rho = None if (rho is None or c.rho is None) else rho + c.rho
    return PrivacyCost(eps, min(delta, _ONE), rho if n else None)


def _zcdp_term(j: int, rho: Decimal, log_inv_delta: Decimal) -> tuple[Decimal, Decimal]:
    """The CKS conversion's epsilon at the grid point ``alpha = 1 + 2**(j / 2**20)``.

    Returns (value, magnitude of its terms) in 80-digit arithmetic.
    """
    with decimal.localcontext(_ctx()):
        u = Decimal(j) / Decimal(1 << 20)
        log_am1 = u * _LN2  # ln(alpha - 1)
        am1 = log_am1.exp()  # alpha - 1
        alpha = am1 + 1
        log_alpha = alpha.ln()
        t1 = alpha * rho
        t2 = (log_inv_delta - log_alpha) / am1
        t3 = log_am1 - log_alpha  # ln(1 - 1/alpha)
        return t1 + t2 + t3, abs(t1) + abs(t2) + abs(log_am1) + abs(log_alpha)


with decimal.localcontext(_ctx()):
    _LN2 = Decimal(2).ln()

_J_LO = -48 << 20  # alpha - 1 = 2**-48
_J_HI = 64 << 20  # alpha - 1 = 2**64


@lru_cache(maxsize=4096)
def _zcdp_eps(rho: Fraction, delta: Fraction) -> Fraction:
    if rho == 0 or delta >= 1:
        return _ZERO
    r = _dec(rho)
    with decimal.localcontext(_ctx()):
        log_inv_delta = -_dec(delta).ln()
    memo: dict[int, tuple[Decimal, Decimal]] = {}

    def f(j: int) -> Decimal:
        if j not in memo:
            memo[j] = _zcdp_term(j, r, log_inv_delta)
        return memo[j][0]

    # f is unimodal in log(alpha - 1): ternary search over the fixed integer grid finds the
    # grid minimum; the grid does not depend on (rho, delta), so the result is monotone.
    lo, hi = _J_LO, _J_HI
    while hi - lo > 2:
        m1 = lo + (hi - lo) // 3
        m2 = hi - (hi - lo) // 3
        if f(m1) <= f(m2):
            hi = m2
        else:
            lo = m1
    best = min(range(lo, hi + 1), key=f)
    value, scale = memo[best]
    return _round_up(value, scale)


def zcdp_to_approx_dp(rho: Any, delta: Any) -> Fraction:
    """The epsilon such that ``rho``-zCDP implies (epsilon, ``delta``)-DP.

    Theorem (Canonne, Kamath, Steinke 2020, "The Discrete Gaussian for Differential Privacy",
    Corollary 13; arXiv:2004.00010): a rho-zCDP mechanism is (eps, delta)-DP for every
    alpha > 1 with

        eps = alpha * rho + (ln(1/delta) + (alpha - 1) ln(1 - 1/alpha) - ln(alpha)) / (alpha - 1).

    This is tighter than Bun & Steinke 2016 (Proposition 1.3: rho + 2 sqrt(rho ln(1/delta))).
    The infimum over alpha is taken over the fixed grid alpha = 1 + 2**(j / 2**20), j integer,
    |log2(alpha - 1)| <= 64 (relative grid step 7e-7, so the loss to the exact infimum is
    ~1e-13 relative); any alpha gives a valid bound. The result is rounded up (module rule).
    ``delta`` must be in (0, 1]: with delta = 0 no finite epsilon follows from zCDP.
    """
    r = to_fraction(rho, "rho")
    d = to_fraction(delta, "delta")
    if d == 0:
        raise ValidationError("delta must be positive to convert zCDP to (epsilon, delta)-DP")
    if d > 1:
        raise ValidationError(f"delta must be at most 1, got {_fmt(d)}")
    return _zcdp_eps(r, d)


def _zcdp_eps_float(rho: float, log_inv_delta: float) -> float:
    """Float version of the CKS conversion (for calibration searches only)."""

    def f(t: float) -> float:
        am1 = math.exp(t)
        a = 1.0 + am1
        return a * rho + (log_inv_delta - math.log(a)) / am1 + t - math.log(a)

    lo, hi = -48 * math.log(2), 64 * math.log(2)
    g = (math.sqrt(5) - 1) / 2
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = f(x1), f(x2)
    for _ in range(120):
        if f1 <= f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - g * (hi - lo)
            f1 = f(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + g * (hi - lo)
            f2 = f(x2)
    return max(0.0, min(f1, f2))


def zcdp_rho_for_epsilon(epsilon: Any, delta: Any) -> Fraction:
    """The largest rho (15 significant digits, rounded down) whose conversion fits epsilon.

    Guarantee: ``zcdp_to_approx_dp(result, delta) <= epsilon`` exactly (checked). Use it to
    calibrate a Gaussian release asked for at (epsilon, delta): noise with that rho is
    (epsilon, delta)-DP by :func:`zcdp_to_approx_dp`.
    """
    eps = validate_epsilon(epsilon)
    d = to_fraction(delta, "delta", positive=True, below_one=True)
    lid = math.log(d.denominator) - math.log(d.numerator)
    target = float(eps)
    lo, hi = 0.0, max(1.0, target)
    while _zcdp_eps_float(hi, lid) < target:
        hi *= 2.0
    guess, _ = bisect_floats(lambda rho: _zcdp_eps_float(rho, lid) <= target, lo, hi, 200)
    step = 1e-12
    for _ in range(60):
        rho = _round_down_sig(Fraction(guess))
        if rho > 0 and _zcdp_eps(rho, d) <= eps:
            return rho
        guess *= 1 - step
        step *= 4
    raise ValidationError("could not calibrate rho for this (epsilon, delta)")  # pragma: no cover


def _round_down_sig(x: Fraction) -> Fraction:
    return _round_sig(x, up=False)


def advanced_composition(eps: Any, delta: Any, k: int, delta_prime: Any) -> PrivacyCost:
    """k-fold adaptive composition of an (eps, delta)-DP mechanism, advanced theorem.

    Theorem (Dwork, Rothblum, Vadhan 2010; Dwork & Roth 2014, Theorem 3.20): for every
    delta' in (0, 1), k adaptive runs of an (eps, delta)-DP mechanism are
    (eps', k delta + delta')-DP with

        eps' = sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1).

    Returned exactly as the theorem states (eps' rounded up; the module rule); for large eps or
    small k basic composition (k eps) can be smaller, and both are valid.
    """
    e = to_fraction(eps, "eps")
    d = to_fraction(delta, "delta", below_one=True)
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or int(k) < 1:
        raise ValidationError("k must be a positive integer")
    kk = int(k)
    dp = to_fraction(delta_prime, "delta_prime", positive=True, below_one=True)
    if e == 0:
        eps_out = _ZERO
    else:
        with decimal.localcontext(_ctx()):
            ed = _dec(e)
            t1 = (2 * Decimal(kk) * (-_dec(dp).ln())).sqrt() * ed
            t2 = Decimal(kk) * ed * (ed.exp() - 1)
            eps_out = _round_up(t1 + t2, t1 + Decimal(kk) * ed * ed.exp())
    return PrivacyCost(eps_out, min(kk * d + dp, _ONE))


def poisson_subsampling(eps: Any, delta: Any, q: Any) -> PrivacyCost:
    """Privacy amplification by Poisson subsampling at rate q.

    Theorem (Li, Qardaji, Su 2012; Balle, Barthe, Gaboardi 2018, Theorem 8 for add/remove
    neighbours): if M is (eps, delta)-DP then running M on a Poisson sample (each unit kept
    independently with probability q) is (eps', q delta)-DP with

        eps' = ln(1 + q (e^eps - 1)).

    eps' is rounded up (module rule) and never exceeds eps; q = 0 gives (0, 0), q = 1 gives
    (eps, delta) exactly.
    """
    e = to_fraction(eps, "eps")
    d = to_fraction(delta, "delta", below_one=True)
    qq = to_fraction(q, "q")
    if qq > 1:
        raise ValidationError(f"q must be in [0, 1], got {_fmt(qq)}")
    if qq == 0:
        return PrivacyCost(_ZERO, _ZERO)
    if qq == 1 or e == 0:
        return PrivacyCost(e, d)
    with decimal.localcontext(_ctx()):
        ed = _dec(e)
        big = ed.exp()
        inner = 1 + _dec(qq) * (big - 1)
        val = inner.ln()
        eps_out = _round_up(val, _dec(qq) * big)
    return PrivacyCost(min(eps_out, e), qq * d)


def group_privacy(eps: Any, delta: Any, k: int) -> PrivacyCost:
    """The guarantee for groups of k units (e.g. a family, k rows of one person).

    Theorem (Dwork & Roth 2014, Theorem 2.2 for delta = 0; the delta term by chaining the
    definition k times, e.g. Vadhan 2017 "The Complexity of Differential Privacy", Lemma 2.2):
    an (eps, delta)-DP mechanism is (k eps, k e^((k - 1) eps) delta)-DP for datasets that differ
    in k units. k eps is exact; the delta term is rounded up (module rule).
    """
    e = to_fraction(eps, "eps")
    d = to_fraction(delta, "delta", below_one=True)
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or int(k) < 1:
        raise ValidationError("k must be a positive integer")
    kk = int(k)
    if d == 0 or kk == 1:
        return PrivacyCost(kk * e, d)
    with decimal.localcontext(_ctx()):
        v = Decimal(kk) * (Decimal(kk - 1) * _dec(e)).exp() * _dec(d)
        d_out = _round_up(v, v)
    return PrivacyCost(kk * e, min(d_out, _ONE))


# --------------------------------------------------------------------------------------------
# What epsilon means
# --------------------------------------------------------------------------------------------


def _check_eps_prior(epsilon: Any, prior: Any) -> tuple[float, float]:
    e = float(to_fraction(epsilon, "epsilon"))
    p = float(to_fraction(prior, "prior"))
    if p > 1:
        raise ValidationError(f"prior must be a probability in [0, 1], got {_fmt(p)}")
    return e, p


def posterior_bound(epsilon: Any, prior: Any) -> float:
    """The most an attacker's belief can rise after an epsilon-DP release.

    Theorem (Bayesian reading of DP; Kasiviswanathan & Smith 2014, Dwork & Roth 2014 §2.3):
    if an attacker believes a fact about one person with probability p before seeing an
    epsilon-DP release, then afterwards they believe it with probability at most

        p e^eps / (1 + p (e^eps - 1)).

    At eps = 1 a 50% prior rises to at most 73.1%. (With delta > 0 this holds except with
    probability about delta.)
    """
    e, p = _check_eps_prior(epsilon, prior)
    if p in (0.0, 1.0):
        return p
    # 1 / (1 + (1 - p) / p * e^-eps): stable for large eps.
    return 1.0 / (1.0 + (1.0 - p) / p * math.exp(-e))


def posterior_lower_bound(epsilon: Any, prior: Any) -> float:
    """The most an attacker's belief can fall after an epsilon-DP release (mirror image).

    Same theorem as :func:`posterior_bound`, for the complementary event: the posterior is at
    least p / (p + (1 - p) e^eps) = p e^-eps / (1 + p (e^-eps - 1)).
    """
    e, p = _check_eps_prior(epsilon, prior)
    if p in (0.0, 1.0):
        return p
    t = math.log1p(-p) - math.log(p) + e  # ln((1 - p) / p * e^eps)
    if t > 700:
        return math.exp(-t)
    return 1.0 / (1.0 + math.exp(t))


# --------------------------------------------------------------------------------------------
# Session spend
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpendTotals:
    """Running sums behind :func:`session_spend`, so a ledger can add one cost in O(1)."""

    pure_eps: Fraction = _ZERO
    all_delta: Fraction = _ZERO
    g_eps: Fraction = _ZERO
    g_delta: Fraction = _ZERO
    g_rho: Fraction = _ZERO
    any_g: bool = False

    def add(self, c: PrivacyCost) -> SpendTotals:
        """The totals with one more cost."""
        if c.rho is None:
            return SpendTotals(self.pure_eps + c.epsilon, self.all_delta + c.delta, self.g_eps,
                               self.g_delta, self.g_rho, self.any_g)
        return SpendTotals(self.pure_eps, self.all_delta + c.delta, self.g_eps + c.epsilon,
                           self.g_delta + c.delta, self.g_rho + c.rho, True)

    def spend(self) -> PrivacyCost:
        """The session spend for these totals (rule of :func:`session_spend`); computed once
        per totals (they are immutable)."""
        cached = self.__dict__.get("_spend")
        if cached is None:
            cached = self._spend_now()
            object.__setattr__(self, "_spend", cached)
        return cached

    def _spend_now(self) -> PrivacyCost:
        gauss = _ZERO
        if self.any_g:
            gauss = self.g_eps
            if self.g_delta > 0:
                gauss = min(gauss, _zcdp_eps(self.g_rho, min(self.g_delta, _ONE)))
        return PrivacyCost(self.pure_eps + gauss, min(self.all_delta, _ONE))


def session_spend(costs: Iterable[PrivacyCost]) -> PrivacyCost:
    """The (epsilon, delta) a session has spent on ``costs`` (every charge, in any status).

    Rule (sound by basic composition of two valid accountings):

    - spent_delta = sum of all deltas;
    - spent_epsilon = sum of epsilon of non-Gaussian costs
      + min(zcdp_to_approx_dp(sum rho_G, sum delta_G), sum epsilon_G),

    where G ranges over Gaussian costs (``rho`` set). The Gaussian releases together are
    sum-rho_G-zCDP (zCDP composition), hence (zcdp_to_approx_dp(...), sum delta_G)-DP, and also
    (sum eps_G, sum delta_G)-DP by basic composition; either bound is valid, so take the smaller.
    """
    totals = SpendTotals()
    for c in costs:
        totals = totals.add(c)
    return totals.spend()


__all__ = [
    "SIGNIFICANT_DIGITS",
    "Number",
    "PrivacyCost",
    "SpendTotals",
    "advanced_composition",
    "basic_composition",
    "group_privacy",
    "poisson_subsampling",
    "posterior_bound",
    "posterior_lower_bound",
    "round_up",
    "session_spend",
    "to_fraction",
    "validate_delta",
    "validate_epsilon",
    "zcdp_rho_for_epsilon",
    "zcdp_to_approx_dp",
]
