"""Declared key combinations (``keys=`` a DataFrame) and rollups (``rollup=True``), issue 47
item 4: the released groups are exactly the declared combinations, every level comes from one
charge, consistent, labelled like ``pivot_table(margins=True)``, on every backend alike."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf

pytestmark = pytest.mark.filterwarnings("ignore")  # seeded sessions: tests only

REGIONS = [f"r{i}" for i in range(5)]
COMBOS = pd.DataFrame({"region": np.repeat(REGIONS, 10), "city": [f"c{i}" for i in range(50)]})
HUGE = 1e7  # noise far below 0.5: the release rounds to the exact values


def data(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = COMBOS.iloc[rng.integers(0, 50, n)].reset_index(drop=True)
    df["x"] = rng.uniform(0, 10, n)
    df["u"] = rng.integers(0, n // 3, n)
    return df


def session(eps: float = 1e9, seed: int = 1) -> dpf.Session:
    return dpf.Session(eps, seed=seed)


def test_keys_dataframe_releases_exactly_the_declared_combinations() -> None:
    """50 groups (not the 250 of the columns' product), in declared order; a row of an
    undeclared combination counts in none of them."""
    df = pd.concat([data(), pd.DataFrame({"region": ["r1"] * 7, "city": ["c0"] * 7,
                                          "x": 1.0, "u": 0})], ignore_index=True)
    out = df.dp(session(), keys=COMBOS, bounds={"x": (0, 10)}).groupby(
        ["region", "city"]).count(epsilon=HUGE)
    assert list(out.index) == list(COMBOS.itertuples(index=False, name=None))
    assert out.index.names == ["region", "city"]
    exact = data().groupby(["region", "city"]).size()
    assert out.to_dict() == exact.to_dict()


def test_keys_dataframe_declares_each_column() -> None:
    """A groupby on one of its columns: that column's distinct values, in declared order."""
    out = data().dp(session(), keys=COMBOS).groupby("region").count(epsilon=HUGE)
    assert list(out.index) == REGIONS


def test_rollup_levels_labels_and_consistency() -> None:
    s = session(10)
    out = data().dp(s, keys=COMBOS).groupby(["region", "city"]).count(epsilon=1, rollup=True)
    assert out.dtype == np.float64 and out.name == "count"
    labels = list(out.index)
    assert labels[:50] == list(COMBOS.itertuples(index=False, name=None))
    assert labels[50:] == [(r, "All") for r in REGIONS] + [("All", "All")]
    # consistent: children add up to their parent (in float)
    for r in REGIONS:
        assert out.loc[r].drop("All").sum() == pytest.approx(out[(r, "All")], abs=1e-9)
    assert sum(out[(r, "All")] for r in REGIONS) == pytest.approx(out[("All", "All")],
                                                                 abs=1e-9)
    # one charge, one ledger entry, the equal split stated
    assert s.spent[0] == pytest.approx(1.0) and len(s.ledger) == 1
    roll = out.attrs["dp"]["rollup"]
    assert roll["epsilon_per_level"] == pytest.approx([1 / 3] * 3)
    assert roll["noise_scale_per_level"] == pytest.approx([3.0] * 3)
    assert roll["groups_per_level"] == [1, 5, 50]
    # the least-squares levels are never projected onto non-negative counts (postprocess=)
    assert all(m.get("postprocess") is None for m in out.attrs["dp"]["measures"])
    assert "non-negative" not in out.attrs["dp"].get("covers", "")


def test_rollup_at_huge_epsilon_is_exact_at_every_level() -> None:
    df = data()
    out = df.dp(session(), keys=COMBOS, bounds={"x": (0, 10)}).groupby(["region", "city"]).sum(
        "x", epsilon=HUGE, rollup=True)
    assert out[("All", "All")] == pytest.approx(df.x.sum(), abs=1e-3)
    for r, v in df.groupby("region").x.sum().items():
        assert out[(r, "All")] == pytest.approx(v, abs=1e-3)


def test_level_shares_and_unit_level_sensitivity() -> None:
    """level_shares splits epsilon; with T = 3 rows per unit every level's L1 sensitivity is
    3 (a unit moves the total, a region and its cities by at most its 3 rows)."""
    out = data().dp(session(), keys=COMBOS, privacy_unit="u", max_rows_per_unit=3).groupby(
        ["region", "city"]).count(epsilon=1, rollup=True, level_shares=[1, 1, 2])
    roll = out.attrs["dp"]["rollup"]
    assert roll["epsilon_per_level"] == pytest.approx([0.25, 0.25, 0.5])
    assert roll["noise_scale_per_level"] == pytest.approx([12.0, 12.0, 6.0])


def test_rollup_one_column_numeric_keys_and_margins_name() -> None:
    df = pd.DataFrame({"k": [1, 2, 2, 3] * 10})
    out = df.dp(session(), keys={"k": [1, 2, 3]}).groupby("k").count(
        epsilon=HUGE, rollup=True, margins_name="Total")
    assert list(out.index) == [1, 2, 3, "Total"] and out.index.dtype == object
    assert out.to_dict() == {1: 10.0, 2: 20.0, 3: 10.0, "Total": 40.0}


def test_rollup_with_ci_and_explain() -> None:
    priv = data().dp(session(10), keys=COMBOS)
    plan = priv.explain("count", by=["region", "city"], epsilon=1, rollup=True)
    assert plan["rollup"]["levels"] == 3 and plan["charge_epsilon"] == pytest.approx(1.0)
    out = priv.groupby(["region", "city"]).count(epsilon=1, rollup=True, ci=0.9)
    assert list(out.columns) == ["count", "lower", "upper"]
    assert (out["lower"] < out["count"]).all() and (out["count"] < out["upper"]).all()


def test_non_rollup_count_unchanged() -> None:
    """A grouped count without rollup keeps its integer output (the same release as before)."""
    df = pd.DataFrame({"g": ["a", "b"] * 50})
    out = df.dp(session(), keys={"g": ["a", "b"]}).groupby("g").count(epsilon=HUGE)
    assert out.dtype == np.int64 and out.to_dict() == {"a": 50, "b": 50}


def _release(frame: Any) -> pd.Series:
    return frame.dp(session(10, seed=4), keys=COMBOS, bounds={"x": (0, 10)}).groupby(
        ["region", "city"]).sum("x", epsilon=1, rollup=True)


def test_backends_release_the_same_rollup() -> None:
    """The exact part is a grouped sum at the leaves; the levels are summed in the core: the
    same seed gives the same release on pandas, Polars and Dask."""
    pl = pytest.importorskip("polars")
    dd = pytest.importorskip("dask.dataframe")
    df = data()
    want = _release(df)
    pd.testing.assert_series_equal(_release(pl.from_pandas(df)), want)
    pd.testing.assert_series_equal(_release(dd.from_pandas(df, npartitions=3)), want)


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_spark_releases_the_same_rollup(spark: Any) -> None:
    """Spark computes the leaves' exact sums; the levels come from the core, as on pandas."""
    df = data(600)
    sdf = spark.createDataFrame(df, "region string, city string, x double, u long")
    pd.testing.assert_series_equal(_release(sdf), _release(df))


def test_empty_frame_releases_every_level() -> None:
    """No rows: the same index, dtype and consistency, noise on zeros (nothing data-dependent
    in the shape of the result)."""
    empty = data().iloc[:0]
    out = empty.dp(session(10), keys=COMBOS).groupby(["region", "city"]).count(
        epsilon=1, rollup=True)
    full = data().dp(session(10), keys=COMBOS).groupby(["region", "city"]).count(
        epsilon=1, rollup=True)
    assert out.index.equals(full.index) and out.dtype == full.dtype
    assert out.iloc[:50].sum() == pytest.approx(out[("All", "All")], abs=1e-9)


def test_release_intervals_are_the_core_half_widths() -> None:
    """The intervals a release states are the ones tests/core/test_consistency.py checks for
    coverage: the core's half-widths for the tree and the levels' noise."""
    import math

    from dpframe.core.consistency import Tree, half_widths

    out = data().dp(session(10), keys=COMBOS).groupby(["region", "city"]).count(
        epsilon=1, rollup=True, ci=0.9)
    p = math.exp(-1 / 3)
    var = 2 * p / (1 - p) ** 2
    tree = Tree((np.zeros(5, dtype=np.int64), np.repeat(np.arange(5), 10)))
    hw = half_widths(tree, [var] * 3, [1.0] * 3, [p] * 3, [0.0] * 3, level=0.9)
    want = np.concatenate([hw[2], hw[1], hw[0]])
    assert np.allclose((out["upper"] - out["count"]).to_numpy(), want)
    assert np.allclose((out["count"] - out["lower"]).to_numpy(), want)
