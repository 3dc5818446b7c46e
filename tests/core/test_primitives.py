"""The exact primitives (architecture review R3): one class per request kind, compute on a
block, merge of blocks; any split of the rows into blocks gives the whole's aggregates."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from fractions import Fraction
from typing import get_args

import numpy as np
import pytest

from dpframe.core.exact.compute import (
    AggregateRequest,
    ComputeRequest,
    RequestKind,
    add_into,
    fixed_point_request,
)
from dpframe.core.exact.primitives import (
    PRIMITIVES,
    Block,
    Piece,
    Primitive,
    clamped_rows,
    compute_exact,
)
from dpframe.core.exact.transform import bin_index


class _Block:
    def __init__(self, x: np.ndarray) -> None:
        self.x = x

    def numbers(self, name: str) -> tuple[np.ndarray, None]:
        return self.x, None

    def words(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        ok = ~np.isnan(self.x)
        return np.where(ok, np.nan_to_num(self.x) * 1000, 0).astype(np.uint64), ok

    def codes(self, name: str) -> np.ndarray:
        raise AssertionError("no unit here")


def test_every_request_kind_has_one_primitive() -> None:
    assert set(PRIMITIVES) == set(get_args(RequestKind))
    assert all(p.kind == k for k, p in PRIMITIVES.items())


def test_blocks_merge_to_the_whole() -> None:
    rng = np.random.default_rng(2)
    n = 500
    x = np.round(rng.uniform(-2, 12, n), 1)
    x[::9] = np.nan
    codes = rng.integers(-1, 3, n)
    reqs = (AggregateRequest("rows"), AggregateRequest("nonnull", "x"),
            fixed_point_request("x", Fraction(0), Fraction(10), Fraction(5), False, True),
            AggregateRequest("bins", "x", edges=(0.0, 2.5, 5.0, 10.0)),
            AggregateRequest("grid", "x", lo=0.0, hi=10.0, edges=(1.0, 4.0, 9.0)),
            AggregateRequest("distinct", "x"))
    q = ComputeRequest(reqs, by=("g",), keys={"g": ("a", "b", "c")})
    keys: list[tuple[object, ...]] = [("a",), ("b",), ("c",)]
    whole = compute_exact(q, codes, keys, None, _Block(x), None)
    cut = 173
    parts = [compute_exact(q, codes[s], keys, None, _Block(x[s]), None)
             for s in (slice(0, cut), slice(cut, n))]
    merged = parts[0].merge(parts[1])
    for slot in ("values", "counts"):
        a, b = getattr(whole, slot), getattr(merged, slot)
        assert {k: v.tolist() for k, v in a.items()} == {k: v.tolist() for k, v in b.items()}
    for k, (g, h) in whole.distinct.items():
        mg, mh = merged.distinct[k]
        assert g.tolist() == mg.tolist() and h.tolist() == mh.tolist()
    assert len(whole.values) == 5 and len(whole.distinct) == 1


def test_the_one_add_is_exact_past_int64() -> None:
    big = np.array([(1 << 62) + 5], dtype=np.int64)
    out = add_into(add_into(None, big, None, 1), big, np.array([0]), 1)
    assert out.dtype == object and int(out[0]) == (1 << 63) + 10


# -- which rows clamping moved (diagnostics=): each primitive answers ---------------------------

#: One request of each kind over ``x`` with bounds [0, 10] (a histogram: edges 0 < ... <= 10,
#: ``right=True`` without ``include_lowest``, so 0 itself is outside, as pd.cut has it).
_CLAMP_REQUESTS = {
    "rows": AggregateRequest("rows"),
    "nonnull": AggregateRequest("nonnull", "x"),
    "fixed_sum": fixed_point_request("x", Fraction(0), Fraction(10), Fraction(5), False, True),
    "bins": AggregateRequest("bins", "x", edges=(0.0, 2.5, 5.0, 10.0)),
    "grid": AggregateRequest("grid", "x", lo=0.0, hi=10.0, edges=(1.0, 4.0, 9.0)),
    "cells": AggregateRequest("cells", "x", lo=0.0, hi=10.0, ncells=4),
    "distinct": AggregateRequest("distinct", "x"),
}
_X = np.array([-1.0, 0.0, 5.0, 10.0, 11.0, np.nan, 2.5])
_OUT_OF_BOUNDS = [True, False, False, False, True, False, False]


def _never_read() -> np.ndarray:
    raise AssertionError("a primitive that clamps nothing must not read the column")


def test_every_primitive_says_which_rows_clamping_moved() -> None:
    """``diagnostics=`` counts clamped rows by asking each request's primitive: every
    registered primitive overrides :meth:`Primitive.clamped` (the base has no answer), those
    that clamp to bounds flag the non-missing values outside them, a histogram the values
    outside its edges, and the counting ones answer None without reading the column. A new
    primitive registered without an answer fails here."""
    assert set(_CLAMP_REQUESTS) == set(PRIMITIVES)
    expected: dict[str, list[bool] | None] = {
        "rows": None, "nonnull": None, "distinct": None,
        "fixed_sum": _OUT_OF_BOUNDS, "grid": _OUT_OF_BOUNDS, "cells": _OUT_OF_BOUNDS,
        "bins": [True, True, False, False, True, False, False],
    }
    for kind, primitive in PRIMITIVES.items():
        assert type(primitive).clamped is not Primitive.clamped, kind
        want = expected[kind]
        got = primitive.clamped(_CLAMP_REQUESTS[kind], _X.copy if want else _never_read)
        assert (None if got is None else got.tolist()) == want, kind


def test_a_primitive_without_an_answer_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    class Silent(Primitive):
        kind = "rows"

        def compute(self, req: AggregateRequest, block: Block) -> Piece:
            return {}

    monkeypatch.setitem(PRIMITIVES, "rows", Silent())
    q = ComputeRequest((AggregateRequest("rows", "x"),), diagnostics_cap=1)
    with pytest.raises(NotImplementedError, match="Silent"):
        clamped_rows(q, np.zeros(3, dtype=np.int64), 1, lambda name: np.zeros(3))


def _clamped_rows_before(request: ComputeRequest, codes: np.ndarray, ng: int,
                         column: Callable[[str], np.ndarray]) -> int:
    """The count as ``core/transform.clamped_rows`` made it before each primitive answered
    for itself (its own list of the kinds that clamp): the oracle of the same numbers."""
    kept = codes < ng
    hit = np.zeros(codes.size, dtype=bool)
    for req in request.requests:
        if req.column is None or req.kind not in ("fixed_sum", "grid", "cells", "bins"):
            continue
        with np.errstate(invalid="ignore"):
            x = np.asarray(column(req.column), dtype=np.float64)
            if req.kind == "bins":
                hit |= (bin_index(x, req.edges, req.right, req.include_lowest) < 0) & ~np.isnan(x)
            else:
                hit |= (x < req.lo) | (x > req.hi)
    return int(np.count_nonzero(hit & kept))


def test_clamped_rows_counts_as_before() -> None:
    """The loop over the primitives gives the numbers the list of kinds gave, for random
    columns, codes and every mix of requests (each row counted once)."""
    rng = np.random.default_rng(61)
    kinds = list(_CLAMP_REQUESTS)
    for _ in range(200):
        n = int(rng.integers(0, 40))
        cols = {c: np.round(rng.uniform(-4, 14, n), 1) for c in ("x", "y")}
        for a in cols.values():
            a[rng.random(n) < 0.2] = np.nan
        picked = rng.choice(kinds, size=int(rng.integers(1, 5)))
        reqs = tuple(dataclasses.replace(_CLAMP_REQUESTS[k], column=None if k == "rows" else
                                         str(rng.choice(["x", "y"])),
                                         right=bool(rng.integers(2)),
                                         include_lowest=bool(rng.integers(2)))
                     for k in picked)
        q = ComputeRequest(reqs, diagnostics_cap=1)
        codes = rng.integers(-1, 4, n)
        ng = 3
        assert clamped_rows(q, codes, ng, cols.__getitem__) == _clamped_rows_before(
            q, codes, ng, cols.__getitem__)
