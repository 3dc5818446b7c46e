"""Schema 3 hashes a ledger's rows in a cheaper encoding (issue 36, item 7: ``--verify`` was
CPU-bound on JSON and Fractions); schema-2 ledgers (dpframe 0.2) keep theirs, and neither can be
read as the other.

A schema-2 ledger is built here as dpframe 0.2 wrote it (plain SQL, rows hashed with the
schema-2 function :func:`~dpframe.engine.ledger.formats.legacy_row_hash`, which the golden values
below pin to dpframe 0.2's output bit for bit).
"""

from __future__ import annotations

import fractions
import hashlib
import json
import sqlite3
import sys
from fractions import Fraction
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import dpframe as dpf
from dpframe.cli.ledger import show_ledger
from dpframe.core.accounting import PrivacyCost, SpendTotals
from dpframe.engine.ledger import SqliteLedger
from dpframe.engine.ledger.chain import Head, write_head
from dpframe.engine.ledger.formats import genesis_2, legacy_row_hash
from dpframe.engine.ledger.schema import (
    APP_ID,
    CHAINED,
    HEADER_APP_ID,
    SCHEMA,
    SCHEMA_2,
    frac_text,
    run_script,
)
from tests.cli._support import inproc

from ._sql import run_sql

COST = PrivacyCost(Fraction(1, 10))
META = {"query": "count", "columns": ["age"], "mechanism": "geometric"}



def make_schema_2_ledger(path: Path, charges: int = 3) -> Path:
    """A ledger as dpframe 0.2 wrote it: schema 2, rows hashed with JSON (budget 1, ``charges``
    released charges of 1/10)."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("BEGIN")
    run_script(con, SCHEMA + ";" + SCHEMA_2)
    con.execute("ALTER TABLE entries DROP COLUMN event")  # schema 4's
    created, lid = "2026-01-01T00:00:00+00:00", "0" * 32
    con.execute("INSERT INTO dpframe_schema (app, version, created, neighbouring, ledger_id) "
                "VALUES (?, 2, ?, 'add_remove', ?)", (APP_ID, created, lid))
    prev, seq = genesis_2(APP_ID, created, "add_remove", lid), 0

    def chain(table: str, values: list[Any], **extra: Any) -> int:
        nonlocal prev, seq
        seq += 1
        names = [*CHAINED[table], *extra, "seq", "prev_hash"]
        rid = con.execute(
            f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
            (*values, *extra.values(), seq, prev)).lastrowid
        assert rid is not None
        prev = legacy_row_hash(prev, table, seq, rid, values)
        con.execute(f"UPDATE {table} SET row_hash = ? WHERE id = ?", (prev, rid))
        return rid

    chain("budget", [created, "1/1", "0/1", None, "created"])
    spent = Fraction(0)
    for i in range(charges):
        spent += Fraction(1, 10)
        eid = chain("entries", [f"2026-01-01T00:00:{i:02d}+00:00", "s", "count", '["age"]',
                                "geometric", "1/10", "0/1", None, "1/10", "0/1",
                                frac_text(spent), "0/1", 0, 42, None],
                    status="released", details="{}")
        chain("outcomes", [eid, f"2026-01-01T00:00:{i:02d}+00:00", "released", "{}"])
    write_head(con, Head(seq, prev, (Fraction(1), Fraction(0)), (spent, Fraction(0)),
                         SpendTotals(pure_eps=spent), None, 2), insert=True)
    con.execute(f"PRAGMA application_id = {HEADER_APP_ID}")
    con.execute("PRAGMA user_version = 2")
    con.execute("COMMIT")
    con.close()
    return path


def _new_ledger(path: Path, charges: int = 3) -> Path:
    led = SqliteLedger(path, 1, 0)
    for _ in range(charges):
        led.record(led.charge(COST, META), "released", {"noise_scale": 10})
    led.close()
    return path


def _refused_everywhere(path: Path, match: str = "fails verification") -> None:
    for attempt in (lambda: SqliteLedger(path, 1), lambda: SqliteLedger(path, readonly=True),
                    lambda: show_ledger(path), lambda: show_ledger(path, verify=True)):
        with pytest.raises(dpf.LedgerError, match=match):
            attempt()


def test_the_schema_2_encoding_is_kept_bit_for_bit() -> None:
    """Golden values computed by dpframe 0.2's ``chain.row_hash`` and ``chain.genesis``."""
    assert genesis_2("dpframe-ledger", "2026-01-01T00:00:00+00:00", "add_remove", "abc") == (
        "d4cbca2078ed75e8210d9008df25f7fc74f1eab0a6bfef8b936bc15e7682c141")
    assert legacy_row_hash("0" * 64, "entries", 2, 1, [
        "2026-01-01T00:00:01+00:00", None, "count", '["age"]', "geometric", "1/10", "0/1",
        None, "1/10", "0/1", "1/10", "0/1", 0, 42, "rows"]) == (
        "fe1ce7f2c4328d4ca081a19b6afaa2e39fe44adaa49e88300c5752a35c2d3e68")
    assert legacy_row_hash("f" * 64, "outcomes", 3, 1, [1, "t", "released", '{"x": "\u00e9"}']
                           ) == "50a4cad2b46c82d17ae7fac410ef1d94b66ff89f7685dc9f0684f8f2cd2eda2a"


def test_a_new_ledger_is_schema_4_and_hashes_each_row_as_documented(tmp_path: Path) -> None:
    """``row_hash = sha256(ascii((table, seq, id, prev_hash, *hashed values[, event])))``,
    recomputed here from the file alone; the version is in the schema row and SQLite's
    header; an entry's event is its privacy event's versioned JSON."""
    path = _new_ledger(tmp_path / "l.db")
    con = sqlite3.connect(path)
    assert con.execute("SELECT version FROM dpframe_schema").fetchone() == (4,)
    assert con.execute("PRAGMA user_version").fetchone() == (4,)
    seen = 0
    for table, cols in CHAINED.items():
        event = ", event" if table == "entries" else ""
        for row in con.execute(f"SELECT seq, id, prev_hash, row_hash, {', '.join(cols)}{event} "
                               f"FROM {table}"):
            seq, rid, prev, digest, *values = row
            if table == "entries":
                assert json.loads(values[-1])["v"] == 1
            text = ascii((table, seq, rid, prev, *values))
            assert hashlib.sha256(text.encode()).hexdigest() == digest
            seen += 1
    con.close()
    assert seen == 1 + 2 * 3  # the budget, then 3 x (entry, outcome)
    assert SqliteLedger(path, readonly=True).verify()["schema_version"] == 4


def test_a_schema_2_ledger_keeps_verifying_charging_and_its_format(tmp_path: Path) -> None:
    """A ledger written by dpframe 0.2 verifies, is charged (its new rows hashed the schema-2
    way: the chain heads its releases carry stay valid) and is not migrated."""
    path = make_schema_2_ledger(tmp_path / "old.db")
    before = SqliteLedger(path, readonly=True).verify()
    assert before["schema_version"] == 2 and before["entries"] == 3
    led = SqliteLedger(path, 1)
    assert led.spent() == (Fraction(3, 10), 0)
    led.record(led.charge(COST, META), "released", {"noise_scale": 10})
    report = led.verify()
    led.close()
    assert report["schema_version"] == 2 and report["rows"] == before["rows"] + 2
    con = sqlite3.connect(path)
    seq, rid, prev, digest, *values = con.execute(
        f"SELECT seq, id, prev_hash, row_hash, {', '.join(CHAINED['entries'])} FROM entries "
        "WHERE id = 4").fetchone()
    assert digest == legacy_row_hash(prev, "entries", seq, rid, values)
    assert con.execute("PRAGMA user_version").fetchone() == (2,)
    con.close()
    code, out = inproc("ledger", "show", str(path), "--verify")
    assert code == 0 and "schema 2" in out, out
    run_sql(path, "UPDATE entries SET query = 'other' WHERE id = 1")
    with pytest.raises(dpf.LedgerError, match="fails verification"):
        SqliteLedger(path, readonly=True).verify()


@pytest.mark.parametrize("header", [3, 2])
def test_a_schema_3_ledger_cannot_be_read_as_schema_2(tmp_path: Path, header: int) -> None:
    """Relabelled as schema 2 (header kept: a downgrade; header too: its genesis hash names
    schema 3, so its first row fails), it is refused everywhere, nothing changed."""
    path = _new_ledger(tmp_path / "l.db")
    run_sql(path, "UPDATE dpframe_schema SET version = 2", f"PRAGMA user_version = {header}")
    before = path.read_bytes()
    _refused_everywhere(path, "downgraded" if header == 3 else "fails verification")
    assert path.read_bytes() == before


def test_a_schema_2_ledger_with_a_newer_header_is_refused(tmp_path: Path) -> None:
    path = make_schema_2_ledger(tmp_path / "old.db")
    run_sql(path, "PRAGMA user_version = 3")
    _refused_everywhere(path, "downgraded")


@pytest.mark.parametrize("schema", [2, 3])
def test_a_blob_in_a_hashed_column_is_tampering(tmp_path: Path, schema: int) -> None:
    """dpframe 0.2 crashed with a TypeError (a blob is not JSON) instead of refusing."""
    path = (make_schema_2_ledger if schema == 2 else _new_ledger)(tmp_path / "l.db")
    run_sql(path, "UPDATE entries SET query = X'00' WHERE id = 2")
    _refused_everywhere(path)


@pytest.mark.parametrize("schema", [2, 3])
def test_an_edited_spend_that_still_adds_up_as_a_number_is_caught(tmp_path: Path,
                                                                  schema: int) -> None:
    """The same value spelled otherwise (2/10 for 1/5) changes the row's hash."""
    path = (make_schema_2_ledger if schema == 2 else _new_ledger)(tmp_path / "l.db")
    run_sql(path, "UPDATE entries SET spent_epsilon = '2/10' WHERE id = 2")
    _refused_everywhere(path)


def test_verification_does_no_fraction_arithmetic_per_row(tmp_path: Path) -> None:
    """The walk compares ``"num/den"`` texts as integers: the Fraction calls of a whole-chain
    verification do not grow with the ledger (dpframe 0.2 added two Fractions per entry)."""
    def fraction_calls(n: int) -> int:
        path = tmp_path / f"l{n}.db"
        led = SqliteLedger(path, 1000, 0)
        for k in range(n):
            led.charge(PrivacyCost(Fraction(1, 7 + k % 3)), META)
        calls = 0

        def count(frame: FrameType, event: str, arg: Any) -> None:
            nonlocal calls
            if event == "call" and frame.f_code.co_filename == fractions.__file__:
                calls += 1

        sys.setprofile(count)
        try:
            led.verify()
        finally:
            sys.setprofile(None)
            led.close()
        return calls

    small, big = fraction_calls(20), fraction_calls(200)
    assert big <= small + 20, (small, big)


@pytest.mark.parametrize("text", ["3/9", "1/2", "0/1", "00/01", "-1/2", "0.5", " 1/2", "1e-3",
                                  "1/0", "x", "", "/", "1/", "²/3", "1_0/3", "9" * 5000 + "/1",
                                  None, b"1/2", 1])
def test_the_walks_number_reader_agrees_with_parse_frac(text: Any) -> None:
    """``ratio`` (integers, no Fraction on ``"num/den"``) reads exactly what ``parse_frac``
    reads, and refuses exactly what it refuses (or what is missing)."""
    from dpframe.engine.ledger.schema import parse_frac
    from dpframe.engine.ledger.walk import _Bad, ratio
    try:
        want = parse_frac(text)
    except dpf.LedgerError:
        want = None
    if want is None:
        with pytest.raises(_Bad):
            ratio(text)
    else:
        n, d = ratio(text)
        assert d > 0 and Fraction(n, d) == want
