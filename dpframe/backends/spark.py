"""The Spark backend: exact aggregates of a ``pyspark.sql.DataFrame``, computed in Spark.

Noise, budget and ledger stay in the driver (the privacy core); Spark only computes exact
per-group aggregates, and no row is ever collected to the driver. Two plans:

* **Spark SQL** (no privacy unit, no sampling, public keys or none, counts and fixed-point sums
  of numeric columns): one aggregation grouped by the key columns' own values, whose groups of
  undeclared keys are then dropped (a hash-set ``IN`` per group, Python equality as
  :func:`~dpframe.backends.base.declared_positions`; the driver maps each observed key to its
  first declared position), each value's fixed-point integer the expression
  :func:`dpframe.core.exact.transform.fixed_point` computes (clamp, centre, shift, exact
  power-of-two
  scaling, ``rint`` half-to-even, clip after rounding, missing -> the integer nearest 0), summed
  exactly in long arithmetic split at 2**26 (the driver adds the halves as Python integers): the
  same integers as pandas, with no cast that can fail.
* **Blocks of whole units** (everything else: privacy units and their T/k/R bounds, private
  keys, bins, grids, distinct counts): rows are hash-partitioned by their unit (all of a
  unit's rows meet in one partition), each input chunk having first kept, per unit, only the
  rows that can survive bounding with the priorities it read (:func:`_preselect`: a heavy
  unit's rows no longer all travel, so a worker's memory does not grow with one person's
  rows), and each partition selects again by those priorities, then runs the exact primitives
  (:func:`dpframe.core.exact.primitives.compute_exact`, through the pandas backend: the same
  canonical value model, the same keyed priorities of :mod:`dpframe.core.exact.hashing` for
  bounding), with a generator seeded from the release's sampling generator and the partition
  id. Each partition returns its per-group aggregates; the driver merges them with the
  primitives' merge (blocks holding disjoint units add up). With no unit id over
  :data:`HEAVY_ROWS` rows (:func:`_light`) every chunk would be sent whole, so the pass before
  the exchange is skipped; a frame whose plan already places its rows by the unit
  (:func:`placed_by`: a bucketed table, an upstream ``repartition``) skips the exchange, each
  task pre-selecting and bounding its own partition. Neither changes the rows kept.

Values: Spark's types map to dpframe's kinds from the schema alone (:func:`spark_kind`);
decimals are exact values of kind "other" (as on pandas), text that is not UTF-8 is missing,
timestamps are read in the session time zone, binary is bytes, NaN and null are both missing,
``-0.0`` is ``0``.
Privacy: the plan chosen and every refusal depend on the schema, the request and the declared
keys only (whether blocks pre-select, as each chunk's, depends on the rows' counts: never the
rows kept); no job can fail on a value (no ANSI cast: values that do not conform are
missing). The workers are probed before the first block job (:func:`check_workers`); a read
that fails for good refuses before the charge, any other failure is charged (:meth:`exact`).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

try:
    from pyspark import TaskContext
    from pyspark.sql import Column, DataFrame
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("dpframe.backends.spark needs pyspark: pip install 'dpframe[spark]'") \
        from exc

from .._version import __version__
from ..core.exact.bounding import pair_priorities, ranked_private_keys, select_drawing
from ..core.exact.compute import ComputeRequest, ExactAggregates
from ..core.exact.hashing import number_words, value_words
from ..core.exact.transform import dropped_rows
from ..core.exact.values import ColumnKind
from ..errors import DPError, InputError, ValidationError, WorkerError
from . import sql
from .base import only_columns
from .blocks import UnitBlock, exact_of_block, merge_exact
from .blocks.arrow_conform import utf8_or_missing
from .blocks.frames import PandasBackend, factorize
from .spark_layout import light, placed_by

_INTS = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_FLOATS = (T.FloatType, T.DoubleType)


def spark_kind(t: T.DataType) -> ColumnKind:
    """Public kind of a Spark type (the schema's: never a value's). Decimals are "other", as
    on pandas and in a scan: exact values (units, keys, distinct values), never rounded to a
    float (cast a decimal column to double to sum it)."""
    if isinstance(t, T.BooleanType):
        return "bool"
    if isinstance(t, _INTS):
        return "int"
    if isinstance(t, _FLOATS):
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
        """The exact aggregates, by the Spark SQL plan or in blocks of whole units (whose
        workers are probed first: :func:`check_workers`).

        A job that fails for good on its input (a file deleted, unreadable or corrupt) or
        because the cluster is gone (the SparkContext stopped) is an operational fault: an
        :class:`~dpframe.errors.InputError`, raised before the charge (nothing is spent). Any
        other failure is a defect (it might depend on the data): a
        :class:`~dpframe.errors.ValidationError` naming only the exception's type (its
        message may quote a value), which the release charges and records failed."""
        try:
            if self._sql_plan(request):
                return self._sql_exact(request)
            check_workers(self.sdf.sparkSession.sparkContext)
            return self._block_exact(request, gen)
        except DPError:
            raise
        except Exception as exc:
            failed, operational = type(exc).__name__, _operational(exc)
        # raised outside the handler: the original exception (and its message, which may
        # quote a value) is not even kept as this error's context
        if operational:
            raise InputError(f"the Spark job could not read its input or reach the cluster "
                             f"({failed}); nothing was charged")
        raise ValidationError(f"the Spark computation failed ({failed}); its message is not "
                              "shown: it may quote a value of the data")

    # -- the Spark SQL plan -------------------------------------------------------------------
    def _sql_plan(self, q: ComputeRequest) -> bool:
        """Whether the request runs as one Spark SQL aggregation (schema and request only)."""
        return sql.pushes_down(q, self._kinds)

    def _sql_exact(self, q: ComputeRequest) -> ExactAggregates:
        """The aggregation :func:`dpframe.backends.sql.plan` builds, in Spark's columns."""
        dialect = _SparkDialect()
        p = sql.plan(q, self._kinds, dialect)
        aggs = [sql.render(e, dialect).alias(name) for name, e in p.aggregates]
        # one aggregation over the key columns' own values, the groups of undeclared keys
        # dropped after it; the driver maps each observed key to its declared position
        if p.grouping:
            grouping = [sql.render(e, dialect).alias(name) for name, e in p.grouping]
            grouped = self.sdf.groupBy(*grouping).agg(*aggs)
            grouped = grouped.where(sql.render(p.declared, dialect))
        else:
            grouped = self.sdf.agg(*aggs)
        return sql.collect(q, p, [row.asDict() for row in grouped.collect()], split=True)

    # -- blocks of whole units ----------------------------------------------------------------
    def _block_exact(self, q: ComputeRequest, gen: np.random.Generator | None) -> ExactAggregates:
        cols = q.columns
        sdf = self.sdf.select(*[F.col(c) for c in cols])
        seed = int(gen.integers(1 << 62)) if gen is not None else 0
        salt = int(gen.integers(1 << 62)) if gen is not None else 0
        local: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]] | None = None
        if q.privacy_unit and self._placed(sdf, q.privacy_unit):  # whole units already: each
            local = _preselecting(q, seed, salt)  # task pre-selects, then bounds (no exchange)
        elif q.privacy_unit:  # every row of a unit in one partition (Spark's hash of the id),
            # after each input chunk kept only the rows that can survive bounding
            unit = _unit_column(F.col(q.privacy_unit), self._fields[q.privacy_unit])
            if not _light(sdf, q.privacy_unit, self._kinds[q.privacy_unit]):
                schema = T.StructType([*sdf.schema.fields,
                                       T.StructField(ROW_PRIORITY, T.LongType()),
                                       T.StructField(DROPPED, T.LongType())])
                sdf = sdf.mapInArrow(_preselecting(q, seed, salt), schema)
            sdf = sdf.repartition(self.partitions or _default_parts(sdf), unit)

        def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            # a partition, its heavy units' rows pre-selected (here, or before the exchange)
            got = list(batches if local is None else local(batches))
            if not got:  # an empty partition adds nothing
                return
            ctx = TaskContext.get()
            part = ctx.partitionId() if ctx is not None else 0
            read = _carrying if q.privacy_unit else (lambda table: table)
            agg = exact_of_block(UnitBlock(lambda: read(pa.Table.from_batches(got)),
                                           [seed, part] if gen is not None else None),
                                 lambda table, own: _block_aggregates(table, q, salt, own))
            yield pa.RecordBatch.from_pydict({"agg": [pickle.dumps(agg)]},
                                             schema=pa.schema([("agg", pa.binary())]))

        out = sdf.mapInArrow(run, "agg binary").collect()
        total = merge_exact([pickle.loads(row["agg"]) for row in out])  # our executors' bytes
        if total is None:  # no row at all: the aggregates of an empty frame of the same schema
            empty = _frame(self.sdf.select(*[F.col(c) for c in cols]).limit(0).toArrow())
            return PandasBackend(empty).exact(q, gen)
        return total

    def _placed(self, sdf: DataFrame, unit: str) -> bool:
        """Whether ``sdf``'s partitions hold whole units already (:func:`placed_by`); never
        for float ids (``-0.0`` and ``0.0`` may hash apart), nor for another partition count."""
        if isinstance(self._fields[unit], _FLOATS):
            return False
        count = placed_by(sdf, unit)
        return count is not None and self.partitions in (None, count)


#: Columns a pre-selected row carries to its unit's partition: its row priority (the bits of
#: a uint64 in a long; null where it was never read), and, on a tally row (diagnostics=
#: only), how many of its unit's rows its chunk dropped (null on a row of data).
ROW_PRIORITY = "__dpframe_row_priority__"
DROPPED = "__dpframe_dropped__"
#: Rows an input task pre-selects at a time (Spark's Arrow batches gathered up to it).
CHUNK_ROWS = 1 << 16
#: Rows of one unit id a chunk may send on unselected: a chunk where no id has more is sent
#: whole (its rows' priorities are drawn after the exchange: selecting over every chunk's
#: rows, pre-selected or whole, is bounding over all rows, :mod:`dpframe.backends.arrow.carried`)
HEAVY_ROWS = 256


def _preselecting(q: ComputeRequest, seed: int, salt: int
                  ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The input tasks' step before the exchange by unit: each chunk of rows where some unit
    id has more than :data:`HEAVY_ROWS` rows keeps, per unit, the rows that can survive
    bounding (:func:`_preselect`); the others are sent whole. A partition after the exchange
    so holds at most about ``max(HEAVY_ROWS, groups_per_unit * rows_per_group)`` rows of a unit per
    input chunk, whatever the unit's row count (the scan's and Dask's pre-selection,
    docs/spark.md)."""

    def pre(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        ctx = TaskContext.get()
        gen = np.random.default_rng([seed, 1, ctx.partitionId() if ctx is not None else 0])
        for chunk in _chunks(batches, CHUNK_ROWS):
            out = (_preselect(chunk, q, salt, gen) if _heavy(chunk, str(q.privacy_unit))
                   else _plain(chunk))
            yield from out.to_batches()

    return pre


def _light(sdf: DataFrame, unit: str, kind: ColumnKind) -> bool:
    """:func:`~dpframe.backends.spark_layout.light` at :data:`HEAVY_ROWS`: no chunk would be
    pre-selected (the same rows, in the same order, reach the same partitions without it)."""
    return light(sdf, unit, kind, HEAVY_ROWS)


def _carrying(table: pa.Table) -> pa.Table:
    """A partition with the pre-selection's columns (a chunk never pre-selected carries none:
    every row's priority is drawn after the exchange, as for a chunk sent whole)."""
    return table if ROW_PRIORITY in table.column_names else _plain(table)


def _heavy(chunk: pa.Table, unit: str) -> bool:
    """Whether some unit id has more than :data:`HEAVY_ROWS` rows in ``chunk`` (Arrow's hash
    count of the raw ids: a unit spelled two ways, ``0.0`` and ``-0.0``, counts apart, so a
    chunk passed plainly holds at most twice as many of its rows)."""
    try:
        counts = pc.value_counts(chunk.column(unit)).field("counts")
    except pa.ArrowNotImplementedError:  # nested ids (lists, structs): pre-selected (missing)
        return True
    return len(counts) > 0 and pc.max(counts).as_py() > HEAVY_ROWS


def _plain(chunk: pa.Table) -> pa.Table:
    """A chunk sent on whole: no row priority read (each is drawn after the exchange)."""
    n = chunk.num_rows
    return chunk.append_column(ROW_PRIORITY, pa.nulls(n, pa.int64())).append_column(
        DROPPED, pa.nulls(n, pa.int64()))


def _chunks(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """The batches gathered into tables of about ``rows`` rows (at least one batch each)."""
    held: list[pa.RecordBatch] = []
    n = 0
    for batch in batches:
        held.append(batch)
        n += batch.num_rows
        if n >= rows:
            yield pa.Table.from_batches(held)
            held, n = [], 0
    if held:
        yield pa.Table.from_batches(held)


class _Pairs:
    """A chunk's rows as bounding sees them: the rows with a unit and a group (``rows``),
    their dense unit codes, group codes (alike in every chunk: declared positions, or private
    keys' ranks in the canonical order) and pair priorities, keyed on the canonical unit's
    word and the group (or the key's word), the same in every chunk and partition."""

    def __init__(self, table: pa.Table, q: ComputeRequest, salt: int) -> None:
        assert q.privacy_unit is not None
        frame = _frame(table.select(list(dict.fromkeys([*q.by, q.privacy_unit]))))
        backend = PandasBackend(frame)
        ucodes, unit_words = _unit_words(backend.column(q.privacy_unit))
        key_words = None
        if q.by and q.private_keys:
            local, keys = backend.group_codes(q)
            groups, key_words = ranked_private_keys(local.astype(np.int64, copy=False), keys)
        else:
            groups = np.asarray(backend.group_codes(q, np.int64)[0], dtype=np.int64)
        self.rows = np.flatnonzero((ucodes >= 0) & (groups >= 0))
        self.units = ucodes[self.rows]
        self.groups = groups[self.rows]
        words = unit_words[self.units].view(np.int64)
        self.priority = pair_priorities(words, self.groups, key_words, salt)


def _unit_words(ids: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Each row's unit code (-1: missing) and each code's word, as :func:`factorize` and
    :func:`~dpframe.core.exact.hashing.value_words` of its labels give them. An integer
    column (``Int64``, as :func:`_frame` reads Spark's integers) is factorized as pandas
    does and its words are its values (:func:`~dpframe.core.exact.hashing.number_words`),
    with no Python object per unit: the same codes and words, about a second less per
    million units."""
    if isinstance(ids.dtype, pd.Int64Dtype):
        codes, uniques = pd.factorize(ids, use_na_sentinel=True)
        return (np.asarray(codes, dtype=np.int64),
                number_words(np.asarray(uniques.to_numpy(dtype=np.int64), dtype=np.int64)))
    ucodes, labels = factorize(ids)
    return ucodes, value_words(labels)


def _preselect(chunk: pa.Table, q: ComputeRequest, salt: int, gen: np.random.Generator
               ) -> pa.Table:
    """The rows of ``chunk`` that can survive bounding, as they came, with the row
    priorities the selection read (:func:`~dpframe.core.exact.bounding.select_drawing`: per unit
    its ``groups_per_unit`` pairs of least keyed priority, in each its ``rows_per_group`` rows
    of least fresh priority, and its ``rows_per_unit`` of those without a group step); with
    ``diagnostics=``, one tally row per unit that lost rows here."""
    p = _Pairs(chunk, q, salt)
    chosen = select_drawing(p.units, p.groups, p.priority, _draw(gen), q.groups_per_unit,
                            q.rows_per_group, q.preselect_total)
    kept = p.rows[chosen.keep]
    priority = np.zeros(chunk.num_rows, dtype=np.uint64)
    read = np.zeros(chunk.num_rows, dtype=bool)
    priority[p.rows[chosen.examined]] = chosen.priority
    read[p.rows[chosen.examined]] = True
    out = chunk.take(pa.array(kept)).append_column(
        ROW_PRIORITY, pa.array(priority[kept].view(np.int64), mask=~read[kept]))
    out = out.append_column(DROPPED, pa.nulls(len(kept), pa.int64()))
    if q.diagnostics_cap is None or bool(chosen.keep.all()):
        return out
    lost = ~chosen.keep
    units, first = np.unique(p.units[lost], return_index=True)
    count = np.minimum(np.bincount(p.units[lost])[units], q.diagnostics_cap)
    tally = chunk.take(pa.array(p.rows[np.flatnonzero(lost)[first]]))
    tally = tally.append_column(ROW_PRIORITY, pa.nulls(len(units), pa.int64()))
    tally = tally.append_column(DROPPED, pa.array(count.astype(np.int64)))
    return pa.concat_tables([out, tally])


def _draw(gen: np.random.Generator) -> Callable[[np.ndarray], np.ndarray]:
    """Uniform 64-bit row priorities from ``gen``, for the rows asked."""
    return lambda rows: gen.integers(0, 2**64, rows.size, dtype=np.uint64)


def _block_aggregates(table: pa.Table, q: ComputeRequest, salt: int,
                      gen: np.random.Generator | None) -> ExactAggregates:
    """One partition's exact aggregates. Without a unit, its rows as they are; with one,
    selected again over every chunk's pre-selection by the carried priorities (a row that
    carries none draws its own: the law of bounding over all rows,
    :func:`~dpframe.core.exact.bounding.select_by_priority`), so every unit is within its bounds and
    the pandas backend's own bounding keeps every row; its dropped rows (``diagnostics=``)
    are the tallies plus this selection's, each unit's capped."""
    if not q.privacy_unit:
        return PandasBackend(_frame(table)).exact(q, gen)
    assert gen is not None
    data = table.column(DROPPED).is_null().to_numpy(zero_copy_only=False)
    p = _Pairs(table, q, salt)
    on = data[p.rows]  # rows of data with a unit and a group (tallies aside)
    carried = table.column(ROW_PRIORITY).combine_chunks()
    bits = carried.fill_null(0).to_numpy(zero_copy_only=False).view(np.uint64)
    fresh = carried.is_null().to_numpy(zero_copy_only=False)
    rows = p.rows[on]
    draw = _draw(gen)

    def priorities(asked: np.ndarray) -> np.ndarray:
        out = bits[rows[asked]].copy()
        new = fresh[rows[asked]]
        out[new] = draw(np.flatnonzero(new))
        return out

    keep = select_drawing(p.units[on], p.groups[on], _only(p.priority, on), priorities,
                          q.groups_per_unit, q.rows_per_group, q.rows_per_unit).keep
    kept = table.take(pa.array(rows[keep])).drop_columns([ROW_PRIORITY, DROPPED])
    agg = PandasBackend(_frame(kept)).exact(q, gen)
    if q.diagnostics_cap is not None and agg.diagnostics is not None:
        kept_here = np.ones(p.rows.size, dtype=bool)  # a tally row drops nothing itself
        kept_here[np.flatnonzero(on)] = keep
        tallies = table.column(DROPPED).fill_null(0).to_numpy(zero_copy_only=False)
        agg.diagnostics = (agg.diagnostics[0], dropped_rows(
            p.units, p.groups, kept_here, q.diagnostics_cap,
            np.asarray(tallies, dtype=np.int64)[p.rows]))
    return agg


def _only(priority: Any, on: np.ndarray) -> Any:
    """Pair priorities of the rows ``on`` selects (an array, or the keyed words' inputs)."""
    if isinstance(priority, np.ndarray):
        return priority[on]
    return type(priority)(priority.words[on], priority.salt)


def _unit_column(unit: Column, t: Any) -> Column:
    """The unit id Spark hashes to place a row, ``-0.0`` spelled ``0.0``: a unit spelled both
    ways must not be split over two blocks, each keeping up to T of its rows (pyspark 4's
    ``repartition`` already places them together; this keeps it so on any version)."""
    if isinstance(t, _FLOATS):
        return F.when(unit == 0, F.lit(0.0)).otherwise(unit)
    return unit


def _default_parts(sdf: DataFrame) -> int:
    return int(sdf.sparkSession.conf.get("spark.sql.shuffle.partitions") or 8)


#: The SparkContexts (by application id) whose workers were found to run this dpframe.
_CHECKED: set[str] = set()
#: Most tasks of the probe job (one per core, so that each executor is likely to run one).
PROBE_TASKS = 64


def check_workers(sc: Any) -> None:
    """Refuse, before anything is read or charged, when the workers cannot run the blocks:
    one tiny job (no data) whose tasks import dpframe on the workers and return its version,
    compared with the driver's (:class:`~dpframe.errors.WorkerError`). Run once per
    SparkContext (cached by application id): one tiny job per session."""
    app = str(sc.applicationId)
    if app in _CHECKED:
        return
    tasks = max(1, min(int(sc.defaultParallelism or 1), PROBE_TASKS))
    try:
        seen = set(sc.parallelize(range(tasks), tasks).map(_version_probe()).collect())
    except Exception as exc:
        failed = type(exc).__name__
    else:
        if seen == {__version__}:
            _CHECKED.add(app)
            return
        found = ", ".join(sorted(seen))
        raise WorkerError(f"the Spark workers run dpframe {found}, the driver {__version__}: "
                          "install the driver's version on every executor (docs/spark.md, "
                          "On a cluster); nothing was charged")
    raise WorkerError(f"the Spark workers cannot run a Python task ({failed}): their Python "
                      "needs dpframe (docs/spark.md, On a cluster); nothing was charged")


def _version_probe() -> Callable[[object], str]:
    """The probe's task, made in this function's body so that it travels by value (cloudpickle
    pickles a nested function with its code): unpickling it needs no dpframe on the worker."""

    def probe(_: object) -> str:
        try:
            import pyarrow  # noqa: F401  (the blocks' batches)

            import dpframe.backends.blocks.frames  # noqa: F401  (what a block runs)
            from dpframe._version import __version__ as version
        except Exception as exc:
            return f"(none: {type(exc).__name__})"
        return str(version)

    return probe


#: Spark's conditions of a read that failed for good (a file deleted, unreadable, corrupt).
_READ_CONDITIONS = ("FAILED_READ_FILE",)
_READ_CLASSES = ("java.io.FileNotFoundException", "org.apache.hadoop.fs.PathNotFoundException")
#: Words of a Java exception saying that the SparkContext is gone.
_GONE = ("stopped SparkContext", "SparkContext was shut down", "SparkContext has been shutdown")


def _operational(exc: Exception) -> bool:
    """Whether a failed Spark call is an operational fault: the driver lost the JVM, a read
    failed for good, or the SparkContext is gone (Java's causes read, never shown)."""
    if isinstance(exc, OSError):
        return True
    try:
        from py4j.protocol import Py4JNetworkError

        if isinstance(exc, Py4JNetworkError):
            return True
        throwable = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
        for _ in range(32):  # the chain of causes
            if throwable is None:
                return False
            if _read_or_gone(throwable):
                return True
            throwable = throwable.getCause()
    except Exception:  # the JVM cannot say (gone itself)
        return False
    return False


def _read_or_gone(throwable: Any) -> bool:
    """Whether a Java throwable is a read that failed for good, or a gone SparkContext."""
    if str(throwable.getClass().getName()) in _READ_CLASSES:
        return True
    for method in ("getCondition", "getErrorClass"):  # Spark 4, 3.5
        try:
            condition = str(getattr(throwable, method)() or "")
        except Exception:
            continue
        if condition.startswith(_READ_CONDITIONS):
            return True
    message = str(throwable.getMessage() or "")
    return any(words in message for words in _GONE)


def _frame(table: pa.Table) -> pd.DataFrame:
    """A partition as pandas, each column in a dtype of its public kind: integers and booleans
    nullable (a null never turns an id or a key into a float), text that is not UTF-8 missing
    (as a scan reads such bytes, value by value), decimals exact (``Decimal`` objects, as the
    pandas backend reads them), timestamps in the session time zone Spark sent them in."""
    mapper = {pa.int8(): pd.Int64Dtype(), pa.int16(): pd.Int64Dtype(),
              pa.int32(): pd.Int64Dtype(), pa.int64(): pd.Int64Dtype(),
              pa.bool_(): pd.BooleanDtype(), pa.string(): None, pa.large_string(): None}
    return _utf8(table).to_pandas(types_mapper=mapper.get)


def _utf8(table: pa.Table) -> pa.Table:
    """``table`` with each text value that is not UTF-8 missing (Spark's strings are bytes:
    a binary column cast to string may hold any), as a scan and the pandas backend read it
    (:func:`~dpframe.backends.blocks.arrow_conform.utf8_or_missing`): the others as they are."""
    original = table.columns
    columns = [utf8_or_missing(c) for c in original]
    if all(c is d for c, d in zip(columns, original, strict=True)):
        return table
    return pa.Table.from_arrays([c if c.type == f.type else c.cast(f.type)  # a view read wide
                                 for c, f in zip(columns, table.schema, strict=True)],
                                schema=table.schema)


class _SparkDialect:
    """The exact SQL (:mod:`dpframe.backends.sql`) as Spark columns: constants are
    ``F.lit`` values, key columns are compared as Spark's string, boolean or long, sums are
    split at 2**26 (Spark's long sums could overflow; the driver adds the halves)."""

    text_bytes = False
    int_range = (-(1 << 63), 1 << 63)
    split_sums = True

    def column(self, name: str) -> Column:
        return F.col(name)

    def literal(self, value: object) -> Column:
        return F.lit(value)

    def key(self, column: Column, kind: ColumnKind) -> Column:
        return column.cast({"str": "string", "bool": "boolean"}.get(kind, "bigint"))

    def isin(self, column: Column, values: tuple[object, ...]) -> Column:
        return column.isin(*values)

    def call(self, name: str, args: Sequence[Any]) -> Column:
        if name in ("int", "long", "double"):
            return args[0].cast("double" if name == "double" else "long")
        if name in ("least", "greatest", "coalesce", "shiftright", "shiftleft", "sum"):
            return getattr(F, name)(*args)
        if name == "isnan":
            return F.isnan(args[0])
        if name == "rint":  # Java's Math.rint: half to even
            return F.rint(args[0])
        if name == "count_rows":
            return F.count(F.lit(1))
        if name == "isnull":
            return args[0].isNull()
        if name == "when":
            return F.when(args[0], args[1]).otherwise(args[2])
        if name == "not":
            return ~args[0]
        binary: dict[str, Callable[[Column, Column], Column]] = {
            "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "lt": lambda a, b: a < b,
            "gt": lambda a, b: a > b, "or": lambda a, b: a | b, "and": lambda a, b: a & b}
        return binary[name](*args)
