"""One builder of the exact SQL aggregation, for every SQL engine (Spark, DuckDB).

A request runs as one SQL aggregation (:func:`pushes_down`) when it draws nothing at random,
its keys are public and of integer, text or boolean columns, and it asks only counts and
fixed-point sums of numeric columns. Its SQL is built here once, as a small expression tree
(:class:`Expr`) that each engine renders into its own expressions (Spark ``Column`` objects,
DuckDB ``Expression`` objects): never SQL text, so no value, key or name is interpolated into
a query (literals are constants of the engine's expression API).

The expressions are the exact rules of :mod:`dpframe.core.exact.transform`, written again in
SQL's operations, the same float64 operations in the same order, so each row's fixed-point
integer is :func:`~dpframe.core.exact.transform.fixed_point`'s bit for bit: clamp to the
declared bounds, centre and square, shift, exact power-of-two scaling, ``rint`` half-to-even,
clip after rounding, a missing value (NULL, or NaN in a float column) counted as the integer
nearest 0; integer columns under integer bounds are clamped as integers. Sums are exact
integer sums: in the engine's 128-bit integers (DuckDB), or split into halves at 2**26 that
64-bit sums cannot overflow (Spark), added as Python integers here (:func:`collect`).

Groups are the key columns' own values; the groups whose keys are not declared are dropped
after the aggregation (a set test per group), and each observed key is mapped to its first
declared position by Python equality (``True`` is ``1``, a declared ``3.0`` matches ``3``), as
:func:`~dpframe.backends.base.declared_positions` maps them on the other backends.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from ..core.exact.compute import AggregateRequest, ComputeRequest, ExactAggregates
from ..core.exact.values import ColumnKind, canonical
from .base import public_key_list

__all__ = ["SQL_KINDS", "Dialect", "Expr", "SqlPlan", "collect", "plan", "pushes_down",
           "render"]

#: the request kinds one SQL aggregation computes (the others run on the engine's other path)
SQL_KINDS = frozenset({"rows", "nonnull", "fixed_sum"})
#: the key kinds a SQL aggregation groups by
KEY_KINDS = frozenset({"int", "str", "bool"})
#: where a fixed-point integer is split into two halves whose 64-bit sums cannot overflow
SPLIT = 26


@dataclass(frozen=True)
class Expr:
    """One node of an exact SQL expression: an operation and its arguments (``Expr`` nodes,
    or, for ``col``, ``lit``, ``key`` and ``isin``, Python values: a column name, a constant,
    a kind, a tuple of constants)."""

    op: str
    args: tuple[Any, ...] = ()

    def __or__(self, other: Expr) -> Expr:
        return Expr("or", (self, other))

    def __and__(self, other: Expr) -> Expr:
        return Expr("and", (self, other))

    def __invert__(self) -> Expr:
        return Expr("not", (self,))


def col(name: str) -> Expr:
    return Expr("col", (name,))


def lit(value: object) -> Expr:
    return Expr("lit", (value,))


def op(name: str, *args: Expr) -> Expr:
    return Expr(name, args)


def when(cond: Expr, then: Expr, otherwise: Expr) -> Expr:
    return Expr("when", (cond, then, otherwise))


T = TypeVar("T")


class Dialect(Protocol[T]):
    """How an engine spells each operation (see :func:`render` for the operations)."""

    #: text keys compared as their UTF-8 bytes (the engine groups ``encode(text)``)
    text_bytes: bool
    #: integers a key column may hold: [low, high)
    int_range: tuple[int, int]
    #: whether a 64-bit integer sum could overflow (then sums are split at :data:`SPLIT`)
    split_sums: bool

    def column(self, name: str) -> T: ...

    def literal(self, value: object) -> T: ...

    def key(self, column: T, kind: ColumnKind) -> T: ...

    def isin(self, column: T, values: tuple[object, ...]) -> T: ...

    def call(self, name: str, args: Sequence[T]) -> T: ...


def render(e: Expr, dialect: Dialect[T]) -> T:
    """``e`` in the dialect's expressions. Operations: ``col``, ``lit``, ``key`` (a group key
    column as compared: text as its bytes or text, integers as the widest integer), ``isin``,
    and through :meth:`Dialect.call`: ``int`` (an integer column as the widest integer),
    ``double``, ``long`` (casts), ``least``, ``greatest``, ``sub``, ``mul``, ``rint``
    (half to even; its second argument, a Python int, bounds the values' magnitude),
    ``isnull``, ``isnan``, ``or``, ``and``, ``not``, ``lt``, ``gt``,
    ``coalesce``, ``when`` (cond, then, else), ``shiftright`` and ``shiftleft`` (by a Python
    int), and the aggregates ``sum`` and ``count_rows``."""
    if e.op == "col":
        return dialect.column(e.args[0])
    if e.op == "lit":
        return dialect.literal(e.args[0])
    if e.op == "key":
        return dialect.key(render(e.args[0], dialect), e.args[1])
    if e.op == "isin":
        return dialect.isin(render(e.args[0], dialect), e.args[1])
    return dialect.call(e.op, [render(a, dialect) if isinstance(a, Expr) else a
                               for a in e.args])


# -- which requests ------------------------------------------------------------------------------
def pushes_down(q: ComputeRequest, kinds: Mapping[str, ColumnKind | None],
                measure_kinds: frozenset[str] = frozenset({"int", "float"})) -> bool:
    """Whether ``q`` runs as one SQL aggregation: no random draw, public keys (or none) of
    integer, text or boolean columns, and only counts and fixed-point sums of columns of
    ``measure_kinds``. A function of the schema (``kinds``) and the request only."""
    if q.draws_at_random or q.private_keys:
        return False
    if any(kinds.get(c) not in KEY_KINDS for c in q.by):
        return False
    return all(r.kind in SQL_KINDS and (r.column is None or kinds.get(r.column) in measure_kinds)
               for r in q.requests)


# -- the exact rules, in SQL -----------------------------------------------------------------------
def missing(c: Expr, kind: ColumnKind | None) -> Expr:
    """Whether a value is missing: NULL, or NaN in a float column."""
    return op("isnull", c) | op("isnan", c) if kind == "float" else op("isnull", c)


def _as_number(c: Expr, kind: ColumnKind | None) -> Expr:
    """An integer (or boolean: 0/1) column as the widest integer."""
    return op("long", c) if kind == "bool" else op("int", c)


def fixed_point(c: Expr, r: AggregateRequest, kind: ColumnKind | None) -> Expr:
    """Each row's fixed-point integer (a 64-bit integer), as
    :func:`dpframe.core.exact.transform.fixed_point` computes it: the same float64 operations
    in the same order (so the same integers), integer columns under integer bounds clamped
    as integers, a missing value the integer nearest 0 in ``[ilo, ihi]``."""
    fill = min(max(0, r.ilo), r.ihi)
    if r.integer and kind in ("int", "bool"):
        v = op("least", op("greatest", _as_number(c, kind), lit(r.ilo)), lit(r.ihi))
        return op("long", when(op("isnull", c), lit(fill), v))
    x = op("double", _as_number(c, kind) if kind == "bool" else c)
    v = op("least", op("greatest", x, lit(float(r.lo))), lit(float(r.hi)))
    if r.center is not None:
        v = op("sub", v, lit(float(r.center)))
        v = op("mul", v, v)
    if r.shift:
        v = op("sub", v, lit(float(r.shift)))
    # rint, told a bound of the values it rounds (the scaled bounds, one past them at most)
    v = Expr("rint", (op("mul", v, lit(r.scale)), max(abs(r.ilo), abs(r.ihi)) + 1))
    if r.rounds_past_bounds and not _rounds_inside(r):
        v = op("least", op("greatest", v, lit(float(r.ilo))), lit(float(r.ihi)))
    v = when(missing(c, kind), lit(float(fill)), v)
    return op("long", v)  # |v| <= 2**53, an integer: the cast is exact


def _rounds_inside(r: AggregateRequest) -> bool:
    """Whether the clip after rounding changes no value (so it is left out): without a
    centre, a row's value before rounding is ``fl(clip(x) - shift) * scale``, non-decreasing in
    ``x`` (float subtraction rounds monotonically, the scaling is exact), so it rounds into
    ``[rint(fl(lo - shift) * scale), rint(fl(hi - shift) * scale)]``: inside ``[ilo, ihi]``,
    the clip is the identity (the same float64 operations, here in numpy)."""
    if r.center is not None:
        return False
    low, high = ((np.float64(b) - np.float64(r.shift)) * np.float64(r.scale) for b in (r.lo, r.hi))
    return bool(r.ilo <= np.rint(low) and np.rint(high) <= r.ihi)


def clamped(q: ComputeRequest, kinds: Mapping[str, ColumnKind | None]) -> Expr:
    """How many rows clamping changed (an aggregate), as
    :func:`dpframe.core.exact.primitives.clamped_rows` counts them: a row with a value (not
    missing) of a summed column outside its bounds, compared as float64."""
    hit: Expr = lit(False)
    for r in q.requests:
        if r.kind == "fixed_sum" and r.column is not None:
            kind = kinds.get(r.column)
            c = col(r.column)
            x = op("double", _as_number(c, kind) if kind == "bool" else c)
            out = op("lt", x, lit(float(r.lo))) | op("gt", x, lit(float(r.hi)))
            hit = hit | op("coalesce", ~missing(c, kind) & out, lit(False))
    return op("sum", when(hit, lit(1), lit(0)))


def aggregates(r: AggregateRequest, name: str, kind: ColumnKind | None, split: bool
               ) -> list[tuple[str, Expr]]:
    """The named aggregates of one request: ``name`` (a count, or a sum in 128-bit integers),
    or ``name_hi`` and ``name_lo`` (the halves of a split sum), and ``name_n`` (its
    non-missing values, when the request counts them)."""
    if r.kind == "rows":
        return [(name, op("count_rows"))]
    c = col(r.column or "")
    present = op("sum", when(missing(c, kind), lit(0), lit(1)))
    if r.kind == "nonnull":
        return [(name, present)]
    v = fixed_point(c, r, kind)
    if split:
        # |v| <= 2**53 splits into v = hi * 2**26 + lo with |hi| <= 2**27 and 0 <= lo < 2**26,
        # whose 64-bit sums cannot overflow below 2**36 rows a group
        hi = Expr("shiftright", (v, SPLIT))
        lo = op("sub", v, Expr("shiftleft", (hi, SPLIT)))
        out = [(name + "_hi", op("sum", hi)), (name + "_lo", op("sum", lo))]
    else:
        out = [(name, op("sum", v))]
    return [*out, (name + "_n", present)] if r.with_count else out


# -- groups ----------------------------------------------------------------------------------------
def literal_key(k: object, kind: ColumnKind, int_range: tuple[int, int] = (-(1 << 63), 1 << 63),
                text_bytes: bool = False) -> object | None:
    """``k`` as a constant a key column of ``kind`` can equal (None: no value of it equals
    ``k``), by Python equality as on pandas: a declared number equals an integer when it is
    one whatever its type (``3.0``, ``Decimal("3")``, ``Fraction(3)``, ``np.int8(3)``);
    ``True`` is ``1``; text as its UTF-8 bytes with ``text_bytes`` (text no UTF-8 spells,
    a lone surrogate, equals no value)."""
    if kind == "str":
        if not isinstance(k, str):
            return None
        if not text_bytes:
            return k
        try:
            return k.encode("utf-8")
        except UnicodeEncodeError:
            return None
    if isinstance(k, (bool, np.bool_)):
        return bool(k) if kind == "bool" else int(k)
    if not isinstance(k, numbers.Number):
        return None
    c = canonical(k, "other")  # an int when the number is integral (never raises)
    if not isinstance(c, int):
        return None
    if kind == "bool":
        return bool(c) if c in (0, 1) else None
    return c if int_range[0] <= c < int_range[1] else None


def declared_values(kind: ColumnKind, declared: Sequence[object], int_range: tuple[int, int],
                    text_bytes: bool) -> dict[object, int]:
    """Each declared key that a value of a ``kind`` column can equal, as the constant it is
    compared with, with its first position among ``declared`` (the first match wins)."""
    first: dict[object, int] = {}
    for i, k in enumerate(declared):
        v = literal_key(k, kind, int_range, text_bytes)
        if v is not None and v not in first:
            first[v] = i
    return first


@dataclass
class SqlPlan:
    """One request's aggregation: the groups (row-major over the declared keys), the key
    columns as compared (``_k0``, ...), the test that keeps an aggregated group (its keys
    declared: over the ``_k`` names and ``_rows``), each key's declared positions and size,
    and the named aggregates."""

    keys: list[tuple[object, ...]]
    grouping: list[tuple[str, Expr]]
    declared: Expr
    positions: list[tuple[dict[object, int], int]]
    aggregates: list[tuple[str, Expr]] = field(default_factory=list)


def plan(q: ComputeRequest, kinds: Mapping[str, ColumnKind | None],
         dialect: Dialect[Any]) -> SqlPlan:
    """The aggregation computing ``q`` (which :func:`pushes_down`): per request its
    aggregates (``a0``, ``a1``, ...), ``_clamped`` for ``diagnostics=``, and ``a_`` (a row
    count) when nothing else is asked."""
    keys: list[tuple[object, ...]] = [()]
    where: Expr = lit(True)
    grouping: list[tuple[str, Expr]] = []
    positions: list[tuple[dict[object, int], int]] = []
    if q.by:
        declared = [tuple(q.keys[c]) for c in q.by]
        keys = public_key_list(declared)  # row-major: the codes of group_code
        for i, (c, d) in enumerate(zip(q.by, declared, strict=True)):
            kind = kinds[c]
            assert kind is not None
            first = declared_values(kind, d, dialect.int_range, dialect.text_bytes)
            name = f"_k{i}"
            where = where & (Expr("isin", (col(name), tuple(first))) if first else lit(False))
            grouping.append((name, Expr("key", (col(c), kind))))
            positions.append((first, len(d)))
    aggs: list[tuple[str, Expr]] = []
    for i, r in enumerate(q.requests):
        aggs.extend(aggregates(r, f"a{i}", kinds.get(r.column or ""), dialect.split_sums))
    if q.diagnostics_cap is not None:  # diagnostics=: rows clamping changed (none dropped)
        aggs.append(("_clamped", clamped(q, kinds)))
    if not aggs:
        aggs = [("a_", op("count_rows"))]
    if grouping:
        # the groups of undeclared keys are dropped after the aggregation, by a set test per
        # group: an engine would push a plain test on the keys below the aggregation (a test
        # per row, slower), so it is joined by OR to a test of the group's row count that is
        # never true
        aggs.append(("_rows", op("count_rows")))
        where = where | op("lt", col("_rows"), lit(0))
    return SqlPlan(keys, grouping, where, positions, aggs)


def group_code(row: Mapping[str, Any], positions: list[tuple[dict[object, int], int]]) -> int:
    """The row-major code of an aggregated row's declared keys (``_k0``, ``_k1``, ...): each
    key's first declared position, with the declared sizes as the radices."""
    code = 0
    for i, (first, size) in enumerate(positions):
        code = code * size + first[row[f"_k{i}"]]
    return code


def _exact(values: list[int]) -> np.ndarray:
    big = any(abs(v) >= (1 << 62) for v in values)
    return np.array(values, dtype=object if big else np.int64)


def _per_group(found: list[tuple[int, Mapping[str, Any]]], name: str, ng: int,
               part: Callable[[Mapping[str, Any]], int] | None = None) -> np.ndarray:
    """A per-group aggregate (of ``(code, row)`` pairs) as int64 (Python integers when one is
    past int64), zero where no row fell."""
    out = [0] * ng
    for g, row in found:
        out[g] = part(row) if part is not None else int(row[name] or 0)
    return _exact(out)


def _split_sum(name: str) -> Callable[[Mapping[str, Any]], int]:
    """``hi * 2**26 + lo`` of a split sum, exactly (Python integers)."""
    return lambda row: (int(row[name + "_hi"] or 0) << SPLIT) + int(row[name + "_lo"] or 0)


def collect(q: ComputeRequest, p: SqlPlan, rows: Sequence[Mapping[str, Any]], split: bool
            ) -> ExactAggregates:
    """The exact aggregates of the aggregation's rows (each a mapping of the plan's names;
    the groups of undeclared keys already dropped)."""
    ng = len(p.keys)
    found = [(group_code(row, p.positions), row) for row in rows]
    values: dict[tuple[object, ...], np.ndarray] = {}
    counts: dict[tuple[object, ...], np.ndarray] = {}
    for i, r in enumerate(q.requests):
        name = f"a{i}"
        if r.kind == "fixed_sum":
            values[r.key] = _per_group(found, name, ng, _split_sum(name) if split else None)
            if r.with_count:
                counts[r.key] = _per_group(found, name + "_n", ng)
        else:
            values[r.key] = _per_group(found, name, ng)
    diagnostics = None
    if q.diagnostics_cap is not None:
        diagnostics = (sum(int(row["_clamped"] or 0) for _, row in found), 0)
    return ExactAggregates(p.keys, values, counts, None, diagnostics=diagnostics)
