"""OpenDP through its Polars extension (`Context.compositor` + `.dp` expressions).

Row level: `unit_of(contributions=1)` (symmetric distance, i.e. add/remove one row). Float sums
need a public bound on the number of rows (`Margin.max_length`): the frame's length. Public
keys are joined with `with_keys`. User level: `unit_of(contributions=1, identifier="uid")`,
then `truncate_num_groups(50)` (keep first) and `truncate_per_group(10)` (random sample).
"""

from __future__ import annotations

from typing import Any

import opendp.prelude as dp
import polars as pl
from _common import (
    EPSILON,
    KEYS,
    LOWER,
    MAX_GROUPS_PER_UNIT,
    MAX_ROWS_PER_UNIT,
    UPPER,
    main,
)

dp.enable_features("contrib")
BOUNDS = (LOWER, UPPER)
KEYFRAME = pl.LazyFrame({"g": KEYS})


def load(path: str) -> tuple[pl.LazyFrame, int]:
    # A scan, not an in-memory frame: OpenDP serializes the plan across its FFI, and an
    # in-memory frame inside the plan costs ~17 s per release at 1e7 rows (measured). So the
    # query time includes reading the Parquet file (~0.3 s at 1e7 rows with Polars).
    lf = pl.scan_parquet(path)
    return lf, lf.select(pl.len()).collect().item()


def context(state: tuple[pl.LazyFrame, int], identifier: str | None = None) -> Any:
    lf, n = state
    unit = (dp.unit_of(contributions=1) if identifier is None
            else dp.unit_of(contributions=1, identifier=identifier))
    return dp.Context.compositor(
        data=lf, privacy_unit=unit, privacy_loss=dp.loss_of(epsilon=EPSILON),
        split_evenly_over=1,
        margins=[dp.polars.Margin(max_length=n), dp.polars.Margin(by=["g"], max_length=n)],
    )


def scalar(state: Any, expr: Any) -> float:
    return context(state).query().select(expr).release().collect().item()


def grouped(query: Any) -> dict[str, float]:
    out = (query.group_by("g").agg(pl.col("x").fill_null(0.0).dp.sum(BOUNDS))
           .with_keys(KEYFRAME).release().collect())
    return dict(zip(out["g"].to_list(), out["x"].to_list(), strict=True))


def user_groupby_sum(state: Any) -> dict[str, float]:
    # keep="first": the default "sample" fails in 0.16.0 with a single grouping column
    # (its rank struct holds two fields named "g"); on this data the bound never binds.
    q = (context(state, identifier="uid").query()
         .truncate_num_groups(MAX_GROUPS_PER_UNIT, by=["g"], keep="first")
         .truncate_per_group(MAX_ROWS_PER_UNIT, by=["g"]))
    return grouped(q)


QUERIES: dict[str, Any] = {
    "count": lambda s: scalar(s, dp.len()),
    "sum": lambda s: scalar(s, pl.col("x").fill_null(0.0).dp.sum(BOUNDS)),
    "mean": lambda s: scalar(s, pl.col("x").fill_null(0.0).dp.mean(BOUNDS)),
    "groupby_sum": lambda s: grouped(context(s).query()),
    "user_groupby_sum": user_groupby_sum,
}

if __name__ == "__main__":
    main(lambda: dp.__version__, load, QUERIES)
