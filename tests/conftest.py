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


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--dist loadgroup``: a test marked ``xdist_group(name)`` gets the node id suffix
    ``@name`` that sends its whole group to one worker. pytest-xdist 3.8 sets the suffix on
    ``item._nodeid``, which pytest 9 no longer reads (the id is ``item._id``): without this the
    Spark tests were spread over every worker, each starting its own JVM."""
    if not getattr(config.option, "loadgroup", False):
        return
    # a group runs on one worker: start it first, so that the other workers share the rest
    # beside it (last, it ran alone while they idled: about two minutes of the suite's wall)
    items.sort(key=lambda item: not any(item.iter_markers("xdist_group")))
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix) and hasattr(item, "_id"):
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(item.nodeid + suffix)


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


@pytest.fixture(autouse=True)
def _spark_for_marked(request: pytest.FixtureRequest) -> None:
    """A test marked ``spark`` (a backend registry entry's mark too,
    ``tests/backends/contract.py``) runs with the session's SparkSession started."""
    if request.node.get_closest_marker("spark") is not None:
        request.getfixturevalue("spark")
