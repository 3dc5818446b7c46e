"""One precise :class:`~dpframe.errors.LedgerError` per cause: locked, read-only, full disk,
corrupt, not a ledger, tampered with.

A diagnosis names the ledger's path, SQLite's result code and what was (not) done; it never
quotes a value read from the ledger.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ...errors import LedgerError

# SQLite primary result codes (sqlite3.h).
SQLITE_ERROR = 1
SQLITE_PERM = 3
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_READONLY = 8
SQLITE_IOERR = 10
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
SQLITE_CANTOPEN = 14
SQLITE_AUTH = 23
SQLITE_NOTADB = 26


def sqlite_code(exc: BaseException) -> int | None:
    """SQLite's primary result code of ``exc``, if it carries one."""
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


def is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` means another connection holds the lock."""
    return sqlite_code(exc) in (SQLITE_BUSY, SQLITE_LOCKED)


def locked(path: Path, timeout: float, nothing: str) -> LedgerError:
    """The ledger's write lock was held by another process for the whole wait."""
    return LedgerError(
        f"ledger {path} is locked: another process has held its write lock for more "
        f"than {timeout:g} s; {nothing}. Retry when that process is done"
    )


def tampered(path: Path, what: str) -> LedgerError:
    """The ledger fails verification because ``what``."""
    return LedgerError(
        f"ledger {path} fails verification: {what}. It was modified outside dpframe "
        "(a row deleted, edited, inserted or reordered) or is damaged, so its spend cannot "
        "be trusted and it is not used; restore it from a backup"
    )


def opened_read_only(path: Path, nothing: str) -> LedgerError:
    """A write asked of a ledger opened with ``readonly=True``."""
    return LedgerError(
        f"ledger {path} is read-only: it was opened with readonly=True; {nothing}"
    )


def corrupt(path: Path) -> LedgerError:
    """SQLite's integrity check failed."""
    return LedgerError(
        f"ledger {path} is corrupt (SQLite integrity check failed): restore it from a backup"
    )


def why_readonly(path: Path, readonly: bool) -> str:
    """Why SQLite cannot write the ledger at ``path``, in words."""
    folder = path.parent
    with contextlib.suppress(OSError):
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return "its file system is mounted read-only"
    if path.exists() and not os.access(path, os.W_OK):
        return "the file is not writable"
    if not os.access(folder, os.W_OK):
        return (f"its folder {folder} is not writable (SQLite needs to create the -wal and "
                "-shm files beside the ledger)")
    if readonly:
        return "it was opened read-only"
    return "SQLite refused to write to it"


def cannot_write(path: Path) -> bool:
    """Whether the ledger's file or folder is not writable (or on a read-only file system)."""
    folder = path.parent
    with contextlib.suppress(OSError):
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return True
    if path.exists() and not os.access(path, os.W_OK):
        return True
    return not os.access(folder, os.W_OK)


def disk_full(path: Path) -> bool:
    """Whether the file system holding the ledger has no space left."""
    try:
        st = os.statvfs(path.parent)
    except OSError:
        return False
    return st.f_bavail == 0 or (os.geteuid() == 0 and st.f_bfree == 0)


def diagnose(
    exc: BaseException, path: Path, nothing: str, *, readonly: bool, timeout: float
) -> LedgerError:
    """One precise ``LedgerError`` per cause, from SQLite's result code."""
    code = sqlite_code(exc)
    name = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
    where = f"ledger {path}"
    if code in (SQLITE_BUSY, SQLITE_LOCKED):
        return locked(path, timeout, nothing)
    if code in (SQLITE_READONLY, SQLITE_PERM, SQLITE_AUTH) or (
        code == SQLITE_CANTOPEN and cannot_write(path)
    ):
        return LedgerError(
            f"{where} is read-only: {why_readonly(path, readonly)} ({name}); {nothing}. "
            "`dpframe ledger show` can still read it; a session needs write access"
        )
    if code == SQLITE_FULL or (code == SQLITE_IOERR and disk_full(path)):
        return LedgerError(
            f"the disk holding {where} is full ({name}); {nothing}. Free some space "
            "and retry: the ledger itself is intact"
        )
    if code == SQLITE_CORRUPT:
        return LedgerError(
            f"{where} is corrupt ({name}): SQLite found damaged pages; {nothing}. "
            "Restore it from a backup"
        )
    if code == SQLITE_NOTADB:
        return LedgerError(f"{path} is not a dpframe ledger (not an SQLite database)")
    if code == SQLITE_IOERR:
        return LedgerError(f"I/O error on {where} ({name}); {nothing}")
    if code == SQLITE_CANTOPEN:
        return LedgerError(f"cannot open {where} ({name}); {nothing}")
    if code == SQLITE_ERROR and ("no such table" in str(exc) or "no such column" in str(exc)):
        return tampered(path, "a table or column of the ledger is missing")
    return LedgerError(f"{where}: unexpected SQLite error {name}: {exc}; {nothing}")
