"""The pandas idioms people type: column selection on frames and group-bys, named
aggregation, ``pipe`` (0.1: ``priv.groupby("g")["income"]`` raised TypeError, named
aggregation was refused)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf

HUGE = 1e6


def session(seed: int = 5) -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(1e9, 1e-3, seed=seed)


@pytest.fixture
def df() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"g": rng.choice(["a", "b", "c"], 300), "x": rng.uniform(0, 10, 300),
                         "y": rng.integers(0, 5, 300)})


def _priv(df: pd.DataFrame, s: dpf.Session) -> dpf.frontend.PrivateFrame:
    return df.dp(s, bounds={"x": (0, 10), "y": (0, 5)}, keys={"g": ["a", "b", "c"]})


def test_groupby_column_selection_is_the_same_release(df: pd.DataFrame) -> None:
    a = _priv(df, session()).groupby("g")["x"].sum(epsilon=0.5)
    b = _priv(df, session()).groupby("g").sum("x", epsilon=0.5)
    pd.testing.assert_series_equal(a, b)
    assert a.attrs["dp"]["query"] == b.attrs["dp"]["query"]
    exact = df.groupby("g")["y"].mean()
    got = _priv(df, session()).groupby("g")["y"].mean(epsilon=HUGE)
    np.testing.assert_allclose(got.to_numpy(), exact.to_numpy(), atol=1e-3)


def test_several_columns_are_one_release_and_one_charge(df: pd.DataFrame) -> None:
    s = session()
    out = _priv(df, s).groupby("g")[["x", "y"]].mean(epsilon=0.5, ci=0.9)
    assert list(out.columns) == ["x", "x_lower", "x_upper", "y", "y_lower", "y_upper"]
    assert s.spent[0] == pytest.approx(0.5) and len(s.ledger) == 1
    plain = _priv(df, session()).groupby("g")[["x", "y"]].sum(epsilon=HUGE)
    exact = df.assign(x=df.x.clip(0, 10)).groupby("g")[["x", "y"]].sum()
    np.testing.assert_allclose(plain.to_numpy(dtype=float), exact.to_numpy(dtype=float),
                               atol=1e-3)


def test_frame_column_selection(df: pd.DataFrame) -> None:
    a = _priv(df, session())["x"].mean(epsilon=0.5)
    b = _priv(df, session()).mean("x", epsilon=0.5)
    assert float(a) == float(b)
    h = _priv(df, session())["x"].histogram([0, 5, 10], epsilon=HUGE)
    assert h.tolist() == pd.cut(df.x, [0, 5, 10]).value_counts(sort=False).tolist()
    s = session()
    with pytest.raises(dpf.ValidationError):
        _priv(df, s)[["x", "y"]]  # a frame selects one column
    assert s.spent == (0.0, 0.0)


def test_named_aggregation(df: pd.DataFrame) -> None:
    s = session()
    out = _priv(df, s).groupby("g").agg(total=("x", "sum"), avg=("y", "mean"),
                                        n=("x", "count"), epsilon=HUGE)
    assert list(out.columns) == ["total", "avg", "n"]
    assert len(s.ledger) == 1
    clamped = df.assign(x=df.x.clip(0, 10)).groupby("g")
    np.testing.assert_allclose(out["total"].to_numpy(), clamped.x.sum().to_numpy(), atol=1e-3)
    np.testing.assert_allclose(out["avg"].to_numpy(), clamped.y.mean().to_numpy(), atol=1e-3)
    assert out["n"].tolist() == clamped.x.count().tolist()
    weighted = _priv(df, session()).groupby("g").agg(
        total=("x", "sum"), avg=("x", "mean"), weights={"total": 3, "avg": 1}, epsilon=1.0)
    # one K-norm release serves both (no more noise for either than its weighted share
    # alone would give): each states the joint release's epsilon
    eps = {m["aggregate"]: m["epsilon"] for m in weighted.attrs["dp"]["measures"]}
    assert eps["sum"] == pytest.approx(1.0) and eps["mean"] == pytest.approx(1.0)
    assert {m["mechanism"] for m in weighted.attrs["dp"]["measures"]} == {"k-norm (box, joint)"}
    ci = _priv(df, session()).groupby("g").agg(total=("x", "sum"), epsilon=1.0, ci=0.95)
    assert list(ci.columns) == ["total", "total_lower", "total_upper"]


@pytest.mark.parametrize("bad", [
    {"total": "x"},                      # not a pair
    {"total": ("x", "variance_of")},     # unknown aggregate
    {"a": ("x", "sum"), "b": ("x", "sum")},  # the same aggregate twice
    {"a": (1, "sum")},                   # a column named by a non-string
])
def test_bad_named_aggregation_is_refused_before_the_charge(df: pd.DataFrame, bad) -> None:
    s = session()
    with pytest.raises(dpf.ValidationError):
        _priv(df, s).groupby("g").agg(epsilon=1.0, **bad)
    with pytest.raises(dpf.ValidationError):
        _priv(df, s).groupby("g").agg({"x": "sum"}, total=("x", "sum"), epsilon=1.0)
    assert s.spent == (0.0, 0.0)


def test_selection_agg_and_pipe(df: pd.DataFrame) -> None:
    out = _priv(df, session()).groupby("g")["x"].agg(["sum", "mean"], epsilon=HUGE)
    assert list(out.columns) == ["sum", "mean"]

    def top(frame, column, *, epsilon):
        return frame.groupby("g")[column].max(epsilon=epsilon)

    a = _priv(df, session()).pipe(top, "x", epsilon=1.0)
    b = _priv(df, session()).groupby("g").max("x", epsilon=1.0)
    pd.testing.assert_series_equal(a, b)

    def by_keyword(n, *, frame):
        return frame.count(epsilon=HUGE) + n

    assert _priv(df, session()).pipe((by_keyword, "frame"), 1) == len(df) + 1
    gb = _priv(df, session()).groupby("g")
    assert gb.pipe(lambda g: g.median("x", epsilon=1.0)).index.tolist() == ["a", "b", "c"]
