"""The Spark backend: exact aggregates of a ``pyspark.sql.DataFrame``, computed in Spark.

Noise, budget and ledger stay in the driver (the privacy core); Spark only computes exact
per-group aggregates, and no row is ever collected to the driver. Two plans:

* **Spark SQL** (no privacy unit, no sampling, public keys or none, counts and fixed-point sums
  of numeric columns): one aggregation grouped by the key columns' own values, whose groups of
  undeclared keys are then dropped (a hash-set ``IN`` per group, Python equality as
  :func:`~dpframe.backends.base.declared_positions`; the driver maps each observed key to its
  first declared position), each value's fixed-point integer the expression
  :func:`dpframe.core.transform.fixed_point` computes (clamp, centre, shift, exact power-of-two
  scaling, ``rint`` half-to-even, clip after rounding, missing -> the integer nearest 0), summed
  exactly in long arithmetic split at 2**26 (the driver adds the halves as Python integers): the
  same integers as pandas, with no cast that can fail.
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
        keys, declared, grouping, positions = self._declared(q)
        ng = len(keys)
        aggs: list[Column] = []
        names: list[tuple[AggregateRequest, str]] = []
        for i, r in enumerate(q.requests):
            aggs.extend(_sql_aggregates(r, f"a{i}", self._fields.get(r.column or "")))
            names.append((r, f"a{i}"))
        if q.diagnostics_cap is not None:  # diagnostics=: rows clamping changed (none dropped)
            aggs.append(_clamped(q, self._fields).alias("_clamped"))
        if not aggs:
            aggs = [F.count(F.lit(1)).alias("a_")]
        # one aggregation over the key columns' own values, the groups of undeclared keys
        # dropped after it (a hash-set test per group, not per row: Spark would push a plain
        # test on the keys below the aggregation, so it is joined by OR to a test of the
        # group's row count that is never true); the driver maps each observed key to its
        # declared position
        if grouping:
            grouped = self.sdf.groupBy(*grouping).agg(*aggs, F.count(F.lit(1)).alias("_rows"))
            grouped = grouped.where(declared | (F.col("_rows") < 0))
        else:
            grouped = self.sdf.agg(*aggs)
        found = [(_group_code(row, positions), row) for row in grouped.collect()]
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
        diagnostics = None
        if q.diagnostics_cap is not None:
            diagnostics = (sum(int(row["_clamped"] or 0) for _, row in found), 0)
        return ExactAggregates(keys, values, counts, None, diagnostics=diagnostics)

    def _declared(self, q: ComputeRequest) -> tuple[list[tuple[object, ...]], Column,
                                                    list[Column], list[tuple[dict[object, int],
                                                                             int]]]:
        """The groups (row-major over the declared keys), the test that a group's keys
        (``_k0``, ...) are declared, the key columns as compared (named ``_k0``, ...) and each
        one's positions."""
        keys: list[tuple[object, ...]] = [()]
        where: Column = F.lit(True)
        grouping: list[Column] = []
        positions: list[tuple[dict[object, int], int]] = []
        if q.by:
            declared = [tuple(q.keys[c]) for c in q.by]
            keys = public_key_list(declared)  # row-major: the codes of _group_code
            for i, (col, d) in enumerate(zip(q.by, declared, strict=True)):
                cast, first = _declared_values(self._kinds[col], d)
                where = where & (F.col(f"_k{i}").isin(*first) if first else F.lit(False))
                grouping.append(F.col(col).cast(cast).alias(f"_k{i}"))
                positions.append((first, len(d)))
        return keys, where, grouping, positions

    # -- blocks of whole units ----------------------------------------------------------------
    def _block_exact(self, q: ComputeRequest, gen: np.random.Generator | None) -> ExactAggregates:
        cols = q.columns
        sdf = self.sdf.select(*[F.col(c) for c in cols])
        if q.privacy_unit:  # every row of a unit in one partition (Spark's hash of the id)
            unit = _unit_column(F.col(q.privacy_unit), self._fields[q.privacy_unit])
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


def _unit_column(unit: Column, t: Any) -> Column:
    """The unit id Spark hashes to place a row, ``-0.0`` spelled ``0.0``: a unit spelled both
    ways must not be split over two blocks, each keeping up to T of its rows (pyspark 4's
    ``repartition`` already places them together; this keeps it so on any version)."""
    if isinstance(t, _FLOATS):
        return F.when(unit == 0, F.lit(0.0)).otherwise(unit)
    return unit


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


def _declared_values(kind: ColumnKind, declared: tuple[object, ...]
                     ) -> tuple[str, dict[object, int]]:
    """The Spark type a key column of ``kind`` is compared in, and each declared key that a
    value of it can equal (Python equality: a text column matches declared text, a number
    column declared numbers, ``True`` being ``1``, a boolean column declared booleans and 0/1)
    with its first position among ``declared`` (the first match wins, as in pandas)."""
    first: dict[object, int] = {}
    for i, k in enumerate(declared):
        v = _literal(k, kind)
        if v is not None and v not in first:
            first[v] = i
    return {"str": "string", "bool": "boolean"}.get(kind, "bigint"), first


def _group_code(row: Any, positions: list[tuple[dict[object, int], int]]) -> int:
    """The row-major code of an aggregated row's declared keys (``_k0``, ``_k1``, ...): each
    key's first declared position, with the declared sizes as the radices."""
    code = 0
    for i, (first, size) in enumerate(positions):
        code = code * size + first[row[f"_k{i}"]]
    return code


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


def _clamped(q: ComputeRequest, fields: dict[str, Any]) -> Column:
    """How many rows clamping changed, as :func:`dpframe.core.primitives.clamped_rows` counts
    them: a row with a value (not null, not NaN) of a summed column outside its bounds."""
    hit: Column = F.lit(False)
    for r in q.requests:
        if r.kind == "fixed_sum" and r.column is not None:
            x = F.col(r.column).cast("double")
            out = (x < F.lit(float(r.lo))) | (x > F.lit(float(r.hi)))
            hit = hit | F.coalesce(~_missing(F.col(r.column), fields[r.column]) & out,
                                   F.lit(False))
    return F.sum(F.when(hit, F.lit(1)).otherwise(F.lit(0)))


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


def _per_group(found: list[tuple[int, Any]], name: str, ng: int) -> np.ndarray:
    """A per-group aggregate column (of ``(code, row)`` pairs) as an int64 array (Python
    integers when one is past int64), zero where no row fell."""
    vals = {code: int(row[name] or 0) for code, row in found}
    big = any(abs(v) >= (1 << 62) for v in vals.values())
    out = np.zeros(ng, dtype=object if big else np.int64)
    for g, v in vals.items():
        out[g] = v
    return out
