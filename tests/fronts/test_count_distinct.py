"""count_distinct: the number of distinct values of a column, the same on every backend
(batches and partitions united, never added), canonical (0.0 / -0.0, True / 1 are one value),
with a count's sensitivity and each unit's contribution bounded."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import dpframe as dpf
from tests.backends.contract import Data, built, params

from ._support import session
from .test_plan_sensitivity import oracle

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")

HUGE = 1e6
KEYS = ["a", "b", "c"]


@pytest.fixture(scope="module")
def df() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    out = pd.DataFrame({"g": rng.choice(KEYS, 3000),
                        "city": rng.choice([f"c{i}" for i in range(200)], 3000),
                        "x": rng.integers(0, 60, 3000).astype(float),
                        "u": rng.integers(0, 400, 3000)})
    out.loc[::7, "x"] = -0.0
    out.loc[::5, "x"] = 0.0
    out.loc[::13, "city"] = None
    out.loc[::17, "x"] = np.nan
    return out


@pytest.mark.parametrize("backend", params())
def test_exact_at_a_huge_epsilon_on_every_backend(df: pd.DataFrame, backend: str) -> None:
    """Every backend of the registry (Spark with its marker); scans in small batches: every
    value appears in many batches, whose sets must be united."""
    data = Data(lambda: df, lambda: pa.Table.from_pandas(df, preserve_index=False),
                batch_size=256, npartitions=5)
    with built(backend, data) as src:
        _exact(df, src)


def _exact(df: pd.DataFrame, src: Any) -> None:
    p = src.dp(session(), keys={"g": KEYS})
    assert int(p.count_distinct("city", epsilon=HUGE)) == df.city.nunique()
    assert int(p.count_distinct("x", epsilon=HUGE)) == df.x.nunique()  # -0.0 is 0.0
    want = df.groupby("g")["city"].nunique().to_dict()
    assert p.groupby("g").count_distinct("city", epsilon=HUGE).to_dict() == want
    private = p.groupby("g", keys="private").count_distinct("city", epsilon=HUGE, delta=0.1)
    assert private.to_dict() == want
    both = p.groupby("g")[["city", "x"]].count_distinct(epsilon=HUGE)
    assert both["x"].to_dict() == df.groupby("g")["x"].nunique().to_dict()


def test_equal_values_of_an_object_column_are_one_value() -> None:
    df = pd.DataFrame({"v": pd.Series([True, 1, 1.0, 0, False, -0.0, "1", None, float("nan")],
                                      dtype=object)})
    # {1, 0, "1"}: True, 1 and 1.0 are one value; 0, False and -0.0 another; missing ones none
    assert int(df.dp(session()).count_distinct("v", epsilon=HUGE)) == 3


def test_a_unit_adds_at_most_its_bounded_rows(df: pd.DataFrame) -> None:
    """Every other unit has one row; a unit with 50 rows of new values adds exactly
    ``max_rows_per_unit`` of them."""
    base_df = df.assign(u=np.arange(len(df)))
    heavy = pd.DataFrame({"u": -1, "city": [f"new{i}" for i in range(50)], "g": "a"})
    both = pd.concat([base_df, heavy], ignore_index=True)
    for rows in (1, 3):
        a = base_df.dp(session(), privacy_unit="u", max_rows_per_unit=rows)
        b = both.dp(session(), privacy_unit="u", max_rows_per_unit=rows)
        base = int(a.count_distinct("city", epsilon=HUGE))
        assert base == df.city.nunique()
        assert int(b.count_distinct("city", epsilon=HUGE)) - base == rows


@pytest.mark.parametrize("relation", ["add_remove", "change_one"])
@pytest.mark.parametrize(("unit", "rows", "groups"), [(None, 1, 1), ("u", 3, 1), ("u", 2, 2)])
def test_the_noise_is_a_counts(df: pd.DataFrame, relation: str, unit: str | None, rows: int,
                               groups: int) -> None:
    kw = {} if unit is None else {"privacy_unit": unit, "max_rows_per_unit": rows,
                                  "max_groups_per_unit": groups}
    p = df.dp(session(neighbouring=relation), keys={"g": KEYS}, **kw)
    ungrouped = p.explain("count_distinct", "city", epsilon=0.5)["measures"][0]
    assert ungrouped["sensitivity"] == oracle("count", relation, rows=rows)[0]
    grouped = p.explain("count_distinct", "city", by="g", epsilon=0.5)["measures"][0]
    count = p.explain("count", by="g", epsilon=0.5)["measures"][0]
    assert grouped["sensitivity"] == count["sensitivity"]
    assert grouped["noise_scale"] == count["noise_scale"]


def test_unknown_column_is_refused_before_the_charge(df: pd.DataFrame) -> None:
    s = session()
    with pytest.raises(dpf.ValidationError, match="unknown column"):
        df.dp(s).count_distinct("nope", epsilon=1)
    assert s.spent == (0.0, 0.0)
