"""DuckDB's SQL push-down against its Arrow batch path: the same exact aggregates, bit for bit.

The requests :func:`dpframe.backends.sql.pushes_down` allows (counts and fixed-point sums under
public keys, no privacy unit) run as one DuckDB aggregation built by
:mod:`dpframe.backends.sql`; everything else reads Arrow batches. Both must give the same exact
integers on adversarial columns (``-0.0``, NaN beside NULL, infinities, the largest and
smallest doubles, halves of the fixed-point unit, integers past 2**53 and 2**63, booleans,
single floats), keys (undeclared, missing, text with odd Unicode, declared as other types,
a connection whose collation ignores case) and empty groups, so that a release is the same
bits whichever path ran: the fingerprint of many releases is compared. The choice of path
depends on the schema and the request only; a failure inside DuckDB's SQL names only the
exception type, after the charge.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections.abc import Callable, Iterator
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

duckdb = pytest.importorskip("duckdb")

import dpframe as dpf  # noqa: E402
import dpframe.fronts.duckdb  # noqa: E402  (adds rel.dp)
from dpframe.backends import duckdb as backend  # noqa: E402
from dpframe.backends import sql  # noqa: E402
from dpframe.core.exact.compute import (  # noqa: E402
    AggregateRequest,
    ComputeRequest,
    ExactAggregates,
    fixed_point_request,
    square_request,
)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # seeded sessions warn

UNIT = 2.0 ** -30  # the fixed-point unit of bounds within [-4, 4): halves of it are ties
E = 1e6  # a release's epsilon: noise small beside the exact values it hides
ODD_TEXT = ["a", "A", "é", "e\u0301", "ß", "SS", "\U0001f600", "", " a", "a\x00b", "İ", "ı"]


def _floats(n: int) -> np.ndarray:
    rng = np.random.default_rng(11)
    special = [-0.0, 0.0, np.nan, np.inf, -np.inf, 1.7976931348623157e308, -5e-324, 5e-324,
               3.0, -3.0, 3.5, -3.25, 2.5 * UNIT, -2.5 * UNIT, 0.5 * UNIT, 1.5 * UNIT,
               (2**31 + 0.5) * UNIT, 2.0**53 + 2, -(2.0**60), 2.9999999999999996, 2.5, -0.5,
               2.0**51 + 0.5, -(2.0**51) - 1.5]
    x = rng.normal(0, 3, n)
    x[::7] = np.round(x[::7] / UNIT) * UNIT + UNIT / 2  # ties of the fixed point
    x[: len(special)] = special
    return x


@pytest.fixture(scope="module")
def con() -> Any:
    """Adversarial columns of every kind the push-down reads, NULLs and NaN among them."""
    n = 4000
    rng = np.random.default_rng(3)
    x = _floats(n)
    big = rng.integers(-(2**62), 2**62, n)
    big[:6] = [2**63 - 1, -(2**63), 2**53 + 1, -(2**53) - 1, 0, 5]
    ub = rng.integers(0, 2**63, n).astype(np.uint64) * np.uint64(2)
    ub[:3] = [2**64 - 1, 2**63 + 5, 3]
    null = np.arange(n) % 11 == 0
    text = np.array([*ODD_TEXT, "undeclared"], dtype=object)[rng.integers(0, 13, n)]
    with np.errstate(over="ignore"):  # the largest double is an infinite single
        single = x.astype(np.float32)
    table = pa.table({
        "s": pa.array(text.tolist(), mask=np.arange(n) % 29 == 0),
        "k": pa.array(rng.integers(-2, 6, n), mask=np.arange(n) % 31 == 0),
        "kb": pa.array(rng.integers(0, 2, n).astype(bool), mask=np.arange(n) % 37 == 0),
        "x": pa.array(x, mask=np.arange(n) % 13 == 0),  # NULL beside NaN
        "f": pa.array(single),
        "i": pa.array(big, mask=null),
        "t": pa.array(rng.integers(-100, 100, n).astype(np.int8)),
        "u": pa.array(ub, mask=null),
        "b": pa.array(rng.integers(0, 2, n).astype(bool), mask=np.arange(n) % 5 == 0),
    })
    c = duckdb.connect()
    c.register("data", table)
    c.execute("CREATE TABLE t AS SELECT * EXCLUDE (s), s::VARCHAR AS s, "
              "CAST(CASE WHEN k % 2 = 0 THEN 'p' ELSE 'q' END AS ENUM('q', 'p', 'r')) AS e "
              "FROM data")
    c.execute("CREATE TABLE empty AS SELECT * FROM t LIMIT 0")
    return c


def _both(rel: Any, q: ComputeRequest) -> tuple[ExactAggregates, ExactAggregates]:
    """The push-down's aggregates and the Arrow batches' (asserting which path each took)."""
    b = backend.DuckDBBackend(rel, batch_size=777)
    assert sql.pushes_down(q, b._sql_kinds, backend._MEASURE_KINDS)
    pushed = b.exact(q, None)
    backend.PUSHDOWN = False
    try:
        batches = b.exact(q, None)
    finally:
        backend.PUSHDOWN = True
    return pushed, batches


def _same(a: ExactAggregates, b: ExactAggregates, q: ComputeRequest) -> None:
    assert a.keys == b.keys and a.diagnostics == b.diagnostics
    for r in q.requests:
        assert [int(v) for v in a.values[r.key]] == [int(v) for v in b.values[r.key]], r
        if r.with_count:
            assert [int(v) for v in a.counts[r.key]] == [int(v) for v in b.counts[r.key]], r


def _requests() -> list[AggregateRequest]:
    F = Fraction
    return [
        AggregateRequest("rows"),
        AggregateRequest("nonnull", "x"),
        AggregateRequest("nonnull", "f"),
        AggregateRequest("nonnull", "i"),
        AggregateRequest("nonnull", "b"),
        fixed_point_request("x", F(-3), F(3), F(0), False),
        fixed_point_request("x", F(-3.3), F(7.1), F(1.9), False, with_count=True),
        fixed_point_request("f", F(-1, 3), F(5, 2), F(0), False),
        fixed_point_request("x", F(-(2**52)), F(2**52), F(0), True),  # rint past 2**50
        fixed_point_request("x", F(-7, 2), F(2**51 + 1, 2), F(0), True),
        fixed_point_request("i", F(-(2**52)), F(2**52), F(0), True),
        fixed_point_request("i", F(1, 2), F(21, 2), F(0), True),  # rounds past its bounds
        fixed_point_request("i", F(0), F(2**40), F(2**39), False, with_count=True),
        fixed_point_request("u", F(0), F(2**52), F(0), True),
        fixed_point_request("u", F(0), F(2**52), F(2**51), False, with_count=True),
        fixed_point_request("t", F(-50), F(50), F(0), True),
        fixed_point_request("b", F(0), F(1), F(0), True),
        fixed_point_request("b", F(0), F(1), F(1, 2), False, with_count=True),
        square_request("x", F(-2), F(5)),
        square_request("t", F(-60), F(40)),
    ]


KEYS: dict[str, tuple[object, ...]] = {
    "s": (*ODD_TEXT, "absent", "\ud800", 3),  # a lone surrogate and a number: never equal text
    "k": (3.0, Decimal(1), True, -2, 99, "1", 2**70),  # True is 1: its first position wins
    "kb": (False, 1, 2),
    "e": ("p", "r"),
}


@pytest.mark.parametrize("by", [(), ("s",), ("k",), ("kb", "e"), ("s", "k")])
def test_pushdown_gives_the_batches_integers(con: Any, by: tuple[str, ...]) -> None:
    q = ComputeRequest(tuple(_requests()), by=by, keys={c: KEYS[c] for c in by},
                       diagnostics_cap=1)
    for rel in (con.table("t"), con.table("empty"), con.sql("SELECT * FROM t WHERE k = 5")):
        _same(*_both(rel, q), q)


def test_text_keys_ignore_the_connections_collation(con: Any) -> None:
    """Keys are compared as their UTF-8 bytes: a connection or a column that ignores case
    still keeps ``a`` and ``A`` apart, as Python equality does."""
    c = duckdb.connect()
    c.execute("SET default_collation = 'nocase'")
    c.execute("CREATE TABLE w AS SELECT s, s COLLATE NOCASE AS n FROM "
              "(VALUES ('a'), ('A'), ('A'), ('ß'), ('SS')) v(s)")
    for column in ("s", "n"):
        q = ComputeRequest((AggregateRequest("rows"),), by=(column,),
                           keys={column: ("a", "A", "ss", "SS")})
        pushed, batches = _both(c.table("w"), q)
        _same(pushed, batches, q)
        assert [int(v) for v in pushed.values[q.requests[0].key]] == [1, 2, 0, 1]


def test_the_path_depends_on_the_schema_and_request_only(con: Any) -> None:
    b = backend.DuckDBBackend(con.table("t"))
    kinds = b._sql_kinds
    assert kinds["e"] == "str" and kinds["u"] == "int" and kinds["b"] == "bool"
    count = (AggregateRequest("rows"),)
    assert sql.pushes_down(ComputeRequest(count, by=("s",), keys={"s": ("a",)}), kinds)
    assert not sql.pushes_down(ComputeRequest(count, by=("x",), keys={"x": (1.0,)}), kinds)
    assert not sql.pushes_down(ComputeRequest(count, privacy_unit="k"), kinds)
    assert not sql.pushes_down(ComputeRequest(count, by=("s",), private_keys=True), kinds)
    assert not sql.pushes_down(ComputeRequest((AggregateRequest("bins", "x", edges=(0, 1)),)),
                               kinds)
    assert not sql.pushes_down(ComputeRequest(count, sample_rate=Fraction(1, 2)), kinds)
    dec = backend.DuckDBBackend(duckdb.sql("SELECT 1.5 AS d, 1::HUGEINT AS h, uuid() AS w"))
    assert dec._sql_kinds == {"d": None, "h": None, "w": None}


def _releases(rel: Any) -> Iterator[Callable[[], Any]]:
    bounds = {"x": (-3.3, 7.1), "f": (-1, 2.5), "i": (-(2**50), 2**50), "t": (-50, 50),
              "u": (0, 2**52), "b": (0, 1)}
    # (a front refuses mixed keys; the batch path fails on a lone surrogate among text keys)
    keys = {"s": [k for k in KEYS["s"] if isinstance(k, str) and k != "\ud800"],
            "k": [k for k in KEYS["k"] if not isinstance(k, str)], "kb": [False, True],
            "e": list(KEYS["e"])}
    s = dpf.Session(epsilon=1e12, delta=1e-3, seed=2026)
    p = rel.dp(s, bounds=bounds, keys=keys, batch_size=999)
    yield lambda: p.count(epsilon=1.0)
    for c in ("x", "f", "i", "t", "u", "b"):
        yield lambda c=c: p.count(c, epsilon=E)
        yield lambda c=c: p.sum(c, epsilon=E)
        yield lambda c=c: p.mean(c, epsilon=E)
    for c in ("x", "t", "b"):
        yield lambda c=c: p.var(c, epsilon=E)
    for by in ("s", "k", ["kb", "e"]):
        g = p.groupby(by)
        yield lambda g=g: g.count(epsilon=E)
        yield lambda g=g: g.sum("x", epsilon=E, diagnostics=0.1)
        yield lambda g=g: g.mean("i", epsilon=E)
    g = p.groupby(["s", "k"])
    yield lambda: g.agg({"x": ["sum", "mean", "var"], "u": ["count"]}, epsilon=E, ci=0.9)
    yield lambda: s.spent


def _fingerprint(rel: Any) -> str:
    h = hashlib.sha256()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for release in _releases(rel):
            out = release()
            if isinstance(out, pd.Series | pd.DataFrame):
                h.update(pd.util.hash_pandas_object(out, index=True).to_numpy().tobytes())
                h.update(repr(out.attrs.get("dp")).encode())
            else:
                h.update(repr(out).encode())
    return h.hexdigest()


def test_many_releases_have_one_fingerprint_on_both_paths(con: Any,
                                                          monkeypatch: Any) -> None:
    calls: list[str] = []
    real = backend._pushed_down
    monkeypatch.setattr(backend, "_pushed_down", lambda *a: calls.append("sql") or real(*a))
    pushed = _fingerprint(con.table("t"))
    assert len(calls) >= 30  # the releases above did run as SQL aggregations
    monkeypatch.setattr(backend, "PUSHDOWN", False)
    assert _fingerprint(con.table("t")) == pushed


def test_a_failure_inside_the_sql_names_the_exception_type_only() -> None:
    c = duckdb.connect()
    c.execute("CREATE TABLE s AS SELECT * FROM (VALUES ('1.5', 'a'), ('secret-4711', 'b')) v(t, g)")
    rel = c.sql("SELECT CAST(t AS DOUBLE) AS x, g FROM s")
    session = dpf.Session(epsilon=10.0, delta=1e-6)
    priv = rel.dp(session, bounds={"x": (0, 10)}, keys={"g": ["a", "b"]})
    for query in (lambda: priv.sum("x", epsilon=1.0),
                  lambda: priv.groupby("g").mean("x", epsilon=1.0)):
        spent = session.spent[0]
        with pytest.raises(dpf.ValidationError) as info:
            query()
        assert "secret-4711" not in str(info.value) and "ConversionException" in str(info.value)
        assert info.value.__context__ is None and info.value.__cause__ is None
        assert session.spent[0] > spent  # after the charge, which stands


_VALUE = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([-0.0, 0.5 * UNIT, 1.5 * UNIT, -2.5 * UNIT, 4.0, -4.0]))


@settings(max_examples=15, deadline=None)
@given(values=st.lists(st.tuples(st.sampled_from(["a", "é", "x", None]), _VALUE,
                                 st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))),
                       max_size=40),
       lo=st.integers(-8, 0), width=st.integers(1, 12), shift=st.booleans())
def test_drawn_columns_give_the_batches_integers(values: list[tuple[Any, Any, Any]], lo: int,
                                                 width: int, shift: bool) -> None:
    table = pa.table({"g": pa.array([v[0] for v in values], pa.string()),
                      "x": pa.array([v[1] for v in values], pa.float64()),
                      "i": pa.array([v[2] for v in values], pa.int64())})
    rel = duckdb.connect().from_arrow(table)
    a, b = Fraction(lo, 2), Fraction(lo + width, 2)
    mid = (a + b) / 2 if shift else Fraction(0)
    q = ComputeRequest((AggregateRequest("rows"), AggregateRequest("nonnull", "x"),
                        fixed_point_request("x", a, b, mid, False, with_count=True),
                        fixed_point_request("i", Fraction(math.floor(a)), b, Fraction(0), True),
                        square_request("x", a, b)),
                       by=("g",), keys={"g": ("a", "é", "b")}, diagnostics_cap=1)
    _same(*_both(rel, q), q)


def test_columns_named_like_the_aggregations_own_names_are_each_themselves() -> None:
    """Columns are read by position under internal names: a column called ``_k0``, ``_c0``,
    ``_rows`` or ``a0`` (or ``A0`` beside it, which DuckDB's schema spells ``A0_1``) is read
    as itself."""
    table = pa.table({"_c0": [1, 2, 1], "_k0": [2.0, 4.0, None], "_rows": [10, 10, 11],
                      "a0": [1.0, 2.0, 3.0], "A0": [7.0, 9.0, 1.0]})
    q = ComputeRequest((AggregateRequest("rows"), AggregateRequest("nonnull", "_k0"),
                        fixed_point_request("a0", Fraction(0), Fraction(8), Fraction(0), True),
                        fixed_point_request("A0_1", Fraction(0), Fraction(8), Fraction(0), True)),
                       by=("_rows", "_c0"), keys={"_rows": (10, 11), "_c0": (1, 2)})
    pushed, batches = _both(duckdb.connect().from_arrow(table), q)
    _same(pushed, batches, q)
    assert [int(v) for v in pushed.values[q.requests[0].key]] == [1, 1, 1, 0]
    assert [int(v) for v in pushed.values[q.requests[3].key]] == [7, 8, 1, 0]
