"""Pluggable privacy accountants: each release states its privacy loss as a :class:`PrivacyEvent`,
and a session's :class:`Accountant` composes the events of every release.

Three accountants, one interface (``start()`` gives empty running totals; ``totals.add(cost)``
the totals with one more release; ``totals.spend()`` the composed ``(epsilon, delta)``):

* ``"basic"`` (:class:`BasicAccountant`, always for a pure-DP budget, delta = 0): today's exact
  rule, :func:`~dpframe.core.accounting.session_spend`: epsilons and deltas add as Fractions
  (Gaussian releases in zCDP). Nothing is rounded, nothing changes for pure-DP sessions.
* ``"pld"`` (:class:`PLDAccountant`, the default when delta > 0): privacy loss distributions
  (Meiser and Mohammadi 2018; Koskela, Jalko and Honkela 2020; Doroshenko, Ghazi, Kamath, Kumar
  and Manurangsi 2022, "Connect the dots"), composed by Google's ``dp_accounting.pld`` with
  pessimistic discretisation (every privacy loss rounded *up* to the grid, truncated tail mass
  put at infinity), so the numbers are upper bounds. The releases' non-Gaussian components
  are composed in release order, each onto the PLD kept from those before
  (:meth:`ComposedTotals.approx_pld`: a session pays one ``compose`` per new component).
* ``"rdp"`` (:class:`RDPAccountant`): Renyi DP (Mironov 2017) by ``dp_accounting.rdp``.

What each kind of event composes as (``Component``):

* ``laplace``: two-sided geometric noise, integer L1 sensitivity ``a`` and scale ``b``: it is
  (a / b)-DP, and its privacy loss takes the values +-a/b only when a = 1; for any sensitivity
  and dimension the canonical pair of an (a / b, 0)-DP mechanism dominates it (Kairouz, Oh and
  Viswanath 2015, Thm 2.1), which is what the PLD composes (exact for counts: sensitivity 1).
* ``gaussian``: discrete Gaussian of variance ``b`` on an integer vector moved by at most ``a``
  in L2. By Lemma B of :mod:`dpframe.core.noise.gaussian` each of its d = floor(a^2) moving
  coordinates
  is, pointwise within a factor e^(L/2), K applied to a continuous Gaussian of variance
  b - t^2 (L = 2 tau / (1 - tau), tau = 2 e^(-2 pi^2 t^2)). The continuous parts of all Gaussian
  events compose exactly as one Gaussian with mu^2 = sum a^2 / (b - t^2) (Dong, Roth and Su 2022);
  replacing them costs, as in Theorem C, epsilon + 2P and delta x e^P with P = sum d L, for the
  whole adaptive composition (the density ratio of the real and the smoothed runs is within
  e^(P/2) each way at every output). t^2 is the smallest of ``T2_CANDIDATES`` with d L <= 1e-12.
* ``approx``: any (a, b) = (epsilon, delta)-DP mechanism (exponential mechanism, key selection,
  subsampled or diagnostic releases, ledgers migrated from (epsilon, delta) records): its
  canonical dominating pair (``from_privacy_parameters``).

Rounding (PLD and RDP). Inputs are rounded up to the next float; dp_accounting's float results
are widened by 1e-9 relative and 1e-14 absolute (delta) or 1e-9 (epsilon), then rounded up to
15 significant digits as exact Fractions (:func:`~dpframe.core.accounting.round_up`). The
session's spend is never above today's basic/zCDP rule either: both bounds are valid for the
same releases, and the spend keeps the better one coordinate by coordinate
(:class:`ComposedTotals`).

This module does not know pandas.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any, Literal, Protocol, cast

from ..errors import ValidationError
from .accounting import PrivacyCost, SpendTotals, round_up

#: The accountants a session accepts by name.
ACCOUNTANTS = ("basic", "pld", "rdp")
AccountantName = Literal["basic", "pld", "rdp"]
#: The version of :meth:`PrivacyEvent.to_json`'s format (stored in ledgers).
EVENT_VERSION = 1
#: The kinds of :class:`Component`.
KINDS = ("laplace", "gaussian", "approx")
#: PLD discretisation interval of the privacy loss (dp_accounting's default).
VALUE_DISCRETIZATION = 1e-4
#: Smoothing widths tried for a Gaussian component (as in core/noise/gaussian.py's Theorem C).
T2_CANDIDATES = (Fraction(1, 4), Fraction(1, 2), Fraction(1), Fraction(2), Fraction(4),
                 Fraction(16))
_PENALTY_CAP = 1e-12
_REL = 1e-9
_ABS_DELTA = 1e-14
_TINY = Decimal("1e-300")
#: Above these totals (the sum of the (epsilon, delta) and Laplace events' epsilons; the
#: Gaussian events' mu^2) the PLD is not computed (its support would be huge, and basic
#: composition is as good there): the accountant then states nothing and the basic bound holds.
_PLD_MAX_EPS = 64.0
_PLD_MAX_MU2 = 256.0
_NOTHING = (Fraction(10 ** 9), Fraction(1))


@dataclass(frozen=True)
class Component:
    """One mechanism's privacy loss: ``kind`` and two exact numbers (see the module doc):
    laplace (integer L1 sensitivity, scale), gaussian (integer L2 sensitivity, variance),
    approx (epsilon, delta)."""

    kind: str
    a: Fraction
    b: Fraction

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValidationError(f"unknown privacy event kind {self.kind!r}")
        a, b = Fraction(self.a), Fraction(self.b)
        if a < 0 or b < 0 or (self.kind != "approx" and b == 0) or (
                self.kind == "approx" and b > 1):
            raise ValidationError(f"invalid {self.kind} privacy event parameters")
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)

    @property
    def pure_epsilon(self) -> Fraction | None:
        """The epsilon of a pure-DP component (laplace, or approx with delta 0), else None."""
        if self.kind == "laplace":
            return self.a / self.b
        if self.kind == "approx" and self.b == 0:
            return self.a
        return None


@dataclass(frozen=True)
class PrivacyEvent:
    """A release's privacy loss: the components it composes (its noises, or one (epsilon,
    delta) statement). Serialised by :meth:`to_json` (versioned) into ledgers."""

    parts: tuple[Component, ...]

    @classmethod
    def approx(cls, epsilon: Fraction, delta: Fraction) -> PrivacyEvent:
        """A generic (epsilon, delta)-DP event."""
        return cls((Component("approx", epsilon, delta),))

    def to_json(self) -> dict[str, Any]:
        """``{"v": 1, "parts": [[kind, "a", "b"], ...]}`` with exact fractions as text."""
        return {"v": EVENT_VERSION,
                "parts": [[p.kind, _ftext(p.a), _ftext(p.b)] for p in self.parts]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PrivacyEvent:
        """The event :meth:`to_json` wrote; ``ValidationError`` for another version or form."""
        if not isinstance(data, Mapping) or data.get("v") != EVENT_VERSION:
            raise ValidationError("unknown privacy event format")
        try:
            return cls(tuple(Component(str(k), Fraction(a), Fraction(b))
                             for k, a, b in data["parts"]))
        except (TypeError, ValueError, KeyError, ZeroDivisionError) as exc:
            raise ValidationError("malformed privacy event") from exc

    def to_dp_event(self) -> Any:
        """The event as a ``dp_accounting.DpEvent`` (for interoperation): laplace as
        ``DiscreteLaplaceDpEvent``, gaussian as the ``GaussianDpEvent`` of its continuous
        smoothing (noise multiplier sqrt(b) / a), approx as ``UnsupportedDpEvent`` (dp_accounting
        has no (epsilon, delta) event: dpframe composes those with ``from_privacy_parameters``)."""
        import dp_accounting

        out: list[Any] = []
        for p in self.parts:
            if p.kind == "laplace":
                out.append(dp_accounting.dp_event.DiscreteLaplaceDpEvent(
                    noise_parameter=float(1 / p.b), sensitivity=int(p.a)))
            elif p.kind == "gaussian":
                out.append(dp_accounting.GaussianDpEvent(math.sqrt(float(p.b)) / float(p.a)))
            else:
                out.append(dp_accounting.UnsupportedDpEvent())
        return out[0] if len(out) == 1 else dp_accounting.ComposedDpEvent(out)


def _ftext(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def event_of(cost: PrivacyCost) -> PrivacyEvent:
    """The event a cost states, or its generic (epsilon, delta) event."""
    ev = getattr(cost, "event", None)
    return ev if isinstance(ev, PrivacyEvent) else PrivacyEvent.approx(cost.epsilon, cost.delta)


def _penalty(t2: Fraction) -> float:
    tau = 2 * math.exp(-2 * math.pi ** 2 * float(t2))
    return 2 * tau / (1 - tau)


def gaussian_smoothing(a: Fraction, b: Fraction) -> tuple[float, float] | None:
    """A Gaussian component's (mu^2 contribution a^2 / (b - t^2), penalty d L), both rounded up,
    or None when no smoothing width fits (tiny noise: the event is then composed as approx)."""
    d = math.floor(a * a)
    for t2 in T2_CANDIDATES:
        pen = d * _penalty(t2)
        if t2 < b and pen <= _PENALTY_CAP:
            mu2 = a * a / (b - t2)
            return math.nextafter(float(mu2), math.inf), pen * (1 + _REL)
    return None


def _up(x: float) -> float:
    return math.nextafter(x, math.inf) if x > 0 else 0.0


# --------------------------------------------------------------------------------------------
# Running totals
# --------------------------------------------------------------------------------------------


class Totals(Protocol):
    """Running totals of an accountant: immutable; ``add`` gives new totals."""

    def add(self, c: PrivacyCost) -> Totals: ...  # pragma: no cover

    def spend(self) -> PrivacyCost: ...  # pragma: no cover


class _Prefix:
    """One release's non-Gaussian components (``fresh``, as (epsilon, delta) keys) after the
    link ``prev``; once its PLD (of every component up to here) is computed it keeps it and
    forgets ``prev``, so the links before it, and their PLDs, can be freed."""

    __slots__ = ("done", "fresh", "pld", "prev")

    def __init__(self, prev: _Prefix | None, fresh: tuple[tuple[Fraction, Fraction], ...]
                 ) -> None:
        self.prev, self.fresh, self.pld, self.done = prev, fresh, None, False

    def settle(self, pld: Any) -> None:
        """Keep ``pld`` as the composition up to here."""
        self.pld, self.done, self.prev = pld, True, None


@dataclass(frozen=True)
class ComposedTotals:
    """The events so far, grouped (pure and approx components by their (epsilon, delta) with a
    count; Gaussian components summed into mu^2 and the smoothing penalty), beside today's
    exact :class:`~dpframe.core.accounting.SpendTotals`. ``spend()`` is the basic (exact) spend
    while it fits the budget, so sessions read as before until basic composition would refuse;
    from then on it is, coordinate by coordinate, the better of two valid bounds for the same
    releases:

    * spent epsilon = min(the accountant's epsilon at the budget's delta, the basic epsilon when
      the basic delta is within the budget's delta): the releases are (spent epsilon, budget
      delta)-DP;
    * spent delta = min(the accountant's delta at the budget's epsilon, the basic delta when the
      basic epsilon is within the budget's epsilon): they are (budget epsilon, spent delta)-DP.

    A charge fits when both stay within the budget (the issue's rule: delta at the budget's
    epsilon <= the budget's delta)."""

    accountant: Accountant
    basic: SpendTotals = field(default_factory=SpendTotals)
    approx: tuple[tuple[tuple[Fraction, Fraction], int], ...] = ()
    gauss: tuple[tuple[Fraction, Fraction], ...] = ()
    n: int = 0
    #: The releases' non-Gaussian components in order, as a chain of :class:`_Prefix` (the
    #: PLD is composed incrementally along it, :meth:`approx_pld`); None before any release.
    chain: _Prefix | None = field(default=None, compare=False, repr=False)

    def add(self, c: PrivacyCost) -> ComposedTotals:
        """The totals with one more release (the same object for the same cost added again to
        these totals: a session's check and its charge share one composition)."""
        parts = _components(c)
        memo = self.__dict__.get("_next")
        key = (c, tuple(parts))
        if memo is not None and memo[0] == key:
            return cast(ComposedTotals, memo[1])
        counts = Counter(dict(self.approx))
        gauss = list(self.gauss)
        fresh = []
        for p in parts:
            if p.kind == "gaussian":
                gauss.append((p.a, p.b))
            else:
                eps = p.pure_epsilon
                k = (eps, Fraction(0)) if eps is not None else (p.a, p.b)
                counts[k] += 1
                fresh.append(k)
        out = ComposedTotals(self.accountant, self.basic.add(c), tuple(sorted(counts.items())),
                             tuple(gauss), self.n + 1, _Prefix(self.chain, tuple(fresh)))
        object.__setattr__(self, "_next", (key, out))
        return out

    def approx_pld(self) -> Any:
        """The PLD of every non-Gaussian component so far (None when there is none), composed
        in release order: each release's components composed onto the PLD of the releases
        before it (``dp_accounting``'s ``compose``, pessimistic, its default tail truncation).
        Incremental: computed from the nearest earlier link of the chain that holds its PLD,
        so a session composes only each new event; from the first release when none does.
        Either way the same operations in the same order, so the result is the same to the
        bit."""
        todo: list[_Prefix] = []
        node = self.chain
        while node is not None and not node.done:
            todo.append(node)
            node = node.prev
        out = None if node is None else node.pld
        for link in reversed(todo):
            for key in link.fresh:
                one = _single_pld(*key)
                out = one if out is None else out.compose(one)
        if todo:
            todo[0].settle(out)
        return out

    def smoothed(self) -> tuple[float, float]:
        """The Gaussian components' (mu^2, penalty) after smoothing (module doc), rounded up."""
        mu2, pen = 0.0, 0.0
        for a, b in self.gauss:
            smooth = gaussian_smoothing(a, b)
            assert smooth is not None  # _components made such an event approx
            mu2, pen = _up(mu2 + smooth[0]), _up(pen + smooth[1])
        return mu2, pen

    def spend(self) -> PrivacyCost:
        """The composed spend (computed once per totals: they are immutable)."""
        cached = self.__dict__.get("_spend")
        if cached is None:
            cached = self._spend_now()
            object.__setattr__(self, "_spend", cached)
        return cached

    def composed(self) -> tuple[Fraction, Fraction]:
        """The accountant's own (epsilon at the budget's delta, delta at the budget's epsilon),
        without the basic bound (for reports: what the accountant saves)."""
        if self.n == 0:
            return Fraction(0), Fraction(0)
        cached = self.__dict__.get("_composed")
        if cached is None:
            cached = self.accountant.compose(self)
            object.__setattr__(self, "_composed", cached)
        return cast(tuple[Fraction, Fraction], cached)

    def _spend_now(self) -> PrivacyCost:
        basic = self.basic.spend()
        te, td = self.accountant.budget
        if self.n == 0 or (basic.epsilon <= te and basic.delta <= td):
            return basic  # exact, as before, while basic composition fits
        eps, delta = self.composed()
        if basic.delta <= td:
            eps = min(eps, basic.epsilon)
        if basic.epsilon <= te:
            delta = min(delta, basic.delta)
        return PrivacyCost(eps, min(delta, Fraction(1)))


def _components(cost: PrivacyCost) -> list[Component]:
    """The components of ``cost``'s event; its stated (epsilon, delta) instead when a Gaussian
    component has no smoothing width (tiny noise: its rho-zCDP is not a PLD)."""
    parts = list(event_of(cost).parts)
    if any(p.kind == "gaussian" and gaussian_smoothing(p.a, p.b) is None for p in parts):
        return [Component("approx", cost.epsilon, cost.delta)]
    return parts


# --------------------------------------------------------------------------------------------
# Accountants
# --------------------------------------------------------------------------------------------


class Accountant:
    """A composition rule for a budget ``(epsilon, delta)``: ``start()`` gives empty totals."""

    name: str = ""

    def __init__(self, budget: tuple[Fraction, Fraction]) -> None:
        self.budget = (Fraction(budget[0]), Fraction(budget[1]))

    def start(self) -> Totals:
        """Empty running totals."""
        return ComposedTotals(self)

    def compose(self, totals: ComposedTotals) -> tuple[Fraction, Fraction]:
        """(epsilon at the budget's delta, delta at the budget's epsilon) of ``totals``."""
        raise NotImplementedError  # pragma: no cover

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class BasicAccountant(Accountant):
    """Basic composition, exact (today's :func:`~dpframe.core.accounting.session_spend`)."""

    name = "basic"

    def start(self) -> Totals:
        """Empty exact totals."""
        return SpendTotals()


class PLDAccountant(Accountant):
    """Privacy loss distributions (``dp_accounting.pld``), pessimistic discretisation with
    interval :data:`VALUE_DISCRETIZATION` (see the module doc for rounding)."""

    name = "pld"

    def compose(self, totals: ComposedTotals) -> tuple[Fraction, Fraction]:
        """(epsilon at the budget's delta, delta at the budget's epsilon), rounded up."""
        te, td = self.budget
        if not totals.approx:  # Gaussian noise only: Theorem C over every part, proven
            return _gaussian_numbers(totals.gauss, te, td)
        mu2, penalty = totals.smoothed()
        if sum(float(e) * k for (e, _), k in totals.approx) > _PLD_MAX_EPS or mu2 > _PLD_MAX_MU2:
            return _NOTHING  # a PLD this wide is huge and useless: the basic bound decides
        return _pld_numbers(totals.approx_pld(), mu2, penalty, float(te), float(td))


class RDPAccountant(Accountant):
    """Renyi DP (``dp_accounting.rdp``): laplace components as (eps^2 / 2)-zCDP (Bun and
    Steinke 2016, Prop. 1.4), gaussian ones as the discrete Gaussian's a^2 / (2 b)-zCDP
    (Canonne, Kamath and Steinke 2020, Thm 4); approx components with delta > 0 are added by
    basic composition."""

    name = "rdp"

    def compose(self, totals: ComposedTotals) -> tuple[Fraction, Fraction]:
        """(epsilon at the budget's delta, delta at the budget's epsilon), rounded up."""
        te, td = self.budget
        return _rdp_numbers(totals, float(te), float(td))


def accountant_for(name: str | Accountant | None, budget: tuple[Fraction, Fraction]
                   ) -> Accountant:
    """The accountant a session uses: ``"basic"`` whenever the budget's delta is 0 (pure DP:
    exact), otherwise ``name`` (``"pld"`` when None). ``ValidationError`` for another name."""
    if isinstance(name, Accountant):
        return name if budget[1] > 0 else BasicAccountant(budget)
    if name is not None and name not in ACCOUNTANTS:
        raise ValidationError(f"accountant must be one of {', '.join(map(repr, ACCOUNTANTS))}, "
                              f"got {name!r}")
    if budget[1] == 0 or name == "basic":
        return BasicAccountant(budget)
    return RDPAccountant(budget) if name == "rdp" else PLDAccountant(budget)


# --------------------------------------------------------------------------------------------
# dp_accounting
# --------------------------------------------------------------------------------------------


def _widen_delta(x: float) -> Fraction:
    if not math.isfinite(x) or x >= 1:
        return Fraction(1)
    return round_up(Fraction(max(x, 0.0) * (1 + _REL) + _ABS_DELTA))


def _widen_eps(x: float) -> Fraction:
    if not math.isfinite(x):
        return Fraction(10 ** 9)
    return round_up(Fraction(max(x, 0.0) * (1 + _REL) + _REL))


@lru_cache(maxsize=1024)
def _single_pld(eps: Fraction, delta: Fraction) -> Any:
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld

    params = common.DifferentialPrivacyParameters(_up(float(eps)), min(_up(float(delta)), 1.0))
    return pld.from_privacy_parameters(params, value_discretization_interval=VALUE_DISCRETIZATION)


@lru_cache(maxsize=64)
def _gaussian_pld(mu2: float) -> Any:
    """The PLD of one Gaussian of sensitivity 1 and noise 1 / sqrt(``mu2``): every Gaussian
    part composed (their continuous smoothings compose exactly so)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    return pld.from_gaussian_mechanism(standard_deviation=1 / math.sqrt(mu2),
                                       value_discretization_interval=VALUE_DISCRETIZATION)


def _pld_numbers(approx_pld: Any, mu2: float, penalty: float, te: float, td: float
                 ) -> tuple[Fraction, Fraction]:
    """(epsilon at ``td``, delta at ``te``) of the non-Gaussian parts' PLD composed with the
    Gaussian parts' (mu^2, smoothing penalty), rounded up."""
    composed = approx_pld
    if mu2 > 0:
        g = _gaussian_pld(mu2)
        composed = g if composed is None else composed.compose(g)
    if composed is None:
        return Fraction(0), Fraction(0)
    shift = 2 * penalty
    delta = 1.0 if te - shift <= 0 else math.exp(penalty) * composed.get_delta_for_epsilon(
        te - shift)
    target = td * math.exp(-penalty) * (1 - _REL)
    eps = composed.get_epsilon_for_delta(target) + shift if target > 0 else math.inf
    return _widen_eps(eps), _widen_delta(delta)


def _gaussian_numbers(gauss: tuple[tuple[Fraction, Fraction], ...], te: Fraction,
                      td: Fraction) -> tuple[Fraction, Fraction]:
    """Theorem C of :mod:`dpframe.core.noise.gaussian` for all Gaussian parts of every release (the
    density-ratio argument holds for adaptive composition; Gaussian DP composes adaptively):
    proven in decimal arithmetic, rounded up."""
    from .noise.gaussian import discrete_delta_bound, discrete_epsilon

    parts = list(gauss)
    # below 1e-300 the bound is rounded up to 1e-300 (a short exact number)
    bound = Fraction(1) if te <= 0 else Fraction(max(discrete_delta_bound(te, parts),
                                                     _TINY))
    delta = min(round_up(bound), Fraction(1))
    eps = discrete_epsilon(parts, td) if td > 0 else None
    return (Fraction(10 ** 9) if eps is None else eps), delta


def _rdp_numbers(totals: ComposedTotals, te: float, td: float) -> tuple[Fraction, Fraction]:
    import dp_accounting
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    acc = rdp.RdpAccountant()
    extra_eps, extra_delta = 0.0, 0.0
    for (eps, delta), count in totals.approx:
        if delta == 0:
            acc.compose(dp_accounting.ZCDpEvent(_up(float(eps) ** 2 / 2)), count)
        else:
            extra_eps += _up(float(eps)) * count
            extra_delta += _up(float(delta)) * count
    rho = sum((a * a / (2 * b) for a, b in totals.gauss), Fraction(0))
    if rho > 0:  # the discrete Gaussian's rho-zCDP (CKS 2020, Thm 4)
        acc.compose(dp_accounting.ZCDpEvent(_up(float(rho))))
    left = td - extra_delta
    e_out = float(acc.get_epsilon(left * (1 - _REL))) + extra_eps if left > 0 else math.inf
    d_out = float(acc.get_delta(te - extra_eps)) + extra_delta if te - extra_eps > 0 else 1.0
    return _widen_eps(e_out), _widen_delta(d_out)


def _split_cost(eps: float, gaussian_delta: Fraction | None) -> PrivacyCost | None:
    e = Fraction(eps)
    if gaussian_delta is None:
        return PrivacyCost(e, 0, event=PrivacyEvent.approx(e, Fraction(0)))
    from .noise.gaussian import analytic_sigma2

    s2 = analytic_sigma2(e, gaussian_delta, Fraction(1)) if e > 0 else None
    if s2 is None:
        return None
    return PrivacyCost(e, gaussian_delta,
                       event=PrivacyEvent((Component("gaussian", Fraction(1), s2),)))


def split_epsilon(start: Totals, total: tuple[Fraction, Fraction],
                  last_spent: tuple[Fraction, Fraction], n: int,
                  gaussian_delta: Fraction | None = None) -> float:
    """The largest epsilon (6 significant digits, rounded down) such that ``n`` more pure
    epsilon-DP releases (Laplace noise) after the totals ``start`` keep the spend (never below
    ``last_spent``) within ``total``; 0.0 when none fits. With ``gaussian_delta``: ``n``
    Gaussian counts (L2 sensitivity 1) each asked for at (epsilon, ``gaussian_delta``), their
    noise predicted by the analytic calibration
    (:func:`~dpframe.core.noise.gaussian.analytic_sigma2`).
    Bisection in floats, each candidate checked by the accountant itself."""
    def fits(eps: float) -> bool:
        t = start
        cost = _split_cost(eps, gaussian_delta)
        if cost is None:
            return False
        for _ in range(n):
            t = t.add(cost)
        s = t.spend()
        return max(s.epsilon, last_spent[0]) <= total[0] and max(s.delta, last_spent[1]) <= total[1]

    lo, hi = 0.0, float(total[0])
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        if hi - lo <= lo * 1e-8:
            break
    if lo <= 0:
        return 0.0
    digits = 5 - math.floor(math.log10(lo))
    out = math.floor(lo * 10 ** digits) / 10 ** digits
    return out if out > 0 and fits(out) else 0.0


def compose_events(events: Iterable[PrivacyEvent], accountant: Accountant
                   ) -> tuple[Fraction, Fraction]:
    """The (epsilon at the budget's delta, delta at the budget's epsilon) of ``events``
    under ``accountant`` alone (no basic bound; for tests and benchmarks)."""
    totals = ComposedTotals(accountant)
    for ev in events:
        totals = totals.add(PrivacyCost(0, 0, event=ev))
    return totals.composed()


__all__ = [
    "ACCOUNTANTS",
    "EVENT_VERSION",
    "Accountant",
    "AccountantName",
    "BasicAccountant",
    "Component",
    "ComposedTotals",
    "PLDAccountant",
    "PrivacyEvent",
    "RDPAccountant",
    "Totals",
    "accountant_for",
    "compose_events",
    "event_of",
    "gaussian_smoothing",
    "split_epsilon",
]
