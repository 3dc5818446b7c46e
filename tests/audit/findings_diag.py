"""Finding 61: ``diagnostics=eps`` releases noisy counts of the rows clamping and contribution
bounding changed; they must be ``eps``-DP on top of the query's own epsilon.

A unit's dropped rows are unbounded (a unit may hold any number of rows), so ``rows_dropped``
counts each unit's up to the cap ``D = min(T, k R)`` (core/diagnostics.py); ``rows_clamped``
counts kept rows, at most ``D`` of a unit's. The scenario is exact: the neighbouring pair is
run through the real exact half (the pandas backend, bounding included) and the shift of the
two counts is compared with the stated geometric noise (privacy loss ``|shift| / t`` for
scale ``t``), plus the query's own epsilon, against what the session charged. A bounding whose
dropped count is not capped (the broken control) shifts ``rows_dropped`` by a unit's whole
excess and is caught.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.backends.pandas import PandasBackend
from dpframe.engine.release import compute_exact

#: The unit added in D': its rows, spread over groups, every value above the bounds.
HEAVY_ROWS, GROUPS = 60, 6
BOUNDS = (0.0, 10.0)
OPTIONS: dict[str, Any] = {"privacy_unit": "u", "max_rows_per_unit": 3,
                           "max_groups_per_unit": 2, "max_rows_per_group": 2}


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(61)
    n = 400  # units of one row, some out of bounds, some with two rows (one dropped)
    d = pd.DataFrame({"g": rng.integers(0, GROUPS, n), "u": np.arange(n) // 2,
                      "x": rng.uniform(-5, 15, n)})
    heavy = pd.DataFrame({"g": np.arange(HEAVY_ROWS) % GROUPS, "u": 10**6,
                          "x": np.full(HEAVY_ROWS, 99.0)})
    return d, pd.concat([d, heavy], ignore_index=True)


def _exact(df: pd.DataFrame, seed: int) -> tuple[tuple[int, int], float, float, float]:
    """The exact diagnostic counts of a grouped sum with ``diagnostics=1`` on ``df``, the
    noise's integer scale, the query's epsilon and the session's charge."""
    s = dpf.Session(1e9, privacy_unit="u", seed=seed)
    q = df.dp(s, bounds={"x": BOUNDS}, keys={"g": list(range(GROUPS))}, **OPTIONS).query(
        "sum", "x", by="g", epsilon=0.25, diagnostics=1.0)
    computed = compute_exact(s, q, PandasBackend(df))
    assert computed.defect is None and computed.plan.diagnostics is not None
    diag = computed.exact.diagnostics
    assert diag is not None
    noise = computed.plan.diagnostics.noise
    return diag, float(noise.int_scale), float(q.epsilon), float(computed.plan.cost.epsilon)


def finding_diagnostics_counts(seed: int) -> tuple[float, float, float, str]:
    """61. The two noisy counts' privacy loss (worst shift over bounding draws) plus the
    query's epsilon, against the charge."""
    d, d2 = _frames()
    worst = 0.0
    for k in range(8):  # bounding draws at random: several seeds, the largest shift
        (c1, r1), t, eps_query, charged = _exact(d, seed * 100 + k)
        (c2, r2), _, _, _ = _exact(d2, seed * 100 + k)
        worst = max(worst, (abs(c2 - c1) + abs(r2 - r1)) / t)
    return eps_query + worst, charged, 0.0, (
        f"geometric counts at integer scale {t:g}: worst shift {worst * t:g} over 8 draws")


@contextlib.contextmanager
def dropped_not_capped() -> Iterator[None]:
    """BROKEN on purpose: every unit's dropped rows counted in full (no cap)."""
    from dpframe.core.exact import transform
    real = transform.dropped_rows
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(transform, "dropped_rows",
                   lambda units, groups, keep, cap, before=None: real(units, groups, keep,
                                                                      1 << 40, before))
        yield
