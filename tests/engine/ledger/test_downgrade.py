"""A ledger cannot be downgraded into a smaller spend (issue 31.3).

With plain SQL and no hash computed, an attacker dropped the chain's tables and indexes (and
columns), deleted the entries and set the schema version to 1. dpframe 0.2 took the file for a
dpframe 0.1 ledger, re-chained it on the next ``Session`` and reported spent 1.0 -> 0.0, then
released epsilon 1 more on a budget of 1. Now: a schema-1 ledger is never migrated silently
(``dpframe ledger migrate PATH``, recorded in the ledger); a file whose remains contradict its
stated version is refused as tampered with; and every export carries the ledger's chain head, so
``dpframe ledger verify PATH --against release.parquet`` shows a ledger rolled back or replaced.
"""

from __future__ import annotations

import sqlite3
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import dpframe as dpf
from dpframe.cli.commands import app
from dpframe.cli.ledger import show_ledger
from dpframe.core.accounting import PrivacyCost
from dpframe.engine.ledger import SqliteLedger
from tests.engine.ledger.test_interrupts import make_schema_1_ledger

CHAIN_TABLES = ("chain_head", "outcomes", "units")
CHAIN_INDEXES = ("budget_seq", "entries_seq", "outcomes_seq", "units_seq")
CHAIN_COLUMNS = {
    "dpframe_schema": ("ledger_id", "upgraded"),
    "budget": ("seq", "prev_hash", "row_hash"),
    "entries": ("privacy_unit", "seq", "prev_hash", "row_hash", "event"),
}
DF = pd.DataFrame({"x": [1.0, 2.0, 3.0]})


def _spent_ledger(tmp_path: Path) -> tuple[Path, Path]:
    """A ledger whose whole budget of 1 is spent by one release, and that release exported."""
    path = tmp_path / "budget.sqlite"
    s = dpf.Session(epsilon=1, ledger=str(path))
    res = DF.dp(s).count(epsilon=1)
    assert s.spent == (1.0, 0.0)
    release = tmp_path / "release.parquet"
    dpf.to_parquet(res, release, provenance=res.provenance)
    return path, release


def _downgrade(path: Path, *, keep: str | None = None) -> None:
    """The attack, with plain SQL (no hash computed): drop what the chain added, delete the
    entries, set the version to 1. ``keep`` leaves one kind of remains behind."""
    con = sqlite3.connect(path, isolation_level=None)
    try:
        for index in CHAIN_INDEXES:
            if keep != "index" or index != "budget_seq":
                con.execute(f"DROP INDEX {index}")
        for table in CHAIN_TABLES:
            if keep != "table" or table != "units":
                con.execute(f"DROP TABLE {table}")
        for extra in ("outcome_room", "chain_checkpoint"):  # outside the chain (0.2)
            con.execute(f"DROP TABLE IF EXISTS {extra}")
        for table, cols in CHAIN_COLUMNS.items():
            for col in cols:
                if (keep, col) not in (("column", "row_hash"), ("index", "seq")):
                    con.execute(f"ALTER TABLE {table} DROP COLUMN {col}")
        con.execute("DELETE FROM entries")
        if keep != "numbering":  # AUTOINCREMENT's counter remembers the deleted entries
            con.execute("DELETE FROM sqlite_sequence WHERE name = 'entries'")
        if keep != "header":  # the mark dpframe writes in the SQLite header
            con.execute("PRAGMA application_id = 0")
            con.execute("PRAGMA user_version = 0")
        if keep == "trigger":
            con.execute("CREATE TRIGGER t AFTER INSERT ON entries BEGIN SELECT 1; END")
        con.execute("UPDATE dpframe_schema SET version = 1")
    finally:
        con.close()


def test_a_downgraded_ledger_is_not_reset_to_a_full_budget(tmp_path: Path) -> None:
    """The attack as reported: after it, no session opens the ledger, nothing is released."""
    path, _ = _spent_ledger(tmp_path)
    _downgrade(path, keep="numbering")
    with pytest.raises(dpf.LedgerError) as err:
        s = dpf.Session(epsilon=1, ledger=str(path))
        DF.dp(s).count(epsilon=1)  # 0.2 released this: epsilon 2 spent on a budget of 1
    assert "fails verification" in str(err.value) and "downgraded" in str(err.value)


@pytest.mark.parametrize("keep", ["table", "index", "column", "trigger", "header", "numbering"])
def test_remains_of_a_newer_ledger_refuse_a_schema_1_claim(tmp_path: Path, keep: str) -> None:
    """Each remain alone (everything else forged to look like 0.1) refuses the file everywhere:
    session, read-only show, migration; nothing is changed."""
    path, _ = _spent_ledger(tmp_path)
    _downgrade(path, keep=keep)
    before = path.read_bytes()
    for attempt in (lambda: dpf.Session(epsilon=1, ledger=str(path)),
                    lambda: show_ledger(path),
                    lambda: SqliteLedger.migrate(path)):
        with pytest.raises(dpf.LedgerError, match="downgraded"):
            attempt()
    result = CliRunner().invoke(app, ["ledger", "migrate", str(path)])
    assert result.exit_code == 4, result.output
    assert path.read_bytes() == before


def test_a_schema_1_ledger_is_refused_until_migrated_explicitly(tmp_path: Path) -> None:
    """A genuine 0.1 ledger: read as it is read-only; every writable open refuses it naming the
    command; ``dpframe ledger migrate`` migrates it and the migration is a chained row that
    ``ledger show`` lists."""
    path = tmp_path / "old.sqlite"
    make_schema_1_ledger(path)
    spent = SqliteLedger(path, readonly=True).spent()
    before = path.read_bytes()
    for attempt in (lambda: SqliteLedger(path), lambda: SqliteLedger(path, 1),
                    lambda: dpf.Session(epsilon=1, ledger=str(path))):
        with pytest.raises(dpf.LedgerError, match=f"dpframe ledger migrate {path}"):
            attempt()
    assert path.read_bytes() == before
    result = CliRunner().invoke(app, ["ledger", "migrate", str(path)])
    assert result.exit_code == 0, result.output
    assert "Migrated" in result.output
    led = SqliteLedger(path)
    assert led.spent() == spent
    assert led.verify()["schema_version"] == 4  # migrated to the current format
    history = led.budget_history()
    assert [h["note"].split(" ")[0] for h in history] == ["created", "migrated"]
    assert history[-1]["session"] == "dpframe ledger migrate"
    led.close()
    assert "migrated from schema 1 by `dpframe ledger migrate`" in show_ledger(path, width=400)
    again = CliRunner().invoke(app, ["ledger", "migrate", str(path)])
    assert again.exit_code == 0 and "nothing to migrate" in again.output
    assert len(SqliteLedger(path, readonly=True).budget_history()) == 2


def _verify(path: Path, *releases: Path) -> tuple[int, str]:
    args = ["ledger", "verify", str(path)]
    for r in releases:
        args += ["--against", str(r)]
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.output


def test_exports_carry_the_chain_head(tmp_path: Path) -> None:
    """``to_arrow``, ``to_parquet`` and the CLI's files name the ledger's chain head right after
    the release's charge: ledger id, position and hash."""
    path = tmp_path / "budget.sqlite"
    s = dpf.Session(epsilon=1, ledger=str(path))
    res = DF.dp(s).count(epsilon=0.5)
    table = dpf.to_arrow(res, provenance=res.provenance)
    release = tmp_path / "release.parquet"
    dpf.to_parquet(res, release, provenance=res.provenance)
    prov = dpf.read_provenance(release)
    assert dpf.read_provenance(table)["ledger_head"] == prov["ledger_head"]
    led = SqliteLedger(path, readonly=True)
    report = led.verify()
    head = prov["ledger_head"]
    assert head["ledger_id"] == report["ledger_id"]
    # budget row, privacy-unit binding, the charge, its outcome
    assert head["seq"] == 3 and report["rows"] == 4
    assert led.link_at(3) == head["hash"]
    led.close()
    assert prov["ledger_entry"] == 1  # the existing keys stay
    code, out = _verify(path, release)
    assert code == 0, out
    assert "charged at row 3" in out


def test_in_memory_exports_carry_no_head(tmp_path: Path) -> None:
    s = dpf.Session(epsilon=1)
    res = DF.dp(s).count(epsilon=0.5)
    release = tmp_path / "mem.parquet"
    dpf.to_parquet(res, release, provenance=res.provenance)
    assert dpf.read_provenance(release)["ledger_head"] is None
    path, _ = _spent_ledger(tmp_path)
    code, out = _verify(path, release)
    assert code == 2 and "no ledger chain head" in out, out


def _restore(src: bytes, path: Path) -> None:
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    path.write_bytes(src)


@pytest.mark.parametrize("how", ["rolled back", "rolled back and charged again", "replaced",
                                 "downgraded and migrated"])
def test_verify_against_shows_a_rolled_back_or_replaced_ledger(tmp_path: Path, how: str) -> None:
    path = tmp_path / "budget.sqlite"
    SqliteLedger(path, 1).close()
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    fresh = path.read_bytes()
    s = dpf.Session(epsilon=1, ledger=str(path))
    release = tmp_path / "release.parquet"
    res = DF.dp(s).count(epsilon=1)
    dpf.to_parquet(res, release, provenance=res.provenance)
    del s
    assert _verify(path, release)[0] == 0
    if how.startswith("rolled back"):  # the copy taken before the release, restored
        _restore(fresh, path)
        if how.endswith("again"):  # and charged until the chain is as long as before
            led = SqliteLedger(path, 1)
            for _ in range(3):
                led.charge(PrivacyCost(Fraction(1, 10)), {"query": "q", "columns": [],
                                                          "mechanism": "laplace"})
            led.close()
    elif how == "replaced":  # a new ledger with the same budget under the same name
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        SqliteLedger(path, 1).close()
    else:  # a perfect forgery of a 0.1 ledger (nothing left to detect), then migrated
        _downgrade(path)
        with pytest.raises(dpf.LedgerError, match="dpframe ledger migrate"):
            dpf.Session(epsilon=1, ledger=str(path))
        assert SqliteLedger.migrate(path)["migrated"]
        assert SqliteLedger(path, readonly=True).spent() == (0, 0)
    code, out = _verify(path, release)
    assert code == 6, out
    assert ("rolled back" if how.startswith("rolled back") else "replaced") in out


def test_verify_refuses_a_tampered_ledger_and_a_foreign_file(tmp_path: Path) -> None:
    path, release = _spent_ledger(tmp_path)
    other = tmp_path / "other.parquet"
    pd.DataFrame({"a": [1]}).to_parquet(other)
    code, out = _verify(path, other)
    assert code == 2, out
    con = sqlite3.connect(path)
    con.execute("UPDATE entries SET epsilon = '0/1'")
    con.commit()
    con.close()
    assert _verify(path, release)[0] == 4

