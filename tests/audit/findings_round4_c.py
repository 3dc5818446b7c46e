"""Findings 69 to 71: the Spark backend's blocks of whole units (issue 43).

* **69.** A text value whose bytes are not UTF-8 (a binary column cast to string: Spark's
  strings are bytes) made private keys and ``count_distinct`` raise in the Python workers,
  so one person's row decided whether the release failed after its charge. Such a value is
  now missing, as a scan reads bytes that are not UTF-8.
* **70.** Decimal unit ids were read as float64 in each block: two people whose ids round to
  one double (2**53 and 2**53 + 1) were one unit, bounded together. Decimals are now exact
  values (kind "other", as on pandas and in a scan).
* **71.** No heavy-unit pre-selection: all of a unit's rows met in one partition, which a
  Python worker holds whole, so whether the job survived a worker's memory depended on one
  person's row count. Each input chunk now keeps, per unit, only the rows that can survive
  bounding before the exchange (the scan's and Dask's pre-selection). The statistic: whether
  a worker would hold more than :data:`WORKER_ROWS` rows of one unit (a model of its memory).

Each scenario is exact (the exact aggregates of both neighbours through the real Spark
backend: a release that raises on one side only is told apart with certainty, epsilon
infinite). They need a JVM: full audit only, and in the Spark tests on their one
SparkSession. The broken controls put the old code back in the workers: the backend module
is pickled by value while patched (cloudpickle), so the Python workers run the patch too.
"""

from __future__ import annotations

import contextlib
import decimal
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import dpframe as dpf
from dpframe.engine.release import compute_exact

from .findings_spark import _spark

EPSILON = 1.0
#: Rows of one unit a worker may hold at once (finding 71's model of a worker's memory).
WORKER_ROWS = 20_000


def _exact(sdf: Any, options: dict[str, Any], release: Callable[[Any], Any], seed: int
           ) -> dict[object, float] | None:
    """The exact values of a release on Spark, by key (None: it raised, before or after the
    charge: a release that raises on one side only is told apart with certainty)."""
    import dpframe.fronts.spark  # noqa: F401  (adds sdf.dp)
    from dpframe.backends.spark import SparkBackend

    s = dpf.Session(1e9, 1e-3, seed=seed)
    try:
        computed = compute_exact(s, release(sdf.dp(s, **options)), SparkBackend(sdf))
    except dpf.DPError:
        return None
    if computed.defect is not None:
        return None
    exact = computed.exact
    if exact.distinct:  # a distinct count: its (group, value hash) pairs, per group
        (groups, _), = exact.distinct.values()
        values = np.bincount(np.asarray(groups, dtype=np.int64), minlength=len(exact.keys))
    else:
        values = next(iter(exact.values.values()))
    return {k: float(v) for k, v in zip(exact.keys, np.asarray(values).tolist(), strict=True)}


def _loss(a: dict[object, float] | None, b: dict[object, float] | None) -> float:
    """Privacy loss of a pair of exact outcomes under sensitivity 1: the L1 shift times
    epsilon; infinite when one side raised and the other did not."""
    if a is None or b is None:
        return 0.0 if a is b else math.inf
    return EPSILON * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in {*a, *b})


# -- 69: text that is not UTF-8 ------------------------------------------------------------------

def _text_frame(odd: bool) -> Any:
    """40 rows of 8 units over keys a and b; D' adds one unit's row whose key bytes are not
    UTF-8 (a binary column cast to string)."""
    from pyspark.sql import functions as F

    rows = [(b"ab"[i % 2:i % 2 + 1], i % 8) for i in range(40)]
    if odd:
        rows.append((b"\xff\xfe", 99))
    sdf = _spark().createDataFrame(rows, "b binary, u long")
    return sdf.withColumn("g", F.col("b").cast("string")).drop("b")


def finding_spark_text_not_utf8(seed: int) -> tuple[float, float, float, str]:
    """69. Privacy loss of (D, D' = D plus one unit's row keyed by bytes that are not UTF-8)
    on a unit-level private-key count and a row-level ``count_distinct``: the larger exact
    L1 shift times epsilon (each has sensitivity 1), infinite where one side raises."""
    unit = {"privacy_unit": "u", "max_rows_per_unit": 5}
    releases: dict[str, tuple[dict[str, Any], Callable[[Any], Any]]] = {
        "private keys": (unit, lambda p: p.query("count", by="g", keys="private",
                                                 epsilon=EPSILON, delta=1e-6)),
        "count_distinct": ({}, lambda p: p.query("count_distinct", "g", epsilon=EPSILON)),
    }
    losses = {name: _loss(_exact(_text_frame(False), o, f, seed),
                          _exact(_text_frame(True), o, f, seed))
              for name, (o, f) in releases.items()}
    worst = max(losses, key=losses.__getitem__)
    return losses[worst], EPSILON, 1e-6, f"exact, worst: {worst} (L1 shift x epsilon)"


@contextlib.contextmanager
def _workers_run(pandas_patches: dict[str, Any] | None = None, **patches: Any
                 ) -> Iterator[None]:
    """The Spark backend's module patched (and, with ``pandas_patches``, the pandas backend's,
    which the blocks run), in the driver and in the Python workers (pickled by value while
    patched)."""
    from pyspark import cloudpickle

    from dpframe.backends import spark as backend
    from dpframe.backends.blocks import frames as pandas_backend

    modules = [backend] + ([pandas_backend] if pandas_patches else [])
    for module in modules:
        cloudpickle.register_pickle_by_value(module)
    try:
        with pytest.MonkeyPatch.context() as mp:
            for name, value in patches.items():
                mp.setattr(backend, name, value)
            for name, value in (pandas_patches or {}).items():
                mp.setattr(pandas_backend, name, value)
            yield
    finally:
        for module in modules:
            cloudpickle.unregister_pickle_by_value(module)


def text_read_as_utf8() -> contextlib.AbstractContextManager[None]:
    """BROKEN on purpose: the blocks read Spark's text as it comes (no UTF-8 check), and so
    does the pandas backend they run (finding 66's check, which would catch it there too)."""
    return _workers_run({"_utf8_text": lambda s: s}, _utf8=lambda table: table)


# -- 70: decimal unit ids ------------------------------------------------------------------------

def _decimal_ids(apart: bool) -> Any:
    """D: one person (id 2**53) with 2 rows; D': the second row is another person's, whose id
    2**53 + 1 rounds to the same double."""
    n = 2**53
    rows = [(decimal.Decimal(n), 1.0), (decimal.Decimal(n + 1 if apart else n), 1.0)]
    return _spark().createDataFrame(rows, "u decimal(38,0), x double")


def finding_spark_decimal_units(seed: int) -> tuple[float, float, float, str]:
    """70. A unit-level count with T = 1 on D (one person, 2 rows) and D' (the second row
    another person's, one more unit: add_remove neighbours, sensitivity 1). The exact counts
    must be each side's people (1 and 2): the loss is then their shift times epsilon. A block
    that reads ids as float64 counts the two people of D' as one unit, whose two rows are
    bounded together (T = 1 applied to two people): bounding no longer bounds a person, and
    no finite epsilon holds for that release (reported infinite)."""
    def count(sdf: Any) -> dict[object, float] | None:
        return _exact(sdf, {"privacy_unit": "u", "max_rows_per_unit": 1},
                      lambda p: p.query("count", epsilon=EPSILON), seed)

    d, d2 = count(_decimal_ids(False)), count(_decimal_ids(True))
    right = d is not None and d2 is not None and list(d.values()) == [1.0] and list(
        d2.values()) == [2.0]
    loss = _loss(d, d2) if right else math.inf
    return loss, EPSILON, 0.0, "exact counts of units (1 vs 2 people)"


def _float_decimals(table: pa.Table) -> pd.DataFrame:
    """The old reading: a decimal column's values as float64 numbers."""
    frame = table.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
    for name, t in zip(table.schema.names, table.schema.types, strict=True):
        if pa.types.is_decimal(t):
            frame[name] = pd.to_numeric(frame[name].map(float), errors="coerce")
    return frame


def decimals_as_floats() -> contextlib.AbstractContextManager[None]:
    """BROKEN on purpose: the blocks read decimals as float64 (before round 4)."""
    return _workers_run(_frame=_float_decimals)


# -- 71: heavy units -----------------------------------------------------------------------------

def _heavy(rows: int) -> Any:
    """10 units of 10 rows, and one unit (id 0) with ``rows`` rows, over 2 input partitions."""
    from pyspark.sql import functions as F

    spark = _spark()
    light = spark.range(1, 101, numPartitions=1).select(
        (F.col("id") % 10 + 1).alias("u"), F.lit(1.0).alias("x"))
    heavy = spark.range(0, rows, numPartitions=2).select(F.lit(0).cast("long").alias("u"),
                                                         F.lit(1.0).alias("x"))
    return light.unionByName(heavy)


def _held(sdf: Any, seed: int) -> int:
    """The most rows of one unit that reach one partition after the exchange (what a Python
    worker holds) in a unit-level count (T = 2), planned as a release plans it."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from dpframe.backends import spark as backend
    from dpframe.engine.release import prepare

    s = dpf.Session(1e9, seed=seed)
    q = sdf.dp(s, privacy_unit="u", max_rows_per_unit=2).query("count", epsilon=EPSILON)
    request = prepare(s, q, backend.SparkBackend(sdf)).compute
    schema = T.StructType([*sdf.schema.fields,
                           T.StructField(backend.ROW_PRIORITY, T.LongType()),
                           T.StructField(backend.DROPPED, T.LongType())])
    pre = sdf.mapInArrow(backend._preselecting(request, seed, seed + 1), schema)
    return int(pre.groupBy("u").count().agg(F.max("count")).first()[0])


def finding_spark_heavy_unit(seed: int) -> tuple[float, float, float, str]:
    """71. (D: unit 0 with 5 rows, D': with 50,000): whether a worker would hold more than
    :data:`WORKER_ROWS` rows of one unit (the job's survival, decided after the exchange)
    must not tell them apart: infinite loss where it does, else none beyond the release's
    (its exact counts are the other backends', tested apart)."""
    held, held2 = _held(_heavy(5), seed), _held(_heavy(50_000), seed)
    note = f"a worker holds {held} vs {held2} rows of one unit"
    if (held > WORKER_ROWS) != (held2 > WORKER_ROWS):
        return math.inf, EPSILON, 0.0, note
    return 0.0, EPSILON, 0.0, note


def _everything(q: Any, seed: int, salt: int) -> Callable[[Any], Iterator[pa.RecordBatch]]:
    """The old exchange: every row sent on (no pre-selection)."""
    def pre(batches: Any) -> Iterator[pa.RecordBatch]:
        for b in batches:
            yield b.append_column("__dpframe_row_priority__", pa.nulls(b.num_rows, pa.int64())
                                  ).append_column("__dpframe_dropped__",
                                                  pa.nulls(b.num_rows, pa.int64()))
    return pre


def no_preselection() -> contextlib.AbstractContextManager[None]:
    """BROKEN on purpose: all of a unit's rows sent to its partition (before round 4)."""
    return _workers_run(_preselecting=_everything)
