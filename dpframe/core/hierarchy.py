"""Declared key combinations and rollups: every level of a hierarchy in one release.

**Declared combinations** (``keys=`` a DataFrame, as Tumult's ``KeySet.from_dataframe``): the
groups of a multi-column groupby are exactly the declared rows (cities each in its region), not
the product of each column's keys. A backend computes the exact aggregates over the product of
the columns' declared keys (public), and the core keeps the declared combinations
(:func:`leaf_positions`): a selection of public cells, so rows of an undeclared combination
count in no released group (they are dropped, as rows of an undeclared key are).

**Rollups** (``groupby(["region", "city"]).count(epsilon=1, rollup=True)``): level ``l`` of the
tree groups by the first ``l`` columns (level 0 the grand total, the last level the leaves).
Each level is released with its share ``eps_l`` of epsilon (``level_shares=``, equal by
default): sequential composition over the levels, ``sum_l eps_l = eps``; within a level the
groups are disjoint (parallel composition). A level's values are sums of the leaves' exact
values, computed here in the core (never by a backend); the sum of leaves is a linear map whose
matrix has one 1 per column, so it never increases an L1 norm: each level's L1 sensitivity is
at most the leaves' (a unit's T rows, k groups, R rows per group bound them all: a unit moves
the total by at most min(T, kR) rows, as it moves the leaves), and each level's noise is
calibrated to the leaves' sensitivity at its own ``eps_l``. The noisy levels are made
consistent by generalized least squares (:mod:`dpframe.core.consistency`): post-processing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ..errors import KeysError, ValidationError
from .aggregates import aggregate, released_as
from .consistency import Tree, gls, half_widths
from .exact.compute import ExactAggregates, add_into
from .measure import MeasurePlan, MeasureRelease
from .noise.mechanisms import NoiseSpec
from .noise.rng import RandomSource

if TYPE_CHECKING:
    from .measure import PlanContext
    from .query import Query

#: The least noise variance GLS weighs with (core/consistency.py divides by variances).
MIN_VARIANCE = 1e-300
#: pandas' ``pivot_table(margins=True)`` label of a margin.
MARGINS_NAME = "All"


def check_combos(query: Query) -> None:
    """Declared combinations: one value per grouping column each, none twice (public)."""
    combos = query.combos
    if combos is None:
        return
    if query.private_keys:
        raise KeysError("declared key combinations are public keys: not with keys='private'")
    if any(len(c) != len(query.by) for c in combos):
        raise KeysError("each declared key combination needs one value per grouping column")
    if len(set(combos)) != len(combos):
        raise KeysError("the declared key combinations hold a combination twice")
    if not combos:
        raise KeysError("the declared key combinations are empty")


def check_rollup(query: Query) -> None:
    """Every refusal of ``rollup=True``, from public information, before any charge."""
    shares = query.rollup
    if shares is None:
        return
    problems = (
        (not query.by, "rollup=True needs a groupby"),
        (query.private_keys, "rollup=True needs public keys (not keys='private')"),
        (len(query.measures) != 1 or not getattr(released_as(query.measures[0].op),
                                                  "rollup", False),
         "rollup=True releases one count or sum"),
        (query.mechanism == "gaussian", "rollup=True releases Laplace noise (geometric for "
         "counts): mechanism='gaussian' is not available with it"),
        (len(shares) != len(query.by) + 1,
         f"level_shares needs {len(query.by) + 1} shares (the grand total, then each grouping "
         "column's level)"),
        (any(s <= 0 for s in shares), "level_shares must be positive"),
        (not isinstance(query.margins_name, str), "margins_name must be a string"),
    )
    for failed, message in problems:
        if failed:
            raise ValidationError(message)
    for col in query.by:
        if any(isinstance(k, str) and k == query.margins_name for k in query.keys[col]):
            raise KeysError(f"the margins label {query.margins_name!r} is a declared key of "
                            f"{col!r}: pass another margins_name=")


def leaf_positions(query: Query) -> np.ndarray:
    """The positions of the released groups among the backend's groups (the product of the
    ``by`` columns' declared keys, first column slowest): the declared combinations, or the
    whole product."""
    sizes = [len(query.keys[c]) for c in query.by]
    if query.combos is None:
        return np.arange(math.prod(sizes), dtype=np.int64)
    index = [{k: i for i, k in enumerate(query.keys[c])} for c in query.by]
    strides = [math.prod(sizes[i + 1:]) for i in range(len(sizes))]
    return np.array([sum(index[j][v] * strides[j] for j, v in enumerate(combo))
                     for combo in query.combos], dtype=np.int64)


@dataclass(frozen=True)
class RollupPlan:
    """A rollup's public plan: each level's measure plan (root first), the tree of the leaves'
    prefixes, the leaves' positions among the backend's groups, and each node's interval."""

    levels: tuple[MeasurePlan[None], ...]
    shares: tuple[Fraction, ...]
    tree: Tree
    prefixes: tuple[tuple[tuple[object, ...], ...], ...]
    positions: np.ndarray
    margins_name: str
    variances: tuple[float, ...]
    half_widths: tuple[np.ndarray, ...]
    ci_level: float

    @property
    def keys(self) -> list[tuple[object, ...]]:
        """The released keys: leaves, then each level's subtotals up to the grand total (as
        ``pivot_table(margins=True)``: margins last), margins labelled ``margins_name``."""
        width = self.tree.depth
        out: list[tuple[object, ...]] = []
        for lvl in range(width, -1, -1):
            out.extend((*p, *([self.margins_name] * (width - lvl))) for p in self.prefixes[lvl])
        return out

    def describe(self) -> dict[str, object]:
        """Public: the levels' budgets and noise, and the consistency step."""
        main = aggregate(self.levels[0].measure.op).main
        return {
            "levels": self.tree.depth + 1,
            "level_shares": [float(s) for s in self.shares],
            "epsilon_per_level": [float(mp.epsilon) for mp in self.levels],
            "noise_scale_per_level": [mp.additive(main).scale for mp in self.levels],
            "groups_per_level": self.tree.sizes,
            "consistency": "generalized least squares over the tree (Hay et al. 2010), "
                           "weighted by each level's noise variance: post-processing",
            "ci_level": self.ci_level,
            "ci_half_width_per_level": [float(h.max()) for h in self.half_widths],
        }


def _tree(leaves: list[tuple[object, ...]]) -> tuple[Tree, tuple[tuple[tuple[object, ...],
                                                                       ...], ...]]:
    """The tree of the leaves' prefixes: level ``l`` holds the distinct prefixes of length
    ``l`` in order of first appearance; each node's parent is its prefix one shorter."""
    width = len(leaves[0])
    prefixes: list[tuple[tuple[object, ...], ...]] = []
    parents: list[np.ndarray] = []
    for lvl in range(width + 1):
        pos = {p: i for i, p in enumerate(dict.fromkeys(k[:lvl] for k in leaves))}
        prefixes.append(tuple(pos))
        if lvl:
            up = {p: i for i, p in enumerate(prefixes[lvl - 1])}
            parents.append(np.array([up[p[:-1]] for p in pos], dtype=np.int64))
    return Tree(tuple(parents)), tuple(prefixes)


def plan_rollup(ctx: PlanContext, query: Query) -> RollupPlan:
    """Each level planned at its share of epsilon with the leaves' sensitivity (module doc),
    and each node's interval (:func:`~dpframe.core.consistency.half_widths`)."""
    assert query.rollup is not None
    m = query.measures[0]
    agg = aggregate(m.op)
    total = sum(query.rollup, Fraction(0))
    shares = tuple(s / total for s in query.rollup)
    levels = tuple(agg.plan(ctx, m, query.epsilon * s, Fraction(0), None) for s in shares)
    tree, prefixes = _tree(leaf_keys(query))
    noises = [mp.additive(agg.main) for mp in levels]
    # a variance that underflows (a huge epsilon: the noise is 0 but with probability below
    # 1e-300) weighs as the smallest positive one: GLS only needs the variances' ratios
    variances = tuple(max(n.std ** 2, MIN_VARIANCE) for n in noises)
    level = float(query.ci or 0.95)
    hws = half_widths(tree, variances, *_noise_parameters(noises, levels[0].requests[0].unit),
                      level=level)
    return RollupPlan(levels, shares, tree, prefixes, leaf_positions(query),
                      query.margins_name, variances, tuple(hws), level)


def leaf_keys(query: Query) -> list[tuple[object, ...]]:
    """The leaves: the declared combinations, or every combination of the columns' keys."""
    if query.combos is not None:
        return list(query.combos)
    import itertools

    return [tuple(t) for t in itertools.product(*(query.keys[c] for c in query.by))]


def _noise_parameters(noises: list[NoiseSpec], unit: Fraction
                      ) -> tuple[list[float], list[float], list[float]]:
    """Each level's noise as :func:`~dpframe.core.consistency.half_widths` takes it: the
    lattice step g, the discrete Laplace parameter p, and the rounding to the lattice (g / 2
    when g is coarser than the exact values' unit, else none)."""
    grains = [float(n.granularity) for n in noises]
    ps = [math.exp(-1.0 / float(n.int_scale)) for n in noises]
    rounding = [g / 2 if n.granularity > unit else 0.0 for g, n in zip(grains, noises,
                                                                       strict=True)]
    return grains, ps, rounding


def level_exact(rp: RollupPlan, exact: ExactAggregates) -> list[np.ndarray]:
    """Each level's exact values (root first): the declared leaves' exact values and their
    sums up the tree, exact integers (counts, fixed-point sums), computed in the core."""
    req = rp.levels[-1].requests[0]
    out = [np.asarray(exact.values[req.key])[rp.positions]]
    for lvl in range(rp.tree.depth, 0, -1):
        out.insert(0, add_into(None, out[0], rp.tree.parents[lvl - 1], rp.tree.sizes[lvl - 1]))
    return out


def release_rollup(rp: RollupPlan, exact: ExactAggregates, rng: RandomSource
                   ) -> tuple[list[tuple[object, ...]], MeasureRelease]:
    """Noise on every level (root first, each with its plan), then GLS: the released keys
    (:attr:`RollupPlan.keys`) and one measure of float values with their intervals."""
    agg = aggregate(rp.levels[0].measure.op)
    noisy = []
    for mp, vals in zip(rp.levels, level_exact(rp, exact), strict=True):
        # the level's planned noise on its exact integers (counts, or fixed-point sums in
        # units of the request's ``unit``), drawn here rather than by the aggregate's release:
        # no post-processing of a grouped release (such as a projection) precedes the GLS
        req = mp.requests[0]
        unit = req.unit if req.kind == "fixed_sum" else Fraction(1)
        noisy.append(np.asarray(mp.additive(agg.main).add_noise(vals, unit, rng),
                                dtype=np.float64))
    est = gls(rp.tree, noisy, rp.variances)
    order = range(rp.tree.depth, -1, -1)  # leaves first, the grand total last
    values = np.concatenate([est[lvl] for lvl in order])
    hw = np.concatenate([rp.half_widths[lvl] for lvl in order])
    leaf = rp.levels[-1]
    desc = agg.describe(leaf, rp.ci_level)
    desc.update(epsilon=float(sum((mp.epsilon for mp in rp.levels), Fraction(0))),
                ci_half_width=float(hw.max()), rollup=rp.describe())
    m = leaf.measure
    return rp.keys, MeasureRelease(m.name, m.column, values, values - hw, values + hw, desc)
