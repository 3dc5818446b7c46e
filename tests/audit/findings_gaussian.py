"""Finding 56: a Gaussian sum calibrated on the analytic curve (Balle and Wang 2018) must be
true of the *discrete* Gaussian it draws.

An exact scenario (like finding 4): release an integer-column Gaussian sum at (1, 1e-5), read
the noise its provenance states, and compute the exact privacy profile of that discrete
Gaussian against the worst neighbour (one more row at the bound shifts the integer sum by the
sensitivity): delta(eps) = sum_y max(0, p(y) - e^eps p(y - Delta)), the hockey-stick divergence
of the two output laws, summed over the whole support in log space. Its epsilon at the stated
delta is exact (a lower bound as well as an upper one), so the scenario fails the moment the
stated epsilon is not true of the noise, and a calibration with 2% less sigma (the control
below) is caught.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest

from .findings import dp, frame, session

#: Where the analytic Gaussian block is planned (patched by the broken control only).
ANALYTIC_BLOCK = "dpframe.core.plan._analytic_block"
PLAN_CACHE = "dpframe.core.plan._PLANS"
EPS, DELTA, UPPER = 1.0, 1e-5, 10


def discrete_gaussian_delta(eps: float, sigma2: float, shift: int) -> float:
    """The exact delta at ``eps`` of N_Z(0, sigma2) against N_Z(shift, sigma2) (the larger of
    the two directions; they are equal by symmetry), summed in log space over |y| <= 60 sigma
    (the rest weighs below e^-1700)."""
    half = int(60 * math.sqrt(sigma2)) + abs(shift) + 2
    y = np.arange(-half, half + 1, dtype=np.float64)
    logw = -(y * y) / (2 * sigma2)
    log_norm = float(np.logaddexp.reduce(logw))
    log_p = logw - log_norm
    log_q = -((y - shift) ** 2) / (2 * sigma2) - log_norm
    terms = np.exp(log_p) * -np.expm1(np.minimum(eps + log_q - log_p, 0.0))
    return float(terms.sum())


def discrete_gaussian_epsilon(sigma2: float, shift: int, delta: float) -> float:
    """The least epsilon with :func:`discrete_gaussian_delta` <= ``delta`` (bisection)."""
    lo, hi = 0.0, 1.0
    while discrete_gaussian_delta(hi, sigma2, shift) > delta:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if discrete_gaussian_delta(mid, sigma2, shift) > delta else (lo, mid)
    return hi


def _release(seed: int) -> dict[str, object]:
    """Release the sum (one public group, so the result carries its provenance)."""
    df = frame(g=["a"] * 40, x=pd.Series(np.arange(40) % (UPPER + 1), dtype="int64"))
    s = session(seed, "add_remove")
    out = dp(df, s, bounds={"x": (0, UPPER)}, keys={"g": ["a"]}).groupby("g").sum(
        "x", epsilon=EPS, delta=DELTA, mechanism="gaussian")
    m: dict[str, object] = out.attrs["dp"]["measures"][0]
    return m


def finding_analytic_gaussian(seed: int) -> tuple[float, float, float, str]:
    """56. The integer sum's stated (epsilon, delta) against its discrete Gaussian, exactly."""
    m = _release(seed)
    assert m["mechanism"] == "discrete gaussian" and float(m["granularity"]) == 1.0  # type: ignore[arg-type]
    sigma = float(m["noise_scale"])  # type: ignore[arg-type]
    # the sampler's variance is a multiple of 2**-16: recover it exactly from sigma
    sigma2 = round(sigma * sigma * 65536) / 65536
    shift = math.ceil(float(m["sensitivity"]))  # type: ignore[arg-type]
    delta = float(m["delta"])  # type: ignore[arg-type]
    true = discrete_gaussian_epsilon(sigma2, shift, delta)
    return true, float(m["epsilon"]), delta, (  # type: ignore[arg-type]
        f"exact discrete Gaussian profile: sigma {sigma:.6g}, shift {shift}")


@contextlib.contextmanager
def two_percent_less_sigma() -> Iterator[None]:
    """BROKEN on purpose: every analytic Gaussian block planned with 2% less sigma."""
    from dpframe.core import plan as plan_module
    from dpframe.core.aggregates import aggregate
    from dpframe.core.exact.memo import RecentCache
    from dpframe.core.noise.mechanisms import NoiseSpec

    real = plan_module._analytic_block

    def broken(*args: object, **kwargs: object) -> object:
        out = real(*args, **kwargs)  # type: ignore[arg-type]
        if out is None:
            return None
        budgets, plans = out
        shrunk = []
        for mp in plans:  # the main noise of each measure (a mean's sum, not its count)
            main = aggregate(mp.measure.op).main
            noise = mp.mechanisms[main]
            if isinstance(noise, NoiseSpec) and noise.kind == "gaussian":
                noise = dataclasses.replace(noise, int_sigma2=noise.int_sigma2 * 49 / 50 * 49 / 50)
                noise.__dict__.pop("scale", None)
            shrunk.append(dataclasses.replace(mp, mechanisms={**mp.mechanisms, main: noise}))
        return budgets, shrunk

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ANALYTIC_BLOCK, broken)
        mp.setattr(PLAN_CACHE, RecentCache(plan_module.PLAN_CACHE_SIZE))
        yield


__all__ = ["discrete_gaussian_delta", "discrete_gaussian_epsilon", "finding_analytic_gaussian",
           "two_percent_less_sigma"]
