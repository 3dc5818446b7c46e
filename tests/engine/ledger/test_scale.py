"""A ledger that stays fast for years (issue 36, item 7): ``ledger show`` pages its entries,
read-only commands write nothing beside the ledger, and opens verify the hash chain since a
verified checkpoint while ``--verify`` still walks the whole chain. Structural checks only (the
timings are benchmarks/bench_ledger.py's)."""

from __future__ import annotations

import os
import sqlite3
from fractions import Fraction
from pathlib import Path

import pytest

from dpframe.core.accounting import PrivacyCost
from dpframe.engine.ledger import SqliteLedger
from dpframe.engine.ledger.chain import _HEAD_COLS, _seal, genesis
from dpframe.engine.ledger.formats import ROW_HASH, WIDTH, row_sql
from dpframe.engine.ledger.schema import CHAINED
from dpframe.errors import LedgerError
from tests.cli._support import inproc

from ._sql import run_sql

COST = PrivacyCost(Fraction(1, 100))


def ledger_with(path: Path, n: int, *, opens: int = 1) -> Path:
    """A ledger of ``n`` released charges, made over ``opens`` sessions (each open verifies
    and moves the checkpoint to the head)."""
    done = 0
    for k in range(opens):
        led = SqliteLedger(path, 10)
        for _ in range(n // opens + (k < n % opens)):
            done += 1
            led.record(led.charge(COST, {"query": f"q{done}"}), "released", {})
        led.close()
    return path


def beside(path: Path) -> dict[str, tuple[int, int]]:
    """Every file in the ledger's folder with its size and mtime."""
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in path.parent.iterdir()}


# -- paging -----------------------------------------------------------------------------------

def test_show_lists_the_last_entries_and_says_how_many_are_hidden(tmp_path: Path) -> None:
    path = ledger_with(tmp_path / "l.db", 30)
    code, out = inproc(*["ledger", "show", str(path)])
    assert code == 0, out
    listed = [i for i in range(1, 31) if f"│ {i} │ 20" in out]
    assert listed == list(range(11, 31))
    assert "Entries: 30 (30 released, 0 failed)" in out
    assert "10 earlier entries are hidden" in out and "--all" in out
    code, out = inproc(*["ledger", "show", str(path), "--all"])
    assert code == 0 and [i for i in range(1, 31) if f"│ {i} │ 20" in out] == list(range(1, 31))
    assert "hidden" not in out
    code, out = inproc(*["ledger", "show", str(path), "--last", "3"])
    assert [i for i in range(1, 31) if f"│ {i} │ 20" in out] == [28, 29, 30]
    assert "27 earlier entries are hidden" in out


# -- read-only for real -----------------------------------------------------------------------

@pytest.mark.parametrize("args", [["ledger", "show"], ["ledger", "show", "--verify"],
                                  ["ledger", "show", "--json"], ["ledger", "verify"]])
def test_read_only_commands_leave_nothing_beside_the_ledger(tmp_path: Path,
                                                            args: list[str]) -> None:
    """No -wal or -shm file appears beside the ledger, nothing in its folder changes (size,
    mtime)."""
    path = ledger_with(tmp_path / "l.db", 5)
    before = beside(path)
    assert list(before) == ["l.db"]
    code, out = inproc(*[*args[:2], str(path), *args[2:]])
    assert code == 0, out
    assert beside(path) == before


def test_a_quiet_read_sees_a_writer_that_came_meanwhile(tmp_path: Path) -> None:
    """A read-only ledger opened lock-free (nothing beside it) reads again, with locks, when a
    writer changed it since: it never reports a torn read as tampering."""
    path = ledger_with(tmp_path / "l.db", 3)
    reader = SqliteLedger(path, readonly=True)
    writer = SqliteLedger(path, 10)
    writer.record(writer.charge(COST, {"query": "late"}), "released", {})
    assert reader.spent()[0] == Fraction(4, 100)
    assert len(reader.entries()) == 4 and reader.verify()["entries"] == 4
    reader.close()
    writer.close()


# -- the checkpoint ---------------------------------------------------------------------------


def rechain(path: Path) -> None:
    """A forger's rewrite: recompute every row hash (in the ledger's own format) and the head's
    seal (the checkpoint left as it was)."""
    con = sqlite3.connect(path, isolation_level=None)
    try:
        app, version, created, rel, lid = con.execute(
            "SELECT app, version, created, neighbouring, ledger_id FROM dpframe_schema").fetchone()
        rows = []
        for table in CHAINED:
            rows += con.execute(row_sql(version)[table]).fetchall()
        prev = genesis(app, created, rel, lid, version)
        for r in sorted(rows, key=lambda r: r[2]):
            r = (None, *r[1:4], prev, *r[5:])
            digest = ROW_HASH[version](r, WIDTH[r[1]])
            con.execute(f"UPDATE {r[1]} SET prev_hash = ?, row_hash = ? WHERE id = ?",
                        (prev, digest, r[3]))
            prev = digest
        stored = list(con.execute(f"SELECT {_HEAD_COLS} FROM chain_head").fetchone())
        stored[1] = prev
        con.execute("UPDATE chain_head SET hash = ?, seal = ? WHERE id = 1",
                    (prev, _seal(stored)))
    finally:
        con.close()


def refused(path: Path) -> list[str]:
    """Which of open (writable), open read-only, show and --verify refuse the ledger."""
    out = []
    for name, fn in [("open", lambda: SqliteLedger(path, 10).close()),
                     ("read-only", lambda: SqliteLedger(path, readonly=True).close()),
                     ("show", lambda: SqliteLedger.read_snapshot(path, last=20)),
                     ("verify", lambda: SqliteLedger.read_snapshot(path, integrity=True))]:
        try:
            fn()
        except LedgerError as exc:
            assert "fails verification" in str(exc)
            out.append(name)
    return out


def test_every_open_writes_a_checkpoint_at_the_head(tmp_path: Path) -> None:
    path = ledger_with(tmp_path / "l.db", 6, opens=3)
    with sqlite3.connect(path) as con:
        seq, digest = con.execute("SELECT seq, hash FROM chain_checkpoint").fetchone()
        assert seq == 9  # budget row + 2 x (charge, outcome) before the last open
        assert con.execute("SELECT row_hash FROM outcomes WHERE seq = 9").fetchone()[0] == digest
    con.close()
    assert refused(path) == []


def test_an_edit_after_the_checkpoint_is_caught_on_every_open(tmp_path: Path) -> None:
    path = ledger_with(tmp_path / "l.db", 6, opens=3)
    run_sql(path, "UPDATE entries SET query = 'other' WHERE id = 6")  # charged after it
    assert refused(path) == ["open", "read-only", "show", "verify"]


def test_an_edit_before_the_checkpoint_is_caught_by_verify(tmp_path: Path) -> None:
    """A row edited before the checkpoint (its hash not recomputed) is outside what an open
    checks, but ``--verify`` (the whole chain) refuses the ledger."""
    path = ledger_with(tmp_path / "l.db", 6, opens=3)
    run_sql(path, "UPDATE entries SET query = 'other' WHERE id = 1")
    assert "verify" in refused(path)
    with pytest.raises(LedgerError, match="fails verification"):
        SqliteLedger(path, readonly=True).verify()


def test_a_chain_rewritten_before_the_checkpoint_is_caught_on_every_open(
        tmp_path: Path) -> None:
    """A forger edits an early entry and recomputes every hash and the head's seal: the row at
    the checkpoint's position no longer has the hash verified there, so every open, ``show``
    and ``--verify`` refuse it (the whole chain alone would verify)."""
    path = ledger_with(tmp_path / "l.db", 6, opens=3)
    run_sql(path, "UPDATE entries SET query = 'other' WHERE id = 1")
    rechain(path)
    assert refused(path) == ["open", "read-only", "show", "verify"]
    run_sql(path, "DROP TABLE chain_checkpoint")  # without a checkpoint, nothing tells
    assert refused(path) == []


def test_an_edited_checkpoint_is_caught(tmp_path: Path) -> None:
    path = ledger_with(tmp_path / "l.db", 6, opens=3)
    run_sql(path, "UPDATE chain_checkpoint SET state = replace(state, '\"spent\"', '\"spent\" ')")
    assert refused(path) == ["open", "read-only", "show", "verify"]


def test_a_row_without_a_place_after_the_checkpoint_is_caught(tmp_path: Path) -> None:
    path = ledger_with(tmp_path / "l.db", 6, opens=3)
    run_sql(path, "INSERT INTO entries (time, query, columns, mechanism, requested_epsilon, "
               "requested_delta, epsilon, delta, spent_epsilon, spent_delta, seeded, status, "
               "details) VALUES ('t', 'q', '[]', 'm', '0/1', '0/1', '0/1', '0/1', '0/1', "
               "'0/1', 0, 'charged', '{}')")
    assert refused(path) == ["open", "read-only", "show", "verify"]


def test_a_lost_checkpoint_means_the_whole_chain_is_walked(tmp_path: Path) -> None:
    path = ledger_with(tmp_path / "l.db", 4, opens=2)
    run_sql(path, "DELETE FROM chain_checkpoint")
    run_sql(path, "UPDATE entries SET query = 'other' WHERE id = 1")
    assert refused(path) == ["open", "read-only", "show", "verify"]
    assert os.path.exists(path)
