"""Ungrouped end-to-end scenarios: one draw per release (full audit only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dpf

from .scenario import Built
from .support import B, Release, api, dp, frame

_X = [1.5, -3.25, 4.0, 0.5, 2.0]
#: Releases per dataset for ungrouped audits (one draw each, about 5 ms per release).
SCALAR_TRIALS = 3000


def _scalar(d: dict[str, Any], d2: dict[str, Any], release: Release,
            neighbouring: str = "add_remove") -> Callable[[int], Built]:
    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        return frame(**d), frame(**d2)

    return api(frames, release, neighbouring)


def scalar_count(neighbouring: str) -> Callable[[int], Built]:
    """count: 5 vs 6 rows, or (change_one) count(x) of a value replaced by a missing one."""
    if neighbouring == "add_remove":
        return _scalar({"x": _X}, {"x": [*_X, 1.0]},
                       lambda df, s: [dp(df, s).count(epsilon=1.0)])
    # change_one: a row's value replaced by a missing one: count(x) moves by 1
    return _scalar({"x": [*_X, 1.0]}, {"x": [*_X, np.nan]},
                   lambda df, s: [dp(df, s).count("x", epsilon=1.0)], "change_one")


def scalar_sum(neighbouring: str, mechanism: str = "laplace") -> Callable[[int], Built]:
    """sum, bounds ``B``: one more row at U, or (change_one) a row at L replaced by one at U."""
    kw: dict[str, Any] = ({"delta": 1e-5, "mechanism": "gaussian"} if mechanism == "gaussian"
                          else {})

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        return [dp(df, s, bounds={"x": B}).sum("x", epsilon=1.0, **kw)]

    if neighbouring == "add_remove":
        return _scalar({"x": _X}, {"x": [*_X, B[1]]}, rel)
    return _scalar({"x": [*_X, B[0]]}, {"x": [*_X, B[1]]}, rel, "change_one")


def scalar_user_sum(neighbouring: str) -> Callable[[int], Built]:
    """A user-level sum, ``max_rows_per_unit=3``: a unit with 3 rows at the bound."""
    r = 3
    if neighbouring == "add_remove":  # a unit with R rows at the bound joins
        bounds = B
        d = {"x": _X, "u": list(range(5))}
        d2 = {"x": [*_X, *[B[1]] * r], "u": [*range(5), *[99] * r]}
    else:  # bounds excluding 0: R rows at U replaced by one row at L moves the sum by
        bounds = (5.0, 10.0)  # (U - L) + (R - 1) max(U - L, M) = 5 + 2 * 10
        base = [5.5, 7.0, 9.25]
        d = {"x": [*base, *[10.0] * r], "u": [0, 1, 2, *[99] * r]}
        d2 = {"x": [*base, 5.0], "u": [0, 1, 2, 99]}

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        return [dp(df, s, bounds={"x": bounds}, privacy_unit="u", max_rows_per_unit=r)
                .sum("x", epsilon=1.0)]

    return _scalar(d, d2, rel, neighbouring)


def scalar_mean() -> Callable[[int], Built]:
    """mean, bounds [0, 10]: [0] vs [0, 10]."""
    return _scalar({"x": [0.0]}, {"x": [0.0, 10.0]},
                   lambda df, s: [dp(df, s, bounds={"x": (0.0, 10.0)}).mean("x", epsilon=1.0)])


def scalar_quantile(which: str) -> Callable[[int], Built]:
    """max or median (exponential mechanism), bounds [0, 10]."""
    if which == "max":  # 2 candidates: the most power per release for this pair
        return _scalar({"x": [0.0, 0.0]}, {"x": [0.0, 0.0, 10.0]},
                       lambda df, s: [dp(df, s, bounds={"x": (0.0, 10.0)})
                                      .max("x", epsilon=1.0, resolution=2)])
    return _scalar({"x": [0.0]}, {"x": [0.0, 8.5]},  # 11 cells: as the grouped median
                   lambda df, s: [dp(df, s, bounds={"x": (0.0, 10.0)})
                                  .median("x", epsilon=1.0, resolution=11)])
