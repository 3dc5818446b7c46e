"""SmartNoise SQL (`snsql.from_df` -> `PrivateReader` over its pandas reader, which loads the
frame into an in-memory SQLite database; that load is the load phase).

Row level: `row_privacy: True`. User level: `uid` as `private_id` with `max_ids: 10`, its only
contribution bound (at most 10 rows per unit in total, so at most 10 groups: tighter than the
others' 50 groups x 10 rows; its noise is 50 x smaller for that reason). SmartNoise has no
public key lists: group keys come from the data. `censor_dims: False` releases every observed
key without thresholding (all 50 keys are dense here); the default thresholding would spend
delta. epsilon 1, delta 1e-6 per release.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import snsql
from _common import CURRENT, DELTA, EPSILON, LOWER, MAX_ROWS_PER_UNIT, UPPER, main


def load(path: str) -> Any:
    df = pd.read_parquet(path)
    df["g"] = df["g"].astype(object)
    user = CURRENT["query"] == "user_groupby_sum"
    table: dict[str, Any] = {
        "row_privacy": not user, "censor_dims": False,
        "g": {"type": "string"},
        "x": {"type": "float", "lower": LOWER, "upper": UPPER, "nullable": False},
        "uid": {"type": "int", "private_id": user},
    }
    if user:
        table["max_ids"] = MAX_ROWS_PER_UNIT
    meta = {"d": {"s": {"t": table}}}
    return snsql.from_df(df, privacy=snsql.Privacy(epsilon=EPSILON, delta=DELTA),
                         metadata=meta)


def scalar(reader: Any, sql: str) -> float:
    return reader.execute(sql)[1][0]


def grouped(reader: Any) -> dict[str, float]:
    rows = reader.execute("SELECT g, SUM(x) AS s FROM s.t GROUP BY g")
    return {g: s for g, s in rows[1:]}


QUERIES: dict[str, Any] = {
    "count": lambda r: scalar(r, "SELECT COUNT(*) AS n FROM s.t"),
    "sum": lambda r: scalar(r, "SELECT SUM(x) AS s FROM s.t"),
    "mean": lambda r: scalar(r, "SELECT AVG(x) AS m FROM s.t"),
    "groupby_sum": grouped,
    "user_groupby_sum": grouped,
}

if __name__ == "__main__":
    from importlib.metadata import version
    main(lambda: version("smartnoise-sql"), load, QUERIES)
