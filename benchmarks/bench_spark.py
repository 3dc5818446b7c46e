"""DP groupby-sum on Spark vs plain Spark ``groupBy().agg(sum)``, on ``local[2]``.

    .venv/bin/python benchmarks/bench_spark.py              # 1e7 rows
    .venv/bin/python benchmarks/bench_spark.py --rows 1e6 --repeat 2

Writes a Parquet file under ``/tmp/dpframe-bench-spark/`` (reused when present; never in the
repository) with 50 string keys ``g``, a float column ``x`` and a user id ``u`` (1e7 rows: 1e6
users), starts one ``local[2]`` SparkSession (UI off) and times, interleaved after a warm-up:

* plain Spark: ``sdf.groupBy("g").agg(F.sum("x")).collect()``
* dpframe, row level: ``sdf.dp(s, bounds=..., keys=...).groupby("g").sum("x", epsilon=1)``
  (the Spark SQL plan: fixed-point integers summed exactly as two long halves);
* dpframe, unit level: the same with ``privacy_unit="u", max_rows_per_unit=10``
  (blocks of whole units: an exchange by unit, then the primitives per partition);
* the floor of the unit level: plain ``sdf.groupBy("u").count()`` (each unit's rows counted,
  with its exchange), and the unit level's ratio to it;
* dpframe, unit level on a table bucketed by ``u`` (``bucketBy(4, "u")``, saved under
  ``/tmp/dpframe-bench-spark/warehouse`` each run, read back as buckets with
  ``spark.sql.sources.bucketing.autoBucketedScan.enabled`` off, cached as the other frame):
  no exchange, each partition pre-selected and bounded in one Python pass.

With ``--floors``, also the plain-Spark steps any exact unit-level plan needs at least one of
(no dpframe code): moving every row to its unit's partition (``repartition(u)``, rows
counted), counting each unit's rows (``groupBy(u).count()``), handing the three columns to
Python workers through Arrow (``mapInArrow``, rows counted), and bounding with window
functions in Spark SQL (``row_number()`` over ``partitionBy(u)`` ordered by a keyed hash,
``<= 10``, then the groupBy-sum).

Prints a Markdown table; asserts nothing. Figures are recorded in docs/benchmarks/spark.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import best_of

DATA = Path("/tmp/dpframe-bench-spark")


def make_data(rows: int) -> Path:
    path = DATA / f"rows-{rows}.parquet"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    keys = np.array([f"k{i:02d}" for i in range(50)])
    table = pa.table({"g": keys[rng.integers(0, 50, rows)],
                      "x": rng.uniform(0, 100, rows),
                      "u": rng.integers(0, max(rows // 10, 1), rows)})
    pq.write_table(table, path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--floors", action="store_true",
                        help="also time the plain-Spark steps an exact unit-level plan needs")
    args = parser.parse_args()
    rows = int(args.rows)
    path = make_data(rows)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import dpframe as dpf

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "4").config("spark.driver.memory", "3g")
             .config("spark.sql.warehouse.dir", str(DATA / "warehouse"))
             .config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    sdf = spark.read.parquet(str(path)).cache()
    sdf.count()
    keys = {"g": [f"k{i:02d}" for i in range(50)]}
    warnings.simplefilter("ignore")

    def plain() -> object:
        return sdf.groupBy("g").agg(F.sum("x")).collect()

    def dp_rows() -> object:
        priv = sdf.dp(dpf.Session(1e6), bounds={"x": (0, 100)}, keys=keys)
        return priv.groupby("g").sum("x", epsilon=1)

    def dp_units() -> object:
        priv = sdf.dp(dpf.Session(1e6), bounds={"x": (0, 100)}, keys=keys, privacy_unit="u",
                      max_rows_per_unit=10)
        return priv.groupby("g").sum("x", epsilon=1)

    def floor() -> object:
        return sdf.groupBy("u").count().agg(F.count("*")).collect()

    bucketed = bucketed_table(spark, sdf)

    def dp_bucketed() -> object:
        priv = bucketed.dp(dpf.Session(1e6), bounds={"x": (0, 100)}, keys=keys,
                           privacy_unit="u", max_rows_per_unit=10)
        return priv.groupby("g").sum("x", epsilon=1)

    fns = {"plain": plain, "rows": dp_rows, "units": dp_units, "floor": floor,
           "bucketed": dp_bucketed}
    labels = [("plain", "plain `groupBy().agg(sum)`"),
              ("rows", "dpframe groupby-sum, row level"),
              ("units", "dpframe groupby-sum, unit level (T = 10)"),
              ("floor", "floor: plain `groupBy(u).count()`"),
              ("bucketed", "dpframe unit level, table bucketed by `u` (no exchange)")]
    if args.floors:
        steps = floors(sdf)
        fns.update(steps)
        labels += [(name, f"floor: {name}") for name in steps]
    best = best_of(fns, args.repeat)
    print(f"| {rows:.0e} rows, local[2] | best of {args.repeat} (s) | vs plain |")
    print("| --- | --- | --- |")
    for name, label in labels:
        print(f"| {label} | {best[name]:.2f} | {best[name] / best['plain']:.2f}x |")
    print(f"\nunit level / floor: {best['units'] / best['floor']:.2f}x; bucketed unit level / "
          f"floor: {best['bucketed'] / best['floor']:.2f}x; load average {os.getloadavg()}")
    spark.stop()


def bucketed_table(spark: Any, sdf: Any) -> Any:
    """The frame saved as a table bucketed by ``u`` (as many buckets as shuffle partitions),
    read back as buckets and cached."""
    import shutil

    warehouse = DATA / "warehouse" / "bench_spark_bucketed"
    shutil.rmtree(warehouse, ignore_errors=True)  # the in-memory catalog forgets it
    spark.sql("DROP TABLE IF EXISTS bench_spark_bucketed")
    sdf.write.bucketBy(4, "u").mode("overwrite").saveAsTable("bench_spark_bucketed")
    spark.conf.set("spark.sql.sources.bucketing.autoBucketedScan.enabled", "false")
    table = spark.table("bench_spark_bucketed").cache()
    table.count()
    return table


def floors(sdf: Any) -> dict[str, Callable[[], object]]:
    """Plain-Spark steps of unit-level bounding (``--floors``), each timed to its end."""
    import pyarrow as pa
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    def rows_seen(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield pa.RecordBatch.from_pydict({"n": [sum(b.num_rows for b in batches)]})

    def window_bound() -> object:
        priority = F.xxhash64(F.lit(12345), F.col("u"), F.monotonically_increasing_id())
        order = Window.partitionBy("u").orderBy("_p")
        kept = (sdf.withColumn("_p", priority).withColumn("_r", F.row_number().over(order))
                .where("_r <= 10"))
        return kept.groupBy("g").agg(F.sum("x")).collect()

    return {
        "`repartition(u)`": lambda: sdf.repartition("u").agg(F.count(F.lit(1))).collect(),
        "`groupBy(u).count()`": lambda: sdf.groupBy("u").count().agg(F.count("*")).collect(),
        "Arrow to Python (`mapInArrow`)": lambda: sdf.mapInArrow(rows_seen, "n long").collect(),
        "window functions (`row_number` <= 10)": window_bound,
    }


if __name__ == "__main__":
    main()
