"""Hold Python-level signal handlers back while a ledger's state changes.

Python runs signal handlers (``KeyboardInterrupt`` for SIGINT, ``SystemExit`` from a SIGTERM
handler...) in the main thread between bytecodes: one landing between ``BEGIN`` and ``COMMIT``
(or inside a ``finally`` that rolls back) would leave a write transaction open. Inside
:func:`signals_held` the handlers only note the signal; right after it they run as usual.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

_HELD_SIGNALS = tuple(
    getattr(signal, n)
    for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGUSR1", "SIGUSR2")
    if hasattr(signal, n)
)
_holding = False
_pending: list[tuple[int, Any]] = []
_original: dict[int, Any] = {}


def _proxy_handler(signum: int, frame: Any) -> None:
    """Installed while a transaction is open: hold the signal back, or (when left installed
    by an interrupted restore) behave exactly as the handler it replaced."""
    if _holding:
        _pending.append((signum, frame))
        return
    handler = _original.get(signum)
    if callable(handler):
        handler(signum, frame)


def _install_proxies() -> list[int]:
    """Put :func:`_proxy_handler` in front of every Python-level handler; the signals it now
    handles."""
    installed: list[int] = []
    for s in _HELD_SIGNALS:
        try:
            current = signal.getsignal(s)
            if current is _proxy_handler:
                installed.append(s)
            elif callable(current):
                _original[s] = current
                signal.signal(s, _proxy_handler)
                installed.append(s)
        except (ValueError, OSError):  # pragma: no cover - not the main interpreter
            pass
    return installed


def _restore(installed: list[int]) -> None:
    """Give the signals back to their handlers."""
    for s in installed:
        if signal.getsignal(s) is _proxy_handler:
            signal.signal(s, _original[s])


def _run_held() -> None:
    """Run the handlers of the signals that arrived while they were held."""
    held = list(_pending)
    _pending.clear()
    for signum, frame in held:
        handler = _original.get(signum)
        if callable(handler):
            handler(signum, frame)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Run the block with Python signal handlers held back; run them right after it.

    Inside this block the handlers only note the signal; after it (transaction committed or
    rolled back) they run as usual. Other threads never receive Python signal handlers, so
    nothing is needed there; a nested block holds nothing more.
    """
    global _holding
    if _holding or threading.current_thread() is not threading.main_thread():
        yield
        return
    _pending.clear()
    installed = _install_proxies()
    _holding = True
    try:
        yield
    finally:
        _holding = False
        _restore(installed)
        _run_held()
