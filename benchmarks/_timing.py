"""Timing shared by the benchmark scripts (run them as ``python benchmarks/<script>.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def best_of(fns: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    """Best wall time of each function over ``repeat`` interleaved rounds (after one warm-up),
    so that load from other processes affects every contender alike."""
    for fn in fns.values():
        fn()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best
