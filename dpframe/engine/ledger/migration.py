"""``dpframe ledger migrate``: the explicit migration of a ledger of schema 1, 2 or 3 to schema 4
(:func:`.legacy.migrate_any`), with a backup written first and a dry run.

**Backup.** Before anything is changed, a copy of the ledger as it is (SQLite's ``VACUUM
INTO`` of its committed state: every row, the header's version and application id; then put
in WAL mode like any ledger) is written to ``PATH.bak-<old schema>`` (or the path given),
inside the migration's write transaction, so no other writer can commit between the copy and
the migration. The copy is built in a temporary file in the backup's folder, flushed and
hard-linked to its name (as a new ledger is created, :mod:`.files`): the backup is whole or
absent, and an existing file is never overwritten (refused, nothing changed). If the migration
then fails, the backup is removed again (the ledger is unchanged). A ledger already at schema 4
gets no backup (nothing is written).

**Dry run.** The same migration runs on a private copy of the ledger in a temporary folder
(copied through a read-only open, which writes nothing beside the ledger): the report says
what the migration would do, or raises what it would raise, and the ledger and its folder are
left untouched.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
import uuid
from pathlib import Path
from typing import Any, Protocol

from ...errors import LedgerError
from .connection import LedgerConnection
from .files import _fsync, _remove, ledger_file
from .legacy import migrate_any
from .reports import checked_path
from .schema import APP_ID, SCHEMA_VERSION
from .signals import signals_held


class Migratable(Protocol):
    """What a migration needs of the ledger class (:class:`~.sqlite.SqliteLedger`), named
    here so that this module does not import it: ``sqlite`` imports ``migration``, never the
    other way round (no import circle, not even for types)."""

    path: Path
    _db: LedgerConnection

    def __init__(self, path: str | os.PathLike[str], *, readonly: bool = ...,
                 timeout: float = ...) -> None: ...

    def _setup(self, name: str | None, readonly: bool, timeout: float, *,
               needs_file: bool) -> None: ...

    def _prepare_writable(self, nothing: str) -> None: ...

    def _check_version(self, version: Any) -> None: ...

    def verify(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


def backup_target(path: Path, version: int, backup: str | os.PathLike[str] | None) -> Path:
    """Where the backup of the ledger at ``path`` (schema ``version``) goes: ``backup``, or
    ``PATH.bak-<version>`` beside it."""
    if backup is not None:
        return Path(backup).absolute()
    return path.with_name(f"{path.name}.bak-{version}")


def _check_free(target: Path) -> None:
    if os.path.lexists(target):
        raise LedgerError(f"backup {target} already exists: nothing was changed (move it away, "
                          "or name another one with --backup PATH)")
    if not target.parent.is_dir():
        raise LedgerError(f"cannot write backup {target}: folder {target.parent} does not "
                          "exist; nothing was changed")


def write_backup(source: Path, target: Path, made: list[Path]) -> None:
    """Copy the committed state of the ledger file ``source`` to ``target`` atomically (a
    temporary file in ``target``'s folder, flushed, then hard-linked: whole or absent, never
    over an existing file); ``target`` is appended to ``made`` as it is linked (signals held),
    so that a caller interrupted later removes it."""
    _check_free(target)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.backup")
    try:
        src = sqlite3.connect(f"{source.as_uri()}?mode=ro", uri=True, timeout=60)
        try:
            src.execute("VACUUM INTO ?", (str(tmp),))  # one consistent snapshot, whole
        finally:
            src.close()
        dst = sqlite3.connect(tmp)
        try:  # a ledger as any other: in WAL mode, so that it opens as it is
            dst.execute("PRAGMA journal_mode = WAL")
        finally:
            dst.close()
        _fsync(tmp)
        with signals_held():
            try:
                os.link(tmp, target)
                made.append(target)
            except FileExistsError:
                raise LedgerError(f"backup {target} already exists: nothing was changed") from None
            except OSError as exc:
                raise LedgerError(f"cannot write backup {target}: {exc.strerror}; nothing was "
                                  "changed") from exc
            finally:
                _remove(tmp)
            with contextlib.suppress(OSError):
                _fsync(target.parent, folder=True)
    except sqlite3.Error as exc:
        raise LedgerError(f"cannot write backup {target}: {exc}; nothing was changed") from exc
    finally:
        _remove(tmp)


def _version(conn: sqlite3.Connection) -> int | None:
    row = conn.execute("SELECT app, version FROM dpframe_schema").fetchone()
    if row is None or row[0] != APP_ID or isinstance(row[1], bool) or not isinstance(row[1], int):
        return None  # migrate_any refuses it, with its own message
    return int(row[1])


def migrate_file(cls: type[Migratable], path: str | os.PathLike[str], *,
                 session: str | None, timeout: float,
                 backup: str | os.PathLike[str] | None, make_backup: bool = True
                 ) -> dict[str, Any]:
    """:meth:`SqliteLedger.migrate`: ``verify``'s report plus ``migrated``, ``from_schema``
    and ``backup`` (the path written, or None)."""
    ledger = cls.__new__(cls)
    ledger.path = checked_path(path).absolute()
    ledger._setup(session, False, timeout, needs_file=True)
    nothing = "nothing was changed"
    made: list[Path] = []
    found: list[int | None] = []
    try:
        ledger._prepare_writable(nothing)
        source = ledger_file(ledger.path, must_exist=True)

        def go(conn: sqlite3.Connection) -> bool:
            version = _version(conn)
            found.append(version)
            if make_backup and version is not None and version < SCHEMA_VERSION:
                target = backup_target(ledger.path, version, backup)
                write_backup(source, target, made)
            return migrate_any(conn, ledger.path, session, ledger._check_version)

        try:
            migrated = ledger._db.transaction(go, write=True, nothing=nothing)
        except BaseException:
            for target in made:  # the ledger is unchanged: so is its folder
                with contextlib.suppress(OSError):
                    os.unlink(target)
            raise
        return {**ledger.verify(), "migrated": migrated, "from_schema": found[-1],
                "backup": str(made[0]) if made else None}
    finally:
        ledger.close()


def dry_run(cls: type[Migratable], path: str | os.PathLike[str], *, session: str | None,
            timeout: float, backup: str | os.PathLike[str] | None) -> dict[str, Any]:
    """The migration run on a private copy: its report, with ``backup`` the path a real run
    would write (after checking that it is free) and ``dry_run`` True; the ledger is not
    written."""
    where = checked_path(path).absolute()
    with tempfile.TemporaryDirectory(prefix="dpframe-migrate-") as folder:
        copy = Path(folder) / "ledger.sqlite"
        led = cls(where, readonly=True, timeout=timeout)
        try:
            def copy_to(conn: sqlite3.Connection) -> None:
                dst = sqlite3.connect(copy)
                try:
                    conn.backup(dst)
                finally:
                    dst.close()

            led._db.read(copy_to)
        finally:
            led.close()
        report = migrate_file(cls, copy, session=session, timeout=timeout, backup=None,
                              make_backup=False)
    target = None
    if report["migrated"]:
        target = backup_target(where, int(report["from_schema"]), backup)
        _check_free(target)
    return {**report, "backup": None if target is None else str(target), "dry_run": True}


__all__ = ["Migratable", "backup_target", "dry_run", "migrate_file", "write_backup"]
