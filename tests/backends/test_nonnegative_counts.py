"""Every backend releases histograms and grouped counts in the projected form (non-negative
counts with their noisy total kept): the projection lives in the core, after the noise, so
pandas, Arrow scans, Polars, Dask and Spark give the same released values for the same seed."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpframe as dpf
from dpframe.core.projection import project_counts

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")

KEYS = {"g": ["a", "b", *[f"z{i}" for i in range(20)]]}
EDGES = [0, 1, 2, 3, 4, 5, 6, 7, 8]


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(21)
    return pd.DataFrame({"g": rng.choice(["a", "b"], 60), "x": rng.integers(0, 3, 60) + 0.5})


def _session(seed: int) -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(1e9, seed=seed)


def _releases(make: Any, postprocess: str | None = "nonnegative") -> list[np.ndarray]:
    """A histogram, a grouped count and a grouped histogram of the frame ``make(session)``
    gives a private frame of (each at epsilon 0.5, seeds 1-3)."""
    h = make(_session(1)).histogram("x", EDGES, epsilon=0.5, postprocess=postprocess)
    c = make(_session(2)).groupby("g").count(epsilon=0.5, postprocess=postprocess)
    gh = make(_session(3)).groupby("g").histogram("x", EDGES, epsilon=0.5,
                                                  postprocess=postprocess)
    return [np.asarray(r.to_numpy()) for r in (h, c, gh)]


def _fronts(tmp_path: Path) -> dict[str, Any]:
    pl = pytest.importorskip("polars")
    dd = pytest.importorskip("dask.dataframe")
    df = _frame()
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "d.parquet",
                   row_group_size=7)
    ddf = dd.from_pandas(df, npartitions=3, sort=False)
    pdf = pl.from_pandas(df)
    return {
        "scan": lambda s: dpf.scan(tmp_path / "d.parquet", batch_size=5).dp(
            s, bounds={"x": (0, 8)}, keys=KEYS),
        "polars": lambda s: pdf.dp(s, bounds={"x": (0, 8)}, keys=KEYS),
        "dask": lambda s: ddf.dp(s, bounds={"x": (0, 8)}, keys=KEYS),
    }


def _pandas(s: dpf.Session) -> Any:
    return _frame().dp(s, bounds={"x": (0, 8)}, keys=KEYS)


def test_pandas_releases_the_projection_of_its_raw_release() -> None:
    raw = _releases(_pandas, None)
    assert all((r < 0).any() for r in raw)  # sparse: today's raw counts go negative
    for got, r in zip(_releases(_pandas), raw, strict=True):
        assert got.dtype == np.int64 and (got >= 0).all()
        assert got.tolist() == project_counts(r).tolist()


def test_every_backend_gives_the_projected_form(tmp_path: Path) -> None:
    expected = _releases(_pandas)
    for name, make in _fronts(tmp_path).items():
        got = _releases(make)
        for g, e in zip(got, expected, strict=True):
            assert g.dtype == np.int64, name
            assert g.tolist() == e.tolist(), name


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_spark_gives_the_projected_form(spark: Any) -> None:
    df = _frame()
    sdf = spark.createDataFrame(df)
    got = _releases(lambda s: sdf.dp(s, bounds={"x": (0, 8)}, keys=KEYS))
    for g, e in zip(got, _releases(_pandas), strict=True):
        assert g.dtype == np.int64 and g.tolist() == e.tolist()
