"""diffprivlib (`diffprivlib.tools.count_nonzero` / `sum` / `mean` on NumPy arrays).

diffprivlib works in the bounded model (change one row; n is public): its sum has sensitivity
`upper - lower` and its mean `(upper - lower) / n`. It has no groupby: the grouped query splits
the column with pandas and calls `tools.sum` per public key at epsilon / 2 (a changed row can
move between two groups, so the disjoint groups compose in parallel at 2 x their epsilon).
It has no privacy unit or contribution bounding, so the user-level query is not expressible.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from _common import EPSILON, KEYS, LOWER, UPPER, main
from diffprivlib import tools

BOUNDS = (LOWER, UPPER)


def load(path: str) -> pd.DataFrame:
    return pd.read_parquet(path)


def groupby_sum(df: pd.DataFrame) -> dict[str, float]:
    codes = pd.Categorical(df["g"], categories=KEYS).codes
    x = df["x"].to_numpy()
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(len(KEYS) + 1))
    return {k: tools.sum(x[order[starts[i]:starts[i + 1]]], epsilon=EPSILON / 2, bounds=BOUNDS)
            for i, k in enumerate(KEYS)}


QUERIES: dict[str, Any] = {
    "count": lambda df: tools.count_nonzero(df["x"].notna().to_numpy(), epsilon=EPSILON),
    "sum": lambda df: tools.sum(df["x"].to_numpy(), epsilon=EPSILON, bounds=BOUNDS),
    "mean": lambda df: tools.mean(df["x"].to_numpy(), epsilon=EPSILON, bounds=BOUNDS),
    "groupby_sum": groupby_sum,
    "user_groupby_sum": "no privacy unit or contribution bounding (rows are the unit)",
}

if __name__ == "__main__":
    from importlib.metadata import version
    main(lambda: version("diffprivlib"), load, QUERIES)
