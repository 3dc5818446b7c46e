"""Shared driver for the per-peer runners (stdlib only: it is imported in every peer's venv).

A runner calls :func:`main` with a loader and a dict of query functions. One process runs one
query on one dataset: load the Parquet file (timed separately), reset the peak-RSS mark of this
process and of every descendant (Spark's JVM), then release the query up to ``--reps`` times.
Time is the best of the first 3 releases; every release's value is kept for the error.
Memory is the peak RSS of the process tree during the releases minus its RSS after loading
(Linux: ``/proc/PID/clear_refs`` resets ``VmHWM``; ``resource.getrusage`` alone cannot, since
its maximum covers the load too). The result is one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

EPSILON = 1.0
DELTA = 1e-6
KEYS = [f"key_{i:02d}" for i in range(50)]
LOWER, UPPER = 0.0, 100.0
MAX_ROWS_PER_UNIT = 10
MAX_GROUPS_PER_UNIT = 50
QUERIES = ("count", "sum", "mean", "groupby_sum", "user_groupby_sum")


CURRENT: dict[str, Any] = {}  # the query and repetitions of this process, for loaders


class Unsupported(Exception):
    """The peer cannot express this query; the message says why."""


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
        except OSError:
            pass
    return out


def _status_kb(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_mb() -> float:
    return sum(_status_kb(p, "VmRSS") for p in _descendants(os.getpid())) / 1024


def reset_tree_peak() -> None:
    for p in _descendants(os.getpid()):
        try:
            with open(f"/proc/{p}/clear_refs", "w") as fh:
                fh.write("5")
        except OSError:
            pass


def tree_peak_mb() -> float:
    return sum(_status_kb(p, "VmHWM") for p in _descendants(os.getpid())) / 1024


def _plain(v: Any) -> Any:
    """Released value as JSON: a float, or {key: float}."""
    if isinstance(v, dict):
        return {str(k): (None if x is None else float(x)) for k, x in v.items()}
    return float(v)


def main(version: Callable[[], str], load: Callable[[str], Any],
         queries: dict[str, Callable[[Any], Any] | str]) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--query", required=True, choices=QUERIES)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--budget", type=float, default=120.0,
                    help="stop repeating once this many seconds were spent (>= 1 release)")
    args = ap.parse_args()
    out: dict[str, Any] = {"query": args.query}
    CURRENT.update(query=args.query, reps=args.reps)
    try:
        out["version"] = version()
        fn = queries.get(args.query, "not expressible")
        if isinstance(fn, str):  # the reason the peer cannot express it: no need to load
            raise Unsupported(fn)
        t = time.perf_counter()
        state = load(args.data)
        out["load_s"] = time.perf_counter() - t
        gc.collect()
        out["rss_after_load_mb"] = tree_rss_mb()
        reset_tree_peak()
        base = tree_rss_mb()
        times, values = [], []
        for _ in range(args.reps):
            t = time.perf_counter()
            v = fn(state)
            times.append(time.perf_counter() - t)
            values.append(_plain(v))
            if sum(times) > args.budget:
                break
        out["peak_extra_mb"] = max(0.0, tree_peak_mb() - base)
        out["times"] = times
        out["seconds"] = min(times[:3])
        out["values"] = values
    except Unsupported as e:
        out["unsupported"] = str(e)
    except Exception as e:  # a peer's failure is a result, not a crash of the harness
        out["error"] = f"{type(e).__name__}: {e}"[:500]
        traceback.print_exc(file=sys.stderr)
    sys.stdout.write("\n@@RESULT@@" + json.dumps(out) + "\n")
    sys.stdout.flush()
