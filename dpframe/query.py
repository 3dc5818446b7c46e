"""The Query value object: everything a release needs, validated, and no data.

Fronts (pandas accessor, scan, Dask, CLI) build Queries; the session plans, charges and releases
them through one path (``dpframe.release``). Validation here needs only public information:
arguments, declared bounds and keys, and the column schema (names and dtypes).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Literal

from .errors import BoundsError, KeysError, ValidationError

Op = Literal["count", "sum", "mean", "quantile", "histogram"]
MechanismName = Literal["laplace", "gaussian"]
ColumnKind = Literal["int", "float", "bool", "other"]

DEFAULT_GRID = 1001
MAX_ABS_BOUND = 2.0**52


def exact_fraction(x: object, name: str, *, positive: bool = False,
                   allow_zero: bool = True) -> Fraction:
    """A user number as an exact Fraction (floats via their shortest decimal repr).

    ``0.01`` becomes exactly 1/100, so budgets add up the way people write them.
    """
    if isinstance(x, bool) or not isinstance(x, int | float | Fraction):
        try:
            import numpy as np

            if isinstance(x, np.integer | np.floating) and not isinstance(x, np.bool_):
                x = x.item()
            else:
                raise TypeError
        except TypeError:
            raise ValidationError(f"{name} must be a number") from None
    assert isinstance(x, int | float | Fraction)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValidationError(f"{name} must be finite")
        # float() first: repr(np.float64(0.1)) is 'np.float64(0.1)' under numpy 2
        f = Fraction(repr(float(x)))
    else:
        f = Fraction(x)
    if f < 0 or (positive and f == 0) or (not allow_zero and f == 0):
        raise ValidationError(f"{name} must be {'positive' if positive else 'non-negative'}")
    return f


@dataclass(frozen=True)
class Measure:
    """One released statistic: an operation on a column (or on rows, for counts)."""

    op: Op
    column: str | None = None
    label: str = ""
    q: Fraction | None = None            # quantile level (max = 1, min = 0)
    edges: tuple[float, ...] | None = None  # histogram bin edges
    right: bool = True                   # histogram bins closed on the right, like pd.cut
    grid: int = DEFAULT_GRID             # candidate grid size for quantiles
    weight: Fraction = Fraction(1)       # share of the query's epsilon (relative)

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
    max_rows_per_unit: int = 1
    max_groups_per_unit: int = 1
    mechanism: MechanismName | None = None
    ci: float | None = None
    selection_share: Fraction = Fraction(1, 2)
    sample_rate: Fraction | None = None   # Poisson subsampling of units (exact dyadic rate)
    description: str = ""

    # -- validation ---------------------------------------------------------------------------
    def validate(self, schema: Mapping[str, ColumnKind]) -> Query:
        """Check the query against the public schema; raise a typed error before any charge."""
        if not self.measures:
            raise ValidationError("a query needs at least one aggregate")
        if self.epsilon <= 0:
            raise ValidationError("epsilon must be positive")
        if not (0 <= self.delta < 1):
            raise ValidationError("delta must be in [0, 1)")
        if self.mechanism not in (None, "laplace", "gaussian"):
            raise ValidationError("mechanism must be 'laplace' or 'gaussian'")
        if self.mechanism == "gaussian" and self.delta <= 0:
            raise ValidationError("mechanism='gaussian' needs delta > 0")
        if self.private_keys and self.delta <= 0:
            raise ValidationError("keys='private' needs delta > 0 (key selection is "
                                  "(eps, delta)-DP)")
        if self.ci is not None and not (0 < self.ci < 1):
            raise ValidationError("ci must be a level in (0, 1), e.g. 0.95")
        if self.max_rows_per_unit < 1 or self.max_groups_per_unit < 1:
            raise ValidationError("max_rows_per_unit and max_groups_per_unit must be >= 1")
        if not (0 < self.selection_share < 1):
            raise ValidationError("selection_share must be in (0, 1)")
        for col in (*self.by, *( [self.privacy_unit] if self.privacy_unit else [])):
            if col not in schema:
                raise ValidationError(f"unknown column {col!r}")
        if self.by and not self.private_keys:
            for col in self.by:
                if col not in self.keys:
                    raise KeysError(
                        f"grouping by {col!r} needs public keys: pass keys={{{col!r}: [...]}}, a "
                        "pandera isin check, a Categorical column, or keys='private'")
                if len(self.keys[col]) == 0:
                    raise KeysError(f"the declared keys of {col!r} are empty")
        for m in self.measures:
            self._validate_measure(m, schema)
        return self

    def _validate_measure(self, m: Measure, schema: Mapping[str, ColumnKind]) -> None:
        if m.weight <= 0:
            raise ValidationError("aggregate weights must be positive")
        if m.column is None:
            if m.op != "count":
                raise ValidationError(f"{m.op} needs a column")
            return
        if m.column not in schema:
            raise ValidationError(f"unknown column {m.column!r}")
        if m.op == "count":
            return
        if schema[m.column] not in ("int", "float", "bool"):
            raise ValidationError(f"column {m.column!r} is not numeric")
        if m.op == "histogram":
            edges = m.edges or ()
            if len(edges) < 2 or any(not math.isfinite(e) for e in edges) or any(
                b <= a for a, b in itertools.pairwise(edges)
            ):
                raise ValidationError("histogram bins must be >= 2 finite, increasing edges")
            return
        self.bounds_of(m.column)  # raises BoundsError when missing or malformed
        if m.op == "quantile":
            if m.q is None or not (0 <= m.q <= 1):
                raise ValidationError("quantile level q must be in [0, 1]")
            if m.grid < 2:
                raise ValidationError("the candidate grid needs at least 2 points")

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
        for v in (lo_raw, hi_raw):
            if isinstance(v, bool | str | bytes):
                raise BoundsError(f"bounds of {column!r} must be numbers")
            if not isinstance(v, int | float | Fraction):
                try:
                    float(v)  # numpy scalars
                except (TypeError, ValueError):
                    raise BoundsError(f"bounds of {column!r} must be numbers") from None
        lo_f, hi_f = float(lo_raw), float(hi_raw)
        if not (math.isfinite(lo_f) and math.isfinite(hi_f)):
            raise BoundsError(f"bounds of {column!r} must be finite")
        if not lo_f < hi_f:
            raise BoundsError(f"bounds of {column!r} must satisfy lo < hi")
        if max(abs(lo_f), abs(hi_f)) > MAX_ABS_BOUND:
            raise BoundsError(
                f"bounds of {column!r} exceed 2**52 in magnitude: exact accumulation could "
                "overflow; rescale the column")
        return Fraction(repr(lo_f)), Fraction(repr(hi_f))

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


def normalise_keys(keys: Mapping[str, Sequence[object]] | None) -> dict[str, tuple[object, ...]]:
    """Declared keys as tuples, duplicates removed (order kept)."""
    out: dict[str, tuple[object, ...]] = {}
    for col, vals in (keys or {}).items():
        if isinstance(vals, str | bytes):
            raise KeysError(f"keys of {col!r} must be a list of values, not a string")
        try:
            out[col] = tuple(dict.fromkeys(vals))
        except TypeError:
            raise KeysError(f"keys of {col!r} must be a list of hashable values") from None
    return out
