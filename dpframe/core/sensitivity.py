"""Sensitivities per query, neighbouring relation and contribution bound
(docs/privacy.md#sensitivities).

A privacy unit contributes at most ``rows`` rows (R) to each group, to at most ``groups``
groups (k), and at most ``total`` rows (T) to the whole release (ungrouped queries have one
group). :func:`contribution` normalizes the declared bounds so that R <= T, k <= T and
T <= k * R. Under ``add_remove`` a neighbour adds or removes one unit's rows; under
``change_one`` it replaces them, so a unit can leave ``groups`` groups and join as many others.

With T, per-group contributions a_g (rows of the unit in group g) satisfy a_g <= R,
sum a_g <= T and at most k of them are nonzero, so ``sum a_g`` is at most T (L1) and
``sum a_g**2`` at most q * R**2 + r**2 with T = q * R + r (fill groups with R rows each: the
sum of squares of numbers in [0, R] with a fixed sum is largest when they are extreme), which
is <= min(T, sqrt(k) * R)**2: the L2 bound of docs/privacy.md#sensitivities, sharpened.

**Every L2 sensitivity here is the exact supremum over the declared bounds** (issue 47), not a
bound rounded up: the maximising neighbours exist (a unit whose rows sit at the bound ``M``,
``q`` groups of R rows and one of r; under change_one, the old and new rows matched as
:func:`change_one_square_sum` finds). With T alone R defaults to T, and the supremum is T (all
T rows in one group); with R = 1 and k = T = 10 it is ``sqrt(10)``. Square roots are rounded
up to a multiple of 2**-30 only, and an integer release keeps them as they are
(:func:`~dpframe.core.noise.mechanisms.noise_spec`: a count's L2 ``sqrt(10)`` was rounded up to 4,
sigma 16.93 at (1, 1e-6) instead of 13.40).

Each function returns the L1, L2 and L-infinity sensitivities and ``changed``, the number of
output coordinates a neighbour can move (used for the rounding slack of granular noise).
Nothing here is hard-coded per relation: every value follows from the two moves.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

Relation = Literal["add_remove", "change_one"]
RELATIONS: tuple[Relation, ...] = ("add_remove", "change_one")


@dataclass(frozen=True)
class Contribution:
    """Contribution bounds of one privacy unit (1, 1 at row level), in the vocabulary every
    layer uses (the user's keywords without ``max_``): ``rows_per_group`` (R),
    ``groups_per_unit`` (k) and ``rows_per_unit`` (T, the unit's rows in the whole release;
    None: ``rows_per_group * groups_per_unit``). Built normalized by :func:`contribution`."""

    rows_per_group: int = 1
    groups_per_unit: int = 1
    rows_per_unit: int | None = None

    @property
    def cap(self) -> int:
        """The most rows one unit contributes to the release, ``min(T, k * R)``."""
        kr = self.rows_per_group * self.groups_per_unit
        return kr if self.rows_per_unit is None else min(self.rows_per_unit, kr)

    @property
    def square_rows(self) -> Fraction:
        """The largest ``sum a_g**2`` over per-group row counts 0 <= a_g <= R, at most k of
        them nonzero, summing to at most T: q * R**2 + r**2 for T = q * R + r (module doc)."""
        q, r = divmod(self.cap, self.rows_per_group)
        return Fraction(q * self.rows_per_group * self.rows_per_group + r * r)


def contribution(rows_per_unit: int | None, groups_per_unit: int | None,
                 rows_per_group: int | None, grouped: bool) -> Contribution:
    """The normalized bounds of declared ``max_rows_per_unit`` (T), ``max_groups_per_unit``
    (k) and ``max_rows_per_group`` (R), any of them None (not declared; T or R is always
    declared: validation). Ungrouped releases have one group: min(T, R) rows. Grouped: R
    defaults to T; k to T when T is declared (a unit with T rows is in at most T groups), else
    to 1 (the default before T existed); then R <= T, k <= T and T <= k * R."""
    total, groups, rows = rows_per_unit, groups_per_unit, rows_per_group
    declared = [b for b in (total, rows) if b is not None]
    if not declared:
        raise ValueError("a privacy unit needs max_rows_per_unit or max_rows_per_group")
    if not grouped:
        r = min(declared)
        return Contribution(r, 1, r)
    r = min(declared)
    k = groups if groups is not None else (total if total is not None else 1)
    if total is not None:
        k = min(k, total)
    t = k * r if total is None else min(total, k * r)
    return Contribution(r, k, t)


def _l2_rows(c: Contribution) -> Fraction:
    """sqrt(max sum a_g**2) rounded up: ``sqrt(k) * R`` exactly as before when T = k * R."""
    q, rem = divmod(c.cap, c.rows_per_group)
    if rem == 0:
        return _sqrt_up(Fraction(q)) * c.rows_per_group
    return _sqrt_up(c.square_rows)


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
    change_one the frame size is not treated as public, docs/privacy.md#sensitivities).
    Grouped: add_remove moves
    ``groups`` coordinates by ``rows``; change_one moves up to 2 * groups of them."""
    r = Fraction(c.rows_per_group)
    if not grouped:
        return Sensitivity(r, r, r, 1)
    t = Fraction(c.cap)
    if relation == "add_remove":  # per-group changes a_g (module doc)
        return Sensitivity(t, _l2_rows(c), r, c.groups_per_unit)
    # replace: a group moves by |b_g - a_g| <= max(a_g, b_g); sum |b_g - a_g| <= sum a_g +
    # sum b_g <= 2T, and (b_g - a_g)**2 <= a_g**2 + b_g**2, so L2**2 <= 2 * (q R**2 + r**2)
    q, rem = divmod(c.cap, c.rows_per_group)
    l2 = (_sqrt_up(Fraction(2 * q)) * r if rem == 0
          else _sqrt_up(2 * c.square_rows))
    return Sensitivity(2 * t, l2, r, 2 * c.groups_per_unit)


def sum_sensitivity(relation: Relation, lo: Fraction, hi: Fraction, c: Contribution,
                    grouped: bool) -> Sensitivity:
    """Clamped sums over [lo, hi]. One row moves a sum by at most M = max(|lo|, |hi|) when added
    or removed, and by at most max(hi - lo, M) when replaced (a replaced row of a filtered frame
    may enter or leave it)."""
    m = max(abs(lo), abs(hi))
    width = hi - lo
    r = Fraction(c.rows_per_group)
    if not grouped:
        # change_one: a unit's a rows are replaced by another unit's b rows, 0 <= a, b <= rows
        # (the frame may have been filtered, so a replaced unit can also enter or leave it, as
        # for the count): the sum moves by at most min(a, b) * width + |a - b| * M <=
        # rows * max(width, M), docs/privacy.md#sensitivities: R * max(U - L, max(|L|, |U|)).
        # With bounds [100, 101] a row entering a filtered frame moves the sum by 101, not
        # U - L = 1.
        total = r * m if relation == "add_remove" else r * max(width, m)
        return Sensitivity(total, total, total, 1)
    k = c.groups_per_unit
    t = Fraction(c.cap)
    if relation == "add_remove":  # a_g rows of at most M each per group (module doc)
        return Sensitivity(t * m, _l2_rows(c) * m, r * m, k)
    # replace: a group holding a_g old and b_g new rows moves by at most
    # min(a_g, b_g) * width + |a_g - b_g| * M <= (a_g + b_g) * c, c = max(width / 2, M)
    # (pair min(a, b) old rows with new ones: width each; the rest M each). Summed: L1 <=
    # (sum a_g + sum b_g) * c <= 2T * c = T * max(width, 2M). L2: the exact supremum
    # (:func:`change_one_square_sum`).
    l1 = t * max(width, 2 * m)
    l2 = _sqrt_up(change_one_square_sum(c, width, m))
    return Sensitivity(l1, l2, r * max(width, m), 2 * k)


def _moved(a: int, b: int, width: Fraction, m: Fraction) -> Fraction:
    """The most a group's clamped sum moves when ``a`` rows leave it and ``b`` join it:
    ``min(a, b) * width + |a - b| * M`` (attained: pair rows at opposite bounds)."""
    return min(a, b) * width + abs(a - b) * m


def change_one_square_sum(c: Contribution, width: Fraction, m: Fraction) -> Fraction:
    """The exact supremum of ``sum_g f(a_g, b_g)**2`` under change_one, ``f`` = :func:`_moved`,
    over a unit's old and new per-group rows ``0 <= a_g, b_g <= R``, each side in at most k
    groups with at most ``T' = min(T, k R)`` rows: the grouped sum's squared L2 sensitivity.

    *Proof.* ``f(a, b) = M (a + b) - (2M - width) min(a, b)`` and ``width <= 2M`` (``U - L <=
    |U| + |L|``), so ``f`` is convex (``-min`` is) and nonnegative, and ``sum_g f(a_g, b_g)**2``
    is a convex function of ``(a, b)``. Relax each side to the polytope ``{0 <= a_g <= R,
    sum a_g <= T'}``: a convex function's maximum over the product of two polytopes is at a
    pair of vertices, and a vertex holds ``q`` groups of ``R`` rows and one of ``r``
    (``T' = q R + r``): integral, in at most ``k`` groups (``q < k`` when ``r > 0``), so the
    relaxation's maximum is attained by real units. At a vertex pair only the matching of old
    groups with new ones is free: ``j`` groups where ``R`` rows leave and ``R`` join, the
    ``r``-groups matched with each other, with an ``R``-group of the other side, or with
    nothing; the objective is linear in ``j``, so ``j`` is ``0`` or its largest. Every case is
    enumerated. It is ``k R**2 max(width**2, 2 M**2)`` when ``T' = k R``."""
    q, rem = divmod(c.cap, c.rows_per_group)
    pair = _moved(c.rows_per_group, c.rows_per_group, width, m) ** 2
    alone = _moved(c.rows_per_group, 0, width, m) ** 2
    best = Fraction(0)
    for extra, used_old, used_new in _r_matchings(rem, c.rows_per_group, width, m):
        free_old, free_new = q - used_old, q - used_new  # R-groups left to match
        if free_old < 0 or free_new < 0:
            continue
        for j in {0, min(free_old, free_new)}:
            best = max(best, extra + j * pair + (free_old + free_new - 2 * j) * alone)
    return best


def _r_matchings(rem: int, big: int, width: Fraction, m: Fraction
                 ) -> Iterator[tuple[Fraction, int, int]]:
    """Each way to place the two sides' ``r``-groups: (their squared moves, R-groups of the
    old side and of the new side they use). Together; or each alone or with an R-group of
    the other side."""
    if rem == 0:
        yield Fraction(0), 0, 0
        return
    yield _moved(rem, rem, width, m) ** 2, 0, 0
    for old_with_r, new_with_r in itertools.product((0, 1), repeat=2):
        extra = (_moved(rem, big * old_with_r, width, m) ** 2
                 + _moved(big * new_with_r, rem, width, m) ** 2)
        yield extra, new_with_r, old_with_r


def histogram_sensitivity(relation: Relation, c: Contribution) -> Sensitivity:
    """Bin counts of one column (each row in at most one bin): a unit's ``rows`` rows can land
    in ``rows`` different bins; a replacement also removes them from as many bins."""
    r = Fraction(c.rows_per_group)
    if relation == "add_remove":
        return Sensitivity(r, r, r, c.rows_per_group)
    return Sensitivity(2 * r, _sqrt_up(Fraction(2)) * r, r, 2 * c.rows_per_group)


def quantile_utility_sensitivity(relation: Relation, q: Fraction, c: Contribution) -> int:
    """Sensitivity of the integer utility ``-|(1-q)_n * #{x<c} - q_n * #{x>c}|`` where q = q_n/d
    (utilities are scaled by d to stay integral). Adding or removing a row changes one of the
    two counts by one: max(q_n, d - q_n). Replacing a row can change both: d."""
    d = q.denominator
    qn = q.numerator
    per = max(qn, d - qn) if relation == "add_remove" else d
    return per * c.rows_per_group


def quantile_group_share(relation: Relation, c: Contribution) -> Fraction:
    """The share of epsilon each group's exponential mechanism gets in a grouped quantile,
    whose utility sensitivity is per-row * R (:func:`quantile_utility_sensitivity`). A unit
    with a_g rows in group g costs that group ``eps_g * a_g / R`` (add_remove); summed over
    groups, ``eps_g * T / R`` with T = min(T, k R): so ``eps_g = eps * R / T``, which is
    ``eps / k`` when T = k R. Under change_one a group's utility moves by at most d * (a_g +
    b_g) for a_g rows out and b_g in, 2T in all: ``eps * R / (2T)``."""
    share = Fraction(c.rows_per_group, c.cap)
    return share if relation == "add_remove" else share / 2


def groups_affected(relation: Relation, c: Contribution) -> int:
    """How many groups one neighbour can touch (for per-group mechanisms composed in parallel)."""
    return c.groups_per_unit if relation == "add_remove" else 2 * c.groups_per_unit


def key_selection_sensitivity(relation: Relation, c: Contribution) -> Sensitivity:
    """Distinct-unit counts per key: each unit counts once in each of at most ``groups`` keys."""
    k = groups_affected(relation, c)
    return Sensitivity(Fraction(k), _sqrt_up(Fraction(k)), Fraction(1), k)
