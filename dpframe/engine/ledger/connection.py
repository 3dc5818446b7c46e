"""The SQLite ledger's connection and its interrupt-safe transactions.

Every transaction (open, create, upgrade, budget change, charge, record) runs through
:meth:`LedgerConnection.transaction`: waiting for another process's lock happens in Python
between short attempts (so Ctrl-C interrupts the wait at once, with nothing open); while a write
transaction is open in the main thread, Python-level signal handlers are held back
(:func:`~.signals.signals_held`) and run right after it has committed or rolled back; a
``finally`` rolls back whatever is still open, and a connection found inside a transaction is
rolled back before it is used. An interrupt therefore never leaves the ledger locked.
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from ...errors import LedgerError
from .diagnose import diagnose, is_busy, locked, opened_read_only
from .room import checkpoint
from .signals import signals_held

_T = TypeVar("_T")
_BUSY_SLICE_MS = 5  # SQLite's own wait per attempt; the rest of the wait is interruptible
_BUSY = object()


class _BusyOnOpen(Exception):
    """SQLite answered BUSY while a new connection was being set up (another connection was
    initialising or recovering the WAL index): retried like any other wait."""


def _quiet_stamp(path: Path) -> tuple[int, int] | None:
    """The ledger file's (size, mtime) when no write-ahead log, journal or WAL index lies beside
    it (no writer has it open, nothing pending); None otherwise."""
    for suffix in ("-wal", "-journal", "-shm"):
        if os.path.exists(f"{path}{suffix}"):
            return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


class LedgerConnection:
    """The connection of this process to the ledger file at ``path`` (reopened after a fork).

    ``readonly`` opens it with ``mode=ro`` (and ``immutable=1`` once :attr:`immutable` is set,
    for read-only media); ``timeout`` is how long a write waits for another process's lock.
    """

    def __init__(self, path: Path, *, readonly: bool, timeout: float) -> None:
        self.path = path
        self.readonly = readonly
        self.timeout = timeout
        self.immutable = False
        #: A read-only connection to a ledger with no write-ahead log or journal beside it opens
        #: with ``immutable=1``: SQLite then creates no -wal/-shm file. The file's stamp is
        #: checked after each read; a change (a writer came) retries with plain ``mode=ro``.
        self._quiet: tuple[int, int] | None = None
        self._loud = False  # set when quiet reads kept being disturbed
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._lock = threading.RLock()

    def diagnose(self, exc: BaseException, nothing: str) -> LedgerError:
        """One precise ``LedgerError`` for the SQLite error ``exc``."""
        return diagnose(exc, self.path, nothing, readonly=self.readonly, timeout=self.timeout)

    def _connect(self) -> sqlite3.Connection:
        """The connection of this process (reopened after a fork)."""
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        self._conn = None
        try:
            if self.readonly:
                conn = sqlite3.connect(
                    self._uri(), uri=True, timeout=0, isolation_level=None,
                    check_same_thread=False,
                )
            else:
                conn = sqlite3.connect(
                    str(self.path), timeout=0, isolation_level=None, check_same_thread=False
                )
            try:
                conn.execute(f"PRAGMA busy_timeout = {_BUSY_SLICE_MS}")
                if not self.readonly:
                    # every commit is on disk before charge() returns (WAL: fsync per commit)
                    conn.execute("PRAGMA synchronous = FULL")
                    # freed pages are not rewritten with zeros (Debian's SQLite does so by
                    # default): recording an outcome then reuses its charge's room (.room)
                    # without writing more than the charge did
                    conn.execute("PRAGMA secure_delete = FAST")
            except BaseException:
                conn.close()
                raise
        except sqlite3.Error as exc:
            if is_busy(exc):  # e.g. SQLITE_BUSY_RECOVERY: another connection builds the -shm
                raise _BusyOnOpen from exc
            raise self.diagnose(exc, "nothing was read or written") from exc
        self._conn = conn
        self._pid = os.getpid()
        return conn

    def _uri(self) -> str:
        """The read-only URI: ``mode=ro``, and ``immutable=1`` on read-only media or while the
        ledger is quiet (noted in :attr:`_quiet`)."""
        uri = "file:" + quote(str(self.path), safe="/") + "?mode=ro"
        self._quiet = None if self.immutable or self._loud else _quiet_stamp(self.path)
        if self.immutable or self._quiet is not None:
            uri += "&immutable=1"
        return uri

    def close(self) -> None:
        """Close the connection (it is reopened when used again)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()
            self._conn = None

    def _drop(self, conn: sqlite3.Connection) -> None:
        with contextlib.suppress(sqlite3.Error):
            conn.close()
        if self._conn is conn:
            self._conn = None

    def transaction(
        self,
        fn: Callable[[sqlite3.Connection], _T],
        *,
        write: bool,
        nothing: str,
        begin: str | None = None,
    ) -> _T:
        """Run ``fn(conn)`` in one transaction, safe against interrupts at any point.

        Waiting for another process's lock happens here, in Python, between attempts of at most
        ``_BUSY_SLICE_MS`` each: ``KeyboardInterrupt`` ends the wait with nothing open. A write
        attempt runs with signal handlers held back (:func:`signals_held`), so an interrupt
        lands after the commit or the rollback; ``finally`` rolls back whatever is still open
        (and drops the connection if even that fails); a connection found in a transaction
        (left by an interruption elsewhere) is rolled back before use. ``fn`` must have no side
        effect outside the database: it may run more than once. ``nothing`` says, in errors,
        what was not done.
        """
        if write and self.readonly:
            raise opened_read_only(self.path, nothing)
        stmt = begin if begin is not None else ("BEGIN IMMEDIATE" if write else "BEGIN")
        deadline = time.monotonic() + self.timeout
        pause = 0.001
        with self._lock:
            while True:
                outcome = self._once(fn, stmt, nothing, write)
                if outcome is not _BUSY:
                    return outcome  # type: ignore[return-value]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise locked(self.path, self.timeout, nothing)
                time.sleep(min(left, pause * (0.5 + random.random())))
                pause = min(pause * 2, 0.05)

    def _once(
        self, fn: Callable[[sqlite3.Connection], _T], stmt: str, nothing: str, write: bool
    ) -> _T | object:
        """One attempt, on this process's connection (set up first if need be); ``_BUSY`` if
        SQLite answered BUSY, even while the connection was being set up."""
        try:
            conn = self._connect()
        except _BusyOnOpen:
            return _BUSY
        if write:
            with signals_held():
                return self._attempt(conn, fn, stmt, nothing)
        return self._attempt(conn, fn, stmt, nothing)

    def _attempt(
        self, conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], _T], stmt: str,
        nothing: str,
    ) -> _T | object:
        try:
            if conn.in_transaction:  # left open by an interruption: never reuse it
                conn.execute("ROLLBACK")
            if stmt:
                conn.execute(stmt)
            result = fn(conn)
            if conn.in_transaction:
                conn.execute("COMMIT")
            return result
        except sqlite3.Error as exc:
            if is_busy(exc):
                return _BUSY  # rolled back below; retried after an interruptible pause
            raise self.diagnose(exc, nothing) from exc
        finally:
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                if conn.in_transaction:  # could not roll back: closing the connection does
                    self._drop(conn)

    def checkpoint(self) -> bool:
        """Checkpoint the write-ahead log now, outside any transaction (:func:`.room.checkpoint`:
        the next write restarts the log); False if it could not (best effort, never raises)."""
        if self.readonly:
            return False
        with self._lock:
            try:
                conn = self._connect()
            except (_BusyOnOpen, LedgerError):
                return False
            return not conn.in_transaction and checkpoint(conn)

    def read(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``fn(conn)`` in a read transaction (a consistent snapshot). On a quiet read-only
        connection (``immutable=1``, no lock taken), the read counts only if the ledger was
        not written meanwhile; otherwise it is done again with locks (``mode=ro``)."""
        for _ in range(3):
            try:
                result = self.transaction(fn, write=False, nothing="nothing was changed")
            except LedgerError:
                if not self._disturbed():
                    raise
                continue  # a writer changed the file under a lock-free read: read again
            if not self._disturbed():
                return result
        self._loud = True
        return self.transaction(fn, write=False, nothing="nothing was changed")

    def _disturbed(self) -> bool:
        """Whether a quiet read may have seen the ledger change (then reconnect, not quiet)."""
        with self._lock:
            if self._quiet is None or self._quiet == _quiet_stamp(self.path):
                return False
            if self._conn is not None:
                self._drop(self._conn)
            return True
