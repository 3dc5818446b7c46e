"""PipelineDP (`DPEngine` on `LocalBackend`, the documented in-process backend).

The rows are a list of Python tuples (built in the load phase); every query is an
`engine.aggregate` over public partitions. Ungrouped queries use one public partition.
Row level: `contribution_bounds_already_enforced=True` with 1 partition and 1 contribution
per unit (each row is a unit, so no privacy id is needed). User level: privacy id `uid`,
`max_partitions_contributed=50`, `max_contributions_per_partition=10` (PipelineDP samples).
Laplace noise, pure DP, epsilon 1 per release.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pipeline_dp
from _common import EPSILON, KEYS, LOWER, MAX_GROUPS_PER_UNIT, MAX_ROWS_PER_UNIT, UPPER, main

M = pipeline_dp.Metrics


def load(path: str) -> list[tuple[str, float, int]]:
    df = pd.read_parquet(path)
    return list(zip(df["g"].tolist(), df["x"].tolist(), df["uid"].tolist(), strict=True))


def aggregate(rows: list, metric: Any, grouped: bool, user: bool = False) -> dict:
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=EPSILON, total_delta=0)
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
    bounds = ({"max_partitions_contributed": MAX_GROUPS_PER_UNIT,
               "max_contributions_per_partition": MAX_ROWS_PER_UNIT} if user else
              {"max_partitions_contributed": 1, "max_contributions_per_partition": 1,
               "contribution_bounds_already_enforced": True})
    params = pipeline_dp.AggregateParams(
        noise_kind=pipeline_dp.NoiseKind.LAPLACE, metrics=[metric],
        min_value=LOWER, max_value=UPPER, **bounds)
    extractors = pipeline_dp.DataExtractors(
        partition_extractor=(lambda r: r[0]) if grouped else (lambda r: "all"),
        privacy_id_extractor=(lambda r: r[2]) if user else None,
        value_extractor=lambda r: r[1])
    result = engine.aggregate(rows, params, extractors,
                              public_partitions=KEYS if grouped else ["all"])
    accountant.compute_budgets()
    name = metric.name.lower()
    return {k: getattr(v, name) for k, v in result}


QUERIES: dict[str, Any] = {
    "count": lambda r: aggregate(r, M.COUNT, False)["all"],
    "sum": lambda r: aggregate(r, M.SUM, False)["all"],
    "mean": lambda r: aggregate(r, M.MEAN, False)["all"],
    "groupby_sum": lambda r: aggregate(r, M.SUM, True),
    "user_groupby_sum": lambda r: aggregate(r, M.SUM, True, user=True),
}

if __name__ == "__main__":
    from importlib.metadata import version
    main(lambda: version("pipeline-dp"), load, QUERIES)
