"""Hypothesis profiles for the whole suite.

``ci`` (the default) derandomizes: the README's test command and CI draw the same examples on
every run, so a red CI names a defect that reproduces, never a draw that a rerun hides.
``explore`` draws fresh random examples on each run, to look for new failures before a change
lands: ``HYPOTHESIS_PROFILE=explore python -m pytest -n 2`` (run it a few times).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local[2] SparkSession for the whole run (the Spark tests share an xdist group, so
    one worker starts one JVM): two shuffle partitions, no UI, UTC session time zone."""
    pyspark_sql = pytest.importorskip("pyspark.sql")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers run this interpreter
    session = (pyspark_sql.SparkSession.builder.master("local[2]").appName("dpframe-tests")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.memory", "1g")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
