"""Findings 78 and 79 (issue 47, items 2 and 8): exact audits of unit-level releases.

**78. A Gaussian count's exact L2 sensitivity.** ``groupby("g").count(mechanism="gaussian")``
over 10 public keys with ``max_rows_per_unit=10, max_rows_per_group=1``: a unit moves the
integer count vector by one in up to 10 coordinates, L2 ``sqrt(10)``, which the noise now uses
as it is (it was rounded up to 4). The neighbouring pair runs through the real exact half (the
pandas backend, bounding included): D' has one more unit with a row in each key; the counts'
shift ``w`` is read from it (checked: 0 or 1 per key). With ``N_Z(0, s^2)`` on each count the
privacy loss of an output ``y`` is ``(|w| - 2 sum_(j: w_j = 1) y_j) / (2 s^2)``: a function of
the sum of ``|w|`` independent discrete Gaussians, whose law is computed exactly by convolution
(both directions are mirror images). The least epsilon whose hockey-stick divergence is at most
the stated delta is exact. BROKEN: the count's L2 sensitivity understated to 3 (the unit's
``sqrt(10)`` rounded *down*): the same audit finds the violation.

**79. Private keys by thresholded row counts, R = 3, k = 4.** ``groupby("g",
keys="private").count()`` with ``max_rows_per_group=3, max_groups_per_unit=4``: the stability
histogram of row counts (core/selection.py). D' has one more unit with 3 rows in each of 4
keys; D has none of them (the delta side) or all four (the epsilon side: L1 12). Per key
the output is "not released" or the noisy count ``y >= tau``; keys are independent, so the
privacy loss is a sum over keys of per-key losses, each on a few values (the discrete Laplace's
loss is ``(|y - b| - |y - a|) / scale``, the "not released" outcome its own; a key only D' has
is never released in D: infinite loss). The shared keys' count ``c`` is swept (the real shifts
kept); the worst epsilon at the stated delta over both directions is compared with the claim.
BROKEN: the threshold computed as if a one-sided key held one row (reach 1, not R): two lower.
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.backends.pandas import PandasBackend
from dpframe.core import measure as measure_module
from dpframe.core import plan as plan_module
from dpframe.core.exact.memo import RecentCache
from dpframe.core.noise.discrete_gaussian import discrete_gaussian_pmf
from dpframe.core.plan import PLANNERS, KeySelection
from dpframe.core.sensitivity import Sensitivity
from dpframe.engine.release import compute_exact

EPSILON, DELTA = 1.0, 1e-6
DRAWS = 3
PLAN_CACHE = "dpframe.core.plan._PLANS"


def _computed(df: pd.DataFrame, seed: int, query: Any) -> Any:
    s = dpf.Session(1e9, 0.5, privacy_unit="u", seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        computed = compute_exact(s, query(df, s), PandasBackend(df))
    assert computed.defect is None
    return computed


def _least_epsilon(delta_at: Any, delta: float) -> float:
    """The least epsilon with ``delta_at(eps) <= delta`` (bisection; 20 when none below)."""
    if delta_at(20.0) > delta:
        return 20.0
    lo, hi = 0.0, 20.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if delta_at(mid) <= delta else (mid, hi)
    return hi


# -- 78 --------------------------------------------------------------------------------------


def _count_query(df: pd.DataFrame, s: dpf.Session) -> Any:
    priv = df.dp(s, keys={"g": list(range(10))}, privacy_unit="u", max_rows_per_unit=10,
                 max_rows_per_group=1)
    return priv.query("count", by="g", epsilon=EPSILON, delta=DELTA, mechanism="gaussian")


def _gaussian_frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """D: 10 keys of 3 units each; D': one more unit with a row in every key."""
    d = pd.DataFrame({"g": np.repeat(np.arange(10), 3), "u": np.arange(30)})
    extra = pd.DataFrame({"g": np.arange(10), "u": 10**6})
    return d, pd.concat([d, extra], ignore_index=True)


def _sum_law(s2: float, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Support and pmf of the sum of ``m`` independent N_Z(0, s2)."""
    half = int(40 * math.sqrt(s2)) + 2
    z = np.arange(-half, half + 1)
    one = discrete_gaussian_pmf(z, s2)
    pmf = np.array([1.0])
    for _ in range(m):
        pmf = np.convolve(pmf, one)
    support = np.arange(pmf.size) - m * half
    return support, pmf


def finding_gaussian_count_l2(seed: int) -> tuple[float, float, float, str]:
    """78. The exact epsilon of the grouped Gaussian count on its worst neighbours."""
    d, d2 = _gaussian_frames()
    worst, how = 0.0, ""
    for draw in range(DRAWS):
        a = _computed(d, seed * 100 + draw, _count_query)
        b = _computed(d2, seed * 100 + draw, _count_query)
        req = a.plan.measures[0].requests[0].key
        w = np.asarray(b.exact.values[req]) - np.asarray(a.exact.values[req])
        assert set(np.unique(w).tolist()) <= {0, 1}
        m = int(w.sum())
        noise = a.plan.measures[0].additive("count")
        s2 = float(noise.int_sigma2)
        support, pmf = _sum_law(s2, m)
        loss = (m - 2.0 * support) / (2 * s2)

        def delta_at(eps: float, loss: np.ndarray = loss, pmf: np.ndarray = pmf) -> float:
            return float((pmf * -np.expm1(np.minimum(eps - loss, 0.0))).sum())

        eps = _least_epsilon(delta_at, float(noise.delta))
        if eps > worst:
            worst, how = eps, (f"{m} counts moved by one, sigma {math.sqrt(s2):.4g}, stated "
                               f"L2 {float(noise.int_sensitivity):.6g}")
    return worst, EPSILON, DELTA, how


@contextlib.contextmanager
def l2_rounded_down() -> Iterator[None]:
    """BROKEN on purpose: the grouped count's L2 sensitivity understated to 3 (sqrt(10)
    rounded down), the sensitivity too small."""
    real = measure_module.count_sensitivity

    def small(*args: Any) -> Sensitivity:
        s = real(*args)
        return Sensitivity(s.l1, Fraction(math.floor(s.l2)), s.linf, s.changed)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(measure_module, "count_sensitivity", small)
        mp.setattr(PLAN_CACHE, RecentCache(plan_module.PLAN_CACHE_SIZE))
        yield


# -- 79 --------------------------------------------------------------------------------------


def _rows_query(df: pd.DataFrame, s: dpf.Session) -> Any:
    priv = df.dp(s, privacy_unit="u", max_groups_per_unit=4, max_rows_per_group=3)
    return priv.query("count", by="g", keys="private", epsilon=EPSILON, delta=DELTA)


def _rows_frames() -> list[tuple[pd.DataFrame, pd.DataFrame]]:
    """Two pairs, each D' with one more unit holding 3 rows in keys 0-3 (its 4 keys, all kept):
    in the first D has none of them (keys 10-11: the delta side, 4 keys one neighbour alone
    has), in the second D has all four, with 5 units of 3 rows each (the epsilon side: the
    count vector moves by 12 = L1)."""
    out = []
    extra = pd.DataFrame({"g": np.repeat(np.arange(4), 3), "u": 10**6})
    for keys in (np.arange(10, 12), np.arange(4)):
        d = pd.DataFrame({"g": np.repeat(keys, 15), "u": np.repeat(np.arange(5 * keys.size), 3)})
        out.append((d, pd.concat([d, extra], ignore_index=True)))
    return out


class _Laplace:
    """The discrete Laplace of integer scale ``b``: tails in closed form."""

    def __init__(self, scale: float) -> None:
        self.p = math.exp(-1.0 / scale)

    def pmf(self, z: int) -> float:
        return (1 - self.p) / (1 + self.p) * self.p ** abs(z)

    def ge(self, t: int) -> float:
        """P[Z >= t]."""
        return self.p ** t / (1 + self.p) if t > 0 else 1 - self.p ** (1 - t) / (1 + self.p)

    def lt(self, t: int) -> float:
        """P[Z < t], each side in closed form (no cancellation near 0)."""
        return self.p ** (1 - t) / (1 + self.p) if t <= 0 else 1 - self.p ** t / (1 + self.p)


def _key_outputs(lap: _Laplace, tau: int, a: int | None, b: int) -> list[tuple[float, float]]:
    """(P, Q) masses of one key's outcomes, P its count ``a`` (None: absent, never released),
    Q its count ``b``: "not released", each ``y`` from tau to past both counts, the tail."""
    last = max(tau, b, a or 0) + 1
    outs = [(1.0 if a is None else lap.lt(tau - a), lap.lt(tau - b))]
    for y in range(tau, last + 1):
        outs.append((0.0 if a is None else lap.pmf(y - a), lap.pmf(y - b)))
    outs.append((0.0 if a is None else lap.ge(last + 1 - a), lap.ge(last + 1 - b)))
    return outs


def _hockey(keys: list[list[tuple[float, float]]], eps: float) -> float:
    """sum over joint outcomes of max(0, P - e^eps Q), P and Q products over keys: grouped by
    the privacy loss, which adds over keys."""
    joint: dict[float, list[float]] = {0.0: [1.0, 1.0]}
    for outs in keys:
        nxt: dict[float, list[float]] = {}
        for loss, (pp, qq) in joint.items():
            for p, q in outs:
                if p == 0.0:
                    continue
                key = math.inf if q == 0.0 or math.isinf(loss) else round(
                    loss + math.log(p / q), 9)
                cell = nxt.setdefault(key, [0.0, 0.0])
                cell[0] += pp * p
                cell[1] += qq * q
        joint = nxt
    return sum(max(0.0, pp - math.exp(eps) * qq) for pp, qq in joint.values())


def _worst_rows(sel: Any, shifts: list[tuple[int, int]]) -> tuple[float, int]:
    """The worst epsilon over the shared keys' count ``c`` (``shifts``: (count in D, count in
    D') of each moved key; shared keys are shifted to ``c``, new keys kept at their count)."""
    lap = _Laplace(float(sel.noise.int_scale))
    tau = sel.threshold
    worst, at = 0.0, 0
    step = max(1, int(float(sel.noise.int_scale) / 6))
    for c in range(0, tau + 8 * int(sel.noise.int_scale), step):
        pairs = [(c if a else None, c + (b - a) if a else b) for a, b in shifts]
        fwd = [_key_outputs(lap, tau, a, b) for a, b in pairs]  # D' against D, both ways
        back = [[(q, p) for p, q in outs] for outs in fwd]
        eps = max(_least_epsilon(functools.partial(_hockey, side), float(sel.delta))
                  for side in (fwd, back))
        if eps > worst:
            worst, at = eps, c
    return worst, at


def finding_rows_stability(seed: int) -> tuple[float, float, float, str]:
    """79. The exact epsilon of the thresholded row counts, both pairs, the shared count swept."""
    worst, how, sel = 0.0, "", None
    for d, d2 in _rows_frames():
        a = _computed(d, seed, _rows_query)
        b = _computed(d2, seed, _rows_query)
        sel = a.plan.selection
        assert sel is not None and sel.released_count and sel.noise is not None
        req = a.plan.measures[0].requests[0].key
        ca = dict(zip((k[0] for k in a.exact.keys), np.asarray(a.exact.values[req]).tolist(),
                      strict=True))
        cb = dict(zip((k[0] for k in b.exact.keys), np.asarray(b.exact.values[req]).tolist(),
                      strict=True))
        shifts = [(ca.get(k, 0), cb.get(k, 0)) for k in set(ca) | set(cb)
                  if cb.get(k, 0) != ca.get(k, 0)]
        assert len(shifts) == 4 and all(y - x == 3 for x, y in shifts)
        eps, c = _worst_rows(sel, shifts)
        if eps >= worst:
            new = sum(1 for x, _ in shifts if x == 0)
            worst, how = eps, (f"scale {sel.noise.scale:g}, threshold {sel.threshold}: worst at "
                               f"c = {c}, {len(shifts) - new} shared and {new} new keys moved")
    assert sel is not None
    return worst, float(sel.epsilon), float(sel.delta), how


@contextlib.contextmanager
def reach_one() -> Iterator[None]:
    """BROKEN on purpose: the rows threshold computed as if a key only one neighbour has held
    one row, where it holds up to R = 3."""
    real = plan_module.stability_threshold

    class ReachOne(KeySelection):
        def plan(self, *args: Any, **kwargs: Any) -> Any:
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(plan_module, "stability_threshold",
                           lambda noise, delta, reach, keys, coin=False: real(
                               noise, delta, 1, keys, coin))
                return super().plan(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(PLANNERS, "key_selection", ReachOne())
        yield


__all__ = ["finding_gaussian_count_l2", "finding_rows_stability", "l2_rounded_down",
           "reach_one"]
