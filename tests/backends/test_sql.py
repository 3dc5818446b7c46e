"""The one builder of the exact SQL (``dpframe.backends.sql``), engine aside: which requests it
computes, how declared keys become the constants a key column is compared with (Python
equality), and that the clip after rounding it leaves out could not have changed a value.
Its SQL against the other backends' integers: tests/backends/duckdb/test_pushdown.py (DuckDB)
and tests/backends/spark/ (Spark)."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpframe.backends import sql
from dpframe.core.exact.compute import AggregateRequest, ComputeRequest, fixed_point_request
from dpframe.core.exact.transform import fixed_point


def test_declared_keys_become_constants_by_python_equality() -> None:
    key = sql.literal_key
    assert key(3.0, "int") == 3 and key(Decimal("3"), "int") == 3 and key(np.int8(3), "int") == 3
    assert key(True, "int") == 1 and key(1, "bool") is True and key(2, "bool") is None
    assert key(2.5, "int") is None and key(float("nan"), "int") is None and key("3", "int") is None
    assert key(2**63, "int") is None and key(2**63, "int", (0, 1 << 64)) == 2**63
    assert key("é", "str") == "é" and key("é", "str", text_bytes=True) == "é".encode()
    assert key("\ud800", "str", text_bytes=True) is None and key(3, "str") is None
    first = sql.declared_values("int", (1, True, 1.0, 2, "x"), (-(1 << 63), 1 << 63), False)
    assert first == {1: 0, 2: 3}  # the first of equal keys wins


def test_which_requests_run_as_one_aggregation() -> None:
    kinds = {"g": "str", "k": "int", "x": "float", "b": "bool", "d": "other"}
    rows = (AggregateRequest("rows"),)
    assert sql.pushes_down(ComputeRequest(rows, by=("g", "k"), keys={"g": (), "k": ()}), kinds)
    assert sql.pushes_down(ComputeRequest((AggregateRequest("nonnull", "x"),)), kinds)
    assert not sql.pushes_down(ComputeRequest((AggregateRequest("nonnull", "b"),)), kinds)
    assert sql.pushes_down(ComputeRequest((AggregateRequest("nonnull", "b"),)), kinds,
                           frozenset({"int", "float", "bool"}))
    assert not sql.pushes_down(ComputeRequest(rows, by=("x",), keys={"x": ()}), kinds)
    assert not sql.pushes_down(ComputeRequest((AggregateRequest("nonnull", "d"),)), kinds)
    assert not sql.pushes_down(ComputeRequest(rows, privacy_unit="k"), kinds)


_BOUND = st.fractions(min_value=-(2**20), max_value=2**20, max_denominator=64)


@settings(max_examples=60, deadline=None)
@given(a=_BOUND, b=_BOUND, shift=st.sampled_from(["zero", "mid", "lo"]),
       x=st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=30))
def test_the_clip_left_out_changes_no_value(a: Fraction, b: Fraction, shift: str,
                                            x: list[float]) -> None:
    lo, hi = min(a, b), max(a, b)
    if lo == hi:
        return
    s = {"zero": Fraction(0), "mid": (lo + hi) / 2, "lo": lo}[shift]
    r = fixed_point_request("x", lo, hi, s, False)
    if not r.rounds_past_bounds or not sql._rounds_inside(r):
        return
    values = np.array([*x, float(lo), float(hi), np.nextafter(float(lo), np.inf),
                       np.nextafter(float(hi), -np.inf)])
    v = np.clip(values, r.lo, r.hi)
    v = np.rint((v - r.shift) * r.scale)  # fixed_point's integers, without the clip
    ok = ~np.isnan(values)
    assert np.array_equal(v[ok], fixed_point(values, r)[ok])
