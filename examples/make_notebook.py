"""Writes examples/analysis.ipynb (run: python examples/make_notebook.py). The notebook is kept
as code only, without outputs; tests/test_example_notebook.py executes it in CI."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

CELLS: list[tuple[str, str]] = [
    ("md", """# A private analysis of a survey, end to end

Synthetic survey data (no real person: `dpframe.datasets.people`), analysed the way a data
scientist would with pandas, but every number released with differential privacy: each one
carries its interval and its cost, and the session keeps the budget."""),
    ("code", """import numpy as np
import pandas as pd

import dpframe as dpf
from dpframe.datasets import people

df = people(20_000, seed=7)
session = dpf.Session(epsilon=3.0, delta=1e-6, name="survey-2026")
session  # in a notebook: a budget bar, the privacy unit, the latest releases"""),
    ("md", """## How large is the income range? Ask, privately

Bounds are declared, never read from the data. Income's range is unknown, so spend a little on
a DP estimate (two quantiles on a log-scale grid), then declare it."""),
    ("code", """lo, hi = df.dp(session).bounds("income", epsilon=0.2)
priv = df.dp(session, bounds={"income": (0, float(hi)), "age": (0, 100)},
             keys={"region": ["Northeast", "Midwest", "South", "West"]})
priv  # what the frame declares (public), never the data"""),
    ("md", """## Every number with its interval"""),
    ("code", """n = priv.count(epsilon=0.2, ci=0.95)
avg = priv["income"].mean(epsilon=0.3, ci=0.95)
print(f"{n} people (95% interval {n.lower:.0f} to {n.upper:.0f})")
print(f"mean income {avg:,.0f} (95% interval {avg.lower:,.0f} to {avg.upper:,.0f})")
avg  # the HTML repr: value, interval, query and charge"""),
    ("md", """## Accuracy first: say how precise, let dpframe pick epsilon"""),
    ("code", """plan = priv.explain("count", by="region", accuracy=50)
print("a +-50 count per region costs epsilon", plan["epsilon"])
by_region = priv.groupby("region").count(accuracy=50, ci=0.95)
assert ((by_region["upper"] - by_region["count"]) <= 50).all()
by_region"""),
    ("md", """## A histogram that is `pd.cut`, bin for bin"""),
    ("code", """edges = [0, 18, 30, 45, 65, 100]
ages = priv.histogram("age", bins=edges, epsilon=0.3, ci=0.95)
assert list(ages.index) == list(pd.cut(df["age"], edges).cat.categories)
ages"""),
    ("md", """## Grouped statistics, as in pandas"""),
    ("code", """stats = priv.groupby("region").agg(mean_income=("income", "mean"),
                                   sd_income=("income", "std"), epsilon=0.6, ci=0.95)
stats"""),
    ("md", """## The same query on Polars and on Dask

The same API on other engines; each release draws from the same session."""),
    ("code", """import dask.dataframe as dd
import polars as pl

pl_total = pl.from_pandas(df).dp(session, bounds={"income": (0, float(hi))}) \\
    .sum("income", epsilon=0.2, ci=0.95)
dd_counts = dd.from_pandas(df, npartitions=4).dp(
    session, keys={"region": ["Northeast", "Midwest", "South", "West"]}) \\
    .groupby("region").count(epsilon=0.2)
print(f"total income (Polars) {pl_total:,.0f} +- {(pl_total.upper - pl_total.lower) / 2:,.0f}")
dd_counts"""),
    ("md", """## What did it cost?"""),
    ("code", """print(session.report())
assert session.spent[0] <= 3.0
session"""),
]


def build() -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.cells = [new_markdown_cell(src) if kind == "md" else new_code_cell(src)
                for kind, src in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    return nb


if __name__ == "__main__":
    out = Path(__file__).resolve().parent / "analysis.ipynb"
    nbformat.write(build(), out)
    print(out)
