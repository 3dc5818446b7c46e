"""``bounds()`` at the unit level (issue 44): a unit with many rows far from the rest joins.

The estimate is one histogram over signed powers of two of one random row per unit
(core/value_bounds.py), charged ``epsilon`` with sensitivity 1. The scenario is exact: the
neighbouring pair runs through the real exact half (the pandas backend, contribution bounding
included) over several bounding draws, and the worst L1 shift of the bins' exact counts is
compared with the stated geometric noise (privacy loss ``shift / scale``) against the charge.
A unit with 40 rows spread over 40 octaves shifts one bin by one. The broken control keeps
every row of a unit (up to ``T``) while stating a sensitivity of one row: 0.2's rank utility
moved by ``T`` the same way, and the scenario catches it.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.backends.pandas import PandasBackend
from dpframe.engine.release import compute_exact

EPSILON = 0.5
T = 40


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """D: 300 units of one row each around 0-100 (their rows are kept whatever the draw, so
    the pair's exact counts are coupled); D': one more unit with T rows, one per octave from
    2**-10 to 2**29."""
    rng = np.random.default_rng(44)
    d = pd.DataFrame({"u": np.arange(300), "x": rng.uniform(0, 100, 300)})
    heavy = pd.DataFrame({"u": 10**6, "x": 2.0 ** np.arange(-10, T - 10) * 1.5})
    return d, pd.concat([d, heavy], ignore_index=True)


def _exact(df: pd.DataFrame, seed: int) -> tuple[np.ndarray, float, float]:
    """The bins' exact counts of ``bounds("x")`` on ``df``, the noise scale and the charge."""
    s = dpf.Session(1e9, privacy_unit="u", seed=seed)
    q = df.dp(s, privacy_unit="u", max_rows_per_unit=T).query("bounds", "x", epsilon=EPSILON)
    computed = compute_exact(s, q, PandasBackend(df))
    assert computed.defect is None
    (values,) = computed.exact.values.values()
    noise = computed.plan.measures[0].additive("count")
    return (np.asarray(values, dtype=float).reshape(-1), float(noise.scale),
            float(computed.plan.cost.epsilon))


def unit_level_bounds(seed: int) -> tuple[float, float, float, str]:
    """The worst shift over 8 bounding draws, over the noise scale, against the charge."""
    d, d2 = _frames()
    worst, scale, charged = 0.0, 1.0, EPSILON
    for k in range(8):
        a, scale, charged = _exact(d, seed * 100 + k)
        b, _, _ = _exact(d2, seed * 100 + k)
        worst = max(worst, float(np.abs(b - a).sum()))
    return worst / scale, charged, 0.0, (
        f"geometric bin counts at scale {scale:g}: worst L1 shift {worst:g} over 8 draws")


@contextlib.contextmanager
def every_row_of_a_unit() -> Iterator[None]:
    """BROKEN on purpose: bounds() keeps a unit's T rows but states one row's sensitivity."""
    from dpframe.core import aggregates
    from dpframe.fronts import frame

    histogram = aggregates.AGGREGATES["histogram"]
    real_plan = type(histogram).plan

    def one_row(self, ctx, m, eps, delta, rho):  # type: ignore[no-untyped-def]
        one = type(ctx.contribution)()  # (1, 1): a row-level unit
        return real_plan(self, dataclasses.replace(ctx, contribution=one), m, eps, delta, rho)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(frame, "ONE_ROW_PER_UNIT", None)
        mp.setattr(type(histogram), "plan", one_row)
        yield
