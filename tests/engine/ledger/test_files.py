"""A ledger's file: created atomically, never adopted half-built or empty, never anything but a
regular file (issues 31.6 and 36.6).

0.2 let six processes that opened one new ledger within milliseconds wait out the 60 s lock
timeout (one connection first saw the empty file in rollback-journal mode, then asked for WAL
while the others' WAL connections held shared locks); it re-created a ledger truncated to 0 bytes
with the full budget, adopted the empty file a SIGKILLed first run left, and let SQLite create
``/dev/null-journal`` for a ledger symlinked to ``/dev/null``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import socket
import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import dpframe as dpf
from dpframe.core.accounting import PrivacyCost
from dpframe.engine.ledger import SqliteLedger

COST = PrivacyCost(Fraction(1, 100))
META = {"query": "count", "columns": [], "mechanism": "laplace"}
PROCESSES, LEDGERS, CHARGES = 6, 12, 60


def _nightly_job(folder: str, barrier: Any, results: Any) -> None:
    """One of six jobs started together: for each new ledger, open it as the others do, then
    charge 0.01 sixty times."""
    for r in range(LEDGERS):
        barrier.wait()
        ok = over = 0
        errors: list[str] = []
        try:
            led = SqliteLedger(Path(folder) / f"nightly-{r}.sqlite", 1, timeout=20)
            for _ in range(CHARGES):
                try:
                    led.charge(COST, META)
                    ok += 1
                except dpf.BudgetExceededError:
                    over += 1
            led.close()
        except Exception as exc:  # every other error is a failure of the test
            errors.append(f"{type(exc).__name__}: {exc}")
        results.put((r, ok, over, errors))


def test_six_processes_creating_twelve_new_ledgers_at_once(tmp_path: Path) -> None:
    """6 processes x 12 new ledgers: per budget of 1, exactly 100 of the 360 charges of 0.01
    are answered, the other 260 raise BudgetExceededError, and nothing else fails (0.2: a
    process waited out the lock timeout in most runs of a dozen rounds)."""
    ctx = mp.get_context("fork")
    barrier, results = ctx.Barrier(PROCESSES), ctx.Queue()
    jobs = [ctx.Process(target=_nightly_job, args=(str(tmp_path), barrier, results))
            for _ in range(PROCESSES)]
    for job in jobs:
        job.start()
    try:
        got = [results.get(timeout=300) for _ in range(PROCESSES * LEDGERS)]
    finally:
        for job in jobs:
            job.join(timeout=30)
            if job.is_alive():
                job.kill()
    for r in range(LEDGERS):
        mine = [g for g in got if g[0] == r]
        errors = [e for g in mine for e in g[3]]
        assert not errors, (r, errors[:2])
        assert sum(g[1] for g in mine) == 100, r
        assert sum(g[2] for g in mine) == PROCESSES * CHARGES - 100, r
        led = SqliteLedger(tmp_path / f"nightly-{r}.sqlite", readonly=True)
        assert led.spent() == (1, 0) and len(led.entries()) == 100
        led.close()
    assert not list(tmp_path.glob(".*.creating*"))  # no temporary file left behind


# -- hostile paths: refused before SQLite touches them ----------------------------------------


@pytest.fixture
def no_sqlite(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Fails the test if SQLite is asked to open anything (it would create -journal files)."""
    opened: list[str] = []

    def connect(database: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(database))
        raise AssertionError(f"SQLite opened {database}")

    monkeypatch.setattr(sqlite3, "connect", connect)
    return opened


def _refused(path: Path, match: str) -> None:
    for attempt in (lambda: dpf.Session(epsilon=1, ledger=str(path)),
                    lambda: SqliteLedger(path, readonly=True)):
        with pytest.raises(dpf.LedgerError, match=match):
            attempt()


def test_a_ledger_symlinked_to_dev_null_is_refused_before_sqlite(
    tmp_path: Path, no_sqlite: list[str]
) -> None:
    link = tmp_path / "budget.sqlite"
    link.symlink_to("/dev/null")
    _refused(link, "is a device, not a regular file")
    _refused(Path("/dev/null"), "is a device, not a regular file")
    assert no_sqlite == []


@pytest.mark.parametrize("kind", ["fifo", "socket", "folder", "dangling link"])
def test_what_is_not_a_regular_file_is_refused_before_sqlite(
    tmp_path: Path, kind: str, no_sqlite: list[str]
) -> None:
    path = tmp_path / "budget.sqlite"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
    elif kind == "folder":
        path.mkdir()
    else:
        path.symlink_to(tmp_path / "missing.sqlite")
    _refused(path, {"fifo": "FIFO", "socket": "socket", "folder": "is a folder",
                    "dangling link": "symbolic link to a missing file"}[kind])
    assert no_sqlite == []
    assert not (tmp_path / "missing.sqlite").exists()


def test_a_ledger_truncated_to_zero_bytes_is_refused(tmp_path: Path) -> None:
    """An existing file that is not a ledger is never re-created with the full budget."""
    path = tmp_path / "budget.sqlite"
    s = dpf.Session(epsilon=1, ledger=str(path))
    s.close()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    path.write_bytes(b"")
    _refused(path, "empty file, not a dpframe ledger")
    with pytest.raises(dpf.LedgerError, match="empty file"):
        SqliteLedger(path, 1)
    assert path.stat().st_size == 0


def test_a_symlink_to_a_ledger_is_followed(tmp_path: Path) -> None:
    """A link to a regular file is followed: the ledger and its -wal/-shm live at the target."""
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "budget.sqlite"
    link.symlink_to(real / "budget.sqlite")
    with pytest.raises(dpf.LedgerError, match="symbolic link to a missing file"):
        SqliteLedger(link, 1)  # a dangling link is not a place to create a ledger
    SqliteLedger(real / "budget.sqlite", 1).close()
    led = SqliteLedger(link, 1)
    led.charge(COST, META)
    assert led.path == real / "budget.sqlite"
    assert (real / "budget.sqlite-wal").exists() and not Path(str(link) + "-wal").exists()
    led.close()
    assert SqliteLedger(real / "budget.sqlite", readonly=True).spent() == (Fraction(1, 100), 0)


def _die_while_creating(path: str) -> None:
    """A first run SIGKILLed while it creates the ledger (after its tables exist)."""
    import dpframe.engine.ledger.create as create_module

    real = create_module.append

    def append(conn: Any, *args: Any, **kwargs: Any) -> Any:
        real(conn, *args, **kwargs)
        os._exit(9)

    create_module.append = append  # type: ignore[assignment]
    SqliteLedger(path, 1)


def test_a_process_killed_while_creating_leaves_no_ledger(tmp_path: Path) -> None:
    """Creation is atomic: a run killed mid-creation leaves no ledger at the path (0.2 left an
    SQLite file the next run adopted), so the next run creates a whole one."""
    path = tmp_path / "budget.sqlite"
    proc = mp.get_context("fork").Process(target=_die_while_creating, args=(str(path),))
    proc.start()
    proc.join(timeout=60)
    assert proc.exitcode == 9
    assert not path.exists()
    led = SqliteLedger(path, 1)
    assert led.verify()["rows"] == 1 and led.spent() == (0, 0)
    led.close()


def test_a_busy_answer_while_connecting_is_waited_for(tmp_path: Path) -> None:
    """SQLite may answer BUSY while a new connection reads the schema (another connection
    holds the file, or is recovering the WAL index): the open waits, interruptibly, as for any
    lock. 0.2 reported it at once as "locked for more than 60 s" (one of the 31.6 failures)."""
    import threading

    path = tmp_path / "budget.sqlite"
    SqliteLedger(path, 1).close()
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode = DELETE")  # a copy made with a tool, say
    con.close()
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    timer = threading.Timer(0.3, lambda: holder.execute("ROLLBACK"))
    timer.start()
    try:
        led = SqliteLedger(path, 1, timeout=30)
        led.charge(COST, META)
        led.close()
    finally:
        timer.join()
        holder.close()
    assert SqliteLedger(path, readonly=True).spent() == (Fraction(1, 100), 0)
