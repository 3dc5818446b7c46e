"""What a backend is asked and what it returns: exact aggregates, never noise.

A :class:`ComputeRequest` is data-only: the grouping, the declared keys, the privacy unit and its
contribution bounds, the sampling rate and the exact aggregates to compute. It holds no noise,
no budget and no mechanism, so a backend that receives it cannot add noise (the import
contracts in ``pyproject.toml`` check that backends never import the noise modules). Backends
answer with :class:`ExactAggregates`; blocks of rows that hold disjoint privacy units merge.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

import numpy as np
import numpy.typing as npt

from ...errors import ValidationError
from ..numbers import power_of_two_at_most
from .values import label_preference

ACCUMULATION_BITS = 32

#: Cells of a quantile's grid by default (2**16: far finer than the noise's rank error on
#: most data; integer columns use their integers when they are fewer). Re-exported by
#: :mod:`dpframe.core.query` as ``DEFAULT_GRID``.
DEFAULT_QUANTILE_CELLS = 1 << 16
#: Most exact counters one release may hold (groups x bins or candidates): 2**25 int64 cells,
#: 256 MiB per aggregate. Checked from public information before any charge.
MAX_CELLS = 1 << 25

#: the kinds of exact primitive (one class each: :data:`dpframe.core.exact.primitives.PRIMITIVES`)
RequestKind = Literal["rows", "nonnull", "fixed_sum", "bins", "grid", "cells", "distinct"]


@dataclass(frozen=True)
class AggregateRequest:
    """An exact aggregate a backend must compute per group (no noise, ever).

    * ``rows``: number of rows; ``nonnull``: non-missing values of ``column``.
    * ``fixed_sum``: sum of ``clip(rint((clip(x, lo, hi) - shift) / unit), ilo, ihi)`` over
      non-missing x, as exact integers (also returns the non-missing count). With ``center``,
      the value accumulated is ``(clip(x, lo, hi) - center)**2`` instead of ``clip(x, lo, hi)``
      (sums of squares, for variances).
    * ``bins``: counts per histogram bin (``edges``, ``right``, ``include_lowest``: exactly
      ``pd.cut``); values outside are dropped.
    * ``grid``: counts per candidate cell: a value goes to the first candidate >= clip(x).
    * ``cells``: counts per cell of ``ncells`` equal cells over ``[lo, hi]``: a value goes to
      cell ``floor((clip(x) - lo) * ncells / (hi - lo))`` (the last cell holds ``hi``).
    * ``distinct``: the set of (group, value hash) pairs of non-missing values (the backend's
      canonical hash: equal values hash equal in every block), whose size per group is the
      number of distinct values; blocks merge by union, not by sum.
    """

    kind: RequestKind
    column: str | None = None
    lo: float = 0.0
    hi: float = 0.0
    shift: float = 0.0
    unit: Fraction = Fraction(1)
    ilo: int = 0
    ihi: int = 0
    integer: bool = False
    edges: tuple[float, ...] = ()
    right: bool = True
    include_lowest: bool = False
    with_count: bool = False
    center: float | None = None
    ncells: int = 0

    @functools.cached_property
    def scale(self) -> float:
        """``1 / unit`` as a float: exact, the unit being a power of two (kept once per
        request: plans are cached, and a Fraction division costs microseconds a release)."""
        return float(1 / self.unit)

    @functools.cached_property
    def rounds_past_bounds(self) -> bool:
        """Whether a quantized value can round past ``[ilo, ihi]``: after exact scaling only
        with a shift, a center or a scaled bound that is not an integer (then ilo/ihi are its
        ceiling and floor); the integer is then clipped again."""
        return bool(self.shift) or self.center is not None or self.lo * self.scale != self.ilo \
            or self.hi * self.scale != self.ihi

    @property
    def key(self) -> tuple[object, ...]:
        return (self.kind, self.column, self.lo, self.hi, self.shift, self.unit, self.edges,
                self.right, self.include_lowest, self.integer, self.with_count, self.center,
                self.ncells)


def fixed_point_request(column: str, lo: Fraction, hi: Fraction, shift: Fraction,
                        integer: bool, with_count: bool = False) -> AggregateRequest:
    """Fixed-point accumulation of clamped values: exact integer sums whose per-row bound holds
    by construction (the integer value is clipped after rounding), so float rounding can never
    push a sum past its sensitivity (docs/privacy.md#exact-accumulation)."""
    if integer and shift == 0:
        ilo, ihi = math.ceil(lo), math.floor(hi)
        if ilo > ihi:
            raise ValidationError(f"bounds of {column!r} contain no integer")
        return AggregateRequest("fixed_sum", column, float(lo), float(hi), 0.0, Fraction(1),
                                ilo, ihi, integer=True)
    m = max(abs(lo - shift), abs(hi - shift))
    unit = power_of_two_at_most(m) / (1 << ACCUMULATION_BITS)
    ilo = math.ceil((lo - shift) / unit)
    ihi = math.floor((hi - shift) / unit)
    return AggregateRequest("fixed_sum", column, float(lo), float(hi), float(shift), unit,
                            ilo, ihi, with_count=with_count)


def square_request(column: str, lo: Fraction, hi: Fraction) -> AggregateRequest:
    """Fixed-point sum of ``(clip(x, lo, hi) - mid)**2 - h**2 / 2`` (``mid`` the bounds'
    midpoint, ``h`` their half-width): each row's value lies in ``[-h**2/2, h**2/2]``, clipped
    after rounding like every fixed-point sum, so the sum's sensitivity follows from those
    bounds whatever float rounding did."""
    mid, h = (lo + hi) / 2, (hi - lo) / 2
    shift = h * h / 2
    unit = power_of_two_at_most(shift) / (1 << ACCUMULATION_BITS)
    ilo, ihi = math.ceil(-shift / unit), math.floor(shift / unit)
    return AggregateRequest("fixed_sum", column, float(lo), float(hi), float(shift), unit,
                            ilo, ihi, center=float(mid))


#: ``groups_per_unit`` of a request with no group step (no k declared, or k >= T).
NO_GROUP_LIMIT = 1 << 62


@dataclass(frozen=True)
class ComputeRequest:
    """Everything a backend needs to compute a release's exact aggregates, and nothing else.

    ``by`` and ``keys`` (public keys, when ``private_keys`` is false) give the groups;
    ``privacy_unit`` with ``rows_per_group`` (R) / ``groups_per_unit`` (k) /
    ``rows_per_unit`` (T) the contribution bounds a backend enforces
    (:func:`dpframe.core.exact.bounding.bound_contributions`);
    ``sample_rate`` Poisson sampling of units; ``unit_counts``: whether key selection needs
    distinct units per group.
    """

    requests: tuple[AggregateRequest, ...]
    by: tuple[str, ...] = ()
    keys: Mapping[str, tuple[object, ...]] = field(default_factory=dict)
    private_keys: bool = False
    privacy_unit: str | None = None
    rows_per_group: int = 1
    groups_per_unit: int = 1
    sample_rate: Fraction | None = None
    unit_counts: bool = False
    #: T: a unit's rows over every group, when that step binds (None: it cannot)
    rows_per_unit: int | None = None
    #: count the rows clamping and bounding changed (``diagnostics=``): each unit's dropped
    #: rows counted up to this cap (None: no diagnostics)
    diagnostics_cap: int | None = None

    @property
    def preselect_total(self) -> int | None:
        """The total bound a block may apply when pre-selecting: T without a group step (the
        per-group and total steps compose over unions of blocks), else None (with a group
        step a block may keep groups the union drops, so T is applied once, at the end)."""
        return self.rows_per_unit if self.groups_per_unit >= NO_GROUP_LIMIT else None

    @property
    def columns(self) -> list[str]:
        """Every column the backend reads, keys first, each once."""
        unit = [self.privacy_unit] if self.privacy_unit else []
        return list(dict.fromkeys([*self.by, *unit,
                                   *(r.column for r in self.requests if r.column is not None)]))

    @property
    def draws_at_random(self) -> bool:
        """Whether computing this request draws at random (contribution bounding of privacy
        units, Poisson sampling): only then does a backend get a sampling generator."""
        return bool(self.privacy_unit) or self.sample_rate is not None

    @property
    def measure_columns(self) -> list[str]:
        """The columns whose values the requests aggregate, each once."""
        return list(dict.fromkeys(r.column for r in self.requests if r.column is not None))


@dataclass
class ExactAggregates:
    """What a backend returns: per-group exact values for each request, in group order.

    ``keys`` lists the group keys (tuples) in output order; for private keys it lists every
    observed key and ``unit_counts`` their distinct-unit counts (after contribution bounding).
    Arrays are indexed [group] (or [group, bin]).
    """

    keys: list[tuple[object, ...]]
    values: dict[tuple[object, ...], np.ndarray]
    counts: dict[tuple[object, ...], np.ndarray]
    unit_counts: np.ndarray | None = None
    #: ``distinct`` requests: unique (group, value hash) pairs, as two arrays
    distinct: dict[tuple[object, ...], tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict)
    #: ``diagnostics_cap``: (rows clamped, rows dropped by bounding, each unit's capped)
    diagnostics: tuple[int, int] | None = None

    def merge(self, other: ExactAggregates) -> ExactAggregates:
        """Sum of two blocks' aggregates (blocks must hold disjoint privacy units), aligning
        keys: public keys coincide; observed private keys are unioned. Equal keys spelled
        apart (``1`` and ``True``) keep the spelling :func:`preferred_key` picks, never the
        first block's."""
        keys = list(dict.fromkeys([*self.keys, *other.keys]))
        pos = {k: i for i, k in enumerate(keys)}
        ia = np.array([pos[k] for k in self.keys], dtype=np.int64)
        ib = np.array([pos[k] for k in other.keys], dtype=np.int64)
        for k, i in zip(other.keys, ib.tolist(), strict=True):
            keys[i] = preferred_key(keys[i], k)
        n = len(keys)

        def add(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
            if a is None or b is None:
                return a if b is None else b
            return add_into(add_into(None, a, ia, n), b, ib, n)

        values = {k: add(self.values.get(k), other.values.get(k)) for k in
                  {**self.values, **other.values}}
        counts = {k: add(self.counts.get(k), other.counts.get(k)) for k in
                  {**self.counts, **other.counts}}
        distinct = {k: union_pairs(self.distinct.get(k), ia, other.distinct.get(k), ib)
                    for k in {**self.distinct, **other.distinct}}
        return ExactAggregates(keys, values, counts,  # type: ignore[arg-type]
                               add(self.unit_counts, other.unit_counts), distinct,
                               add_diagnostics(self.diagnostics, other.diagnostics))


def add_diagnostics(a: tuple[int, int] | None, b: tuple[int, int] | None
                    ) -> tuple[int, int] | None:
    """Two blocks' diagnostic counts added (blocks hold disjoint units: per-unit caps hold)."""
    if a is None or b is None:
        return a if b is None else b
    return (a[0] + b[0], a[1] + b[1])


#: past this magnitude a sum of two int64 counts could overflow: exact Python integers then
OVERFLOW_GUARD = 1 << 61


def _near_overflow(a: np.ndarray) -> bool:
    return bool(a.dtype == object or (a.size and int(np.abs(a).max()) >= OVERFLOW_GUARD))


def add_into(acc: np.ndarray | None, new: np.ndarray, index: npt.NDArray[np.int64] | None,
             size: int) -> np.ndarray:
    """``acc + new`` over ``size`` groups (``new``'s rows scattered to ``index``; None: to its
    own positions), exact: int64 while far from overflow, Python integers beyond. The one
    merge of per-group counts and fixed-point sums (blocks, partitions, scan batches)."""
    shape = (size, *new.shape[1:])
    if acc is None:
        acc = np.zeros(shape, dtype=np.int64)
    elif acc.shape[0] < size:
        grown = np.zeros(shape, dtype=acc.dtype)
        grown[: acc.shape[0]] = acc
        acc = grown
    if _near_overflow(new) or _near_overflow(acc):
        acc = acc.astype(object)
        new = new.astype(object)
    if index is None:
        acc[: new.shape[0]] += new
    else:  # add.at: rows mapped to one position add up (a plain ``acc[index] += new`` would
        np.add.at(acc, index, new)  # keep only the last of them)
    return acc


def preferred_key(a: tuple[object, ...], b: tuple[object, ...]) -> tuple[object, ...]:
    """One of two equal keys: ``a`` when each label has the type of ``b``'s (the usual case,
    no repr made), else the one of smaller :func:`~dpframe.core.exact.values.label_preference`
    label by label: a function of the two spellings, not of their order."""
    if a is b or all(type(x) is type(y) for x, y in zip(a, b, strict=True)):
        return a
    pa, pb = ([label_preference(v) for v in k] for k in (a, b))
    return b if pb < pa else a


Pairs = tuple[np.ndarray, np.ndarray]


def union_pairs(a: Pairs | None, ia: np.ndarray | None, b: Pairs | None,
                ib: np.ndarray | None) -> Pairs:
    """The union of two sets of (group, hash) pairs, their groups first mapped through ``ia`` /
    ``ib`` (block-local to merged group positions; None: already merged positions)."""
    groups, hashes = [], []
    for pairs, index in ((a, ia), (b, ib)):
        if pairs is None:
            continue
        g, h = pairs
        groups.append(g if index is None else np.asarray(index, dtype=np.int64)[g])
        hashes.append(h)
    if not groups:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64)
    return unique_pairs(np.concatenate(groups), np.concatenate(hashes))


def unique_pairs(groups: np.ndarray, hashes: np.ndarray) -> Pairs:
    """The distinct (group, hash) pairs, sorted."""
    if groups.size == 0:
        return groups.astype(np.int64), hashes.astype(np.uint64)
    order = np.lexsort((hashes, groups))
    g, h = groups[order], hashes[order]
    keep = np.ones(g.size, dtype=bool)
    keep[1:] = (g[1:] != g[:-1]) | (h[1:] != h[:-1])
    return g[keep].astype(np.int64), h[keep].astype(np.uint64)
