"""Private keys by distinct units, Gaussian threshold (issue 44, item 2): an exact audit.

A separate key selection (here of a grouped sum, ``k = 10``, epsilon 0.5: 0.25 selects) adds
discrete Gaussian noise of L2 sensitivity ``sqrt(k)`` to each key's number of distinct units
and releases the keys whose noisy count clears the threshold (docs/privacy.md#group-keys).

The scenario is exact. The neighbouring pair runs through the real exact half (the pandas
backend, contribution bounding included, several bounding draws): D has 8 keys of 5 units; D'
one more unit with a row in those 8 keys and 4 new ones, of which bounding keeps 10. The exact
distinct-unit counts move by one in at most ``k`` keys (checked), some of them keys D does not
have. The output is the set of released keys: independent Bernoulli draws, a key of ``c``
units kept with ``p(c) = P[c + Z >= tau]`` (the plan's noise and threshold; ``p(0) = 0``). For
each count ``c`` of the shared keys (swept from 1 to ``tau + 8 sigma``, where the loss is
worst) the exact hockey-stick divergence of the two laws gives the least epsilon whose delta is
at most the claimed one, both ways; the worst is compared with the selection's claim.

The broken control plans the noise for an L2 sensitivity of 1 (the unit's ``sqrt(k)``
understated): the same audit finds the violation.
"""

from __future__ import annotations

import contextlib
import dataclasses
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
from dpframe.core import plan as plan_module
from dpframe.core.noise.discrete_gaussian import discrete_gaussian_pmf
from dpframe.core.plan import PLANNERS, KeySelection
from dpframe.engine.release import compute_exact

EPSILON, DELTA, K = 0.5, 1e-6, 10
DRAWS = 4


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """D: keys 0-7 with 5 units of one row each; D': one more unit with a row in keys 0-11."""
    d = pd.DataFrame({"g": np.repeat(np.arange(8), 5), "u": np.arange(40), "x": 1.0})
    extra = pd.DataFrame({"g": np.arange(12), "u": 10**6, "x": 1.0})
    return d, pd.concat([d, extra], ignore_index=True)


def _exact(df: pd.DataFrame, seed: int) -> tuple[dict[object, int], Any]:
    """The exact distinct-unit counts per key and the plan of the audited release."""
    s = dpf.Session(1e9, 0.5, privacy_unit="u", seed=seed)
    priv = df.dp(s, bounds={"x": (0.0, 1.0)}, privacy_unit="u", max_rows_per_unit=K,
                 max_groups_per_unit=K)
    q = priv.query("sum", "x", by="g", keys="private", epsilon=EPSILON, delta=DELTA)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        computed = compute_exact(s, q, PandasBackend(df))
    assert computed.defect is None and computed.exact.unit_counts is not None
    counts = dict(zip((k[0] for k in computed.exact.keys),
                      np.asarray(computed.exact.unit_counts).tolist(), strict=True))
    return counts, computed.plan


def _log_binomial(n: int, p: float, q: float) -> np.ndarray:
    """log P[Bin(n, p) = i], i = 0..n, with ``q = 1 - p`` given apart (precision near 1)."""
    i = np.arange(n + 1)
    lp = math.log(p) if p > 0 else -math.inf
    lq = math.log(q) if q > 0 else -math.inf
    with np.errstate(invalid="ignore"):
        terms = np.where(i > 0, i * lp, 0.0) + np.where(n - i > 0, (n - i) * lq, 0.0)
    comb = np.array([math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1)
                     for j in i])
    return comb + terms


def _epsilon_at(p_log: np.ndarray, q_log: np.ndarray, delta: float) -> float:
    """The least epsilon with both hockey-stick divergences of the two laws (log pmfs on
    one outcome space) at most ``delta`` (bisection; 20 when none below it)."""
    p, q = np.exp(p_log), np.exp(q_log)

    def div(eps: float) -> float:
        e = math.exp(eps)
        return max(float(np.maximum(p - e * q, 0).sum()), float(np.maximum(q - e * p, 0).sum()))

    if div(20.0) > delta:
        return 20.0
    lo, hi = 0.0, 20.0
    if div(0.0) <= delta:
        return 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if div(mid) <= delta else (mid, hi)
    return hi


def _kept(pmf: np.ndarray, z: np.ndarray, tau: int, c: int) -> tuple[float, float]:
    """(P[c + Z >= tau], P[c + Z < tau]), each summed on its own side (precision near 1)."""
    return float(pmf[z >= tau - c].sum()), float(pmf[z < tau - c].sum())


def _worst_count(sel: Any, shared: int, new: int) -> tuple[float, int]:
    """The worst exact epsilon (and its count ``c``) of the released key sets when ``shared``
    keys of ``c`` units gain one and ``new`` keys appear with one unit."""
    s2, tau = float(sel.noise.int_sigma2), sel.threshold
    sigma = math.sqrt(s2)
    z = np.arange(-int(40 * sigma) - 2, int(40 * sigma) + 2)
    pmf = discrete_gaussian_pmf(z, s2)
    new_d2 = _log_binomial(new, *_kept(pmf, z, tau, 1))
    only_none = np.where(np.arange(new + 1) == 0, 0.0, -np.inf)  # D releases no new key
    worst, at = 0.0, 0
    for c in range(1, tau + int(8 * sigma), max(1, int(sigma / 8))):
        shared_d = _log_binomial(shared, *_kept(pmf, z, tau, c))
        shared_d2 = _log_binomial(shared, *_kept(pmf, z, tau, c + 1))
        log_d = shared_d[:, None] + only_none[None, :]
        log_d2 = shared_d2[:, None] + new_d2[None, :]
        eps = _epsilon_at(log_d.ravel(), log_d2.ravel(), float(sel.delta))
        if eps > worst:
            worst, at = eps, c
    return worst, at


def gaussian_key_selection(seed: int) -> tuple[float, float, float, str]:
    """The worst exact epsilon of the released key set over the bounding draws and counts."""
    d, d2 = _frames()
    worst, where, sel = 0.0, "", None
    for draw in range(DRAWS):
        a, plan = _exact(d, seed * 100 + draw)
        b, _ = _exact(d2, seed * 100 + draw)
        sel = plan.selection
        assert sel is not None and sel.rule == "gaussian threshold" and sel.noise is not None
        shift = {k: b.get(k, 0) - a.get(k, 0) for k in set(a) | set(b)}
        assert set(shift.values()) <= {0, 1} and sum(shift.values()) <= K
        shared = sum(1 for k, v in shift.items() if v and a.get(k, 0) > 0)
        new = sum(1 for k, v in shift.items() if v and a.get(k, 0) == 0)
        eps, c = _worst_count(sel, shared, new)
        if eps > worst:
            worst, where = eps, f"c = {c}, {shared} shared and {new} new keys moved"
    assert sel is not None and sel.noise is not None
    return worst, float(sel.epsilon), float(sel.delta), (
        f"released key sets, sigma {sel.noise.scale:.4g}, threshold {sel.threshold}: worst "
        f"at {where}")


@contextlib.contextmanager
def l2_understated() -> Iterator[None]:
    """BROKEN on purpose: the Gaussian threshold's noise planned for an L2 sensitivity of 1,
    where a unit in ``k`` keys moves the count vector by ``sqrt(k)``."""
    real = plan_module.key_selection_sensitivity

    class Understated(KeySelection):
        def plan(self, *args: Any, **kwargs: Any) -> Any:
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(plan_module, "key_selection_sensitivity", lambda r, c: dataclasses.
                           replace(real(r, c), l2=Fraction(1)))
                return super().plan(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(PLANNERS, "key_selection", Understated())
        yield
