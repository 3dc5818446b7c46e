"""Rollups over declared key combinations (issue 47, item 4): exact audits, findings 82 and 83.

A rollup releases every level of a hierarchy (the grand total, the regions, the cities) with
independent discrete Laplace noise per level, each at its share of epsilon, then makes them
consistent by least squares (post-processing: it changes no privacy loss). The joint law of
the noisy levels is a product of discrete Laplace laws on a lattice, so for a neighbouring pair
whose exact level values (on the noise's lattice) differ by ``Delta`` the exact privacy loss of
the release is ``sum_levels |Delta_level|_1 / t_level`` (``t`` the noise's scale in lattice
steps): the worst output attains it. The scenarios run the real exact half (the pandas backend,
contribution bounding, the declared combinations' selection and the core's sums up the tree)
on both datasets and compare that exact loss, worst over the pairs, with the epsilon charged.

82. Row unit, counts and sums: one more row in a city (also one at the bounds' extreme).
    The BROKEN control plans every level at the whole epsilon (the levels' sequential
    composition forgotten: charged as if one level): the loss is 3 times the charge.
83. Unit level, ``max_rows_per_unit=3``: a unit's rows spread over 3 cities of one region (its
    3 rows move the region and the total by 3 rows, as they move the cities), and rows in an
    undeclared combination (counted in no released group). The BROKEN control plans each level
    for the rows of one unit in one group (1 row), not T.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.backends.pandas import PandasBackend
from dpframe.core import hierarchy
from dpframe.core import plan as plan_module
from dpframe.core.aggregates import aggregate
from dpframe.core.exact.memo import RecentCache
from dpframe.engine.release import compute_exact

EPSILON = 1.0
REGIONS = ["r0", "r1", "r2"]
COMBOS = pd.DataFrame({"region": np.repeat(REGIONS, 4), "city": [f"c{i}" for i in range(12)]})
BOUNDS = {"x": (-2.0, 5.0)}


def _data() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    d = COMBOS.iloc[rng.integers(0, 12, 60)].reset_index(drop=True)
    d["x"] = rng.uniform(-2, 5, len(d)).round(3)
    d["u"] = np.arange(len(d))
    return d


def _levels(df: pd.DataFrame, op: str, seed: int, **unit: Any
            ) -> tuple[list[np.ndarray], Any]:
    """Each level's exact values on its noise's lattice (root first), and the plan."""
    s = dpf.Session(1e9, seed=seed)
    priv = df.dp(s, keys=COMBOS, bounds=BOUNDS, **unit)
    args = ("x",) if op == "sum" else ()
    q = priv.query(op, *args, by=["region", "city"], epsilon=EPSILON, rollup=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        computed = compute_exact(s, q, PandasBackend(df))
    assert computed.defect is None
    rp = computed.plan.rollup
    assert rp is not None
    out = []
    main = aggregate(op).main
    for mp, vals in zip(rp.levels, hierarchy.level_exact(rp, computed.exact), strict=True):
        m = int(mp.additive(main).granularity / mp.requests[0].unit)
        out.append(np.array([(int(v) * 2 + m) // (2 * m) for v in vals], dtype=object))
    return out, computed.plan


def _loss(a: list[np.ndarray], b: list[np.ndarray], plan: Any, op: str) -> Fraction:
    """The exact privacy loss of the noisy levels: sum over levels of |Delta|_1 / t."""
    main = aggregate(op).main
    assert plan.rollup is not None
    return sum((Fraction(int(np.abs(x - y).sum())) / mp.additive(main).int_scale
                for x, y, mp in zip(a, b, plan.rollup.levels, strict=True)), Fraction(0))


def _worst(pairs: list[tuple[pd.DataFrame, pd.DataFrame, str, dict[str, Any]]], seed: int
           ) -> tuple[float, float, float, str]:
    worst, where, claimed = Fraction(0), "", 0.0
    for d, d2, op, unit in pairs:
        a, plan = _levels(d, op, seed, **unit)
        b, _ = _levels(d2, op, seed, **unit)
        loss = _loss(a, b, plan, op)
        claimed = float(plan.cost.epsilon)
        if loss > worst:
            worst, where = loss, f"{op}{' (unit)' if unit else ''}"
    how = f"exact: sum over the 3 levels of the L1 shift over the scale; worst: {where}"
    return float(worst), claimed, 0.0, how


def finding_rollup_rows(seed: int) -> tuple[float, float, float, str]:
    """82. One more row in a city (x at the bound of largest magnitude), counts and sums."""
    d = _data()
    extra = pd.DataFrame({"region": ["r1"], "city": ["c5"], "x": [5.0], "u": [10**6]})
    d2 = pd.concat([d, extra], ignore_index=True)
    return _worst([(d, d2, "count", {}), (d, d2, "sum", {})], seed)


def finding_rollup_units(seed: int) -> tuple[float, float, float, str]:
    """83. A unit with 3 rows in 3 cities of region r2 (kept whole: T = 3) and 2 rows in an
    undeclared combination (r0, c11), counts and sums, against the data without it."""
    d = _data()
    extra = pd.DataFrame({"region": ["r2", "r2", "r2", "r0", "r0"],
                          "city": ["c8", "c9", "c10", "c11", "c11"],
                          "x": [5.0] * 5, "u": [10**6] * 5})
    d2 = pd.concat([d, extra.iloc[:3]], ignore_index=True)
    d3 = pd.concat([d, extra.iloc[3:]], ignore_index=True)
    unit = {"privacy_unit": "u", "max_rows_per_unit": 3}
    return _worst([(d, d2, "count", unit), (d, d2, "sum", unit), (d, d3, "count", unit)],
                  seed)


@contextlib.contextmanager
def _fresh_plans() -> Iterator[pytest.MonkeyPatch]:
    """A fresh plan cache for a broken planner (never a plan the real one made)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plan_module, "_PLANS", RecentCache(plan_module.PLAN_CACHE_SIZE))
        yield mp


@contextlib.contextmanager
def levels_charged_as_one() -> Iterator[None]:
    """BROKEN on purpose: every level planned at the whole epsilon (as if one level were
    released), while the charge stays epsilon."""
    real = hierarchy.plan_rollup

    def broken(ctx: Any, query: Any) -> Any:
        return real(ctx, dataclasses.replace(query, epsilon=query.epsilon * len(query.rollup)))

    with _fresh_plans() as mp:
        mp.setattr(plan_module, "plan_rollup", broken)
        yield


@contextlib.contextmanager
def levels_for_one_row() -> Iterator[None]:
    """BROKEN on purpose: each level planned for one row of a unit (its rows in one group
    with R = 1), not for its T rows."""
    real = hierarchy.plan_rollup

    def broken(ctx: Any, query: Any) -> Any:
        one = dataclasses.replace(ctx.contribution, rows_per_group=1, groups_per_unit=1,
                                  rows_per_unit=1)
        return real(dataclasses.replace(ctx, contribution=one), query)

    with _fresh_plans() as mp:
        mp.setattr(plan_module, "plan_rollup", broken)
        yield
