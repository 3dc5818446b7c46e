"""One deterministic regression test per leak found in 0.1 (issue 11).

Each test names its finding. The property suites (test_public_structure, test_private_keys,
test_backends_agree, test_degenerate) find these too, but through random examples; these pin
the exact inputs down so a regression names itself.
"""

from __future__ import annotations

import decimal
import itertools
import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import dpframe as dpf
from tests.backends.contract import Data, built, params

from ._harness import (
    DELTA,
    QUERY,
    E,
    Spec,
    check_invariants,
    label,
    new_session,
    observe,
    run,
)

#: Every backend of the registry (Spark with its marker); the cases on object columns of mixed
#: types skip, with the registry's reason, the backends that have no such column.
BACKENDS = params()
OBJECT_BACKENDS = params(needs=("objects",))


def private(backend: str, spec: Spec, query: str = "private.count") -> Any:
    out = run(backend, spec, QUERY[query])
    check_invariants(out)
    assert out.error is None, out.describe()
    return out.result


def labels(result: pd.Series | pd.DataFrame) -> list[tuple[object, ...]]:
    return [label(v) for v in result.index.tolist()]


# -- spellings: a released private key is shown in canonical form, never the first row's --------

ONE = [True, 1, 1.0, np.int64(1), np.bool_(True), decimal.Decimal("1.0")]
ZERO = [False, 0, -0.0, 0.0, np.float64(-0.0)]


@pytest.mark.parametrize("backend", OBJECT_BACKENDS)
@pytest.mark.parametrize("first", range(len(ONE)))
def test_spelling_of_the_first_row_never_shows(backend: str, first: int) -> None:
    """Finding "spellings": 0.1 labelled a key by the first row holding it (True, 1.0, ...)."""
    ones = ONE[first:] + ONE[:first]
    zeros = ZERO[first % len(ZERO):] + ZERO[:first % len(ZERO)]
    rows = tuple((v, None, 1.0, 1) for v in [*ones, *zeros])
    res = private(backend, Spec("mixed", None, rows))
    assert labels(res) == [("int", "0"), ("int", "1")]
    assert res.tolist() == [len(ZERO), len(ONE)]
    assert str(res.index.dtype) == "object"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["float", "dictfloat"])
def test_negative_zero_key_is_released_as_zero(backend: str, kind: str) -> None:
    """Finding "spellings" (floats): -0.0 first must not make the released key -0.0, and -0.0
    and 0.0 rows are one key whose counts add up (Arrow tells them apart)."""
    rows = tuple((v, None, 1.0, 1) for v in [-0.0, 0.0, -0.0, 1.5, 1.5])
    res = private(backend, Spec(kind, None, rows, batch_size=2))
    assert labels(res) == [("float", "0.0"), ("float", "1.5")]
    assert math.copysign(1.0, res.index[0]) == 1.0
    assert res.tolist() == [3, 2]
    assert str(res.index.dtype) == "float64"


# -- order: released keys sorted by the released set alone -----------------------------------------

@pytest.mark.parametrize("backend", OBJECT_BACKENDS)
def test_unreleased_key_cannot_reorder_released_ones(backend: str) -> None:
    """Finding "order": in 0.1 one unreleased key of another type ("a", seen once) switched the
    sort of the released keys from numeric (2, 10) to text order (10, 2)."""
    base = [2, 2, 2, 10, 10, 10]
    for extra in ([], ["a"], [b"z"], [[1]], [2.5]):
        rows = tuple((v, None, 1.0, 1) for v in [*extra, *base])
        assert labels(private(backend, Spec("mixed", None, rows))) == [
            ("int", "2"), ("int", "10")], extra


@pytest.mark.parametrize("backend", OBJECT_BACKENDS)
def test_total_order_numbers_then_text_then_bytes(backend: str) -> None:
    """Mixed released keys: numbers < str < bytes, each by value, whatever the row order."""
    keys = [b"b", "b", 10, "a", 2.5, b"a", True]
    want = [("int", "1"), ("float", "2.5"), ("int", "10"), ("str", "'a'"), ("str", "'b'"),
            ("bytes", "b'a'"), ("bytes", "b'b'")]
    for perm in itertools.islice(itertools.permutations(keys), 0, 5040, 997):
        rows = tuple((v, None, 1.0, 1) for v in [*perm, *perm])
        assert labels(private(backend, Spec("mixed", None, rows))) == want


@pytest.mark.parametrize("backend", BACKENDS)
def test_typed_keys_sorted_by_value(backend: str) -> None:
    """Float keys come out by value (-inf < -2 < 0 < 1.5 < inf), not in data or hash order; a
    NaN key is missing, never released."""
    vals = [float("inf"), 1.5, -0.0, -2.0, float("-inf"), float("nan")]
    rows = tuple((v, None, 1.0, 1) for v in vals + vals[::-1])
    res = private(backend, Spec("float", None, rows, batch_size=3))
    assert res.index.tolist() == [float("-inf"), -2.0, 0.0, 1.5, float("inf")]


# -- dictionaries: repeated entries are one key, their rows add up ---------------------------------

def _dictionary_table(batch_rows: int) -> pa.Table:
    g = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 1, 0, 3, 3], pa.int32()),
                                       pa.array(["a", "a", "b", "b", "unused"]))
    u = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 3, 4, 5, 6], pa.int32()),
                                       pa.array(["p", "q", "r", "s", "t", "v", "w"]))
    return pa.table({"g": g, "u": u, "x": pa.array([1.0] * 7), "n": pa.array([1] * 7)})


@pytest.mark.parametrize("batch_size", [1, 3, 1 << 20])
@pytest.mark.parametrize("unit", [False, True])
def test_repeated_dictionary_entries_add_up(batch_size: int, unit: bool) -> None:
    """Finding "dictionary overwrite": 0.1 kept only one of the repeated entries' counts ("a",
    two dictionary entries, came out with 2 or 3 of its 4 rows)."""
    opts: dict[str, Any] = {"bounds": {"x": (0, 10), "n": (0, 10)}}
    if unit:
        opts.update(privacy_unit="u", max_rows_per_unit=1)
    table = _dictionary_table(batch_size)
    for part in (None, 3):
        for call in (lambda p: p.groupby("g", keys="private").count(epsilon=E, delta=DELTA),
                     lambda p: p.groupby("g", keys="private").sum("n", epsilon=E, delta=DELTA)):
            s = new_session()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = call(dpf.scan(table, batch_size=batch_size, partitions=part).dp(s, **opts))
            assert res.to_dict() == {"a": 4, "b": 3}, (part, res)
        s = new_session()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pub = dpf.scan(table, batch_size=batch_size, partitions=part).dp(
                s, keys={"g": ["b", "a", "c"]}, **opts).groupby("g").count(epsilon=E)
        assert pub.tolist() == [3, 4, 0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_repeated_dictionary_entries_in_specs(backend: str) -> None:
    """The same through the harness (Parquet round trip included): the harness's dictionaries
    repeat every entry, rows alternating between the copies (pandas and Dask get the decoded
    values, Spark too: it has no dictionary type)."""
    rows = tuple((k, None, 1.0, 1) for k in ["a", "b", "a", "b", "a", "zz"])
    res = private(backend, Spec("dict", None, rows, batch_size=2))
    assert res.to_dict() == {"a": 3, "b": 2}


# -- -0.0 units in scans ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["float", "dictfloat"])
@pytest.mark.parametrize("partitions", [None, 3])
def test_negative_zero_is_one_privacy_unit(backend: str, kind: str,
                                           partitions: int | None) -> None:
    """Finding "-0.0 units in scans": 0.1's Arrow backend made 0.0 and -0.0 two units, so one
    person kept 2 x max_rows_per_unit rows."""
    units = [0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 1.0, 1.0]
    rows = tuple((k, u, 1.0, 5) for k, u in zip("aaaaaabb", units, strict=True))
    spec = Spec("str", kind, rows, batch_size=1, partitions=partitions)
    # max_rows_per_unit is 2: unit 0.0 keeps 2 of its 6 rows (two "units" would keep 4)
    for name, want in (("count", 4), ("sum(n)", 20)):
        out = run(backend, spec, QUERY[name])
        check_invariants(out)
        assert out.result == want, out.describe()
    out = run(backend, spec, QUERY["public.count"])
    assert out.error is None, out.describe()
    assert out.result.to_dict() == {"zz": 0, "a": 2, "q": 0, "b": 2}


# -- empty frames and all-missing columns are answered ---------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_frame_answered_like_a_full_one(backend: str) -> None:
    """Finding "empty-frame refusals": 0.1 refused an empty frame (or an all-missing column)
    with a ValidationError, so whether a query was answered depended on the data."""
    full = Spec("str", "int", (("a", 1, 1.0, 1), ("b", 2, 2.0, 2)))
    for empty in (Spec("str", "int", ()),
                  Spec("str", "int", (("a", 1, float("nan"), 1), (None, 2, None, 2)))):
        for name in ("count", "sum(x)", "mean(x)", "max(x)", "median(n)", "histogram(x)",
                     "public.sum(x)", "public.agg", "private.mean(x)"):
            a, b = run(backend, full, QUERY[name]), run(backend, empty, QUERY[name])
            check_invariants(b)
            assert b.error is None, b.describe()
            lab = not name.startswith("private")
            assert (observe(a.value, labels=lab), a.spent) == (observe(b.value, labels=lab),
                                                               b.spent), b.describe()


# -- mean with bounds symmetric about 0 ------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_mean_with_bounds_symmetric_about_zero(backend: str) -> None:
    """Finding "mean with symmetric bounds": 0.1 raised KeyError after charging (the midpoint 0
    made the count request collide with the sum request)."""
    spec = Spec("str", None, (("a", None, -4.0, 1), ("a", None, 8.0, 2), ("b", None, 2.0, 3)),
                x_bounds=(-10.0, 10.0))
    out = run(backend, spec, QUERY["mean(x)"])
    check_invariants(out)
    assert out.error is None and out.result == pytest.approx(2.0), out.describe()
    out = run(backend, spec, QUERY["public.mean(x)"])
    assert out.error is None, out.describe()
    assert out.result.to_dict() == pytest.approx({"zz": 0.0, "a": 2.0, "q": 0.0, "b": 2.0})


# -- lists in key and unit columns -----------------------------------------------------------------

@pytest.mark.parametrize("backend", OBJECT_BACKENDS)
@pytest.mark.parametrize("column", ["g", "u"])
def test_lists_in_key_or_unit_columns_count_as_missing(backend: str, column: str) -> None:
    """Finding "lists in key columns": 0.1 raised TypeError (unhashable) after the charge."""
    odd: list[object] = [[1], {"a": 1}, (1, 2), {1}]
    body = []
    for i, v in enumerate([*odd, "a", "a", "b"]):
        g = v if column == "g" else ["a", "a", "b", "zz"][i % 4]
        u = v if column == "u" else i
        body.append((g, u, 1.0, 1))
    spec = Spec("mixed", "mixed", tuple(body))
    want_pub = {"g": {1: 0, "a": 2, 0: 0, b"x": 0, 2.5: 0, "zz": 0, 99: 0},
                "u": {1: 0, "a": 2, 0: 0, b"x": 0, 2.5: 0, "zz": 0, 99: 0}}[column]
    out = run(backend, spec, QUERY["public.count"])
    check_invariants(out)
    assert out.error is None, out.describe()
    assert out.result.to_dict() == want_pub
    for name in ("private.count", "count", "public.sum(n)", "private.agg"):
        out = run(backend, spec, QUERY[name])
        check_invariants(out)
        assert out.error is None, out.describe()


# -- Categoricals: categories are public keys only on opt-in --------------------------------------

def _categorical(values: list[str], categories: list[str] | None = None) -> pd.DataFrame:
    g = (pd.Series(values).astype("category") if categories is None
         else pd.Series(pd.Categorical(values, categories=categories)))
    return pd.DataFrame({"g": g, "x": np.arange(len(values), dtype=float)})


def _answer(backend: str, df: pd.DataFrame, keys: Any) -> tuple[Any, dpf.Session]:
    s = new_session()
    opts: dict[str, Any] = {"bounds": {"x": (0, 10)}}
    if keys is not None:
        opts["keys"] = keys
    with warnings.catch_warnings(), built(backend, Data.of(df)) as frame:
        warnings.simplefilter("ignore")
        try:
            return frame.dp(s, **opts).groupby("g").count(epsilon=E), s
        except Exception as exc:
            return exc, s


@pytest.mark.parametrize("backend", BACKENDS)
def test_categories_from_the_data_are_not_public_keys(backend: str) -> None:
    """Finding "categories without opt-in": 0.1 used a Categorical's categories as public keys,
    and ``astype("category")`` takes them from the data (a category present only in D showed)."""
    for values in (["a", "a", "b"], ["a", "a"], []):
        res, s = _answer(backend, _categorical(values), None)
        assert isinstance(res, dpf.KeysError), (values, res)
        assert "categories" in str(res)
        assert s.spent == (0.0, 0.0)


@pytest.mark.parametrize("backend", params(needs=("categories",)))
def test_declared_categories_are_public_keys_on_opt_in(backend: str) -> None:
    """With ``keys={"g": "categories"}`` the declared categories are the keys, in declared
    order, whatever the data holds."""
    for values in (["a", "a", "b"], ["a"], []):
        res, s = _answer(backend, _categorical(values, ["c", "a", "b"]), {"g": "categories"})
        assert not isinstance(res, BaseException), res
        assert res.index.tolist() == ["c", "a", "b"]
        assert res.to_dict() == {"c": 0, "a": values.count("a"), "b": values.count("b")}
        assert s.spent == (E, 0.0)


# -- quantile levels, public keys matched under ==, uint64 -----------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_quantile_at_one_third(backend: str) -> None:
    """q=1/3 is read as the fraction 1/3 (0.1 charged, then failed in the exact sampler)."""
    spec = Spec("str", None, tuple(("a", None, float(v), v) for v in range(9)),
                x_bounds=(0.0, 10.0))
    for name in ("quantile(x,1/3)", "public.quantile(x,1/3)", "private.quantile(x,1/3)"):
        out = run(backend, spec, QUERY[name])
        check_invariants(out)
        assert out.error is None, out.describe()


@pytest.mark.parametrize("backend", BACKENDS)
def test_negative_zero_row_matches_declared_zero(backend: str) -> None:
    """Public keys match rows under Python ==, on every backend: a -0.0 row is key 0.0."""
    rows = tuple((v, None, 1.0, 1) for v in [-0.0, 0.0, -0.0, 1.5, float("nan")])
    for kind in ("float", "dictfloat"):
        out = run(backend, Spec(kind, None, rows, batch_size=2), QUERY["public.count"])
        assert out.error is None, out.describe()
        assert out.result.tolist()[:3] == [1, 3, 0], out.describe()  # declared 1.5, 0.0, 99


@pytest.mark.parametrize("backend", OBJECT_BACKENDS)
def test_true_row_matches_declared_one(backend: str) -> None:
    """In an object column True, 1.0 and Decimal(1) rows are the declared key 1; "1" is not."""
    rows = tuple((v, None, 1.0, 1) for v in [True, 1.0, decimal.Decimal(1), "1", np.int64(1)])
    out = run(backend, Spec("mixed", None, rows), QUERY["public.count"])
    assert out.error is None, out.describe()
    assert out.result.to_dict()[1] == 4


@pytest.mark.parametrize("backend", params(needs=("uint64",)))
def test_uint64_beyond_int64_is_clamped_not_wrapped(backend: str) -> None:
    """A uint64 value >= 2**63 is a big number clamped to the upper bound, never a negative
    one (0.1 wrapped 2**64 - 1 to -1, then clamped it to the lower bound)."""
    df = pd.DataFrame({"n": pd.Series([2**64 - 1, 2**63, 5], dtype="uint64")})
    s = new_session()
    with warnings.catch_warnings(), built(backend, Data.of(df)) as frame:
        warnings.simplefilter("ignore")
        got = frame.dp(s, bounds={"n": (0, 10)}).sum("n", epsilon=E)
    assert got == 25
