"""The Query value object: everything a release needs, validated, and no data.

Fronts (pandas accessor, scan, Dask, CLI) build Queries; the session plans, charges and releases
them through one path (``dpframe.engine.release``). Validation here needs only public information:
arguments, declared bounds and keys, and the column schema (names and dtypes).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from fractions import Fraction
from typing import Generic, Literal, NamedTuple, TypeVar

from ..errors import BoundsError, KeysError, ValidationError
from .exact.compute import DEFAULT_QUANTILE_CELLS
from .exact.values import NUMERIC_KINDS, ColumnKind, canonical
from .numbers import format_number, to_fraction

#: A measure's aggregate: a key of :data:`~dpframe.core.aggregates.AGGREGATES`, checked when the
#: query is validated (an unknown one is a ``ValidationError`` before any charge), so a new
#: aggregate edits no type here.
Op = str
#: Quantile levels are fractions with a denominator at most this (0.333... is 1/3).
MAX_LEVEL_DENOMINATOR = 1000
MechanismName = Literal["laplace", "gaussian"]

#: ``keys={"col": CATEGORIES}`` takes a Categorical's declared categories as public keys.
CATEGORIES = "categories"

#: Cells of a quantile's grid by default (core/exact/compute.py).
DEFAULT_GRID = DEFAULT_QUANTILE_CELLS
MAX_ABS_BOUND = 1 << 52
#: Narrowest declared span hi - lo: the fixed-point unit of a narrower one underflows float64.
MIN_BOUND_SPAN = Fraction(1, 1 << 900)
#: Highest interval level: closer to 1, the split levels of a mean round to 1 in float64.
MAX_CI = 1 - 1e-12


class DeclaredContribution(NamedTuple):
    """The contribution bounds a user declared, None where not declared, in the vocabulary
    every layer uses: ``rows_per_unit`` (T, keyword ``max_rows_per_unit``),
    ``groups_per_unit`` (k, ``max_groups_per_unit``) and ``rows_per_group`` (R,
    ``max_rows_per_group``). :func:`dpframe.core.sensitivity.contribution` normalizes them."""

    rows_per_unit: int | None = None
    groups_per_unit: int | None = None
    rows_per_group: int | None = None


def _bound_ok(b: object) -> bool:
    """A contribution bound: not declared (None), or an integer >= 1 (not a bool)."""
    return b is None or (isinstance(b, int) and not isinstance(b, bool) and b >= 1)


def _is_level(ci: object) -> bool:
    """None (no interval) or an interval level in (0, MAX_CI]."""
    return ci is None or (not isinstance(ci, bool) and isinstance(ci, numbers.Real | Decimal)
                          and 0 < float(ci) <= MAX_CI)


@dataclass(frozen=True)
class NoParams:
    """The parameters of an aggregate that takes none beyond its column (a count, a sum)."""


#: The one :class:`NoParams` every measure without parameters shares.
NO_PARAMS = NoParams()

#: A measure's parameters: a frozen dataclass its aggregate's module defines and checks.
P = TypeVar("P")


@dataclass(frozen=True)
class Measure(Generic[P]):
    """One released statistic: an operation on a column (or on rows, for counts).

    ``params`` are the aggregate's own arguments (a quantile's level, a histogram's bins, a
    variance's ``ddof``), of the frozen type its module defines
    (:attr:`~dpframe.core.measure.Aggregate.params_type`), checked when built: build one with
    the aggregate's :meth:`~dpframe.core.measure.Aggregate.measure`."""

    op: Op
    column: str | None = None
    label: str = ""
    weight: Fraction = Fraction(1)       # share of the query's epsilon (relative)
    params: P = NO_PARAMS  # type: ignore[assignment]

    @property
    def name(self) -> str:
        return self.label or self.op


@dataclass(frozen=True)
class Query:
    """A validated release request. Bounds and keys are declared, never read from data."""

    measures: tuple[Measure, ...]
    epsilon: Fraction
    delta: Fraction = Fraction(0)
    bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    by: tuple[str, ...] = ()
    keys: Mapping[str, tuple[object, ...]] = field(default_factory=dict)
    private_keys: bool = False
    privacy_unit: str | None = None
    max_rows_per_unit: int | None = None     # T: a unit's rows in the whole release
    max_groups_per_unit: int | None = None   # k: a unit's groups
    max_rows_per_group: int | None = None    # R: a unit's rows in one group
    mechanism: MechanismName | None = None
    ci: float | None = None
    selection_share: Fraction = Fraction(1, 2)
    sample_rate: Fraction | None = None   # Poisson subsampling of units (exact dyadic rate)
    description: str = ""
    #: epsilon for noisy counts of the rows clamping and bounding changed (None: none)
    diagnostics: Fraction | None = None
    #: the declared key combinations of ``by`` (``keys=`` a DataFrame), in declared order;
    #: None: every combination of the columns' keys (core/hierarchy.py)
    combos: tuple[tuple[object, ...], ...] | None = None
    #: ``rollup=True``: each level's share of epsilon, the grand total first (None: no rollup)
    rollup: tuple[Fraction, ...] | None = None
    #: the label of a rollup's margins, as ``pivot_table(margins_name=)``
    margins_name: str = "All"
    #: histograms and grouped counts: "nonnegative" (projected onto non-negative values with
    #: their noisy total kept, core/projection.py) or None (the raw, unbiased noisy values)
    postprocess: str | None = "nonnegative"
    #: ``selection_share`` was given: a separate selection, never the thresholded count of
    #: rows where a unit has several rows per key (core/plan.py, ``_one_count``)
    selection_share_given: bool = False

    # -- validation ---------------------------------------------------------------------------
    def check_parameters(self) -> None:
        """The budget, the mechanism, the interval level and the contribution bounds."""
        for failed, message in (
            (self.epsilon <= 0, "epsilon must be positive"),
            (not (0 <= self.delta < 1), "delta must be in [0, 1)"),
            (self.mechanism not in (None, "laplace", "gaussian"),
             "mechanism must be 'laplace' or 'gaussian' (the fronts also read 'geometric' "
             "as 'laplace')"),
            (self.mechanism == "gaussian" and self.delta <= 0,
             "mechanism='gaussian' needs delta > 0"),
            (self.private_keys and self.delta <= 0,
             "keys='private' needs delta > 0 (key selection is (eps, delta)-DP)"),
            (not _is_level(self.ci),
             "ci must be a level in (0, 1), e.g. 0.95 (at most 1 - 1e-12)"),
            (any(not _bound_ok(b) for b in self.declared_contribution),
             "max_rows_per_unit, max_groups_per_unit and max_rows_per_group must be "
             "integers >= 1"),
            (self.privacy_unit is not None and self.max_rows_per_unit is None
             and self.max_rows_per_group is None,
             "privacy_unit needs max_rows_per_unit or max_rows_per_group (a contribution "
             "bound)"),
            (not (0 < self.selection_share < 1), "selection_share must be in (0, 1)"),
            (not (self.postprocess is None or (isinstance(self.postprocess, str)
                                               and self.postprocess == "nonnegative")),
             "postprocess must be 'nonnegative' (the default: counts projected onto "
             "non-negative values with their noisy total kept) or None (the raw noisy "
             "values)"),
            (len(set(self.by)) != len(self.by),
             "a column is grouped by twice: name each grouping column once"),
        ):
            if failed:
                raise ValidationError(message)

    @property
    def declared_contribution(self) -> DeclaredContribution:
        """The declared (T, k, R): ``max_rows_per_unit``, ``max_groups_per_unit``,
        ``max_rows_per_group``."""
        return DeclaredContribution(self.max_rows_per_unit, self.max_groups_per_unit,
                                    self.max_rows_per_group)

    def check_public_keys(self, col: str, kind: ColumnKind) -> None:
        """Declared keys of a grouping column: present, not empty, of the column's kind."""
        if col not in self.keys:
            raise KeysError(
                f"grouping by {col!r} needs public keys: pass keys={{{col!r}: [...]}}, a "
                f"pandera isin check, keys={{{col!r}: 'categories'}} for a Categorical "
                "whose categories are public, or keys='private'")
        keys = self.keys[col]
        if len(keys) == 0:
            raise KeysError(f"the declared keys of {col!r} are empty")
        if kind in NUMERIC_KINDS and any(
                not isinstance(canonical(k, "other"), numbers.Number) for k in keys):
            raise KeysError(f"column {col!r} is numeric but its declared keys are not "
                            "all numbers")
        if kind == "str" and any(not isinstance(k, str) for k in keys):
            raise KeysError(f"column {col!r} holds text but its declared keys are not "
                            "all strings")

    @property
    def declared_groups(self) -> int:
        """Groups of the declared key product (1 ungrouped or with private keys): public."""
        groups = 1
        if self.by and not self.private_keys:
            for col in self.by:
                groups *= len(self.keys[col])
        return groups

    @property
    def cell_groups(self) -> int:
        """The groups an aggregate sizes its per-group cells for: the declared ones, 0 with
        private keys (unknown until the data is read). Public."""
        return 0 if self.by and self.private_keys else self.declared_groups

    def bounds_of(self, column: str) -> tuple[Fraction, Fraction]:
        """The declared bounds of ``column`` as exact fractions, or :class:`BoundsError`."""
        if column not in self.bounds:
            raise BoundsError(
                f"column {column!r} has no declared bounds: pass bounds={{{column!r}: (lo, hi)}} "
                "or a pandera schema with a range check")
        b = self.bounds[column]
        try:
            lo_raw, hi_raw = b
        except (TypeError, ValueError):
            raise BoundsError(f"bounds of {column!r} must be a (lo, hi) pair") from None
        try:
            lo, hi = (to_fraction(v, f"bounds of {column!r}", signed=True)
                      for v in (lo_raw, hi_raw))
        except ValidationError:
            raise BoundsError(f"bounds of {column!r} must be finite numbers") from None
        if not lo < hi:
            raise BoundsError(f"bounds of {column!r} must satisfy lo < hi; declared "
                              f"({format_number(lo)}, {format_number(hi)})"
                              + (": reversed?" if lo > hi else ""))
        if hi - lo < MIN_BOUND_SPAN:
            raise BoundsError(
                f"bounds of {column!r} are narrower than 2**-900: exact accumulation cannot "
                "represent them; rescale the column")
        if max(abs(lo), abs(hi)) > MAX_ABS_BOUND:
            raise BoundsError(
                f"bounds of {column!r} exceed 2**52 in magnitude: exact accumulation could "
                "overflow; rescale the column")
        return lo, hi

    def with_(self, **changes: object) -> Query:
        """A copy with some fields replaced."""
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def columns(self) -> list[str]:
        """Every column the query reads (for the ledger)."""
        cols: list[str] = [*self.by]
        for m in self.measures:
            if m.column and m.column not in cols:
                cols.append(m.column)
        if self.privacy_unit and self.privacy_unit not in cols:
            cols.append(self.privacy_unit)
        return cols


def _utf8(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (no lone surrogate): what Arrow and every engine's
    string columns hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def quantile_level(q: object) -> Fraction:
    """A quantile level as the nearest fraction with denominator <= 1000 (0.333... is 1/3),
    the level actually used and stated in the provenance."""
    f = to_fraction(q, "q")
    if not 0 <= f <= 1:
        raise ValidationError("quantile level q must be in [0, 1]")
    return f.limit_denominator(MAX_LEVEL_DENOMINATOR)


def normalise_keys(keys: Mapping[str, Sequence[object] | str] | None
                   ) -> dict[str, tuple[object, ...] | str]:
    """Declared keys as tuples, equal keys removed (the first spelling and order kept), or the
    opt-in marker ``"categories"`` (a Categorical's categories, resolved from the dtype)."""
    out: dict[str, tuple[object, ...] | str] = {}
    for col, vals in (keys or {}).items():
        if isinstance(vals, str) and vals == CATEGORIES:
            out[col] = CATEGORIES
            continue
        if isinstance(vals, str | bytes):
            raise KeysError(f"keys of {col!r} must be a list of values or 'categories', not a "
                            "string")
        if isinstance(vals, set | frozenset):  # no order: text keys would come out in an
            # order that changes from one process to the next (hash randomization)
            raise KeysError(f"keys of {col!r} must be a list or tuple, not a set: keys are "
                            "released in the declared order, and a set has none")
        try:
            out[col] = tuple(dict.fromkeys(vals))
        except TypeError:
            raise KeysError(f"keys of {col!r} must be a list of hashable values") from None
        for v in out[col]:
            if isinstance(v, str) and not _utf8(v):
                raise KeysError(f"the declared keys of {col!r} contain text that is not valid "
                                "Unicode (a lone surrogate), which Arrow and the engines on it "
                                "cannot hold")
            if canonical(v, "other") is None:
                raise KeysError(f"the declared keys of {col!r} contain a missing or "
                                "unsupported value (keys are numbers, strings, bytes or dates)")
    return out
