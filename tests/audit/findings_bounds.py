"""Finding 58: the contribution bounds T, k and R (``max_rows_per_unit``: a unit's rows in
the whole release; ``max_groups_per_unit``; ``max_rows_per_group``) are enforced, not assumed.

A grouped sum's sensitivity is now min(T, k R) M, so a release whose bounding kept a unit's
rows per group but not its total (the bounding of 0.1, where ``max_rows_per_unit`` meant rows
per group) would add T * M-scaled noise to a unit's k * R rows: these scenarios catch that.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dpf
from dpframe.testing import FloatArray

from .scenario import Built
from .support import NKEYS, B, api, block_min, concat, dp, frame, groups, public

#: Groups a unit spreads its rows over, and its rows in each.
SPREAD, PER_GROUP = 5, 2


def finding_total_across_groups() -> Callable[[int], Built]:
    """A unit with 2 rows at U in each of 5 groups (10 rows), ``max_rows_per_unit=2``,
    ``max_groups_per_unit=5``: the sum's L1 sensitivity is 2U, so the unit may move the 5
    groups by 2U in all. Statistic: per block of 5 groups, the least shift (a unit kept whole
    moves every group of its block by 2U)."""
    nblocks = NKEYS // SPREAD

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        d = groups([1.0], nblocks * SPREAD)
        g = np.repeat(np.arange(nblocks * SPREAD), PER_GROUP)
        u = 10**7 + np.repeat(np.arange(nblocks), SPREAD * PER_GROUP)
        return d, concat(d, frame(g=g, x=np.full(g.size, B[1]), u=u))

    def rel(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
        y = dp(df, s, keys=public(nblocks * SPREAD), bounds={"x": B}, privacy_unit="u",
               max_rows_per_unit=PER_GROUP, max_groups_per_unit=SPREAD).groupby("g").sum(
                   "x", epsilon=1.0)
        return block_min(np.asarray(y), SPREAD, [1.0] * SPREAD, [1.0] * SPREAD)

    return api(frames, rel)


def finding_rows_per_group() -> Callable[[int], Built]:
    """A unit with 10 rows at U in one group, ``max_rows_per_group=2`` (one group: k
    defaults to 1 without T): the sum moves by at most 2U. Statistic: each group's sum."""

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        d = groups([1.0], NKEYS)
        g = np.repeat(np.arange(NKEYS), 10)
        extra = frame(g=g, x=np.full(g.size, B[1]), u=10**7 + np.repeat(np.arange(NKEYS), 10))
        return d, concat(d, extra)

    def rel(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
        return np.asarray(dp(df, s, keys=public(), bounds={"x": B}, privacy_unit="u",
                             max_rows_per_group=2).groupby("g").sum("x", epsilon=1.0))

    return api(frames, rel)


@contextlib.contextmanager
def total_not_enforced() -> Iterator[None]:
    """The bounding of 0.1 (rows per group and groups only: T ignored), with the new
    sensitivity: the release the scenarios must catch (tests/test_audit_bounds.py)."""
    from dpframe.core.exact import bounding
    bound = bounding.bound_rows

    def old(units: Any, groups_: Any, rows_per_group: int, groups_per_unit: int, gen: Any,
            rows_per_unit: int | None = None) -> Any:
        return bound(units, groups_, rows_per_group, groups_per_unit, gen, None)

    bounding.bound_rows = old  # type: ignore[assignment]
    try:
        yield
    finally:
        bounding.bound_rows = bound  # type: ignore[assignment]


@contextlib.contextmanager
def rows_per_group_not_enforced() -> Iterator[None]:
    """Bounding that ignores R (a unit keeps every row of its groups)."""
    from dpframe.core.exact import bounding
    bound = bounding.bound_rows

    def loose(units: Any, groups_: Any, rows_per_group: int, groups_per_unit: int, gen: Any,
              rows_per_unit: int | None = None) -> Any:
        return bound(units, groups_, 1 << 40, groups_per_unit, gen, rows_per_unit)

    bounding.bound_rows = loose  # type: ignore[assignment]
    try:
        yield
    finally:
        bounding.bound_rows = bound  # type: ignore[assignment]
