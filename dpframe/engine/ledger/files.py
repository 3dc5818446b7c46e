"""The ledger's file: what a path may name, and how a new ledger comes into being.

**Paths** (:func:`ledger_file`), checked before SQLite touches anything: a symbolic link is
followed to its target (the ledger, and SQLite's ``-wal``/``-shm`` files, live beside the
target); a dangling link, a folder, a device (``/dev/null``...), a FIFO or a socket is refused,
and so is an existing file that is empty (a 0-byte file is not a ledger: re-creating it would
hand out the full budget again). So SQLite never creates ``/dev/null-journal`` or adopts an
empty file.

**Creation** (:func:`create_atomically`) is atomic: the complete ledger (tables, budget row,
chain head, WAL mode) is built in a temporary file in the same folder, flushed to disk, then
hard-linked to its name; ``os.link`` fails if the name exists, in which case another process
created the ledger first and its ledger is opened instead. Nobody ever sees, opens or adopts a
half-built ledger, a process killed during creation leaves no ledger (at worst a stray
``.NAME.*.creating`` file, never read), and every opened ledger is already in WAL mode, so no
open changes the journal mode while others read (the cause of the 60 s waits of issue 31.6).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import stat
import uuid
from collections.abc import Callable
from pathlib import Path

from ...errors import LedgerError
from .diagnose import diagnose
from .signals import signals_held

_NO_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK}


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def ledger_file(path: Path, *, must_exist: bool) -> Path:
    """The file the ledger at ``path`` (absolute) lives in, symbolic links resolved; refuses
    (``LedgerError``, nothing touched) a missing folder, a dangling link, anything but a regular
    file, an empty file, and (with ``must_exist``) a missing file."""
    if os.path.lexists(path) and not os.path.exists(path):
        raise LedgerError(
            f"ledger path {path} is a symbolic link to a missing file; point it at an existing "
            "ledger or remove it"
        )
    real = Path(os.path.realpath(path))
    if not real.parent.is_dir():
        raise LedgerError(
            f"cannot create ledger {path}: folder {real.parent} does not exist"
        )
    try:
        st = os.stat(real)
    except FileNotFoundError:
        if must_exist:
            raise LedgerError(f"no ledger at {path} (a new ledger needs a budget)") from None
        return real
    except OSError as exc:
        raise LedgerError(f"cannot read ledger {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(st.st_mode):
        what = _kind(st.st_mode)
        if what == "a folder":
            raise LedgerError(f"ledger path {path} is a folder, not a file")
        raise LedgerError(
            f"ledger path {path} is {what}, not a regular file: a ledger must be a file"
        )
    if st.st_size == 0:
        raise LedgerError(
            f"{path} is an empty file, not a dpframe ledger: nothing was changed (a new "
            "ledger is created only where no file exists; remove the empty file to create one)"
        )
    return real


def _fsync(path: Path, *, folder: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if folder else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(tmp: Path) -> None:
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            os.unlink(str(tmp) + suffix)


def _build(tmp: Path, build: Callable[[sqlite3.Connection], None]) -> None:
    """The complete ledger in ``tmp``, in WAL mode, closed (so its content is in the file)."""
    conn = sqlite3.connect(str(tmp), timeout=0, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = MEMORY")  # nobody else sees this file
        conn.execute("BEGIN IMMEDIATE")
        build(conn)
        conn.execute("COMMIT")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        if not mode or str(mode[0]).lower() != "wal":
            raise LedgerError(f"cannot enable WAL mode in {tmp.parent}")
    finally:
        conn.close()


def create_atomically(path: Path, build: Callable[[sqlite3.Connection], None]) -> bool:
    """Create the ledger ``path`` whole: ``build(conn)`` fills a temporary file in the same
    folder (in one transaction), which is flushed and hard-linked to ``path``. True if this
    call created it, False if another process had created ``path`` first (its ledger stands).
    Signal handlers are held back while the file is linked and the temporary file removed."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.creating")
    try:
        _build(tmp, build)
        _fsync(tmp)
        with signals_held():
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
            except OSError as exc:
                if exc.errno in _NO_LINKS:
                    raise LedgerError(
                        f"cannot create ledger {path}: its file system does not support hard "
                        "links, which dpframe needs to create a ledger atomically; create it "
                        "on a local disk and copy it there"
                    ) from exc
                raise
            finally:
                _remove(tmp)
            with contextlib.suppress(OSError):
                _fsync(path.parent, folder=True)
        return True
    except sqlite3.Error as exc:
        raise diagnose(exc, path, "nothing was created", readonly=False, timeout=0) from exc
    finally:
        _remove(tmp)
