"""Sensitivities per query, neighbouring relation and contribution bound (PRIVACY.md table).

A privacy unit contributes at most ``rows`` rows to each group and to at most ``groups`` groups
(ungrouped queries have one group). Under ``add_remove`` a neighbour adds or removes one unit's
rows; under ``change_one`` it replaces them, so a unit can leave ``groups`` groups and join as
many others. Each function returns the L1, L2 and L-infinity sensitivities and ``changed``, the
number of output coordinates a neighbour can move (used for the rounding slack of granular
noise). Nothing here is hard-coded per relation: every value follows from the two moves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

Relation = Literal["add_remove", "change_one"]
RELATIONS: tuple[Relation, ...] = ("add_remove", "change_one")


@dataclass(frozen=True)
class Contribution:
    """Contribution bounds of one privacy unit (1, 1 at row level)."""

    rows: int = 1
    groups: int = 1


@dataclass(frozen=True)
class Sensitivity:
    """L1 / L2 / L-infinity sensitivity of a vector-valued query, and coordinates moved."""

    l1: Fraction
    l2: Fraction
    linf: Fraction
    changed: int


def _sqrt_up(x: Fraction) -> Fraction:
    """sqrt(x) rounded up to a multiple of 2**-30 (sensitivities may only grow)."""
    scaled = x * (1 << 60)
    r = math.isqrt(math.ceil(scaled))
    if r * r < scaled:
        r += 1
    return Fraction(r, 1 << 30)


def count_sensitivity(relation: Relation, c: Contribution, grouped: bool) -> Sensitivity:
    """Row counts. Ungrouped: a unit moves the count by ``rows`` under both relations (under
    change_one the frame size is not treated as public, PRIVACY.md). Grouped: add_remove moves
    ``groups`` coordinates by ``rows``; change_one moves up to 2 * groups of them."""
    r = Fraction(c.rows)
    if not grouped:
        return Sensitivity(r, r, r, 1)
    k = c.groups if relation == "add_remove" else 2 * c.groups
    return Sensitivity(k * r, _sqrt_up(Fraction(k)) * r, r, k)


def sum_sensitivity(relation: Relation, lo: Fraction, hi: Fraction, c: Contribution,
                    grouped: bool) -> Sensitivity:
    """Clamped sums over [lo, hi]. One row moves a sum by at most M = max(|lo|, |hi|) when added
    or removed, and by at most max(hi - lo, M) when replaced (a replaced row of a filtered frame
    may enter or leave it)."""
    m = max(abs(lo), abs(hi))
    width = hi - lo
    r = Fraction(c.rows)
    if not grouped:
        # change_one: a unit's a rows are replaced by another unit's b rows, 0 <= a, b <= rows
        # (the frame may have been filtered, so a replaced unit can also enter or leave it, as
        # for the count): the sum moves by at most min(a, b) * width + |a - b| * M <=
        # rows * max(width, M), PRIVACY.md's R * max(U - L, max(|L|, |U|)). With bounds
        # [100, 101] a row entering a filtered frame moves the sum by 101, not U - L = 1.
        total = r * m if relation == "add_remove" else r * max(width, m)
        return Sensitivity(total, total, total, 1)
    k = c.groups
    if relation == "add_remove":
        return Sensitivity(k * r * m, _sqrt_up(Fraction(k)) * r * m, r * m, k)
    # replace: the unit either stays in a group (moves it by <= width) or leaves one group and
    # joins another (moves two coordinates by <= M each)
    l1 = k * r * max(width, 2 * m)
    l2 = r * _sqrt_up(k * max(width * width, 2 * m * m))
    return Sensitivity(l1, l2, r * max(width, m), 2 * k)


def histogram_sensitivity(relation: Relation, c: Contribution) -> Sensitivity:
    """Bin counts of one column (each row in at most one bin): a unit's ``rows`` rows can land
    in ``rows`` different bins; a replacement also removes them from as many bins."""
    r = Fraction(c.rows)
    if relation == "add_remove":
        return Sensitivity(r, r, r, c.rows)
    return Sensitivity(2 * r, _sqrt_up(Fraction(2)) * r, r, 2 * c.rows)


def quantile_utility_sensitivity(relation: Relation, q: Fraction, c: Contribution) -> int:
    """Sensitivity of the integer utility ``-|(1-q)_n * #{x<c} - q_n * #{x>c}|`` where q = q_n/d
    (utilities are scaled by d to stay integral). Adding or removing a row changes one of the
    two counts by one: max(q_n, d - q_n). Replacing a row can change both: d."""
    d = q.denominator
    qn = q.numerator
    per = max(qn, d - qn) if relation == "add_remove" else d
    return per * c.rows


def groups_affected(relation: Relation, c: Contribution) -> int:
    """How many groups one neighbour can touch (for per-group mechanisms composed in parallel)."""
    return c.groups if relation == "add_remove" else 2 * c.groups


def key_selection_sensitivity(relation: Relation, c: Contribution) -> Sensitivity:
    """Distinct-unit counts per key: each unit counts once in each of at most ``groups`` keys."""
    k = groups_affected(relation, c)
    return Sensitivity(Fraction(k), _sqrt_up(Fraction(k)), Fraction(1), k)
