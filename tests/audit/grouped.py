"""Grouped end-to-end scenarios: every grouped aggregate over ``NKEYS`` public keys (one draw
per key, or per block of keys a unit touches), histograms, contribution bounds, private key
selection and Poisson sampling.

Counts and histograms are released raw here (``postprocess=None``): one draw per key needs each
key's value to depend on its own rows only, which the default projection onto non-negative
counts (one shift shared by every key) does not; the projection is post-processing, audited
end to end on its own (findings_projection.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dpf
from dpframe.testing import FloatArray

from .scenario import Built
from .support import NKEYS, B, api, block_min, concat, dp, frame, groups, public


def grouped_count(neighbouring: str) -> Callable[[int], Built]:
    """Groupby count: 3 vs 4 rows per group, or (change_one) a row moving within a pair."""
    if neighbouring == "add_remove":
        def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
            return groups([1.0] * 3, NKEYS), groups([1.0] * 4, NKEYS)

        def rel(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
            return np.asarray(dp(df, s, keys=public()).groupby("g").count(epsilon=1.0,
                                                                          postprocess=None))

        return api(frames, rel)

    # change_one: a row moves between the two groups of a pair: (4, 3) -> (3, 4)
    def frames_c() -> tuple[pd.DataFrame, pd.DataFrame]:
        d = concat(groups([1.0] * 3, NKEYS), groups([1.0], NKEYS // 2, unit_offset=10**6)
                   .assign(g=lambda f: 2 * f["g"]))
        d2 = concat(groups([1.0] * 3, NKEYS), groups([1.0], NKEYS // 2, unit_offset=10**6)
                    .assign(g=lambda f: 2 * f["g"] + 1))
        return d, d2

    def rel_c(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
        y = np.asarray(dp(df, s, keys=public()).groupby("g").count(epsilon=1.0,
                                                                     postprocess=None))
        return block_min(y, 2, [4, 3], [1, -1])

    return api(frames_c, rel_c, "change_one")


def histogram(neighbouring: str) -> Callable[[int], Built]:
    """Histogram over ``NKEYS`` bins: 2 vs 3 rows per bin, or (change_one) a row moving
    within a pair of bins."""
    nb = NKEYS
    edges = np.arange(nb + 1, dtype=np.float64)
    centres = edges[:-1] + 0.5

    if neighbouring == "add_remove":
        def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
            return (frame(x=np.repeat(centres, 2)), frame(x=np.repeat(centres, 3)))

        def rel(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
            return np.asarray(dp(df, s).histogram("x", edges, epsilon=1.0, postprocess=None))

        return api(frames, rel)

    def frames_c() -> tuple[pd.DataFrame, pd.DataFrame]:
        base = np.repeat(centres, 2)
        return (frame(x=np.concatenate([base, centres[0::2]])),
                frame(x=np.concatenate([base, centres[1::2]])))

    def rel_c(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
        y = np.asarray(dp(df, s).histogram("x", edges, epsilon=1.0, postprocess=None))
        return block_min(y, 2, [3, 2], [1, -1])

    return api(frames_c, rel_c, "change_one")


def grouped_sum(neighbouring: str, mechanism: str = "laplace") -> Callable[[int], Built]:
    """Groupby sum, bounds ``B``: one more row at U, or (change_one) a row at L replaced by
    one at U; Laplace or (delta 1e-5) Gaussian noise."""
    base = [1.5, -3.25]
    if neighbouring == "add_remove":
        def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
            return groups(base, NKEYS), groups([*base, B[1]], NKEYS)
    else:  # a row at L replaced by a row at U: the sum moves by U - L = max(U - L, 2M)
        def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
            return groups([*base, B[0]], NKEYS), groups([*base, B[1]], NKEYS)

    kw: dict[str, Any] = ({"delta": 1e-5, "mechanism": "gaussian"} if mechanism == "gaussian"
                          else {})

    def rel(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
        return np.asarray(dp(df, s, keys=public(), bounds={"x": B}).groupby("g")
                          .sum("x", epsilon=1.0, **kw))

    return api(frames, rel, neighbouring)


def grouped_agg() -> Callable[[int], Built]:
    """``agg({"x": ["count", "sum"]})``: epsilon split in two; a row at U moves both, and the
    statistic (the smaller of the two shifts, in sensitivities) sees the whole epsilon."""
    base = [1.5, -3.25]

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        return groups(base, NKEYS), groups([*base, B[1]], NKEYS)

    def rel(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
        y = dp(df, s, keys=public(), bounds={"x": B}).groupby("g").agg(
            {"x": ["count", "sum"]}, epsilon=1.0, postprocess=None)
        both = np.stack([y[("x", "count")].to_numpy(np.float64),
                         y[("x", "sum")].to_numpy(np.float64) / B[1]], axis=1)
        return block_min(both, 2, [len(base), sum(base) / B[1]], [1.0, 1.0])

    return api(frames, rel)


def grouped_mean() -> Callable[[int], Built]:
    """Groupby mean, bounds [0, 10]: [0] vs [0, 10]."""
    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        return groups([0.0], NKEYS), groups([0.0, 10.0], NKEYS)

    def rel(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
        return np.asarray(dp(df, s, keys=public(), bounds={"x": (0.0, 10.0)}).groupby("g")
                          .mean("x", epsilon=1.0))

    return api(frames, rel)


def grouped_var() -> Callable[[int], Built]:
    """A row at the far bound joins two rows at the other: the variance moves the most."""
    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        return groups([0.0, 0.0], NKEYS), groups([0.0, 0.0, 10.0], NKEYS)

    def rel(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
        return np.asarray(dp(df, s, keys=public(), bounds={"x": (0.0, 10.0)}).groupby("g")
                          .var("x", epsilon=1.0))

    return api(frames, rel)


def grouped_count_distinct() -> Callable[[int], Built]:
    """One more row holding a value no other row of its group holds."""
    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        return groups([0.0, 1.0, 2.0], NKEYS), groups([0.0, 1.0, 2.0, 3.0], NKEYS)

    def rel(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
        return np.asarray(dp(df, s, keys=public()).groupby("g").count_distinct(
            "x", epsilon=1.0))

    return api(frames, rel)


def multi_group(measure: str, k: int, rows: int) -> Callable[[int], Built]:
    """One unit with ``rows`` rows at the bound in each of ``k`` groups of a block
    (``max_groups_per_unit=k``, ``max_rows_per_group=rows``); the statistic is the block
    minimum of the per-group shifts."""
    nblocks = NKEYS // k

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        d = groups([1.0], nblocks * k)
        g = np.repeat(np.arange(nblocks * k), rows)
        u = 10**7 + np.repeat(np.arange(nblocks), k * rows)
        extra = frame(g=g, x=np.full(g.size, B[1]), u=u)
        return d, concat(d, extra)

    shift = rows * (B[1] if measure == "sum" else 1.0)

    def rel(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
        pf = dp(df, s, keys=public(nblocks * k), bounds={"x": B}, privacy_unit="u",
                max_rows_per_group=rows, max_groups_per_unit=k).groupby("g")
        y = (pf.count(epsilon=1.0, postprocess=None) if measure == "count"
             else pf.sum("x", epsilon=1.0))
        return block_min(np.asarray(y) / shift, k, [1.0 / shift] * k, [1.0] * k)

    return api(frames, rel)


def enforced(kind: str) -> Callable[[int], Built]:
    """Contribution bounds are enforced, not assumed: a unit that exceeds them (10 rows at U
    with ``max_rows_per_unit=2``; 1 row in each of 5 groups with ``max_groups_per_unit=1``,
    ``max_rows_per_group=1``)
    must cost no more than the bound. The statistic sums the shifts over the unit's groups."""
    if kind == "rows":
        def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
            d = groups([1.0], NKEYS)
            g = np.repeat(np.arange(NKEYS), 10)
            extra = frame(g=g, x=np.full(g.size, B[1]),
                          u=10**7 + np.repeat(np.arange(NKEYS), 10))
            return d, concat(d, extra)

        def rel(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
            return np.asarray(dp(df, s, keys=public(), bounds={"x": B}, privacy_unit="u",
                                 max_rows_per_unit=2).groupby("g").sum("x", epsilon=1.0))

        return api(frames, rel)

    k = 5

    def frames_g() -> tuple[pd.DataFrame, pd.DataFrame]:
        d = groups([1.0], NKEYS)
        extra = frame(g=np.arange(NKEYS), x=1.0, u=10**7 + np.arange(NKEYS) // k)
        return d, concat(d, extra)

    def rel_g(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
        y = np.asarray(dp(df, s, keys=public(), privacy_unit="u", max_rows_per_group=1,
                          max_groups_per_unit=1).groupby("g").count(epsilon=1.0,
                                                                    postprocess=None))
        return (y.reshape(-1, k) - 1.0).sum(axis=1)

    return api(frames_g, rel_g)


def grouped_quantile(which: str) -> Callable[[int], Built]:
    """Groupby max or median (exponential mechanism), bounds [0, 10]."""
    if which == "max":  # all rows at L, then one more row at the top U
        def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
            return groups([0.0, 0.0], NKEYS), groups([0.0, 0.0, 10.0], NKEYS)
        res = 11
    else:  # median over 11 cells: one row in the first cell, then one more in the tenth
        # (the pair the exact audit of finding 60 finds worst: the top cell's odds move most)
        def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
            return groups([0.0], NKEYS), groups([0.0, 8.5], NKEYS)
        res = 11

    def rel(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
        pg = dp(df, s, keys=public(), bounds={"x": (0.0, 10.0)}).groupby("g")
        if which == "max":
            return np.asarray(pg.max("x", epsilon=1.0, resolution=res))
        return np.asarray(pg.quantile("x", 0.5, epsilon=1.0, resolution=res))

    return api(frames, rel)


def selection(units_d: int, units_d2: int, delta: float, k: int = 1) -> Callable[[int], Built]:
    """``keys="private"``: each key has ``units_d`` units in D and ``units_d2`` in D'; the
    statistic is the noisy count of a released key and -inf for a key not released. An anchor
    key with many units keeps every frame non-empty. With ``k > 1`` (``max_groups_per_unit``)
    D has one unit alone in each block of ``k`` keys, D' none; the statistic is the largest
    over the block (-inf when none of the ``k`` keys is released)."""
    anchor = -1

    def with_units(units: int) -> pd.DataFrame:
        a = frame(g=np.full(500, anchor), x=1.0, u=10**8 + np.arange(500))
        if not units:
            return a
        keys = groups([1.0] * units, NKEYS)
        if k > 1:
            keys = keys.assign(u=keys["g"] // k)
        return concat(a, keys)

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        return with_units(units_d), with_units(units_d2)

    def rel(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
        y = dp(df, s, privacy_unit="u", max_rows_per_group=1, max_groups_per_unit=k) \
            .groupby("g", keys="private").count(epsilon=1.0, delta=delta, postprocess=None)
        out = y.reindex(range(NKEYS)).to_numpy(dtype=np.float64, na_value=np.nan)
        out = np.where(np.isnan(out), -np.inf, out)
        return out.reshape(-1, k).max(axis=1)

    return api(frames, rel)


def sampled_count() -> Callable[[int], Built]:
    """Poisson sampling at rate 1/4: an empty public group vs one row (the tight case for the
    amplified charge ln(1 + q (e^eps - 1)))."""
    anchor = NKEYS

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        a = frame(g=np.full(10, anchor), x=1.0, u=10**8 + np.arange(10))
        return a, concat(a, groups([1.0], NKEYS))

    def rel(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
        y = dp(df, s, keys=public(NKEYS + 1)).sample(0.25).groupby("g").count(
            epsilon=1.0, postprocess=None)
        return np.asarray(y)[:NKEYS]

    return api(frames, rel)
