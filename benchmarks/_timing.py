"""Timing shared by the benchmark scripts (run them as ``python benchmarks/<script>.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def best_of(fns: dict[Any, Callable[[], Any]], repeat: int,
            clock: Callable[[], float] = time.perf_counter) -> dict[Any, float]:
    """Best time of each function over ``repeat`` interleaved rounds (after one warm-up), so
    that load from other processes affects every contender alike: wall time, or ``clock``
    (``time.process_time``: the process's CPU time, every thread's)."""
    for fn in fns.values():
        fn()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = clock()
            fn()
            best[name] = min(best[name], clock() - t0)
    return best
