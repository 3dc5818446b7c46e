"""Finding 62: the Spark front on one person's value spelled two ways (issue 33).

Non-interference on Spark: a dataset whose row has a missing ``x`` as a null, and the same
dataset with it spelled NaN, are the same data under dpframe's value model (NaN and null are
both missing), so the release may not depend on the spelling at all: the claim audited for
this pair is epsilon 0. The row-level grouped ``count("x")`` runs as one Spark SQL
aggregation (:mod:`dpframe.backends.spark`), where a NaN is not null: without testing it
apart, a NaN would count as a value (and a sum would clamp it to the upper bound, since Spark
orders NaN above every number).

The scenario is exact and cheap in trials (two exact computations through the real Spark
backend, no sampling), but it needs a JVM: it runs in the full audit only, and in the Spark
tests (tests/backends/spark, on their one SparkSession). Where pyspark or Java is absent it is
skipped. Privacy loss: the exact counts' L1 shift times epsilon (sensitivity 1, geometric
noise); the broken control (NaN not read as missing) is caught.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import dpframe as dpf
from dpframe.engine.release import compute_exact

EPSILON = 1.0


def _spark() -> Any:
    """The active SparkSession, else a local[2] one (skipped without pyspark or Java)."""
    sql = pytest.importorskip("pyspark.sql")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    active = sql.SparkSession.getActiveSession()
    if active is not None:
        return active
    return (sql.SparkSession.builder.master("local[2]").appName("dpframe-audit")
            .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
            .getOrCreate())


def _rows(spelled_nan: bool) -> list[tuple[str, float | None]]:
    """D: 30 rows over groups a and b, one of them with x missing as null; D': that value
    spelled NaN."""
    rows: list[tuple[str, float | None]] = [("ab"[i % 2], float(i % 7)) for i in range(30)]
    rows.append(("a", math.nan if spelled_nan else None))
    return rows


def _counts(spelled_nan: bool, seed: int) -> np.ndarray:
    """The exact per-group counts of x a row-level grouped ``count("x")`` computes on Spark."""
    import dpframe.fronts.spark  # noqa: F401  (adds sdf.dp)
    from dpframe.backends.spark import SparkBackend

    sdf = _spark().createDataFrame(_rows(spelled_nan), "g string, x double")
    s = dpf.Session(1e9, seed=seed)
    q = sdf.dp(s, keys={"g": ["a", "b"]}).query("count", "x", by="g", epsilon=EPSILON)
    computed = compute_exact(s, q, SparkBackend(sdf))
    assert computed.defect is None
    (values,) = computed.exact.values.values()
    return np.asarray(values, dtype=float)


def finding_spark_nan_spelling(seed: int) -> tuple[float, float, float, str]:
    """62. Privacy loss of the pair (D, D' = D with one missing x spelled NaN, not null):
    the exact counts' L1 shift times epsilon (sensitivity 1); claim 0."""
    shift = float(np.abs(_counts(True, seed) - _counts(False, seed)).sum())
    return shift * EPSILON, 0.0, 0.0, f"exact counts on Spark's SQL plan: L1 shift {shift:g}"


@contextlib.contextmanager
def nan_not_missing() -> Iterator[None]:
    """BROKEN on purpose: the Spark SQL plan reads only a null as missing (a NaN counts)."""
    from dpframe.backends import sql  # the one builder of the Spark SQL plan

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sql, "missing", lambda c, kind: sql.op("isnull", c))
        yield
