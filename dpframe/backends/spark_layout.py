"""Where a Spark frame's rows are, for the blocks of whole units (:mod:`dpframe.backends.spark`):
read from the frame's physical plan (never its data), or counted by one Spark aggregation.

Privacy: nothing here reads a value into the driver but one row count (the largest number of
rows of one unit id); the answers choose which work is done, never which rows are kept.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..core.exact.values import ColumnKind


def placed_by(sdf: DataFrame, column: str) -> int | None:
    """The partition count when the physical plan of ``sdf`` places its rows by Spark's hash
    of ``column`` alone (``repartition(column)`` upstream, a cached frame so partitioned, or a
    table bucketed by it and read as buckets), so that each partition holds all of the rows of
    each of its values; None otherwise, or when the plan cannot be read (Spark Connect).
    Read from the plan's output partitioning (the query, never its data), whose expression
    must be the very column of the output (not another one of the same name)."""
    try:
        plan = sdf._jdf.queryExecution().executedPlan()
        if plan.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
            plan = plan.executedPlan()  # the plan as adaptive execution starts it
        part = plan.outputPartitioning()
        if part.getClass().getSimpleName() != "HashPartitioning" or part.expressions().size() != 1:
            return None
        by, output = part.expressions().apply(0), plan.output()
        for i in range(output.size()):
            attr = output.apply(i)
            if attr.name() == column and by.semanticEquals(attr):
                return int(part.numPartitions())
    except Exception:  # no JVM plan to read: exchanged as any other frame
        return None
    return None


def light(sdf: DataFrame, unit: str, kind: ColumnKind, heavy_rows: int) -> bool:
    """Whether no unit id has more than ``heavy_rows`` rows in the whole frame, so that no
    input chunk holds more (one Spark aggregation: a null id is one more id, as in Arrow's
    count; ``-0.0`` and ``0.0``, and NaNs, count together: never fewer than Arrow's count of
    a chunk's raw ids). Only for ids of a plain kind (nested ids are always pre-selected).
    The answer changes which work is done, never the rows kept nor their law."""
    if kind not in ("int", "str", "float", "bool"):
        return False
    most = sdf.groupBy(F.col(unit)).count().agg(F.max("count").alias("m")).collect()[0]["m"]
    return most is None or int(most) <= heavy_rows
