"""pandas idioms newcomers reach for (issue: a newcomer on real data): attribute access to
columns, ``sort=`` on group-bys, ``bins=<int>`` over the declared bounds and infinite outer
edges, ``describe(epsilon=)``, and close-name suggestions."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf

HUGE = 1e9  # epsilon at which the noise is negligible: results equal pandas'


@pytest.fixture
def df() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame({"wage": rng.uniform(0, 100, 2000).round(2),
                         "age": rng.integers(18, 80, 2000),
                         "region": rng.choice(["south", "east", "west"], 2000)})


def session() -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(1e12, seed=3)


def priv_of(df: pd.DataFrame, s: dpf.Session | None = None) -> object:
    return df.dp(s or session(), bounds={"wage": (0, 100), "age": (0, 100)},
                 keys={"region": ["west", "south", "east"]})


def test_attribute_access(df: pd.DataFrame) -> None:
    priv = priv_of(df)
    by_attr = priv.groupby("region").wage.sum(epsilon=HUGE)  # type: ignore[attr-defined]
    assert by_attr.round(0).tolist() == df.groupby("region").wage.sum().reindex(
        ["west", "south", "east"]).round(0).tolist()
    assert float(priv.wage.mean(epsilon=HUGE)) == pytest.approx(df.wage.mean(), abs=1e-3)  # type: ignore[attr-defined]
    assert "wage" in dir(priv) and "wage" in dir(priv.groupby("region"))  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match=r"did you mean 'wage'"):
        priv.wag  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError, match=r"did you mean 'region'"):
        priv.groupby("region").Region  # type: ignore[attr-defined]  # noqa: B018


def test_sort_lines_up_with_pandas(df: pd.DataFrame) -> None:
    priv = priv_of(df)
    declared = priv.groupby("region").count(epsilon=HUGE)  # type: ignore[attr-defined]
    assert list(declared.index) == ["west", "south", "east"]  # declared order by default
    out = priv.groupby("region", sort=True).count(epsilon=HUGE)  # type: ignore[attr-defined]
    truth = df.groupby("region").size()
    assert list(out.index) == list(truth.index) and out.tolist() == truth.tolist()
    assert out.attrs["dp"]["measures"][0]["aggregate"] == "count"
    agg = priv.groupby("region", sort=True).agg(n=("wage", "count"), epsilon=HUGE)  # type: ignore[attr-defined]
    assert list(agg.index) == sorted(["west", "south", "east"])
    with pytest.raises(dpf.ValidationError, match="sort"):
        priv.groupby("region", sort="yes")  # type: ignore[attr-defined]


def test_integer_bins_over_declared_bounds(df: pd.DataFrame) -> None:
    s = session()
    priv = priv_of(df, s)
    out = priv.histogram("age", 10, epsilon=HUGE)  # type: ignore[attr-defined]
    edges = np.linspace(0, 100, 11)
    truth = pd.cut(df.age, edges, include_lowest=True).value_counts(sort=False)
    assert out.tolist() == truth.tolist()
    assert len(out) == 10 and out.index[-1].right == 100
    spent = s.spent
    with pytest.raises(dpf.BoundsError, match="declared bounds"):
        df.dp(s, keys={}).histogram("age", 10, epsilon=1)
    with pytest.raises(dpf.ValidationError, match="number of bins"):
        priv.histogram("age", 0, epsilon=1)  # type: ignore[attr-defined]
    assert s.spent == spent  # refused before any charge


def test_infinite_outer_edges(df: pd.DataFrame) -> None:
    priv = priv_of(df)
    edges = [-np.inf, 30, 60, np.inf]
    out = priv.histogram("age", edges, epsilon=HUGE)  # type: ignore[attr-defined]
    truth = pd.cut(df.age, edges).value_counts(sort=False)
    assert out.tolist() == truth.tolist()
    assert list(out.index) == list(truth.index)
    for bad in ([0, np.inf, 50], [np.inf, 100], [0, 50, -np.inf], [0, np.nan, 5]):
        with pytest.raises(dpf.ValidationError, match="increasing edges"):
            priv.histogram("age", bad, epsilon=1)  # type: ignore[attr-defined]


def test_describe(df: pd.DataFrame) -> None:
    s = session()
    out = priv_of(df, s).describe(epsilon=HUGE)  # type: ignore[attr-defined]
    assert list(out.columns) == ["wage", "age"]
    assert list(out.index) == ["count", "mean", "std", "25%", "50%", "75%"]
    truth = df[["wage", "age"]].describe()
    for col in ("wage", "age"):
        assert out.loc["count", col] == truth.loc["count", col]
        assert out.loc["mean", col] == pytest.approx(truth.loc["mean", col], abs=1e-3)
        assert out.loc["std", col] == pytest.approx(truth.loc["std", col], abs=1e-3)
        for q in ("25%", "50%", "75%"):  # a grid of 1001 candidates over [0, 100]
            assert abs(out.loc[q, col] - truth.loc[q, col]) <= 0.5
    split = out.attrs["dp"]["budget_split"]
    # count, mean, std and the three percentiles in one joint release, per column
    assert len(split) == 8 and sum(split.values()) == pytest.approx(HUGE)
    assert split["age.percentiles"] == pytest.approx(HUGE / 4)  # 3 of 12 statistics
    assert len(s.ledger) == 1  # one release, one charge
    dry = priv_of(df, s).explain("describe", epsilon=1.0, columns=["age"])  # type: ignore[attr-defined]
    assert len(dry["measures"]) == 4 and len(s.ledger) == 1


def test_grouped_histogram_is_a_crosstab(df: pd.DataFrame) -> None:
    priv = priv_of(df)
    edges = [0, 30, 60, 100]
    out = priv.groupby("region", sort=True).histogram("age", edges, epsilon=HUGE)  # type: ignore[attr-defined]
    truth = pd.crosstab(df.region, pd.cut(df.age, edges))
    assert out.unstack().values.tolist() == truth.values.tolist()
    assert list(out.index.names) == ["region", "age"]
    sel = priv.groupby("region")["age"].histogram(10, epsilon=HUGE, ci=0.9)  # type: ignore[attr-defined]
    assert list(sel.columns) == ["count", "lower", "upper"] and len(sel) == 30


def test_grouped_histogram_sensitivity_counts_groups() -> None:
    # a unit in k = 3 groups with R = 2 rows each moves 6 cells: L1 sensitivity k * R
    df = pd.DataFrame({"u": [1] * 6, "g": ["a", "b", "c"] * 2, "x": [1.0] * 6})
    priv = df.dp(session(), bounds={"x": (0, 10)}, keys={"g": ["a", "b", "c"]},
                 privacy_unit="u", max_rows_per_group=2, max_groups_per_unit=3)
    out = priv.groupby("g").histogram("x", [0, 5, 10], epsilon=1.0)
    assert out.attrs["dp"]["measures"][0]["sensitivity"] == 6.0
    # a total bound T = 4 caps the cells a unit moves: min(T, k R)
    capped = df.dp(session(), bounds={"x": (0, 10)}, keys={"g": ["a", "b", "c"]},
                   privacy_unit="u", max_rows_per_unit=4, max_rows_per_group=2,
                   max_groups_per_unit=3).groupby("g").histogram("x", [0, 5, 10], epsilon=1.0)
    assert capped.attrs["dp"]["measures"][0]["sensitivity"] == 4.0
