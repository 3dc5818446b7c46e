"""Finding 77: the two-stage Gaussian mean (issue 47, item 3).

A Gaussian mean releases a pilot (a tenth of its rho, half on the centred sum and half on the
count), then the rest split between them by the pilot's released values, the stages combined
by inverse variance (dpframe.core.two_stage). The scenario plans ``mean("x",
mechanism="gaussian")`` at (1, 1e-5) through the public planner, and runs its draws
(``TwoStage.draw``, the code the release runs) on ``CHUNK`` groups of ``BASE`` rows at the lower
bound in D, plus one row at the upper bound in D' (the centred sum and the count each move by
their sensitivity). The statistic per group is the Gaussian likelihood ratio of the four noisy
values (pilot and stage 2, sum and count) between the two exact pairs, with the noise scales
of the split the run picked, plus ``SPIKE`` where stage 2's count equals D''s exact count and
minus it where it equals D's (a noisy count lands there rarely and about as often under both;
a noiseless one always does). The split is common to one run; at ``CHUNK`` groups the pilots fix
it (the same split in every run of a data set), so the draws are independent given it. The
claimed (epsilon, delta) is the plan's charge. The broken control releases stage 2's count
without noise (stage 2 reading the true count).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core.noise.rng import RandomSource
from dpframe.core.plan import plan_query
from dpframe.core.two_stage import Drawn, TwoStage

from .scenario import Built, Run

#: The bounds of x, the rows per group in D (at the lower bound), groups per run.
BOUNDS = (0.0, 10.0)
BASE = 3
CHUNK = 25_000
EPS, DELTA = 1.0, 1e-5
#: What the statistic adds where stage 2's count equals D''s exact count (subtracts: D's).
SPIKE = 1000.0


def _plan() -> tuple[TwoStage, Fraction, Any]:
    frame = pd.DataFrame({"x": [0.0]})
    priv = frame.dp(dpf.Session(100, 0.5, seed=1), bounds={"x": BOUNDS})  # type: ignore[operator]
    query = priv.query("mean", "x", epsilon=EPS, delta=DELTA, mechanism="gaussian")
    plan = plan_query(query, "add_remove", {"x": "float"})
    ts = plan.measures[0].params.two_stage
    assert isinstance(ts, TwoStage)
    return ts, plan.measures[0].requests[0].unit, plan.cost


def _statistic(ts: TwoStage, got: Drawn, x: tuple[float, float], x2: tuple[float, float]
               ) -> np.ndarray:
    """log p(y | x') - log p(y | x) for the four noisy values (Gaussian laws, the picked
    split's scales): large when the output points to D'."""
    sum2, count2 = ts.candidates[got.split]
    out = np.zeros(got.s1.size)
    for y, sd, a, b in ((got.s1, ts.pilot_sum.std, x[0], x2[0]),
                        (got.c1, ts.pilot_count.std, x[1], x2[1]),
                        (got.s2, sum2.std, x[0], x2[0]), (got.c2, count2.std, x[1], x2[1])):
        out += ((y - a) ** 2 - (y - b) ** 2) / (2 * sd * sd)
    # a noisy count rarely lands on an exact count, and as often under D as under D' (up to
    # the likelihood ratio of one point): a noiseless count always does
    return out + SPIKE * ((got.c2 == x2[1]).astype(np.float64) - (got.c2 == x[1]))


def finding_two_stage_mean() -> Callable[[int], Built]:
    """77. The two-stage Gaussian mean's draws, by their likelihood ratio."""

    def build(seed: int) -> Built:
        ts, unit, cost = _plan()
        lo, hi = BOUNDS
        mid = (lo + hi) / 2
        ilo, ihi = round((lo - mid) / float(unit)), round((hi - mid) / float(unit))
        rng = RandomSource(seed * 7919 + 77, warn=False)
        g = float(unit)
        x = (BASE * ilo * g, float(BASE))
        x2 = ((BASE * ilo + ihi) * g, float(BASE + 1))

        def run(exact_sum: int, exact_count: int) -> Run:
            def one() -> np.ndarray:
                got = ts.draw(np.full(CHUNK, exact_sum, dtype=np.int64),
                              np.full(CHUNK, exact_count, dtype=np.int64), unit, rng)
                return _statistic(ts, got, x, x2)
            return one

        return (run(BASE * ilo, BASE), run(BASE * ilo + ihi, BASE + 1), float(cost.epsilon),
                float(cost.delta))

    return build


@contextlib.contextmanager
def exact_stage_two_count() -> Iterator[None]:
    """BROKEN on purpose: stage 2's count released without noise (the true count)."""
    real = TwoStage.draw

    def broken(self: TwoStage, exact_sum: Any, exact_count: Any, unit: Fraction,
               rng: RandomSource) -> Drawn:
        got = real(self, exact_sum, exact_count, unit, rng)
        return dataclasses.replace(got, c2=np.asarray(exact_count, dtype=np.float64))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(TwoStage, "draw", broken)
        yield


__all__ = ["exact_stage_two_count", "finding_two_stage_mean"]
