"""The total bound T (``max_rows_per_unit``: a unit's rows in the whole release) through every
backend: pandas, Arrow scans (every slice pre-selected and carried to pass 2) and Dask
(pre-selection per partition, final selection per bucket) enforce it and draw the same law."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpframe as dpf
from dpframe.backends.arrow import carried
from dpframe.backends.pandas import PandasBackend
from dpframe.core.exact.compute import NO_GROUP_LIMIT, AggregateRequest, ComputeRequest

dd = pytest.importorskip("dask.dataframe")

from dpframe.backends.dask import DaskBackend  # noqa: E402

KEYS = ("a", "b", "c", "d")


def _request(rows: int, groups: int, total: int | None) -> ComputeRequest:
    return ComputeRequest((AggregateRequest(kind="rows", column=None),), by=("g",),
                          keys={"g": KEYS}, privacy_unit="u", rows_per_group=rows,
                          groups_per_unit=groups, rows_per_unit=total)


def _backends(df: pd.DataFrame, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp / "d.parquet",
                   row_group_size=2)
    monkeypatch.setattr(carried, "HEAVY_MARGIN", -10**9)  # pre-select every slice
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"pandas": PandasBackend(df),
                "scan": dpf.scan(tmp, batch_size=2, partitions=2).backend,
                "dask": DaskBackend(dd.from_pandas(df, npartitions=3, sort=False))}


def _frame(groups: list[str]) -> pd.DataFrame:
    """Unit 0's rows in ``groups`` (spread over batches and partitions), units 1-3 one row in
    "d" each."""
    g = [*groups, "d", "d", "d"]
    u = [0] * len(groups) + [1, 2, 3]
    return pd.DataFrame({"u": np.array(u, dtype=np.int64), "g": g})


def _rate(backend: object, req: ComputeRequest, trials: int, group: int) -> float:
    hits = 0
    for t in range(trials):
        agg = backend.exact(req, np.random.default_rng(t))  # type: ignore[attr-defined]
        counts = np.asarray(next(iter(agg.values.values())))
        order = [agg.keys.index((k,)) for k in KEYS]
        counts = counts[order]
        assert counts[3] == 3  # other units untouched
        mine = counts[:3]
        assert mine.sum() <= (req.rows_per_unit or 10**9)
        assert mine.max() <= req.rows_per_group
        assert np.count_nonzero(mine) <= req.groups_per_unit
        hits += int(mine[group])
    return hits / trials


@pytest.mark.parametrize("case", ["T, R", "T, k, R"])
def test_every_backend_enforces_t_with_one_law(case: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """T, R = 2, 2 (no group step): a unit with 5 rows in "a" and 1 in "b" keeps its "b" row
    w.p. 1/3 (it must rank 1st or 2nd of the 6 rows). k, T, R = 2, 2, 2 with rows a a a b c:
    "b" is among the 2 groups w.p. 2/3; beside "a" (w.p. 1/2) its row then ranks 1st or 2nd
    of 4 rows w.p. 1/2, beside "c" it is kept: 2/3 * (1/4 + 1/2) = 1/2."""
    if case == "T, R":
        df = _frame(["a", "a", "b", "a", "a", "a"])
        req, p = _request(2, NO_GROUP_LIMIT, 2), 1 / 3
    else:
        df = _frame(["a", "b", "a", "c", "a"])
        req, p = _request(2, 2, 2), 1 / 2
    for name, backend in _backends(df, tmp_path, monkeypatch).items():
        # a law that never keeps b (the first rows in order) is > 6 sigma off at 80 trials
        trials = 80 if name == "dask" else 200
        rate = _rate(backend, req, trials, 1)
        assert abs(rate - p) < 4.5 * math.sqrt(p * (1 - p) / trials), (name, rate)


def test_max_rows_per_unit_bounds_the_whole_release_end_to_end() -> None:
    """A unit's 10 rows over 5 groups with max_rows_per_unit=2 add at most 2 to the grouped
    count (on main it meant 2 rows per group: up to 10)."""
    df = pd.DataFrame({"u": [0] * 10, "g": [f"k{i % 5}" for i in range(10)]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = dpf.Session(1e9, 1e-3, seed=1)
    keys = {"g": [f"k{i}" for i in range(5)]}
    for _ in range(20):
        r = df.dp(s, keys=keys, privacy_unit="u", max_rows_per_unit=2,
                  max_groups_per_unit=5).groupby("g").count(epsilon=1e6)
        assert int(r.sum()) == 2
        r = df.dp(s, keys=keys, privacy_unit="u", max_rows_per_group=2,
                  max_groups_per_unit=5).groupby("g").count(epsilon=1e6)
        assert int(r.sum()) == 10
