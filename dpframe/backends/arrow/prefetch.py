"""A bounded read-ahead thread: items of an iterator produced at most ``depth`` ahead.

Generic (it knows nothing of Arrow): the dataset source reads Parquet row groups through it,
and the Polars front the frames it collects in batches.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Generator, Iterator
from typing import Any

#: Parquet batches decoded ahead of the consumer by the prefetch thread.
PREFETCH = 2


class _Failed:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


_DONE = object()


def prefetch(make: Callable[[], Iterator[Any]], depth: int) -> Generator[Any, None, None]:
    """Items of ``make()`` produced by a background thread at most ``depth`` items ahead.

    Errors are re-raised in the consumer. Closing the generator (or an exception in the
    consumer, e.g. Ctrl-C) stops and joins the thread before returning.
    """
    q: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            for item in make():
                if not put(item):
                    return
        except BaseException as exc:  # handed to the consumer
            put(_Failed(exc))
            return
        put(_DONE)

    thread = threading.Thread(target=run, name="dpframe-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, _Failed):
                raise item.exc
            yield item
    finally:
        stop.set()
        while thread.is_alive():
            with contextlib.suppress(queue.Empty):
                q.get(timeout=0.05)
        thread.join()
