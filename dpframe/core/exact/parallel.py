"""Row ranges on several threads: the data parallelism inside one release (and
:func:`in_order`, the ordered pipeline of the Arrow scans).

numpy and pyarrow release the GIL in their loops over large arrays, so work on disjoint slices
of a column runs on several cores at once. Only order-free work is split: element-wise results
written to disjoint slices of one output, or integer totals that add up the same in any order.
So a result has the same bits whatever the number of threads or their schedule, and a release
is reproducible from its seed on any machine.

**Why nothing leaks.** Where the rows are cut depends only on the number of rows and the
machine, never on a value, and every range runs to its end (an error is re-raised only once
every range has stopped), so no thread outlives the call and writes into a later release.

Threads come from one shared pool of :data:`THREADS` - 1 helpers (the calling thread takes the
first range). Its tasks are leaves: they never wait on the pool, so nested callers (Arrow
batches on their own threads, Dask partitions) cannot deadlock; they only queue. A forked child
process starts a fresh pool (the parent's threads do not survive a fork).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent import futures
from typing import TypeVar

T = TypeVar("T")

def _threads_from_environment() -> int:
    """``DPFRAME_THREADS`` when it is a positive integer, else the CPU count up to 4."""
    default = max(1, min(4, os.cpu_count() or 1))
    raw = os.environ.get("DPFRAME_THREADS", "").strip()
    return int(raw) if raw.isdigit() and int(raw) >= 1 else default


#: Threads that share one row range, the calling thread included (``DPFRAME_THREADS=1``
#: keeps every release on the calling thread).
THREADS = _threads_from_environment()
#: Fewest rows worth a thread of their own: below, starting it costs more than it saves.
MIN_ROWS_PER_THREAD = 1 << 20
#: Rows per cache block (512 KiB of float64, resident in L2), the unit ranges are cut in.
BLOCK_ROWS = 1 << 16

_pool: futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_local = threading.local()


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Inside the block, :func:`map_ranges` runs every range on the calling thread: for tasks
    that already run one per core (Dask partitions), where more threads only contend."""
    before = getattr(_local, "serial", False)
    _local.serial = True
    try:
        yield
    finally:
        _local.serial = before


def _forget_pool() -> None:
    """In a forked child: no pool (its threads stayed in the parent) and a fresh lock (another
    parent thread may have held it at the fork)."""
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # the child has the pool object, not its threads
    os.register_at_fork(after_in_child=_forget_pool)


def _helpers() -> futures.ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = futures.ThreadPoolExecutor(THREADS - 1, thread_name_prefix="dpframe-rows")
        return _pool


def row_ranges(n: int, min_rows: int | None = None, threads: int | None = None
               ) -> list[tuple[int, int]]:
    """``[0, n)`` cut into at most ``threads`` (default :data:`THREADS`) ranges of at least
    ``min_rows`` (default :data:`MIN_ROWS_PER_THREAD`) rows, cut at multiples of
    :data:`BLOCK_ROWS` (one range when ``n`` is small)."""
    least = MIN_ROWS_PER_THREAD if min_rows is None else min_rows
    parts = max(1, min(threads or THREADS, n // max(least, 1)))
    cuts = [0, *((n * i // parts) // BLOCK_ROWS * BLOCK_ROWS for i in range(1, parts)), n]
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a] or [(0, n)]


def map_ranges(work: Callable[[int, int], T], n: int, min_rows: int | None = None
               ) -> list[T]:
    """``[work(a, b) for (a, b) in row_ranges(n, min_rows)]``, the ranges on several threads.

    ``work`` must only read shared inputs and write its own slice (or return its own result).
    Every range runs to its end before this returns or raises (the first error is re-raised)."""
    ranges = row_ranges(n, min_rows, 1 if getattr(_local, "serial", False) else None)
    if len(ranges) == 1:
        return [work(*ranges[0])]
    pool = _helpers()
    rest = [pool.submit(work, a, b) for a, b in ranges[1:]]
    try:
        first = work(*ranges[0])
    finally:
        futures.wait(rest)  # no range outlives the call, whatever happened in this one
    return [first, *(f.result() for f in rest)]


R = TypeVar("R")


def in_order(pool: futures.Executor, items: Iterable[T], work: Callable[[T], R], ahead: int,
             eager: bool = False) -> Generator[R, None, None]:
    """``work(item)`` for each item, run on ``pool`` and yielded in the items' order, with at
    most ``ahead`` items submitted and not yet yielded (``ahead`` bounds the memory held).

    ``eager``: also yield a result as soon as it and every one before it are done, not only
    when ``ahead`` is reached (a writer that should keep up with its producers). Items are
    pulled from ``items`` on the consuming thread, one at a time, in order. An error of
    ``work`` is raised where its result would have been yielded; then, or when the consumer
    closes the generator early (use ``contextlib.closing``), the items not started yet are
    cancelled: only those already running finish, and the pool's owner waits for them.
    """
    if ahead < 1:
        raise ValueError("ahead must be at least 1")
    pending: deque[futures.Future[R]] = deque()
    try:
        for item in items:
            pending.append(pool.submit(work, item))
            while len(pending) >= ahead or (eager and pending and pending[0].done()):
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for f in pending:
            f.cancel()
