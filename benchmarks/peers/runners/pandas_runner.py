"""Plain pandas (no privacy): the time and memory baseline, and the exact answers."""

from __future__ import annotations

from typing import Any

import pandas as pd
from _common import main


def load(path: str) -> pd.DataFrame:
    return pd.read_parquet(path)


def groupby_sum(df: pd.DataFrame) -> dict[str, float]:
    return df.groupby("g")["x"].sum().to_dict()


QUERIES: dict[str, Any] = {
    "count": lambda df: len(df),
    "sum": lambda df: df["x"].sum(),
    "mean": lambda df: df["x"].mean(),
    "groupby_sum": groupby_sum,
    # pandas has no privacy unit: the plain equivalent of the user-level query is the same
    # groupby-sum (the contribution bounds never bind on this data).
    "user_groupby_sum": groupby_sum,
}

if __name__ == "__main__":
    main(lambda: pd.__version__, load, QUERIES)
