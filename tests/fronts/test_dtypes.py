"""Dtypes in, pandas shapes out: numpy, nullable and pyarrow-backed columns; str and Categorical
keys; result types and indexes; pandera schemas as the source of bounds and keys."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from tests.backends.contract import Data, built, params

from ._support import session

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")

HUGE = 1000.0  # integer results are exact at this epsilon (noise scale <= 1e-2)
FINE = 1e5     # real results within ~1e-3 (granular noise of scale bound / 1e5)


def numpy_frame() -> pd.DataFrame:
    return pd.DataFrame({
        "i": np.array([1, 5, 7, 3, 9, 2], dtype=np.int64),
        "f": np.array([0.5, 2.25, 8.0, 4.5, 1.0, 3.75]),
        "b": np.array([True, False, True, True, False, True]),
        "k": ["CA", "NY", "CA", "TX", "NY", "CA"],
        "k2": ["x", "y", "y", "x", "x", "y"],
        "uid": np.array([1, 2, 3, 4, 5, 6]),
    })


def nullable_frame() -> pd.DataFrame:
    df = numpy_frame()
    df["i"] = pd.array([1, 5, None, 3, 9, 2], dtype="Int64")
    df["f"] = pd.array([0.5, None, 8.0, 4.5, 1.0, 3.75], dtype="Float64")
    df["b"] = pd.array([True, False, None, True, False, True], dtype="boolean")
    df["k"] = pd.array(["CA", "NY", "CA", None, "NY", "CA"], dtype="string")
    return df


def arrow_frame(nulls: bool) -> pd.DataFrame:
    df = (nullable_frame() if nulls else numpy_frame()).convert_dtypes(dtype_backend="pyarrow")
    assert all(isinstance(t, pd.ArrowDtype) for t in df.dtypes)
    return df


FRAMES = {
    "numpy": numpy_frame,
    "nullable": nullable_frame,
    "arrow": lambda: arrow_frame(False),
    "arrow_nulls": lambda: arrow_frame(True),
}

BOUNDS = {"i": (0, 10), "f": (0, 10), "b": (0, 1)}
KEYS = {"k": ["CA", "NY", "TX", "ZZ"], "k2": ["x", "y"]}


def truth(df: pd.DataFrame) -> dict[str, object]:
    """Exact answers with pandas itself (missing values skipped; bounds do not bind)."""
    key = df["k"].astype(object).where(df["k"].notna(), None)
    i = df["i"].astype("float64")
    return {
        "rows": len(df), "i_sum": int(i.sum()), "i_n": int(i.notna().sum()),
        "f_sum": float(df["f"].astype("float64").sum()), "f_mean":
        float(df["f"].astype("float64").mean()), "b_sum": int(df["b"].astype("float64").sum()),
        "by_k": pd.Series(1, index=key).groupby(level=0).size().reindex(KEYS["k"], fill_value=0),
    }


@pytest.mark.parametrize("kind", list(FRAMES))
def test_results_by_dtype(kind):
    df = FRAMES[kind]()
    t = truth(df)
    s = session()
    p = df.dp(s, bounds=BOUNDS, keys=KEYS)

    c = p.count(epsilon=HUGE)
    assert type(c) is dpf.DPInt and c == t["rows"]
    ci = p.count("i", epsilon=HUGE)
    assert type(ci) is dpf.DPInt and ci == t["i_n"]
    si = p.sum("i", epsilon=HUGE)
    assert type(si) is dpf.DPInt and si == t["i_sum"]
    sb = p.sum("b", epsilon=HUGE)
    assert type(sb) is dpf.DPInt and sb == t["b_sum"]
    sf = p.sum("f", epsilon=FINE)
    assert type(sf) is dpf.DPFloat and sf == pytest.approx(t["f_sum"], abs=1e-2)
    mf = p.mean("f", epsilon=FINE / 10)
    assert type(mf) is dpf.DPFloat and mf == pytest.approx(t["f_mean"], abs=1e-2)
    mx = p.max("i", epsilon=HUGE)
    # every grid point >= the true max has the best utility: the EM max lies in [max, U]
    assert type(mx) is dpf.DPFloat and 9.0 - 0.02 <= mx <= 10.0

    g = p.groupby("k").count(epsilon=HUGE)
    assert isinstance(g, pd.Series) and g.name == "count" and g.index.name == "k"
    assert list(g.index) == KEYS["k"] and g.dtype == np.int64
    assert g.to_dict() == t["by_k"].to_dict()
    gi = p.groupby("k").sum("i", epsilon=HUGE)
    assert gi.dtype == np.int64 and gi.name == "i"
    gf = p.groupby("k").sum("f", epsilon=FINE)
    assert gf.dtype == np.float64 and gf.name == "f"
    assert set(g.attrs["dp"]) >= {"measures", "epsilon", "delta"}
    assert g.attrs["dp"]["measures"][0]["mechanism"] == "geometric"
    assert gf.attrs["dp"]["measures"][0]["mechanism"] == "granular laplace"


@pytest.mark.parametrize("kind", list(FRAMES))
def test_two_by_columns_give_a_multiindex(kind):
    df = FRAMES[kind]()
    p = df.dp(session(), bounds=BOUNDS, keys=KEYS)
    g = p.groupby(["k", "k2"]).count(epsilon=HUGE)
    assert isinstance(g.index, pd.MultiIndex) and list(g.index.names) == ["k", "k2"]
    assert list(g.index) == [(a, b) for a in KEYS["k"] for b in KEYS["k2"]]
    exact = df.dropna(subset=["k"]).astype({"k": object, "k2": object}).groupby(
        ["k", "k2"]).size()
    for key, v in g.items():
        assert v == exact.get(key, 0)


@pytest.mark.parametrize("kind", list(FRAMES))
def test_agg_columns_are_column_aggregate_pairs(kind):
    df = FRAMES[kind]()
    p = df.dp(session(), bounds=BOUNDS, keys=KEYS)
    out = p.groupby("k").agg({"i": ["sum", "mean"], "f": "max"}, epsilon=1.0)
    assert isinstance(out, pd.DataFrame) and isinstance(out.columns, pd.MultiIndex)
    assert list(out.columns) == [("i", "sum"), ("i", "mean"), ("f", "max")]
    assert list(out.index) == KEYS["k"] and out.index.name == "k"
    assert out.attrs["dp"]["epsilon"] == 1.0
    out = p.groupby("k").agg({"i": "sum"}, epsilon=1.0, ci=0.9)
    assert list(out.columns) == [("i", "sum"), ("i", "sum_lower"), ("i", "sum_upper")]


@pytest.mark.parametrize("kind", list(FRAMES))
@pytest.mark.parametrize("right", [True, False])
def test_histogram_is_a_series_indexed_by_intervals(kind, right):
    df = FRAMES[kind]()
    bins = [0, 2.25, 5, 10]
    h = df.dp(session()).histogram("f", bins=bins, epsilon=HUGE, right=right)
    assert isinstance(h, pd.Series) and isinstance(h.index, pd.IntervalIndex)
    assert h.index.closed == ("right" if right else "left")
    assert list(h.index.left) == bins[:-1] and list(h.index.right) == bins[1:]
    assert h.dtype == np.int64
    f = df["f"].astype("float64")
    exact = pd.cut(f, bins, right=right).value_counts(sort=False)
    assert h.tolist() == exact.tolist()
    assert "dp" in h.attrs
    hci = df.dp(session()).histogram("f", bins=bins, epsilon=1.0, ci=0.95)
    assert list(hci.columns) == ["count", "lower", "upper"]


def test_pandas_default_string_keys():
    """pandas 3 infers the `str` dtype for string columns; declared keys match it."""
    df = pd.DataFrame({"k": ["a", "b", "a", None], "x": [1.0, 2.0, 3.0, 4.0]})
    assert pd.api.types.is_string_dtype(df["k"].dtype)
    out = df.dp(session(), keys={"k": ["a", "b", "c"]}).groupby("k").count(epsilon=HUGE)
    assert out.to_dict() == {"a": 2, "b": 1, "c": 0}


def test_categorical_keys_with_unobserved_categories_and_nan():
    df = pd.DataFrame({"k": pd.Categorical(["lo", "hi", None, "lo"],
                                           categories=["lo", "mid", "hi"], ordered=True),
                       "x": [1.0, 2.0, 3.0, 4.0]})
    p = df.dp(session(), bounds={"x": (0, 10)}, keys={"k": "categories"})
    out = p.groupby("k").sum("x", epsilon=FINE)
    assert list(out.index) == ["lo", "mid", "hi"]
    assert out.to_numpy() == pytest.approx([5.0, 0.0, 2.0], abs=1e-2)


def test_integer_keys_and_mixed_by_columns():
    df = pd.DataFrame({"year": [2020, 2021, 2021, 2022], "k": ["a", "b", "a", "a"]})
    out = df.dp(session(), keys={"year": [2020, 2021, 2023], "k": ["a", "b"]}).groupby(
        ["year", "k"]).count(epsilon=HUGE)
    assert out.index.names == ["year", "k"]
    assert out.loc[(2021, "b")] == 1 and out.loc[(2023, "a")] == 0
    assert (2022, "a") not in out.index


def test_private_keys_results_are_sorted_not_in_data_order():
    df = pd.DataFrame({"k": ["zeta"] * 300 + ["alpha"] * 300 + ["mid"] * 300})
    out = df.dp(session()).groupby("k", keys="private").count(epsilon=5.0, delta=1e-6)
    assert list(out.index) == ["alpha", "mid", "zeta"]


# -- pandera ------------------------------------------------------------------------------------

pa = pytest.importorskip("pandera.pandas")


def schema():
    return pa.DataFrameSchema({
        "age": pa.Column(float, pa.Check.in_range(0, 120)),
        "n": pa.Column(int, [pa.Check.ge(0), pa.Check.le(10)]),
        "z": pa.Column(float, [pa.Check.gt(-1), pa.Check.lt(1)]),
        "w": pa.Column(float, pa.Check.ge(0)),                    # one-sided: no bounds
        "state": pa.Column(str, pa.Check.isin(["CA", "NY", "TX"])),
    })


def schema_frame() -> pd.DataFrame:
    return pd.DataFrame({"age": [30.0, 200.0, 45.0], "n": [3, 4, 50], "z": [0.5, -0.25, 0.0],
                         "w": [1.0, 2.0, 3.0], "state": ["CA", "CA", "WA"]})


def test_pandera_schema_supplies_bounds():
    s = session()
    p = schema_frame().dp(s, schema=schema())
    plan = p.explain("sum", "age", epsilon=1.0)
    assert plan["measures"][0]["sensitivity"] == 120
    assert p.sum("age", epsilon=FINE) == pytest.approx(30 + 120 + 45, abs=1e-2)  # clamped
    assert p.sum("n", epsilon=HUGE) == 3 + 4 + 10
    z = p.explain("sum", "z", epsilon=1.0)["measures"][0]["sensitivity"]
    assert z == pytest.approx(1.0)
    with pytest.raises(dpf.BoundsError):
        p.sum("w", epsilon=1.0)


def test_pandera_isin_supplies_keys():
    p = schema_frame().dp(session(), schema=schema())
    out = p.groupby("state").count(epsilon=HUGE)
    assert out.to_dict() == {"CA": 2, "NY": 0, "TX": 0}   # "WA" is undeclared: dropped


def test_explicit_bounds_and_keys_override_the_schema():
    p = schema_frame().dp(session(), schema=schema(), bounds={"age": (0, 50)},
                          keys={"state": ["WA"]})
    assert p.explain("sum", "age", epsilon=1.0)["measures"][0]["sensitivity"] == 50
    assert p.groupby("state").count(epsilon=HUGE).to_dict() == {"WA": 1}


def test_schema_is_not_used_to_validate_or_read_data():
    """The schema's checks fail on this frame (200 > 120, 50 > 10, "WA"), yet nothing reads the
    data to decide bounds or keys, and no pandera error (which would quote the failing values)
    is raised."""
    s = session()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = schema_frame().dp(s, schema=schema())
    assert p.count(epsilon=HUGE) == 3


def test_non_schema_object_is_rejected():
    with pytest.raises(dpf.ValidationError):
        schema_frame().dp(session(), schema={"age": (0, 1)})


EDGES = [18.0, 23.0, 30.0, 50.0, 73.0, 78.0]


@pytest.mark.parametrize("right", [True, False])
@pytest.mark.parametrize("include_lowest", [False, True])
@pytest.mark.parametrize("backend", params())
def test_histogram_is_pd_cut_at_every_edge(right, include_lowest, backend):
    """Counts equal pd.cut's, for values on every edge, just inside and outside each, and the
    label of each bin contains every value counted in it (0.1 counted 18 in (18, 23] and 78
    in [73, 78), labels saying otherwise)."""
    eps = np.finfo(float).eps * 100
    values = [*sorted({v + d for v in EDGES for d in (-1.0, -eps, 0.0, eps, 0.5)}), np.nan]
    df = pd.DataFrame({"x": np.repeat(values, 2)})
    with built(backend, Data.of(df)) as src:
        h = src.dp(session()).histogram("x", bins=EDGES, epsilon=HUGE, right=right,
                                        include_lowest=include_lowest)
    cut = pd.cut(df["x"], EDGES, right=right, include_lowest=include_lowest)
    assert h.tolist() == cut.value_counts(sort=False).tolist()
    assert list(h.index) == list(cut.cat.categories)  # the same intervals as pandas
    for interval, code in zip(h.index, range(len(h)), strict=True):
        counted = df["x"][cut.cat.codes == code]
        assert all(v in interval for v in counted)


def test_declared_index_is_remembered_but_each_result_owns_its_copy() -> None:
    """Indexes of declared keys are built once per declared list: a second release gets an
    equal index, not the same object (renaming one result's index leaves the next alone), and
    declared lists that differ only in spelling (-0.0 / 0.0, True / 1) keep their own labels."""
    warnings.simplefilter("ignore")
    df = pd.DataFrame({"g": [0.0, 1.0, 1.0], "b": [True, False, True], "x": [1.0, 2.0, 3.0]})
    session = dpf.Session(1e9, seed=3)

    def release(keys: dict[str, list[object]], by: str) -> pd.Series:
        return df.dp(session, bounds={"x": (0, 5)}, keys=keys).groupby(by).sum("x", epsilon=1)

    first = release({"g": [0.0, 1.0]}, "g")
    first.index.name = "renamed"
    second = release({"g": [0.0, 1.0]}, "g")
    assert second.index.name == "g" and second.index is not first.index
    assert list(second.index) == [0.0, 1.0]
    negative = release({"g": [-0.0, 1.0]}, "g")
    assert [math.copysign(1, v) for v in negative.index] == [-1.0, 1.0]
    assert [math.copysign(1, v) for v in release({"g": [0.0, 1.0]}, "g").index] == [1.0, 1.0]
    as_bools = release({"b": [True, False]}, "b")
    as_ints = release({"b": [1, 0]}, "b")
    assert [type(v) for v in as_bools.index] == [bool, bool]
    assert [type(v) for v in as_ints.index] == [int, int]
