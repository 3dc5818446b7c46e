"""The exact primitives (architecture review R3): one class per request kind, compute on a
block, merge of blocks; any split of the rows into blocks gives the whole's aggregates."""

from __future__ import annotations

from fractions import Fraction
from typing import get_args

import numpy as np

from dpframe.core.compute import (
    AggregateRequest,
    ComputeRequest,
    RequestKind,
    add_into,
    fixed_point_request,
)
from dpframe.core.primitives import PRIMITIVES, compute_exact


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
