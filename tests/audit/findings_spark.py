"""Finding 62: the Spark front on one person's value spelled two ways (issue 33).

Non-interference on Spark: a dataset and the same dataset with one row's unit id spelled
``-0.0`` instead of ``0.0`` are the same data under dpframe's value model (``-0.0`` is ``0``),
so the release may not depend on the spelling at all: the claim audited for this pair is
epsilon 0. Bounding on Spark runs in blocks of whole units, rows placed by Spark's hash of
the unit id; Spark hashes a double's bits, so without spelling ``-0.0`` as ``0.0`` first a unit
spelled both ways is split over two blocks, each keeping up to T of its rows (2T in all).

The scenario is exact and cheap in trials (two exact computations per draw through the real
Spark backend, no sampling), but it needs a JVM: it runs in the full audit only, and in the
Spark tests (tests/backends/spark, on their one SparkSession). Where pyspark or Java is absent
it is skipped. Privacy loss: the exact counts' L1 shift over the geometric noise's scale
``T / epsilon``; the broken control (no ``-0.0`` spelling before the hash) is caught.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.engine.release import compute_exact

T = 2
EPSILON = 1.0
PARTITIONS = 2
HEAVY = 6  # the unit spelled both ways: its rows (one of them -0.0 in D')


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


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """D: unit 0.0 with HEAVY rows in group "a", and 20 units of one row each; D': the same
    with one of unit 0.0's rows spelled -0.0."""
    other = np.arange(1, 21, dtype=float)
    d = pd.DataFrame({"g": ["a"] * HEAVY + ["b"] * 20,
                      "u": np.concatenate([np.zeros(HEAVY), other])})
    d2 = d.copy()
    d2.loc[0, "u"] = -0.0
    return d, d2


def _counts(df: pd.DataFrame, seed: int) -> np.ndarray:
    """The exact per-group counts a unit-level grouped count computes on Spark."""
    import dpframe.fronts.spark  # noqa: F401  (adds sdf.dp)
    from dpframe.backends.spark import SparkBackend

    sdf = _spark().createDataFrame(df, "g string, u double")
    s = dpf.Session(1e9, privacy_unit="u", seed=seed)
    q = sdf.dp(s, keys={"g": ["a", "b"]}, privacy_unit="u", max_rows_per_unit=T,
               partitions=PARTITIONS).query("count", by="g", epsilon=EPSILON)
    computed = compute_exact(s, q, SparkBackend(sdf, PARTITIONS))
    assert computed.defect is None
    (values,) = computed.exact.values.values()
    return np.asarray(values, dtype=float)


def finding_spark_unit_spelling(seed: int) -> tuple[float, float, float, str]:
    """62. Privacy loss of the pair (D, D' = D with one unit id spelled -0.0): the exact
    counts' L1 shift times epsilon / T (geometric noise of scale T / epsilon); claim 0."""
    d, d2 = _frames()
    shift = float(np.abs(_counts(d2, seed) - _counts(d, seed)).sum())
    return shift * EPSILON / T, 0.0, 0.0, (
        f"exact counts on Spark (T={T}, {PARTITIONS} blocks): L1 shift {shift:g}")


@contextlib.contextmanager
def unit_not_spelled() -> Iterator[None]:
    """BROKEN on purpose: Spark places rows by the unit id as spelled (-0.0 apart from 0.0)."""
    from dpframe.backends import spark as backend

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(backend, "_unit_column", lambda unit, t: unit)
        yield
