"""``agg``'s ``size`` (pandas' group size): the rows, whatever the column holds, released as
``count()``; with sums it shares their joint release's row count (three coordinates, not four)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf


def _session() -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(10.0, seed=7)


def _priv(df: pd.DataFrame, session: dpf.Session | None = None) -> dpf.PrivateFrame:
    return df.dp(session or _session(), bounds={"x": (0, 100), "y": (0, 1000)},
                 keys={"g": [0, 1]})


def _frame() -> pd.DataFrame:
    # group 0: 1,000 rows whose x is missing; group 1: 1,000 rows with x present
    x = np.r_[np.full(1000, np.nan), np.linspace(0, 100, 1000)]
    return pd.DataFrame({"g": np.repeat([0, 1], 1000), "x": x, "y": np.linspace(0, 1000, 2000)})


def coordinates(out: pd.DataFrame) -> list[str]:
    return list(out.attrs["dp"]["measures"][0]["joint"]["coordinates"])


def test_size_counts_rows_where_count_counts_values() -> None:
    priv = _priv(_frame())
    out = priv.groupby("g").agg(n=("x", "size"), c=("x", "count"), s=("y", "sum"), epsilon=1)
    # the K-norm's noise on a count is below 60 with probability far above 1 - 1e-9 at
    # epsilon 1 (a Gamma(5, 1) radius times a uniform coordinate): 1,000 rows apart is no noise
    assert abs(out.loc[0, "n"] - 1000) < 60 and abs(out.loc[0, "c"]) < 60
    assert abs(out.loc[1, "n"] - 1000) < 60 and abs(out.loc[1, "c"] - 1000) < 60
    assert [m["aggregate"] for m in out.attrs["dp"]["measures"]] == ["size", "count", "sum"]


def test_size_shares_the_row_count_of_the_sums() -> None:
    priv = _priv(_frame())
    shared = priv.groupby("g").agg(n=("x", "size"), sx=("x", "sum"), sy=("y", "sum"), epsilon=1)
    own = priv.groupby("g").agg(n=("x", "count"), sx=("x", "sum"), sy=("y", "sum"), epsilon=1)
    assert coordinates(shared) == ["rows", "sum0:x", "sum0:y"]
    assert len(coordinates(own)) == 4


def test_size_of_a_missing_column_is_refused_before_the_charge() -> None:
    session = _session()
    priv = _priv(_frame(), session)
    with pytest.raises(dpf.ValidationError, match="not a column"):
        priv.groupby("g").agg(n=("z", "size"), epsilon=1)
    assert session.spent == (0.0, 0.0)


def test_size_in_a_column_mapping() -> None:
    out = _priv(_frame()).groupby("g").agg({"x": ["size", "sum"]}, epsilon=1)
    assert list(out.columns) == [("x", "size"), ("x", "sum")]
