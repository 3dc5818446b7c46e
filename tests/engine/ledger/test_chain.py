"""The SQLite ledger is tamper-evident, opens read-only, names each failure precisely and
protects one privacy unit (issue: reliability; docs/privacy.md, Budget and "One privacy unit per
session").

0.1 read a ledger whose last row was deleted with ``sqlite3`` as a smaller spend, called locked,
read-only and full ledgers "corrupt", could not show a ledger on read-only media, and left
interrupted entries out of ``ledger show``'s summary.
"""

from __future__ import annotations

import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

import dpframe as dpf
from dpframe.cli.commands import app
from dpframe.cli.ledger import show_ledger
from dpframe.core.accounting import PrivacyCost
from dpframe.engine.ledger import SqliteLedger

COST = PrivacyCost(Fraction(1, 10))
META = {"query": "count", "columns": ["age"], "mechanism": "geometric"}


def _ledger(tmp_path: Path, charges: int = 3) -> Path:
    path = tmp_path / "budget.sqlite"
    led = SqliteLedger(path, 1, 0)
    for _ in range(charges):
        led.record(led.charge(COST, META), "released", {"noise_scale": 10})
    led.close()
    return path


def _sql(path: Path, *statements: str) -> None:
    con = sqlite3.connect(path)
    try:
        for stmt in statements:
            con.execute(stmt)
        con.commit()
    finally:
        con.close()


def _refused(path: Path) -> None:
    """Every way of reading the ledger refuses it; none reads a smaller spend."""
    with pytest.raises(dpf.LedgerError, match="fails verification"):
        SqliteLedger(path)
    with pytest.raises(dpf.LedgerError, match="fails verification"):
        dpf.Session(epsilon=1, ledger=str(path))
    with pytest.raises(dpf.LedgerError, match="fails verification"):
        show_ledger(path)
    result = CliRunner().invoke(app, ["ledger", "show", str(path), "--verify"])
    assert result.exit_code == 4, result.output


def test_an_untouched_ledger_verifies(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    report = SqliteLedger(path).verify()
    assert report["entries"] == 3
    assert report["rows"] == 1 + 3 + 3  # budget, entries, outcomes
    assert len(report["head"]) == 64
    result = CliRunner().invoke(app, ["ledger", "show", str(path), "--verify"])
    assert result.exit_code == 0, result.output
    assert report["head"] in result.output
    assert "hash chain of 7 rows intact" in result.output


def test_deleting_the_last_entry_is_refused(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    _sql(path, "DELETE FROM outcomes WHERE entry_id = (SELECT max(id) FROM entries)",
         "DELETE FROM entries WHERE id = (SELECT max(id) FROM entries)")
    _refused(path)


def test_deleting_the_last_chained_row_is_refused(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    _sql(path, "DELETE FROM outcomes WHERE id = (SELECT max(id) FROM outcomes)")
    _refused(path)


def test_editing_a_charge_is_refused(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    _sql(path, "UPDATE entries SET epsilon = '1/100', requested_epsilon = '1/100' WHERE id = 1")
    _refused(path)


@pytest.mark.parametrize("seq", ["'x'", "'seven'", "NULL", "7.5"])
def test_editing_a_rows_place_in_the_chain_is_refused(tmp_path: Path, seq: str) -> None:
    """A chain position edited to text, a float or nothing is tampering (a LedgerError), not
    a TypeError from comparing it."""
    path = _ledger(tmp_path)
    _sql(path, f"UPDATE outcomes SET seq = {seq} WHERE id = (SELECT max(id) FROM outcomes)")
    _refused(path)


def test_editing_the_running_totals_is_refused(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    _sql(path, "UPDATE chain_head SET spent_epsilon = '0/1'")
    _refused(path)


def test_reordering_rows_is_refused(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    con = sqlite3.connect(path)
    (s1,), (s2,) = con.execute("SELECT seq FROM entries WHERE id IN (1, 2) ORDER BY id")
    con.execute("UPDATE entries SET seq = -1 WHERE id = 1")
    con.execute("UPDATE entries SET seq = ? WHERE id = 2", (s1,))
    con.execute("UPDATE entries SET seq = ? WHERE id = 1", (s2,))
    con.commit()
    con.close()
    _refused(path)


def test_inserting_a_copied_row_is_refused(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    con = sqlite3.connect(path)
    cols = [r[1] for r in con.execute("PRAGMA table_info(budget)") if r[1] not in ("id", "seq")]
    # a copy of the creation row (a larger budget) placed after the chain's end
    con.execute(f"INSERT INTO budget ({', '.join(cols)}, seq) SELECT {', '.join(cols)}, 8 "
                "FROM budget WHERE id = 1")
    con.execute("UPDATE budget SET epsilon = '100/1' WHERE seq = 8")
    con.commit()
    con.close()
    _refused(path)


def test_a_tampered_ledger_is_left_untouched(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    _sql(path, "DELETE FROM entries WHERE id = 3")
    before = path.read_bytes()
    with pytest.raises(dpf.LedgerError):
        SqliteLedger(path)
    assert path.read_bytes() == before


def test_readonly_open_reads_everything_and_writes_nothing(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    before = path.read_bytes()
    led = SqliteLedger(path, readonly=True)
    assert led.readonly
    assert led.spent() == (Fraction(3, 10), Fraction(0))
    assert [e["status"] for e in led.entries()] == ["released"] * 3
    with pytest.raises(dpf.LedgerError, match="read-only"):
        led.charge(COST, META)
    with pytest.raises(dpf.LedgerError, match="read-only"):
        led.bind_privacy_unit("rows")
    led.close()
    assert path.read_bytes() == before
    with pytest.raises(dpf.ValidationError):
        SqliteLedger(path, 1, readonly=True)


def test_show_reads_a_ledger_in_a_folder_it_cannot_write(tmp_path: Path, monkeypatch: Any) -> None:
    """Read-only media: SQLite cannot create the -shm file, so the first read fails with
    SQLITE_CANTOPEN; the ledger is then read with immutable=1 (no -wal pending)."""
    path = _ledger(tmp_path)
    real_connect = sqlite3.connect
    opened: list[str] = []

    def media_connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        opened.append(str(database))
        if "immutable=1" not in str(database):
            err = sqlite3.OperationalError("unable to open database file")
            err.sqlite_errorcode = 14  # type: ignore[attr-defined]  # SQLITE_CANTOPEN
            raise err
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", media_connect)
    text = show_ledger(path)
    assert "Entries: 3 (3 released, 0 failed)" in text
    assert any("immutable=1" in o for o in opened)


def test_show_counts_interrupted_entries(tmp_path: Path) -> None:
    path = _ledger(tmp_path, charges=2)
    led = SqliteLedger(path)
    led.charge(COST, META)  # interrupted before its outcome was recorded
    led.close()
    text = show_ledger(path)
    assert "Entries: 3 (2 released, 0 failed, 1 interrupted or running" in text
    s = dpf.Session(epsilon=1, ledger=str(path))
    assert s.spent == (pytest.approx(0.3), 0.0)  # the interrupted charge stands
    assert "1 interrupted or running" in s.report()


@pytest.mark.parametrize(("code", "words"), [
    (5, "is locked"),  # SQLITE_BUSY
    (8, "is read-only"),  # SQLITE_READONLY
    (13, "is full"),  # SQLITE_FULL
    (11, "is corrupt"),  # SQLITE_CORRUPT
])
def test_each_failure_has_its_own_diagnosis(tmp_path: Path, code: int, words: str) -> None:
    led = SqliteLedger(_ledger(tmp_path, charges=0))
    err = sqlite3.OperationalError("x")
    err.sqlite_errorcode = code  # type: ignore[attr-defined]
    message = str(led._db.diagnose(err, "nothing was charged"))
    assert words in message
    assert "nothing was charged" in message
    if code != 11:
        assert "corrupt" not in message


def test_a_held_lock_is_reported_as_locked_and_charges_nothing(tmp_path: Path) -> None:
    path = _ledger(tmp_path, charges=0)
    led = SqliteLedger(path, timeout=0.3)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(dpf.LedgerError, match="is locked") as info:
            led.charge(COST, META)
        assert "corrupt" not in str(info.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert led.spent() == (0, 0)
    led.charge(COST, META)  # not wedged
    assert led.spent() == (Fraction(1, 10), 0)


def test_a_ledger_protects_one_privacy_unit(tmp_path: Path) -> None:
    path = tmp_path / "unit.sqlite"
    df = pd.DataFrame({"u": [1, 1, 2], "x": [1.0, 2.0, 3.0]})
    s = dpf.Session(epsilon=1, ledger=str(path), privacy_unit="u")
    assert s.privacy_unit == "u"
    # the unit is recorded in the file: a later session (another process) cannot change it
    later = dpf.Session(epsilon=1, ledger=str(path))
    assert later.privacy_unit == "u"
    with pytest.raises(dpf.PrivacyUnitError):
        df.dp(later).count(epsilon=0.1)
    with pytest.raises(dpf.PrivacyUnitError):
        dpf.Session(epsilon=1, ledger=str(path), privacy_unit="x")
    assert later.spent == (0.0, 0.0)
    df.dp(later, privacy_unit="u", max_rows_per_unit=2).count(epsilon=0.1)
    assert later.spent == (pytest.approx(0.1), 0.0)


def test_the_first_release_fixes_the_unit_of_a_new_ledger(tmp_path: Path) -> None:
    path = tmp_path / "rows.sqlite"
    df = pd.DataFrame({"u": [1, 1, 2], "x": [1.0, 2.0, 3.0]})
    s = dpf.Session(epsilon=1, ledger=str(path))
    assert s.privacy_unit is None
    df.dp(s).count(epsilon=0.25)
    assert s.privacy_unit == "rows"
    with pytest.raises(dpf.PrivacyUnitError):
        df.dp(s, privacy_unit="u", max_rows_per_unit=2).count(epsilon=0.25)
    assert s.spent == (0.25, 0.0)
    other = dpf.Session(epsilon=1, ledger=str(path))
    assert other.privacy_unit == "rows"


def test_a_schema_1_ledger_is_migrated_and_then_verified(tmp_path: Path) -> None:
    """A ledger written by 0.1 (no chain) is read as it is read-only, chained in place by an
    explicit migration (never silently: tests/engine/ledger/test_downgrade.py), and from then on a
    deleted row is refused."""
    from tests.engine.ledger.test_interrupts import make_schema_1_ledger

    path = tmp_path / "old.sqlite"
    make_schema_1_ledger(path)
    old = SqliteLedger(path, readonly=True)
    spent = old.spent()
    with pytest.raises(dpf.LedgerError, match="schema 1"):
        old.verify()
    old.close()
    SqliteLedger.migrate(path)
    led = SqliteLedger(path)
    assert led.spent() == spent
    report = led.verify()
    assert report["schema_version"] == 4  # migrated to the current format
    led.close()
    _sql(path, "DELETE FROM entries WHERE id = (SELECT max(id) FROM entries)")
    _refused(path)
