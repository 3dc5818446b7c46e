"""One precise :class:`~dpframe.errors.LedgerError` per cause: locked, read-only, full disk,
corrupt, not a ledger, tampered with.

A diagnosis names the ledger's path, SQLite's result code and what was (not) done; it never
quotes a value read from the ledger.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
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


def _read_only_fs(folder: Path) -> bool:
    with contextlib.suppress(OSError):
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    return False


def _file_not_writable(path: Path) -> bool:
    return path.exists() and not os.access(path, os.W_OK)


def _folder_not_writable(folder: Path) -> bool:
    return not os.access(folder, os.W_OK)


def why_readonly(path: Path, readonly: bool) -> str:
    """Why SQLite cannot write the ledger at ``path``, in words."""
    folder = path.parent
    if _read_only_fs(folder):
        return "its file system is mounted read-only"
    if _file_not_writable(path):
        return "the file is not writable"
    if _folder_not_writable(folder):
        return (f"its folder {folder} is not writable (SQLite needs to create the -wal and "
                "-shm files beside the ledger)")
    if readonly:
        return "it was opened read-only"
    return "SQLite refused to write to it"


def cannot_write(path: Path) -> bool:
    """Whether the ledger's file or folder is not writable (or on a read-only file system)."""
    folder = path.parent
    return _read_only_fs(folder) or _file_not_writable(path) or _folder_not_writable(folder)


def disk_full(path: Path) -> bool:
    """Whether the file system holding the ledger has no space left."""
    try:
        st = os.statvfs(path.parent)
    except OSError:
        return False
    return st.f_bavail == 0 or (os.geteuid() == 0 and st.f_bfree == 0)


@dataclass(frozen=True)
class _Failure:
    """What a diagnosis needs to know of one failed SQLite call."""

    exc: BaseException
    path: Path
    nothing: str
    readonly: bool
    timeout: float

    @property
    def name(self) -> str:
        """SQLite's name of the error (``SQLITE_FULL``...), else the exception's type."""
        return getattr(self.exc, "sqlite_errorname", None) or type(self.exc).__name__

    @property
    def where(self) -> str:
        return f"ledger {self.path}"


def _locked(f: _Failure) -> LedgerError:
    return locked(f.path, f.timeout, f.nothing)


def _read_only(f: _Failure) -> LedgerError:
    return LedgerError(
        f"{f.where} is read-only: {why_readonly(f.path, f.readonly)} ({f.name}); {f.nothing}. "
        "`dpframe ledger show` can still read it; a session needs write access"
    )


def _full(f: _Failure) -> LedgerError:
    return LedgerError(
        f"the disk holding {f.where} is full ({f.name}); {f.nothing}. Free some space "
        "and retry: the ledger itself is intact"
    )


def _damaged(f: _Failure) -> LedgerError:
    return LedgerError(
        f"{f.where} is corrupt ({f.name}): SQLite found damaged pages; {f.nothing}. "
        "Restore it from a backup"
    )


def _not_a_database(f: _Failure) -> LedgerError:
    return LedgerError(f"{f.path} is not a dpframe ledger (not an SQLite database)")


def _io_error(f: _Failure) -> LedgerError:
    return _full(f) if disk_full(f.path) else LedgerError(
        f"I/O error on {f.where} ({f.name}); {f.nothing}"
    )


def _cannot_open(f: _Failure) -> LedgerError:
    return _read_only(f) if cannot_write(f.path) else LedgerError(
        f"cannot open {f.where} ({f.name}); {f.nothing}"
    )


def _unexpected(f: _Failure) -> LedgerError:
    return LedgerError(f"{f.where}: unexpected SQLite error {f.name}: {f.exc}; {f.nothing}")


def _sql_error(f: _Failure) -> LedgerError:
    if "no such table" in str(f.exc) or "no such column" in str(f.exc):
        return tampered(f.path, "a table or column of the ledger is missing")
    return _unexpected(f)


_DIAGNOSES: dict[int | None, Callable[[_Failure], LedgerError]] = {
    SQLITE_BUSY: _locked,
    SQLITE_LOCKED: _locked,
    SQLITE_READONLY: _read_only,
    SQLITE_PERM: _read_only,
    SQLITE_AUTH: _read_only,
    SQLITE_CANTOPEN: _cannot_open,
    SQLITE_FULL: _full,
    SQLITE_IOERR: _io_error,
    SQLITE_CORRUPT: _damaged,
    SQLITE_NOTADB: _not_a_database,
    SQLITE_ERROR: _sql_error,
}


def diagnose(
    exc: BaseException, path: Path, nothing: str, *, readonly: bool, timeout: float
) -> LedgerError:
    """One precise ``LedgerError`` per cause, from SQLite's result code (and, for an I/O error
    or a file SQLite cannot open, from the state of the disk and the folder)."""
    failure = _Failure(exc, path, nothing, readonly, timeout)
    return _DIAGNOSES.get(sqlite_code(exc), _unexpected)(failure)
