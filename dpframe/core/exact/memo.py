"""Small caches of values that depend on public inputs only (plans, declared keys' indexes and
Arrow value sets): by an exact fingerprint (:class:`RecentCache`) or by the identity of
immutable objects (:class:`IdentityCache`). Free of noise modules, so every layer may use them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

V = TypeVar("V")


class RecentCache(Generic[V]):
    """The values of the last ``size`` distinct keys used (the least recently used leaves
    first), safe across threads. A key of None (no :func:`exact_fingerprint`) is never stored
    and never found."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[bytes, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: bytes | None) -> V | None:
        """The value stored under ``key``, now the most recently used, or None."""
        if key is None:
            return None
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: bytes | None, value: V) -> None:
        """Store ``value`` under ``key`` (nothing for None), dropping the least recently used
        past ``size``."""
        if key is None:
            return
        with self._lock:
            self._items[key] = value
            while len(self._items) > self.size:
                self._items.popitem(last=False)


class IdentityCache(Generic[V]):
    """Values kept by the identity of immutable objects (a frame's declared key tuples, passed
    release after release) and a hashable ``tag``: no fingerprint to take. Each entry holds its
    objects, so their ids cannot be reused while it is kept; past ``size`` entries all are
    dropped. Safe across threads (single dict operations)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: dict[tuple[object, ...], tuple[tuple[object, ...], V]] = {}

    def get(self, objects: tuple[object, ...], tag: object = None) -> V | None:
        """The value stored for these very ``objects`` and ``tag``, or None."""
        entry = self._items.get((tag, *map(id, objects)))
        if entry is None or any(a is not b for a, b in zip(entry[0], objects, strict=True)):
            return None
        return entry[1]

    def put(self, objects: tuple[object, ...], value: V, tag: object = None) -> None:
        """Store ``value`` for ``objects`` and ``tag``."""
        if len(self._items) >= self.size:
            self._items.clear()
        self._items[(tag, *map(id, objects))] = (objects, value)
