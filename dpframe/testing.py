"""Empirical privacy testing: statistically sound lower bounds on the epsilon of a release.

Use it to check that your own pipeline is no less private than it claims. A mechanism ``M`` is
(epsilon, delta)-DP when, for every pair of neighbouring datasets ``D, D'`` and every event
``E``, ``P[M(D) in E] <= e^epsilon P[M(D') in E] + delta``. Running ``M`` many times on a
worst-case pair and counting how often an event happens therefore gives a lower bound on the
epsilon the mechanism really has:

    epsilon >= ln((P[M(D) in E] - delta) / P[M(D') in E]).

The two probabilities are only estimated, so the bound uses the Clopper-Pearson interval (exact
binomial confidence bounds): the lower confidence bound of the numerator and the upper bound of
the denominator. Every event tried spends part of the error probability ``alpha`` (Bonferroni),
and events chosen by looking at the data are chosen on a *calibration* half of the draws and
evaluated on the other, independent half, so the reported bound holds with probability at
least ``1 - alpha`` whatever the selection did.

To audit your own release:

1. Build two neighbouring datasets ``D`` and ``D'`` that differ in one privacy unit, chosen so
   that the unit moves the output as much as it can (a row at a bound, a unit in every group it
   may touch).
2. Write two functions without arguments that run the release once on ``D`` (and on ``D'``)
   with a fresh session each time and return the released statistic as an array of
   independent draws (one number, or one per public group whose groups all hold the same
   worst-case data).
3. Pass them to :func:`audit_release` with the epsilon (and delta) the release claims, i.e.
   what its session was charged. ``result.violation`` is True when the bound exceeds the claim.

A bound above the claim proves, at confidence ``1 - alpha``, that the release is less private
than it says: a privacy bug. A bound below the claim is the expected outcome; it shows no
violation, it does not prove privacy (the proofs do that). Run a deliberately broken variant
(less noise, a smaller sensitivity) through the same audit with ``expect_violation=True`` to
check that your audit has the power to fail.

Needs numpy only; scipy, when installed, gives the beta quantiles (else a pure-Python
bisection). Seeded sessions make audits reproducible; their noise must never be published.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .core.noise.mechanisms import normal_quantile

__all__ = [
    "DEFAULT_ALPHA",
    "AuditResult",
    "Event",
    "EventBound",
    "Threshold",
    "audit_release",
    "choose_thresholds",
    "clopper_pearson",
    "epsilon_lower_bound",
    "event_bounds",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
#: An event: maps an array of outputs to whether each output lies in the event.
Event = Callable[[FloatArray], BoolArray]

#: Default error probability of an audit: the bound holds with probability >= 1 - alpha.
DEFAULT_ALPHA = 1e-3


def _require_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError("alpha must be in (0, 1)")


# ------------------------------------------------------------------------------------------------
# Clopper-Pearson intervals
# ------------------------------------------------------------------------------------------------


def _beta_cf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta function (modified Lentz method).

    ``I_x(a, b) = x^a (1-x)^b / (a B(a, b)) / (1 + d_1 / (1 + d_2 / (1 + ...)))`` with
    ``d_{2m+1} = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1))`` and ``d_{2m} = m(b-m) x /
    ((a+2m-1)(a+2m))``; it converges fast for ``x < (a+1)/(a+b+2)``.
    """
    tiny = 1e-300
    c = 1.0
    d = 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1_000_000):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta function ``I_x(a, b)`` (pure Python)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (a * math.log(x) + b * math.log1p(-x)
                 - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_cf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_cf(b, a, 1.0 - x) / b


def _beta_quantile_pure(q: float, a: float, b: float, *, upper: bool) -> float:
    """``x`` with ``I_x(a, b) = q`` by bisection (``I_x`` increases in ``x``).

    Returns the end of the final bracket on the conservative side: the upper end when
    ``upper`` (an upper confidence bound), the lower end otherwise.
    """
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if _betainc(a, b, mid) < q:
            lo = mid
        else:
            hi = mid
    return hi if upper else lo


def _beta_quantile(q: float, a: float, b: float, *, upper: bool) -> float:
    """The ``q`` quantile of Beta(a, b): scipy's when installed, else the bisection."""
    try:
        from scipy.stats import beta
    except ImportError:  # pragma: no cover - scipy is a dev dependency
        return _beta_quantile_pure(q, a, b, upper=upper)
    return float(beta.ppf(q, a, b))


#: Both ends are moved outward by this relative amount, which absorbs the rounding of the beta
#: quantiles (lgamma of arguments near 1e6 is only accurate to about 1e-9 relative).
_OUTWARD = 1e-7


def clopper_pearson(k: int, n: int, alpha: float, *, pure: bool = False) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval for a binomial proportion: ``k`` successes in ``n``.

    The interval covers the true proportion with probability at least ``1 - alpha``; each end
    fails with probability at most ``alpha / 2`` (so each end alone is a one-sided bound at
    level ``1 - alpha / 2``). ``lo`` is the ``alpha/2`` quantile of Beta(k, n-k+1) (0 when
    k = 0), ``hi`` the ``1 - alpha/2`` quantile of Beta(k+1, n-k) (1 when k = n). Both ends are
    rounded outward by a relative 1e-7.

    :param k: number of successes, ``0 <= k <= n``
    :param n: number of trials, positive
    :param alpha: error probability of the interval, in (0, 1)
    :param pure: compute the beta quantiles by a pure-Python bisection of the regularized
        incomplete beta function even when scipy is installed
    :returns: ``(lo, hi)``, the ends of the interval
    :raises ValueError: ``k``, ``n`` or ``alpha`` out of range
    """
    if n <= 0 or not 0 <= k <= n:
        raise ValueError("need 0 <= k <= n and n > 0")
    _require_alpha(alpha)
    quantile = _beta_quantile_pure if pure else _beta_quantile
    lo = 0.0 if k == 0 else quantile(alpha / 2, k, n - k + 1, upper=False) * (1 - _OUTWARD)
    hi = 1.0 if k == n else quantile(1 - alpha / 2, k + 1, n - k, upper=True) * (1 + _OUTWARD)
    return max(0.0, lo), min(1.0, hi)


# ------------------------------------------------------------------------------------------------
# Events and bounds
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Threshold:
    """The event ``output > t`` (its complement ``output <= t`` is always tried too)."""

    t: float

    def __call__(self, x: FloatArray) -> BoolArray:
        return np.asarray(x > self.t, dtype=bool)

    def __str__(self) -> str:
        return "released" if self.t == -math.inf else f"output > {self.t:.6g}"

    def complement(self) -> str:
        """The name of the complementary event ``output <= t``."""
        return "not released" if self.t == -math.inf else f"output <= {self.t:.6g}"


@dataclass(frozen=True)
class EventBound:
    """The best bound found over a family of events, and where it came from."""

    eps_lower_bound: float
    event: str
    direction: str            # "D vs D'" (numerator from D) or "D' vs D"
    k_num: int                # occurrences of the event among the numerator's draws
    k_den: int
    n: int                    # draws per dataset used for the bound
    p_num: tuple[float, float]  # CP interval of the numerator probability
    p_den: tuple[float, float]
    events_tried: int
    delta_lower_bound: float | None = None


def _log_ratio(num_lo: float, den_hi: float, delta: float) -> float:
    if num_lo - delta <= 0.0:
        return -math.inf
    return math.log((num_lo - delta) / den_hi)


def _checked_events(xd: FloatArray, xd2: FloatArray, events: Event | Sequence[Event],
                    alpha: float, delta: float) -> list[Event]:
    """``events`` as a list, once the draws and the parameters are checked."""
    if xd.size == 0 or xd2.size == 0:
        raise ValueError("need outputs from both datasets")
    evs: list[Event] = [events] if callable(events) else list(events)
    if not evs:
        raise ValueError("need at least one event")
    _require_alpha(alpha)
    if not 0 <= delta < 1:
        raise ValueError("delta must be in [0, 1)")
    return evs


def _event_candidates(ev: Event, xd: FloatArray, xd2: FloatArray, a: float, delta: float,
                      events_tried: int, pure: bool) -> list[EventBound]:
    """The bounds from one event at level ``1 - a``: the event and its complement, each with
    the numerator from ``D`` and from ``D'`` (all four from the same two intervals)."""
    nd, nd2 = xd.size, xd2.size
    kd = int(np.count_nonzero(ev(xd)))
    kd2 = int(np.count_nonzero(ev(xd2)))
    d = clopper_pearson(kd, nd, a, pure=pure)
    d2 = clopper_pearson(kd2, nd2, a, pure=pure)
    d_not, d2_not = (1 - d[1], 1 - d[0]), (1 - d2[1], 1 - d2[0])
    name = str(ev)
    comp = ev.complement() if isinstance(ev, Threshold) else f"not ({name})"
    sides = [
        (name, "D vs D'", kd, kd2, d, d2),
        (name, "D' vs D", kd2, kd, d2, d),
        (comp, "D vs D'", nd - kd, nd2 - kd2, d_not, d2_not),
        (comp, "D' vs D", nd2 - kd2, nd - kd, d2_not, d_not),
    ]
    return [EventBound(_log_ratio(pn[0], pd_[1], delta), ename, direction, kn, kden,
                       min(nd, nd2), pn, pd_, events_tried)
            for ename, direction, kn, kden, pn, pd_ in sides]


def event_bounds(outputs_d: npt.ArrayLike, outputs_d2: npt.ArrayLike,
                 events: Event | Sequence[Event], alpha: float, delta: float = 0.0,
                 claimed_epsilon: float | None = None, *, pure: bool = False) -> EventBound:
    """The best epsilon lower bound over ``events``, their complements and both directions.

    For each event the two-sided Clopper-Pearson intervals of ``P[M(D) in E]`` and
    ``P[M(D') in E]`` are computed at level ``1 - alpha / m`` (``m`` events: Bonferroni), so
    all ``2m`` intervals hold together with probability ``>= 1 - alpha``; the bounds for the
    complements and for both directions are functions of the same intervals, so the maximum
    over all of them holds with that probability too. The events must not have been chosen by
    looking at these outputs.

    :param outputs_d: draws of the release's statistic on ``D``
    :param outputs_d2: draws on the neighbouring ``D'``
    :param events: one event or several (a :class:`Threshold` or any function from an array
        of outputs to a boolean array)
    :param alpha: error probability of the bound, in (0, 1)
    :param delta: the claimed delta, in [0, 1), subtracted in the bound
    :param claimed_epsilon: when given, also the largest ``P_lo[num] - e^claimed P_hi[den]``:
        a lower bound on delta at the claimed epsilon
    :param pure: pure-Python beta quantiles (see :func:`clopper_pearson`)
    :returns: the best bound (floored at 0), its event, direction, counts and intervals
    :raises ValueError: no draws, no event, ``alpha`` or ``delta`` out of range
    """
    xd = np.asarray(outputs_d, dtype=np.float64).reshape(-1)
    xd2 = np.asarray(outputs_d2, dtype=np.float64).reshape(-1)
    evs = _checked_events(xd, xd2, events, alpha, delta)
    a = alpha / len(evs)
    candidates = [c for ev in evs for c in _event_candidates(ev, xd, xd2, a, delta, len(evs),
                                                             pure)]
    best = max(candidates, key=lambda c: c.eps_lower_bound)  # the first of equal bounds
    out = dataclasses.replace(best, eps_lower_bound=max(0.0, best.eps_lower_bound))
    if claimed_epsilon is None:
        return out
    scale = math.exp(claimed_epsilon)
    delta_lb = max(c.p_num[0] - scale * c.p_den[1] for c in candidates)
    return dataclasses.replace(out, delta_lower_bound=max(0.0, delta_lb))


def epsilon_lower_bound(outputs_d: npt.ArrayLike, outputs_d2: npt.ArrayLike,
                        event: Event | Sequence[Event], alpha: float,
                        delta: float = 0.0) -> float:
    """Lower bound on epsilon, valid with probability ``>= 1 - alpha``, from the outputs of a
    mechanism on two neighbouring datasets and one event (or several: Bonferroni).

    ``eps_lb = ln((p_lo - delta) / p_hi)`` with ``p_lo`` the Clopper-Pearson lower bound of
    the probability of the event under one dataset and ``p_hi`` the upper bound under the
    other, maximised over the event, its complement and both directions (0 when nothing is
    significant). The events must not have been chosen by looking at these outputs.

    :param outputs_d: draws of the release's statistic on ``D``
    :param outputs_d2: draws on the neighbouring ``D'``
    :param event: one event or several
    :param alpha: error probability of the bound, in (0, 1)
    :param delta: the claimed delta, in [0, 1)
    :returns: the lower bound on epsilon, at least 0
    :raises ValueError: as :func:`event_bounds`
    """
    return event_bounds(outputs_d, outputs_d2, event, alpha, delta).eps_lower_bound


def _wilson(k: npt.NDArray[np.float64], n: int, z: float) -> tuple[FloatArray, FloatArray]:
    """Vectorised Wilson score interval (a cheap proxy used only to pick events)."""
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)


def choose_thresholds(cal_d: npt.ArrayLike, cal_d2: npt.ArrayLike, n_events: int = 4,
                      alpha: float = DEFAULT_ALPHA, delta: float = 0.0,
                      grid: int = 400) -> list[Threshold]:
    """Pick the ``n_events`` most promising events ``output > t`` on calibration draws.

    Candidate thresholds are the distinct calibration outputs (or ``grid`` quantiles of them).
    Each is scored by the bound it gives on the calibration draws themselves (Wilson intervals
    at level ``1 - alpha``); the best distinct ones are returned. Use the result on draws that
    are independent of the calibration draws.

    :param cal_d: calibration draws on ``D``
    :param cal_d2: calibration draws on ``D'``
    :param n_events: how many thresholds to return (at most)
    :param alpha: level of the Wilson intervals that score the candidates
    :param delta: the claimed delta, subtracted in the scores
    :param grid: largest number of candidate thresholds
    :returns: the chosen thresholds, best first
    """
    xd = np.sort(np.asarray(cal_d, dtype=np.float64).reshape(-1))
    xd2 = np.sort(np.asarray(cal_d2, dtype=np.float64).reshape(-1))
    pooled = np.concatenate([xd, xd2])
    values = np.unique(pooled[~np.isnan(pooled)])
    values = values[values < values.max()] if values.size > 1 else values
    if values.size > grid:
        values = np.unique(np.quantile(np.sort(pooled), np.linspace(0, 1, grid),
                                       method="lower"))
    nd, nd2 = xd.size, xd2.size
    kd = (nd - np.searchsorted(xd, values, side="right")).astype(np.float64)
    kd2 = (nd2 - np.searchsorted(xd2, values, side="right")).astype(np.float64)
    z = normal_quantile(1 - alpha / 2)
    d_lo, d_hi = _wilson(kd, nd, z)
    d2_lo, d2_hi = _wilson(kd2, nd2, z)
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = np.max(np.stack([
            np.log(np.maximum(d_lo - delta, 0) / d2_hi),
            np.log(np.maximum(d2_lo - delta, 0) / d_hi),
            np.log(np.maximum(1 - d_hi - delta, 0) / (1 - d2_lo)),
            np.log(np.maximum(1 - d2_hi - delta, 0) / (1 - d_lo)),
        ]), axis=0)
    scores = np.nan_to_num(scores, nan=-np.inf, posinf=np.inf)
    order = np.argsort(-scores, kind="stable")[:n_events]
    return [Threshold(float(values[i])) for i in order]


# ------------------------------------------------------------------------------------------------
# Audits of releases
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditResult:
    """The outcome of auditing one release on one pair of neighbouring datasets."""

    name: str
    eps_lower_bound: float
    claimed: float                 # the epsilon the release claims (what was charged)
    event: str
    direction: str
    delta: float = 0.0             # the claimed delta (subtracted in the bound)
    delta_lower_bound: float = 0.0  # lower bound on delta at the claimed epsilon
    trials: int = 0                # draws per dataset (calibration + evaluation)
    evaluation_trials: int = 0     # draws per dataset used for the bound
    alpha: float = DEFAULT_ALPHA
    events_tried: int = 0
    counts: tuple[int, int] = (0, 0)   # event occurrences (numerator, denominator side)
    p_num: tuple[float, float] = (0.0, 1.0)
    p_den: tuple[float, float] = (0.0, 1.0)
    seconds: float = 0.0
    neighbours: str = ""
    expect_violation: bool = False

    @property
    def violation(self) -> bool:
        """True when the audit proves (at level 1 - alpha) more privacy loss than claimed."""
        return self.eps_lower_bound > self.claimed

    @property
    def ok(self) -> bool:
        """The expected outcome: no violation, or a violation for a deliberately broken one."""
        return self.violation == self.expect_violation

    @property
    def empirical(self) -> float:
        """Point estimate ln((k_num / n - delta) / (k_den / n)) for the chosen event."""
        n = max(self.evaluation_trials, 1)
        num, den = self.counts[0] / n - self.delta, self.counts[1] / n
        if num <= 0:
            return 0.0
        return math.inf if den == 0 else math.log(num / den)


def _collect(run: Callable[[], npt.ArrayLike], trials: int) -> FloatArray:
    parts: list[FloatArray] = []
    total = 0
    while total < trials:
        x = np.asarray(run(), dtype=np.float64).reshape(-1)
        if x.size == 0:
            raise ValueError("a release produced no draws")
        parts.append(x)
        total += x.size
    return np.concatenate(parts)[:trials]


def audit_release(run_d: Callable[[], npt.ArrayLike], run_d2: Callable[[], npt.ArrayLike],
                  trials: int, events: Sequence[Event] | None = None,
                  alpha: float = DEFAULT_ALPHA, *, claimed: float, delta: float = 0.0,
                  name: str = "", neighbours: str = "", max_events: int = 4,
                  expect_violation: bool = False) -> AuditResult:
    """Audit a release: the lower bound on its epsilon from ``trials`` draws per dataset.

    ``run_d()`` / ``run_d2()`` each run the release once on ``D`` / ``D'`` and return an array
    of independent draws of the same scalar statistic of it; they are called until ``trials``
    draws per dataset are collected. With explicit ``events`` (chosen without looking at the
    draws) all draws are used for the bound. Otherwise the first half of the draws is a
    calibration set on which ``max_events`` thresholds ``output > t`` are chosen
    (:func:`choose_thresholds`), and the bound is computed on the second, independent half
    with a Bonferroni correction over the chosen events. The bound holds with probability at
    least ``1 - alpha``.

    :param run_d: one release on ``D``, returning its draws
    :param run_d2: one release on the neighbouring ``D'``
    :param trials: draws per dataset, at least 2
    :param events: events fixed in advance (default: thresholds chosen on calibration draws)
    :param alpha: error probability of the bound, in (0, 1)
    :param claimed: the epsilon the release claims (what its session was charged)
    :param delta: the delta it claims, subtracted in the bound
    :param name: a label for the result
    :param neighbours: a description of ``D`` and ``D'`` for the result
    :param max_events: thresholds chosen when ``events`` is None
    :param expect_violation: the release is broken on purpose (a positive control): the
        result is ``ok`` when a violation is found
    :returns: the bound with its event, counts, intervals and timing; ``violation`` is True
        when the bound exceeds ``claimed``
    :raises ValueError: ``trials`` below 2, a release without draws, or an argument out of
        range (see :func:`event_bounds`)

    Example:
        A count over 1,000 public groups of 3 rows each, against one more row in every group:
        each release gives one independent draw per group.

        >>> import dpframe as dpf, numpy as np, pandas as pd, warnings
        >>> from dpframe.testing import audit_release
        >>> warnings.simplefilter("ignore")  # seeded sessions: for audits only, never publish
        >>> keys = {"g": list(range(1000))}
        >>> d = pd.DataFrame({"g": np.repeat(np.arange(1000), 3)})
        >>> d2 = pd.DataFrame({"g": np.repeat(np.arange(1000), 4)})
        >>> seeds = iter(range(10**6))
        >>> def release(df):
        ...     def run():
        ...         session = dpf.Session(1e9, seed=next(seeds))
        ...         return df.dp(session, keys=keys).groupby("g").count(epsilon=1.0)
        ...     return run
        >>> result = audit_release(release(d), release(d2), 20_000, claimed=1.0)
        >>> result.violation, 0.8 < result.eps_lower_bound <= 1.0
        (False, True)
        >>> understated = audit_release(release(d), release(d2), 20_000, claimed=0.5)
        >>> understated.violation  # the same release cannot claim epsilon = 0.5
        True
    """
    if trials < 2:
        raise ValueError("trials must be at least 2")
    t0 = time.perf_counter()
    xd = _collect(run_d, trials)
    xd2 = _collect(run_d2, trials)
    if events is None:
        half = trials // 2
        evs: Sequence[Event] = choose_thresholds(xd[:half], xd2[:half], max_events, alpha,
                                                 delta)
        xd, xd2 = xd[half:], xd2[half:]
    else:
        evs = events
    b = event_bounds(xd, xd2, evs, alpha, delta, claimed)
    return AuditResult(
        name=name, eps_lower_bound=b.eps_lower_bound, claimed=claimed, event=b.event,
        direction=b.direction, delta=delta, delta_lower_bound=b.delta_lower_bound or 0.0,
        trials=trials, evaluation_trials=b.n, alpha=alpha, events_tried=b.events_tried,
        counts=(b.k_num, b.k_den), p_num=b.p_num, p_den=b.p_den,
        seconds=time.perf_counter() - t0, neighbours=neighbours,
        expect_violation=expect_violation)
