"""The Spark backend: exact aggregates of a ``pyspark.sql.DataFrame``, computed in Spark.

Noise, budget and ledger stay in the driver (the privacy core); Spark only computes exact
per-group aggregates, and no row is ever collected to the driver. Two plans:

* **Spark SQL** (no privacy unit, no sampling, public keys or none, counts and fixed-point
  sums of numeric columns): each row's group code is a ``CASE`` over the declared keys (Python
  equality, as :func:`~dpframe.backends.base.declared_positions`), each value's fixed-point
  integer the expression :func:`dpframe.core.transform.fixed_point` computes (clamp, centre,
  shift, exact power-of-two scaling, ``rint`` half-to-even, clip after rounding, missing ->
  the integer nearest 0), summed exactly in long arithmetic split at 2**26 (the driver adds
  the halves as Python integers): the same integers as pandas, with no cast that can fail.
* **Blocks of whole units** (everything else: privacy units and their T/k/R bounds, private
  keys, bins, grids, distinct counts): rows are hash-partitioned by their unit (all of a
  unit's rows meet in one partition), and each partition runs the exact primitives
  (:func:`dpframe.core.primitives.compute_exact`, through the pandas backend: the same
  canonical value model, the same keyed priorities of :mod:`dpframe.core.hashing` for
  bounding), with a generator seeded from the release's sampling generator and the partition
  id. Each partition returns its per-group aggregates; the driver merges them with the
  primitives' merge (blocks holding disjoint units add up).

Values: Spark's types map to dpframe's kinds from the schema alone (:func:`spark_kind`);
decimals are numbers (float64 in a block), timestamps are read in the
session time zone, binary is bytes, NaN and null are both missing, ``-0.0`` is ``0``.
Privacy: the plan chosen and every refusal depend on the schema, the request and the declared
keys only; no job can fail on a value (no ANSI cast is made: values that do not conform are
missing).
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

try:
    from pyspark import TaskContext
    from pyspark.sql import Column, DataFrame
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("dpframe.backends.spark needs pyspark: pip install 'dpframe[spark]'") \
        from exc

from ..core.compute import AggregateRequest, ComputeRequest, ExactAggregates
from ..core.values import ColumnKind
from .base import only_columns, public_key_list
from .pandas import PandasBackend

#: the request kinds the Spark SQL plan computes (the others run in blocks)
_SQL_KINDS = frozenset({"rows", "nonnull", "fixed_sum"})
_INTS = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_FLOATS = (T.FloatType, T.DoubleType)
_SPLIT = 26


def spark_kind(t: T.DataType) -> ColumnKind:
    """Public kind of a Spark type (the schema's: never a value's)."""
    if isinstance(t, T.BooleanType):
        return "bool"
    if isinstance(t, _INTS):
        return "int"
    if isinstance(t, (*_FLOATS, T.DecimalType)):
        return "float"
    if isinstance(t, (T.StringType, T.VarcharType, T.CharType)):
        return "str"
    return "other"


class SparkBackend:
    """A Spark DataFrame as a dpframe backend (exact aggregates only, never noise)."""

    def __init__(self, sdf: DataFrame, partitions: int | None = None) -> None:
        self.sdf = sdf
        self._fields = {f.name: f.dataType for f in sdf.schema.fields}
        self._kinds = {name: spark_kind(t) for name, t in self._fields.items()}
        self.partitions = partitions

    def schema(self, columns: Sequence[str] | None = None) -> dict[str, ColumnKind]:
        return dict(self._kinds) if columns is None else only_columns(self._kinds, columns)

    def bind(self, columns: Sequence[str]) -> SparkBackend:
        return self

    def categories(self, column: str) -> tuple[object, ...] | None:
        return None

    def exact(self, request: ComputeRequest, gen: np.random.Generator | None) -> ExactAggregates:
        if self._sql_plan(request):
            return self._sql_exact(request)
        return self._block_exact(request, gen)

    # -- the Spark SQL plan -------------------------------------------------------------------
    def _sql_plan(self, q: ComputeRequest) -> bool:
        """Whether the request runs as one Spark SQL aggregation (schema and request only)."""
        if q.draws_at_random or q.private_keys:
            return False
        if any(self._kinds.get(c) not in ("int", "str", "bool") for c in q.by):
            return False
        return all(r.kind in _SQL_KINDS and (r.column is None or isinstance(
            self._fields.get(r.column), (*_INTS, *_FLOATS))) for r in q.requests)

    def _sql_exact(self, q: ComputeRequest) -> ExactAggregates:
        keys: list[tuple[object, ...]] = [()]
        code: Column = F.lit(0)
        if q.by:
            declared = [tuple(q.keys[c]) for c in q.by]
            sizes = [len(d) for d in declared]
            keys = public_key_list(declared)  # row-major: the code below
            for col, d, size in zip(q.by, declared, sizes, strict=True):
                c = _declared_code(F.col(col), self._kinds[col], d)
                code = F.when((code < 0) | (c < 0), F.lit(-1)).otherwise(code * size + c)
        ng = len(keys)
        aggs: list[Column] = []
        names: list[tuple[AggregateRequest, str]] = []
        for i, r in enumerate(q.requests):
            aggs.extend(_sql_aggregates(r, f"a{i}", self._fields.get(r.column or "")))
            names.append((r, f"a{i}"))
        if not aggs:
            aggs = [F.count(F.lit(1)).alias("a_")]
        grouped = (self.sdf.select(code.alias("_g"), *[F.col(c) for c in q.measure_columns])
                   .where(F.col("_g") >= 0).groupBy("_g").agg(*aggs))
        found = grouped.collect()  # one row per observed group: per-group aggregates only
        values: dict[tuple[object, ...], np.ndarray] = {}
        counts: dict[tuple[object, ...], np.ndarray] = {}
        for r, name in names:
            if r.kind == "fixed_sum":
                hi, lo = _per_group(found, name + "_hi", ng), _per_group(found, name + "_lo", ng)
                values[r.key] = _exact_sum(hi, lo)
            else:
                values[r.key] = _per_group(found, name, ng)
            if r.kind == "fixed_sum" and r.with_count:
                counts[r.key] = _per_group(found, name + "_n", ng)
        return ExactAggregates(keys, values, counts, None)

    # -- blocks of whole units ----------------------------------------------------------------
    def _block_exact(self, q: ComputeRequest, gen: np.random.Generator | None) -> ExactAggregates:
        cols = q.columns
        sdf = self.sdf.select(*[F.col(c) for c in cols])
        if q.privacy_unit:  # every row of a unit in one partition (Spark's hash of the id;
            unit = F.col(q.privacy_unit)  # -0.0 spelled 0.0 first: one unit, one partition)
            if isinstance(self._fields[q.privacy_unit], _FLOATS):
                unit = F.when(unit == 0, F.lit(0.0)).otherwise(unit)
            sdf = sdf.repartition(self.partitions or _default_parts(sdf), unit)
        seed = int(gen.integers(1 << 62)) if gen is not None else 0
        kinds = self._kinds

        def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            got = list(batches)
            if not got:  # an empty partition adds nothing
                return
            frame = _frame(pa.Table.from_batches(got), kinds)
            ctx = TaskContext.get()
            part = ctx.partitionId() if ctx is not None else 0
            block_gen = np.random.default_rng([seed, part]) if gen is not None else None
            agg = PandasBackend(frame).exact(q, block_gen)
            yield pa.RecordBatch.from_pydict({"agg": [pickle.dumps(agg)]},
                                             schema=pa.schema([("agg", pa.binary())]))

        out = sdf.mapInArrow(run, "agg binary").collect()
        parts = [pickle.loads(row["agg"]) for row in out]  # our own executors' bytes
        if not parts:  # no row at all: the aggregates of an empty frame of the same schema
            empty = _frame(self.sdf.select(*[F.col(c) for c in cols]).limit(0).toArrow(),
                           kinds)
            return PandasBackend(empty).exact(q, gen)
        total = parts[0]
        for p in parts[1:]:
            total = total.merge(p)
        return total


def _default_parts(sdf: DataFrame) -> int:
    return int(sdf.sparkSession.conf.get("spark.sql.shuffle.partitions") or 8)


def _frame(table: pa.Table, kinds: dict[str, ColumnKind]) -> pd.DataFrame:
    """A partition as pandas, each column in a dtype of its public kind: integers and booleans
    nullable (a null never turns an id or a key into a float), decimals float64 numbers
    (a value that is not one is missing), timestamps in the session time zone Spark sent them in."""
    mapper = {pa.int8(): pd.Int64Dtype(), pa.int16(): pd.Int64Dtype(),
              pa.int32(): pd.Int64Dtype(), pa.int64(): pd.Int64Dtype(),
              pa.bool_(): pd.BooleanDtype(), pa.string(): None, pa.large_string(): None}
    frame = table.to_pandas(types_mapper=mapper.get)
    for name, kind in kinds.items():  # decimals: numbers of their exact value
        if name in frame.columns and kind == "float" and frame[name].dtype == object:
            frame[name] = pd.to_numeric(frame[name].map(_decimal_number), errors="coerce")
    return frame


def _decimal_number(v: object) -> float:
    try:
        return float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def _declared_code(col: Column, kind: ColumnKind, declared: tuple[object, ...]) -> Column:
    """The position of each row's key among ``declared`` (-1: undeclared or missing), with
    Python equality: a text column matches declared text, a number column declared numbers
    (``True`` is ``1``), a boolean column declared booleans and 0/1. First match wins."""
    lits = [_literal(k, kind) for k in declared]
    found = [(i, v) for i, v in enumerate(lits) if v is not None]
    if not found:
        return F.lit(-1)
    spark_type = {"str": "string", "bool": "boolean"}.get(kind, "bigint")
    values = F.array(*[F.lit(v).cast(spark_type) for _, v in found])
    where = F.array(*[F.lit(i) for i, _ in found])
    pos = F.array_position(values, col.cast(spark_type))  # 1-based, 0: not found
    return F.when(col.isNull() | (pos == 0), F.lit(-1)).otherwise(
        F.element_at(where, pos.cast("int")))


def _literal(k: object, kind: ColumnKind) -> object | None:
    """``k`` as a literal a column of ``kind`` can equal (None: no value of it equals ``k``)."""
    if kind == "str":
        return k if isinstance(k, str) else None
    if isinstance(k, (bool, np.bool_)):
        return bool(k) if kind == "bool" else int(k)
    if isinstance(k, (int, np.integer)):
        if kind == "bool":
            return bool(k) if int(k) in (0, 1) else None
        return int(k) if -(1 << 63) <= int(k) < (1 << 63) else None
    if isinstance(k, (float, np.floating)) and math.isfinite(k) and float(k).is_integer():
        return _literal(int(k), kind)
    return None


def _missing(col: Column, t: Any) -> Column:
    return col.isNull() | F.isnan(col) if isinstance(t, _FLOATS) else col.isNull()


def _fixed_point(col: Column, r: AggregateRequest, t: Any) -> Column:
    """Each row's fixed-point integer, as :func:`dpframe.core.transform.fixed_point` computes
    it (same float64 operations in the same order, so the same integers)."""
    missing = float(min(max(0, r.ilo), r.ihi))
    if r.integer and isinstance(t, _INTS):
        v = F.least(F.greatest(col.cast("long"), F.lit(r.ilo)), F.lit(r.ihi))
        return F.when(col.isNull(), F.lit(int(missing))).otherwise(v)
    x = col.cast("double")
    v = F.least(F.greatest(x, F.lit(float(r.lo))), F.lit(float(r.hi)))
    if r.center is not None:
        v = v - F.lit(r.center)
        v = v * v
    if r.shift:
        v = v - F.lit(r.shift)
    v = F.rint(v * F.lit(r.scale))
    if r.rounds_past_bounds:
        v = F.least(F.greatest(v, F.lit(float(r.ilo))), F.lit(float(r.ihi)))
    v = F.when(_missing(col, t), F.lit(missing)).otherwise(v)
    return v.cast("long")  # |v| <= 2**53: the cast is exact


def _sql_aggregates(r: AggregateRequest, name: str, t: Any) -> list[Column]:
    if r.kind == "rows":
        return [F.count(F.lit(1)).alias(name)]
    col = F.col(r.column or "")
    present = F.sum(F.when(_missing(col, t), F.lit(0)).otherwise(F.lit(1)))
    if r.kind == "nonnull":
        return [present.alias(name)]
    v = _fixed_point(col, r, t)
    # exact integer sums in long arithmetic: |v| <= 2**53 splits into v = hi * 2**26 + lo with
    # |hi| <= 2**27 and 0 <= lo < 2**26, whose sums cannot overflow below 2**36 rows a group;
    # the driver adds hi * 2**26 + lo as Python integers (as grouped_sum_exact does)
    hi = F.shiftright(v, _SPLIT)
    lo = v - F.shiftleft(hi, _SPLIT)
    out = [F.sum(hi).alias(name + "_hi"), F.sum(lo).alias(name + "_lo")]
    return [*out, present.alias(name + "_n")] if r.with_count else out


def _exact_sum(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """``hi * 2**26 + lo`` per group, exactly (int64, or Python integers past it)."""
    total = [int(h) * (1 << _SPLIT) + int(b) for h, b in zip(hi.tolist(), lo.tolist(),
                                                               strict=True)]
    big = any(abs(v) >= (1 << 62) for v in total)
    return np.array(total, dtype=object if big else np.int64)


def _per_group(found: list[Any], name: str, ng: int) -> np.ndarray:
    """A per-group aggregate column as an int64 array (Python integers when one is past
    int64), zero where no row fell."""
    vals = {int(row["_g"]): int(row[name] or 0) for row in found}
    big = any(abs(v) >= (1 << 62) for v in vals.values())
    out = np.zeros(ng, dtype=object if big else np.int64)
    for g, v in vals.items():
        out[g] = v
    return out
