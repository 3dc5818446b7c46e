"""Row ranges on several threads (dpframe.core.exact.parallel): the cuts, the waiting, the fork."""

from __future__ import annotations

import itertools
import os
import threading
import time

import numpy as np
import pytest

from dpframe.core.exact import parallel
from dpframe.core.exact.parallel import BLOCK_ROWS, map_ranges, row_ranges


@pytest.mark.parametrize("n", [0, 1, BLOCK_ROWS, 5 * BLOCK_ROWS + 3, 10**7])
@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_ranges_cover_the_rows_once_cut_at_blocks(n: int, threads: int) -> None:
    ranges = row_ranges(n, BLOCK_ROWS, threads)
    assert ranges[0][0] == 0 and ranges[-1][1] == n
    assert all(b == c for (_, b), (c, _) in itertools.pairwise(ranges))
    assert all(a % BLOCK_ROWS == 0 for a, _ in ranges)
    assert len(ranges) <= threads and (n == 0 or all(b > a for a, b in ranges))
    assert len(ranges) == max(1, min(threads, n // BLOCK_ROWS))


def test_small_inputs_stay_on_the_calling_thread() -> None:
    seen: list[str] = []
    map_ranges(lambda a, b: seen.append(threading.current_thread().name), 1000)
    assert seen == [threading.current_thread().name]


def test_ranges_run_on_several_threads_and_results_keep_their_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "THREADS", 3)
    names: set[str] = set()

    def work(a: int, b: int) -> tuple[int, int]:
        names.add(threading.current_thread().name)
        time.sleep(0.05)  # long enough that one thread cannot take every range
        return a, b

    out = map_ranges(work, 3 * BLOCK_ROWS, BLOCK_ROWS)
    assert out == row_ranges(3 * BLOCK_ROWS, BLOCK_ROWS, 3)
    assert len(names) >= 2


def test_an_error_is_raised_only_once_every_range_has_stopped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No range may still write after the call returns (a later release could read it)."""
    monkeypatch.setattr(parallel, "THREADS", 2)
    finished: list[int] = []

    def work(a: int, b: int) -> None:
        if a == 0:
            raise ValueError("first range")
        time.sleep(0.1)
        finished.append(a)

    with pytest.raises(ValueError, match="first range"):
        map_ranges(work, 2 * BLOCK_ROWS, BLOCK_ROWS)
    assert finished == [BLOCK_ROWS]

    def late(a: int, b: int) -> None:
        if a:
            raise KeyError("second range")

    with pytest.raises(KeyError):
        map_ranges(late, 2 * BLOCK_ROWS, BLOCK_ROWS)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_gets_a_pool_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parent's helper threads do not survive a fork: a child reusing the pool object
    would wait forever."""
    monkeypatch.setattr(parallel, "THREADS", 2)
    map_ranges(lambda a, b: None, 2 * BLOCK_ROWS, BLOCK_ROWS)  # the parent has a pool
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if the ranges ran
        try:
            out = map_ranges(lambda a, b: int(np.arange(a, b).sum()), 2 * BLOCK_ROWS, BLOCK_ROWS)
            os._exit(0 if sum(out) == (2 * BLOCK_ROWS) * (2 * BLOCK_ROWS - 1) // 2 else 1)
        except BaseException:
            os._exit(2)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    pytest.fail("the forked child hung on the parent's pool")


def test_one_thread_keeps_every_range_on_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside ``one_thread`` (Dask partitions), large inputs stay on the calling thread, and
    the setting ends with the block (also on error)."""
    from dpframe.core.exact.parallel import one_thread

    monkeypatch.setattr(parallel, "THREADS", 3)
    caller = threading.current_thread().name
    seen: list[str] = []

    def work(a: int, b: int) -> tuple[int, int]:
        seen.append(threading.current_thread().name)
        time.sleep(0.02)
        return a, b

    with one_thread():
        assert map_ranges(work, 3 * BLOCK_ROWS, BLOCK_ROWS) == [(0, 3 * BLOCK_ROWS)]
    assert seen == [caller]
    with pytest.raises(RuntimeError), one_thread():
        raise RuntimeError
    assert len(map_ranges(work, 3 * BLOCK_ROWS, BLOCK_ROWS)) == 3


@pytest.mark.parametrize("raw,expected", [("1", 1), ("3", 3), (" 2 ", 2), ("0", None),
                                           ("-2", None), ("two", None), ("", None)])
def test_the_thread_count_comes_from_the_environment(raw: str, expected: int | None,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPFRAME_THREADS", raw)
    default = max(1, min(4, os.cpu_count() or 1))
    assert parallel._threads_from_environment() == (expected or default)


# -- in_order: the ordered pipeline ------------------------------------------------------------

def test_in_order_yields_in_item_order_whatever_finishes_first() -> None:
    from concurrent.futures import ThreadPoolExecutor

    def work(i: int) -> int:
        time.sleep(0.02 * (5 - i))  # later items finish first
        return i * 10

    with ThreadPoolExecutor(3) as pool:
        assert list(parallel.in_order(pool, range(6), work, ahead=4)) == [0, 10, 20, 30, 40, 50]


@pytest.mark.parametrize("ahead", [1, 2, 3])
def test_in_order_keeps_at_most_ahead_items_in_flight(ahead: int) -> None:
    """Items are pulled one at a time, and never more than ``ahead`` are submitted and not yet
    yielded (the memory bound of the scans' pipelines)."""
    from concurrent.futures import ThreadPoolExecutor

    pulled, yielded, most = 0, 0, 0

    def items():
        nonlocal pulled, most
        for i in range(10):
            pulled += 1
            most = max(most, pulled - yielded)
            yield i

    with ThreadPoolExecutor(2) as pool:
        for _ in parallel.in_order(pool, items(), lambda i: i, ahead):
            yielded += 1
    assert yielded == 10 and most == ahead


def test_in_order_eager_yields_what_is_done_before_pulling_more() -> None:
    """With ``eager``, a done result is handed over before the next item is pulled (a writer
    keeps up with its producers); without it, only the ``ahead`` bound forces a yield."""
    from concurrent.futures import ThreadPoolExecutor

    def run(eager: bool) -> list[str]:
        log: list[str] = []

        def items():
            for i in range(3):
                time.sleep(0.1)  # leaves time for the work before to finish
                log.append(f"pull {i}")
                yield i

        with ThreadPoolExecutor(2) as pool:
            slow = lambda i: time.sleep(0.02) or i  # noqa: E731 - not done when submitted
            for r in parallel.in_order(pool, items(), slow, ahead=10, eager=eager):
                log.append(f"got {r}")
        return log

    # eager: item i is handed over once item i + 1 is submitted (it is done by then)
    assert run(True) == ["pull 0", "pull 1", "got 0", "pull 2", "got 1", "got 2"]
    assert run(False) == ["pull 0", "pull 1", "pull 2", "got 0", "got 1", "got 2"]


def test_in_order_raises_at_the_failed_item_and_cancels_the_rest() -> None:
    """An error surfaces where its result would have been yielded, after the results before
    it; items submitted but not started are cancelled, so they never run."""
    from concurrent.futures import ThreadPoolExecutor

    ran: list[int] = []
    release = threading.Event()

    def work(i: int) -> int:
        ran.append(i)
        if i == 1:
            raise RuntimeError("boom")
        if i == 2:
            release.wait(5)  # holds the one worker: items 3 to 5 wait in the queue
        return i

    got: list[int] = []
    with ThreadPoolExecutor(1) as pool:
        with pytest.raises(RuntimeError, match="boom"):
            for r in parallel.in_order(pool, range(6), work, ahead=6):
                got.append(r)
        release.set()
    assert got == [0]
    assert ran == [0, 1, 2]  # 3 to 5 were queued behind the failure: cancelled, never run


def test_in_order_closed_early_cancels_what_has_not_started() -> None:
    import contextlib
    from concurrent.futures import ThreadPoolExecutor

    ran: list[int] = []
    gate = threading.Event()

    def work(i: int) -> int:
        if i > 0:
            gate.wait(5)  # item 1 holds the one worker until the consumer has closed
        ran.append(i)
        return i

    with ThreadPoolExecutor(1) as pool, \
            contextlib.closing(parallel.in_order(pool, range(8), work, ahead=8)) as results:
        assert next(results) == 0  # every item is submitted by now (ahead 8)
        results.close()
        gate.set()
    assert ran in ([0], [0, 1])  # 2 to 7 (and 1, unless it had started) cancelled


def test_in_order_needs_room_for_one_item() -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool, pytest.raises(ValueError, match="ahead"):
        next(parallel.in_order(pool, range(3), lambda i: i, ahead=0))
