"""PipelineDP's user-level grouped sum with a hand-picked total bound ``max_contributions=T``
(its ``MaxRowsPerID``), Laplace, pure DP, over public partitions: run in PipelineDP's venv by
bench_bounds.py (``python _pipelinedp_user_sum.py DATA.parquet T GROUPS TRIALS EPSILON M``);
prints the RMSE over groups and trials as JSON."""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pipeline_dp


def main() -> None:
    path, t, groups, trials, eps, m = sys.argv[1:7]
    df = pd.read_parquet(path)
    rows = list(zip(df["g"].tolist(), df["x"].tolist(), df["uid"].tolist(), strict=True))
    truth = df.groupby("g")["x"].sum().reindex(range(int(groups)), fill_value=0.0)
    errs = []
    for _ in range(int(trials)):
        acc = pipeline_dp.NaiveBudgetAccountant(total_epsilon=float(eps), total_delta=0)
        engine = pipeline_dp.DPEngine(acc, pipeline_dp.LocalBackend())
        params = pipeline_dp.AggregateParams(
            noise_kind=pipeline_dp.NoiseKind.LAPLACE, metrics=[pipeline_dp.Metrics.SUM],
            min_value=0.0, max_value=float(m), max_contributions=int(t))
        ex = pipeline_dp.DataExtractors(partition_extractor=lambda r: r[0],
                                        privacy_id_extractor=lambda r: r[2],
                                        value_extractor=lambda r: r[1])
        result = engine.aggregate(rows, params, ex, public_partitions=list(range(int(groups))))
        acc.compute_budgets()
        out = dict((k, v.sum) for k, v in result)
        errs += [out[g] - truth[g] for g in range(int(groups))]
    print(json.dumps({"rmse": float(np.sqrt(np.mean(np.square(errs))))}))


if __name__ == "__main__":
    main()
