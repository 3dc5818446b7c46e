"""dpframe through its public API (the `.dp` accessor)."""

from __future__ import annotations

import warnings
from typing import Any

import pandas as pd
from _common import EPSILON, KEYS, LOWER, MAX_GROUPS_PER_UNIT, MAX_ROWS_PER_UNIT, UPPER, main

import dpframe as dpf

warnings.simplefilter("ignore")
BOUNDS = {"x": (LOWER, UPPER)}


def load(path: str) -> pd.DataFrame:
    return pd.read_parquet(path)


def priv(df: pd.DataFrame, **kw: Any) -> Any:
    # A fresh session per release, each with exactly the budget of that release.
    return df.dp(dpf.Session(epsilon=EPSILON), bounds=BOUNDS, keys={"g": KEYS}, **kw)


def user_groupby_sum(df: pd.DataFrame) -> dict[str, float]:
    p = priv(df, privacy_unit="uid", max_rows_per_unit=MAX_ROWS_PER_UNIT,
             max_groups_per_unit=MAX_GROUPS_PER_UNIT)
    return p.groupby("g").sum("x", epsilon=EPSILON).to_dict()


QUERIES: dict[str, Any] = {
    "count": lambda df: priv(df).count(epsilon=EPSILON),
    "sum": lambda df: priv(df).sum("x", epsilon=EPSILON),
    "mean": lambda df: priv(df).mean("x", epsilon=EPSILON),
    "groupby_sum": lambda df: priv(df).groupby("g").sum("x", epsilon=EPSILON).to_dict(),
    "user_groupby_sum": user_groupby_sum,
}

if __name__ == "__main__":
    from importlib.metadata import version
    main(lambda: version("dpframe"), load, QUERIES)
