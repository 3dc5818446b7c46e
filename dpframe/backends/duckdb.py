"""The DuckDB backend: one DuckDB SQL aggregation where that is exact, else Arrow batches.

**Push-down.** A request that draws nothing at random, groups by public keys (or none) of
integer, text or boolean columns and asks only counts and fixed-point sums of numeric or
boolean columns (:func:`dpframe.backends.sql.pushes_down`: the schema and the request decide)
runs as one DuckDB aggregation, built by :mod:`dpframe.backends.sql` (the one builder of the
exact SQL, Spark's too) as DuckDB expression objects: constants are bound values, never SQL
text. Each row's fixed-point integer is :func:`dpframe.core.exact.transform.fixed_point`'s,
summed exactly in DuckDB's 128-bit integers; text keys are grouped as their UTF-8 bytes
(whatever the connection's collation), the groups of undeclared keys dropped. The released
bits are those of the Arrow batch path for the same seed (tests/backends/duckdb/
test_pushdown.py compares the two).

**Arrow batches** (everything else: privacy units, private keys, quantiles, histograms,
distinct counts, other types): DuckDB runs the relation's query and hands its rows over as
Arrow record batches (``relation.to_arrow_reader(batch_size)``) of the columns a release
reads; the :class:`~dpframe.backends.arrow.ArrowBackend` does everything else, through a
:class:`~dpframe.backends.arrow.BatchSource`. So the privacy rules are the scan's, not a copy:
conformance of each batch to the public schema and the canonical values, UTF-8 checks,
contribution bounding (T, k, R) over keyed partitions, heavy units' pre-selection, the exact
fixed-point sums and ``diagnostics=`` counts.

**Privacy.** The public schema (column names, Arrow types, an ``ENUM``'s declared values) is
read from the relation's types: the Arrow schema DuckDB gives an empty result of the relation
(``LIMIT 0``: no row is read), never a value. A query's plan, its path (push-down or
batches), its refusals and its charge depend on that schema and the arguments only; the rows
decide nothing but the exact aggregates the release then noises. A failure while DuckDB
reads the rows or runs the aggregation (a cast meeting a malformed value, a missing file)
happens after the charge; it is reported as a ``ValidationError`` naming only the DuckDB
exception type (its message may quote a value), and the charge stands, as for a scan or a
Polars LazyFrame.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

try:
    import duckdb
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("dpframe.backends.duckdb needs duckdb: pip install 'dpframe[duckdb]'") \
        from exc

import pyarrow as pa

from ..core.exact.compute import ComputeRequest, ExactAggregates
from ..core.exact.values import ColumnKind
from ..errors import ValidationError
from . import sql
from .arrow import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_PARTITION_ROWS,
    PREFETCH,
    ArrowBackend,
    BatchFactory,
    BatchSource,
    prefetch,
)
from .blocks.arrow_columns import arrow_kind

__all__ = ["DuckDBBackend", "arrow_schema", "relation_of"]

_FAILED = "(its message is not shown: it may quote a value of the data)"
#: Whether the requests :func:`dpframe.backends.sql.pushes_down` allows run as one DuckDB SQL
#: aggregation (else every request reads Arrow batches). Tests set it False to compare the
#: two paths; the choice never depends on a value.
PUSHDOWN = True
#: DuckDB's type ids (the schema's, never a value's) as the kinds the SQL aggregation reads
_SQL_KINDS: dict[str, ColumnKind] = {
    **dict.fromkeys(("tinyint", "smallint", "integer", "bigint", "utinyint", "usmallint",
                     "uinteger", "ubigint"), "int"),
    "float": "float", "double": "float", "boolean": "bool", "varchar": "str", "enum": "str"}


def relation_of(source: Any, con: Any = None) -> duckdb.DuckDBPyRelation:
    """``source`` as a relation: a ``DuckDBPyRelation`` as is, a string as the table or view
    of that name in ``con`` (default: DuckDB's default connection)."""
    if isinstance(source, duckdb.DuckDBPyRelation):
        if con is not None:
            raise ValidationError("con= is for a table name: a relation has its connection")
        return source
    if isinstance(source, str):
        try:
            return (duckdb if con is None else con).table(source)
        except duckdb.Error as exc:  # names the table (the analyst's argument), no value
            raise ValidationError(f"no DuckDB table or view {source!r} "
                                  f"({type(exc).__name__})") from None
    raise ValidationError("expected a DuckDB relation or the name of a table or view")


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _project(rel: duckdb.DuckDBPyRelation, names: Sequence[str],
             columns: Sequence[str]) -> duckdb.DuckDBPyRelation:
    """The relation's ``columns`` by position (``#i``) in ``names`` (the public schema's), so
    names DuckDB binds case-insensitively (``a`` beside ``A``, which its Arrow result spells
    ``A_1``) are never ambiguous. Names are unique (BatchSource checks)."""
    position = {name: i for i, name in enumerate(names)}
    return rel.project(", ".join(f"#{position[c] + 1} AS {_quoted(c)}" for c in columns))


def _unreadable(name: str, dtype: object) -> ValidationError:
    return ValidationError(f"column {name!r} has the DuckDB type {dtype}, which dpframe cannot "
                           "read: select or cast the columns to query first")


def arrow_schema(rel: duckdb.DuckDBPyRelation) -> pa.Schema:
    """The Arrow schema of the relation's types: DuckDB's Arrow result of no row
    (``LIMIT 0``). A type with no Arrow form is refused, naming its column; a relation that
    cannot run at all (a closed connection, a dropped table) naming the exception type."""
    try:
        return rel.limit(0).to_arrow_table().schema
    except Exception as exc:
        failure = type(exc).__name__
    try:
        columns = list(zip(rel.columns, rel.types, strict=True))
    except Exception:
        columns = []
    bad = []
    for i, (name, dtype) in enumerate(columns):
        try:
            rel.project(f"#{i + 1}").limit(0).to_arrow_table()
        except Exception:
            bad.append((name, dtype))
    if bad and len(bad) < len(columns):
        raise _unreadable(*bad[0])
    raise ValidationError(f"cannot run the DuckDB relation ({failure}) {_FAILED}")


def _enum_categories(rel: duckdb.DuckDBPyRelation, names: Sequence[str]
                     ) -> dict[str, tuple[object, ...]]:
    """The declared values of ``ENUM`` columns (the type's, never the data's), by the public
    schema's ``names``."""
    out: dict[str, tuple[object, ...]] = {}
    for name, dtype in zip(names, rel.types, strict=True):
        values = dict(dtype.children).get("values") if dtype.id == "enum" else None
        if isinstance(values, list):
            out[name] = tuple(values)
    return out


def _batches(rel: duckdb.DuckDBPyRelation, names: Sequence[str]) -> BatchFactory:
    def stream(columns: Sequence[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        reader: pa.RecordBatchReader | None = None
        try:
            reader = _project(rel, names, columns).to_arrow_reader(batch_size)
            yield from reader
        except Exception as exc:  # a DuckDB message may quote a value of the data
            raise ValidationError(f"the DuckDB relation failed while it was read "
                                  f"({type(exc).__name__}) {_FAILED}") from None
        finally:
            if reader is not None:  # stops the query when the release ends early
                reader.close()

    def batches(columns: Sequence[str], batch_size: int,
                dictionary: Sequence[str]) -> Iterator[pa.RecordBatch]:
        # DuckDB computes the next batch on a thread while the backend aggregates this one
        # (``dictionary`` is a hint: the backend factorizes plain strings the same way)
        yield from prefetch(lambda: stream(columns, batch_size), PREFETCH)

    return batches


class DuckDBBackend(ArrowBackend):
    """The Arrow batch backend over a DuckDB relation (or a table or view by name).

    An ``ENUM``'s declared values are declared categories: public keys on the analyst's
    opt-in (``keys={"col": "categories"}``), as a pandas ``Categorical`` or a ``pl.Enum``.
    The relation's row count is not known without running it, so privacy-unit plans use 16
    partitions unless ``partitions=`` says otherwise.
    """

    def __init__(self, source: Any, *, con: Any = None, batch_size: int = DEFAULT_BATCH_SIZE,
                 progress: bool | None = None, partition_rows: int = DEFAULT_PARTITION_ROWS,
                 partitions: int | None = None,
                 spill_dir: str | os.PathLike[str] | None = None) -> None:
        rel = relation_of(source, con)
        self.relation = rel
        schema = arrow_schema(rel)
        self._categories = _enum_categories(rel, schema.names)
        self._names = list(schema.names)
        self._sql_kinds = _sql_kinds(rel, schema)
        super().__init__(BatchSource(schema, _batches(rel, schema.names)), batch_size=batch_size,
                         progress=progress, partition_rows=partition_rows,
                         partitions=partitions, spill_dir=spill_dir)

    def categories(self, column: str) -> tuple[object, ...] | None:
        return self._categories.get(column)

    def exact(self, request: ComputeRequest, gen: np.random.Generator | None) -> ExactAggregates:
        """One DuckDB SQL aggregation when :func:`dpframe.backends.sql.pushes_down` allows
        it (the schema and the request decide, never a value), else the Arrow batches."""
        if PUSHDOWN and sql.pushes_down(request, self._sql_kinds, _MEASURE_KINDS):
            return _pushed_down(self.relation, self._names, self._sql_kinds, request)
        return super().exact(request, gen)


_MEASURE_KINDS = frozenset({"int", "float", "bool"})


def _sql_kinds(rel: duckdb.DuckDBPyRelation, schema: pa.Schema
               ) -> dict[str, ColumnKind | None]:
    """Each column's kind for the SQL aggregation, from DuckDB's type ids (None: a type it
    leaves to the Arrow batches), when the public schema's kind agrees."""
    out: dict[str, ColumnKind | None] = {}
    for f, dtype in zip(schema, rel.types, strict=True):
        kind = _SQL_KINDS.get(str(dtype.id))
        out[f.name] = kind if kind == arrow_kind(f.type) else None
    return out


class _DuckDBDialect:
    """The exact SQL (:mod:`dpframe.backends.sql`) as DuckDB expressions: constants are
    ``ConstantExpression`` values (never SQL text), text keys are grouped as their UTF-8
    bytes (``encode``: whatever the connection's collation), sums are DuckDB's 128-bit
    ``HUGEINT`` sums of 64-bit integers (no split)."""

    text_bytes = True
    int_range = (-(1 << 63), 1 << 64)  # BIGINT and UBIGINT
    split_sums = False

    def __init__(self, columns: Mapping[str, str]) -> None:
        self.columns = columns

    def column(self, name: str) -> Any:
        return duckdb.ColumnExpression(self.columns[name])

    def literal(self, value: object) -> Any:
        return duckdb.ConstantExpression(value)

    def key(self, column: Any, kind: ColumnKind) -> Any:
        if kind == "str":
            return duckdb.FunctionExpression("encode", column.cast(duckdb.sqltype("VARCHAR")))
        return column

    def isin(self, column: Any, values: tuple[object, ...]) -> Any:
        return column.isin(*(duckdb.ConstantExpression(v) for v in values))

    def call(self, name: str, args: Sequence[Any]) -> Any:
        f = duckdb.FunctionExpression
        if name == "int":
            return args[0]
        if name in ("long", "double"):
            return args[0].cast(duckdb.sqltype("BIGINT" if name == "long" else "DOUBLE"))
        if name in ("least", "greatest", "isnan", "sum"):
            return f(name, *args)
        if name == "rint":
            return _rint(args[0], args[1])
        if name == "count_rows":
            return f("count_star")
        if name == "isnull":
            return args[0].isnull()
        if name == "coalesce":
            return duckdb.CoalesceOperator(*args)
        if name == "when":
            return duckdb.CaseExpression(args[0], args[1]).otherwise(args[2])
        if name == "not":
            return ~args[0]
        binary = {"sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
                  "lt": lambda a, b: a < b, "gt": lambda a, b: a > b,
                  "or": lambda a, b: a | b, "and": lambda a, b: a & b}
        return binary[name](*args)


#: 1.5 * 2**52: ``(v + M) - M`` is ``rint(v)`` (half to even) for ``|v| < 2**51``, exactly
_ROUNDING = 6755399441055744.0


def _rint(v: Any, bound: int) -> Any:
    """``rint(v)``, half to even, exactly: below 2**50 by adding and subtracting 1.5 * 2**52
    (the sum lands where doubles are the integers, rounded half to even by IEEE arithmetic;
    about twice as fast as DuckDB's ``round_even``), else ``round_even(v, 0)``."""
    if bound < 1 << 50:
        return (v + duckdb.ConstantExpression(_ROUNDING)) - duckdb.ConstantExpression(_ROUNDING)
    return duckdb.FunctionExpression("round_even", v, duckdb.ConstantExpression(0))


def _pushed_down(rel: duckdb.DuckDBPyRelation, names: Sequence[str],
                 kinds: Mapping[str, ColumnKind | None], q: ComputeRequest) -> ExactAggregates:
    """``q``'s exact aggregates as one DuckDB aggregation (:func:`dpframe.backends.sql.plan`):
    the columns read by position under internal names (``_c0``, ...), the key columns as
    compared (``_k0``, ...), grouped, the groups of undeclared keys dropped. A failure while
    DuckDB runs it names the exception type only (its message may quote a value)."""
    position = {name: i for i, name in enumerate(names)}
    internal = {c: f"_c{i}" for i, c in enumerate(q.columns)}
    dialect = _DuckDBDialect(internal)
    p = sql.plan(q, kinds, dialect)
    failed = None
    try:
        read = rel.project(", ".join(f"#{position[c] + 1} AS {internal[c]}" for c in q.columns)
                           if q.columns else "1 AS _c")
        if p.grouping:
            stage = read.project(*[sql.render(e, dialect).alias(n) for n, e in p.grouping],
                                 *[duckdb.ColumnExpression(v) for v in internal.values()])
            groups = [duckdb.ColumnExpression(n) for n, _ in p.grouping]
            out = stage.aggregate([*groups, *(sql.render(e, dialect).alias(n)
                                              for n, e in p.aggregates)],
                                  ", ".join(n for n, _ in p.grouping))
            keys = _DuckDBDialect({n: n for n in (*(n for n, _ in p.grouping), "_rows")})
            out = out.filter(sql.render(p.declared, keys))
        else:
            out = read.aggregate([sql.render(e, dialect).alias(n) for n, e in p.aggregates])
        columns = out.columns
        rows = [dict(zip(columns, row, strict=True)) for row in out.fetchall()]
    except Exception as exc:  # a DuckDB message may quote a value of the data
        failed = type(exc).__name__
    if failed is not None:  # raised outside the handler: the message is not even kept
        raise ValidationError(f"the DuckDB relation failed while it was read ({failed}) "
                              f"{_FAILED}")
    return sql.collect(q, p, rows, split=False)
