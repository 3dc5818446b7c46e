"""Tumult Analytics (`Session` + `QueryBuilder`) on local Spark.

Spark runs in local mode on both cores (`local[2]`, 16 GB driver, 8 shuffle partitions rather
than the default 200, which only adds task overhead on 2 cores). Loading = reading the Parquet
file into a cached Spark DataFrame plus creating the Session (one per process, with budget
for all its releases): Spark is lazy, so without the cache every query would re-read the file.
Row level: `AddOneRow()`. User level: `AddRowsWithID("uid")` with `MaxGroupsPerID("g", 50)` and
`MaxRowsPerGroupPerID("g", 10)`, the same bounds as the other peers. Pure DP, epsilon 1 per
release; public keys through `KeySet.from_dict`.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from typing import Any

from _common import (
    CURRENT,
    EPSILON,
    KEYS,
    LOWER,
    MAX_GROUPS_PER_UNIT,
    MAX_ROWS_PER_UNIT,
    UPPER,
    main,
)
from pyspark.sql import SparkSession
from tmlt.analytics import (
    AddOneRow,
    AddRowsWithID,
    KeySet,
    MaxGroupsPerID,
    MaxRowsPerGroupPerID,
    PureDPBudget,
    QueryBuilder,
    Session,
)
from tmlt.analytics.utils import cleanup as tmlt_cleanup

# Spark's Python workers must run this venv's interpreter (they import tmlt).
os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
# Tumult keeps temporary tables in Spark's warehouse: a scratch one, removed at exit.
WAREHOUSE = tempfile.mkdtemp(prefix="peers_spark_")
SPARK = (SparkSession.builder.master("local[2]")
         .config("spark.sql.warehouse.dir", WAREHOUSE)
         .config("spark.driver.memory", "16g")
         .config("spark.sql.shuffle.partitions", "8")
         .config("spark.ui.enabled", "false")
         .getOrCreate())
SPARK.sparkContext.setLogLevel("ERROR")


def load(path: str) -> Session:
    sdf = SPARK.read.parquet(path).cache()
    sdf.count()
    change = (AddRowsWithID(id_column="uid") if CURRENT["query"] == "user_groupby_sum"
              else AddOneRow())
    return Session.from_dataframe(
        privacy_budget=PureDPBudget(EPSILON * CURRENT["reps"]), source_id="t",
        dataframe=sdf, protected_change=change)


def evaluate(session: Session, query: Any) -> Any:
    return session.evaluate(query, privacy_budget=PureDPBudget(EPSILON))


def scalar(session: Session, query: Any) -> float:
    return evaluate(session, query).collect()[0][0]


def grouped(session: Session, builder: QueryBuilder) -> dict[str, float]:
    q = builder.groupby(KeySet.from_dict({"g": KEYS})).sum("x", LOWER, UPPER, name="s")
    return {r["g"]: r["s"] for r in evaluate(session, q).collect()}


QUERIES: dict[str, Any] = {
    "count": lambda s: scalar(s, QueryBuilder("t").count()),
    "sum": lambda s: scalar(s, QueryBuilder("t").sum("x", LOWER, UPPER)),
    "mean": lambda s: scalar(s, QueryBuilder("t").average("x", LOWER, UPPER)),
    "groupby_sum": lambda s: grouped(s, QueryBuilder("t")),
    "user_groupby_sum": lambda s: grouped(
        s, QueryBuilder("t").enforce(MaxGroupsPerID("g", MAX_GROUPS_PER_UNIT))
        .enforce(MaxRowsPerGroupPerID("g", MAX_ROWS_PER_UNIT))),
}

if __name__ == "__main__":
    from importlib.metadata import version
    main(lambda: version("tmlt.analytics"), load, QUERIES)
    tmlt_cleanup()
    shutil.rmtree(WAREHOUSE, ignore_errors=True)
