"""The SQLite ledger's tables, and how budget numbers and entries are stored and read back.

Fractions are stored exactly, as TEXT ``"num/den"``. Schema 2 (dpframe 0.2) adds the hash chain
(``seq``, ``prev_hash``, ``row_hash`` columns, the ``outcomes``, ``units`` and ``chain_head``
tables) to schema 1 (dpframe 0.1). Schema 3 has the same tables and hashes the same fields, in a
cheaper encoding (:mod:`.formats`); schema-2 ledgers keep theirs. Schema 4 adds each entry's
``event`` (the versioned JSON of its privacy event), hashed with the entry's row: a session's
spend on a schema-4 ledger is recomposed from the events by its accountant.
"""

from __future__ import annotations

import json
import sqlite3
from fractions import Fraction
from typing import Any

from ...errors import LedgerError

SCHEMA_VERSION = 4
#: The versions of a ledger with a hash chain (each with its row encoding, :mod:`.formats`).
CHAINED_VERSIONS = (2, 3, 4)
APP_ID = "dpframe-ledger"
STATUSES = ("charged", "released", "failed")
NEIGHBOURING = ("add_remove", "change_one")
SQLITE_MAGIC = b"SQLite format 3\x00"
#: Written in the SQLite header (``PRAGMA application_id``) of every ledger of schema 2 or
#: later, with ``PRAGMA user_version`` = its schema version; dpframe 0.1 (schema 1) set neither.
HEADER_APP_ID = 0x44504652  # "DPFR"

#: The exact tables and columns of a schema-1 ledger (dpframe 0.1), which had no index, view
#: or trigger: anything else in a file that says it is schema 1 is a remain of a newer ledger.
LEGACY_COLUMNS: dict[str, tuple[str, ...]] = {
    "dpframe_schema": ("app", "version", "created", "neighbouring"),
    "budget": ("id", "time", "epsilon", "delta", "session", "note"),
    "entries": (
        "id", "time", "session", "query", "columns", "mechanism", "requested_epsilon",
        "requested_delta", "rho", "epsilon", "delta", "spent_epsilon", "spent_delta", "seeded",
        "status", "details", "pid",
    ),
}

SCHEMA = """
CREATE TABLE dpframe_schema (
    app TEXT NOT NULL,
    version INTEGER NOT NULL,
    created TEXT NOT NULL,
    neighbouring TEXT NOT NULL,
    ledger_id TEXT,
    upgraded TEXT
);
CREATE TABLE budget (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    epsilon TEXT NOT NULL,
    delta TEXT NOT NULL,
    session TEXT,
    note TEXT NOT NULL,
    seq INTEGER,
    prev_hash TEXT,
    row_hash TEXT
);
CREATE TABLE entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    session TEXT,
    query TEXT NOT NULL,
    columns TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    requested_epsilon TEXT NOT NULL,
    requested_delta TEXT NOT NULL,
    rho TEXT,
    epsilon TEXT NOT NULL,
    delta TEXT NOT NULL,
    spent_epsilon TEXT NOT NULL,
    spent_delta TEXT NOT NULL,
    seeded INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('charged', 'released', 'failed')),
    details TEXT NOT NULL,
    pid INTEGER,
    privacy_unit TEXT,
    seq INTEGER,
    prev_hash TEXT,
    row_hash TEXT,
    event TEXT
)
"""

#: Schema 3 -> 4 (``dpframe ledger migrate``): the entries' event column.
UPGRADE_3_TO_4 = "ALTER TABLE entries ADD COLUMN event TEXT"

#: Schema-2 additions, shared by new ledgers and the upgrade of schema-1 ones.
SCHEMA_2 = """
CREATE TABLE outcomes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    entry_id INTEGER NOT NULL UNIQUE,
    time TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('released', 'failed')),
    details TEXT NOT NULL,
    seq INTEGER,
    prev_hash TEXT,
    row_hash TEXT
);
CREATE TABLE units (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    unit TEXT NOT NULL,
    session TEXT,
    seq INTEGER,
    prev_hash TEXT,
    row_hash TEXT
);
CREATE TABLE chain_head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    rows INTEGER NOT NULL,
    hash TEXT NOT NULL,
    budget_epsilon TEXT NOT NULL,
    budget_delta TEXT NOT NULL,
    spent_epsilon TEXT NOT NULL,
    spent_delta TEXT NOT NULL,
    pure_epsilon TEXT NOT NULL,
    all_delta TEXT NOT NULL,
    gauss_epsilon TEXT NOT NULL,
    gauss_delta TEXT NOT NULL,
    gauss_rho TEXT NOT NULL,
    any_gauss INTEGER NOT NULL,
    privacy_unit TEXT,
    seal TEXT NOT NULL
);
CREATE UNIQUE INDEX budget_seq ON budget (seq);
CREATE UNIQUE INDEX entries_seq ON entries (seq);
CREATE UNIQUE INDEX outcomes_seq ON outcomes (seq);
CREATE UNIQUE INDEX units_seq ON units (seq)
"""

UPGRADE_1_TO_2 = """
ALTER TABLE dpframe_schema ADD COLUMN ledger_id TEXT;
ALTER TABLE dpframe_schema ADD COLUMN upgraded TEXT;
ALTER TABLE budget ADD COLUMN seq INTEGER;
ALTER TABLE budget ADD COLUMN prev_hash TEXT;
ALTER TABLE budget ADD COLUMN row_hash TEXT;
ALTER TABLE entries ADD COLUMN privacy_unit TEXT;
ALTER TABLE entries ADD COLUMN seq INTEGER;
ALTER TABLE entries ADD COLUMN prev_hash TEXT;
ALTER TABLE entries ADD COLUMN row_hash TEXT
"""

#: The hashed (immutable) fields of each chained table, in hash order. ``entries.status`` and
#: ``entries.details`` are a convenience copy of the entry's outcome row (checked on verify).
CHAINED: dict[str, tuple[str, ...]] = {
    "budget": ("time", "epsilon", "delta", "session", "note"),
    "entries": (
        "time", "session", "query", "columns", "mechanism", "requested_epsilon",
        "requested_delta", "rho", "epsilon", "delta", "spent_epsilon", "spent_delta", "seeded",
        "pid", "privacy_unit",
    ),
    "outcomes": ("entry_id", "time", "status", "details"),
    "units": ("time", "unit", "session"),
}

_ENTRY_COLS = (
    "id, time, session, query, columns, mechanism, requested_epsilon, requested_delta, rho, "
    "epsilon, delta, spent_epsilon, spent_delta, seeded, status, details"
)


def run_script(conn: sqlite3.Connection, script: str) -> None:
    """Execute the ``;``-separated statements of ``script`` (inside the caller's transaction:
    ``executescript`` would commit it)."""
    for stmt in script.split(";"):
        if stmt.strip():
            conn.execute(stmt)


def stamp_header(conn: sqlite3.Connection, version: int) -> None:
    """Mark the file as a ledger of schema ``version`` in SQLite's header (in the caller's write
    transaction): a later downgrade to an older schema must also erase this mark."""
    conn.execute(f"PRAGMA application_id = {HEADER_APP_ID}")
    conn.execute(f"PRAGMA user_version = {int(version)}")


def header_version(conn: sqlite3.Connection) -> int:
    """The schema version SQLite's header names (``PRAGMA user_version``; 0 when unmarked)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def table_names(conn: sqlite3.Connection) -> set[str]:
    """The names of the database's tables."""
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def frac_text(x: Fraction) -> str:
    """A budget number as stored: ``"num/den"``."""
    return f"{x.numerator}/{x.denominator}"


def parse_frac(text: str | None) -> Fraction | None:
    """A stored budget number (None stays None); ``LedgerError`` if it is malformed."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise LedgerError("ledger holds a malformed budget number; the file is corrupt")
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError, TypeError) as exc:
        raise LedgerError("ledger holds a malformed budget number; the file is corrupt") from exc


def status_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """How many entries have each status."""
    return {str(st): int(n) for st, n in
            conn.execute("SELECT status, count(*) FROM entries GROUP BY status")}


def read_entries(conn: sqlite3.Connection, *, with_unit: bool,
                 last: int | None = None, with_event: bool = False) -> list[dict[str, Any]]:
    """Every entry (or the ``last`` ones), oldest first, as dicts (Fractions for budget
    numbers). ``with_unit=False`` for schema-1 ledgers, whose entries name no privacy unit;
    ``with_event`` for schema-4 ones, whose entries record their privacy event."""
    unit_col = "privacy_unit" if with_unit else "NULL"
    event_col = "event" if with_event else "NULL"
    out = []
    query = f"SELECT {_ENTRY_COLS}, {unit_col}, {event_col} FROM entries ORDER BY id"
    if last is not None:
        query = f"SELECT * FROM ({query} DESC LIMIT {max(int(last), 0)}) ORDER BY id"
    for row in conn.execute(query):
        (i, t, sess, q, cols, mech, re_, rd, rho, e, d, se, sd, seeded, st, det, unit, ev) = row
        try:
            columns = json.loads(cols)
            details = json.loads(det)
            event = None if ev is None else json.loads(ev)
        except (json.JSONDecodeError, TypeError) as exc:
            raise LedgerError("ledger entry is malformed; the file is corrupt") from exc
        out.append(
            {
                "id": int(i),
                "time": t,
                "session": sess,
                "query": q,
                "columns": columns,
                "mechanism": mech,
                "requested_epsilon": parse_frac(re_),
                "requested_delta": parse_frac(rd),
                "rho": parse_frac(rho),
                "epsilon": parse_frac(e),
                "delta": parse_frac(d),
                "spent_epsilon": parse_frac(se),
                "spent_delta": parse_frac(sd),
                "seeded": bool(seeded),
                "status": st,
                "details": details,
                "privacy_unit": unit,
                **({} if event is None else {"event": event}),
            }
        )
    return out


def read_budget_history(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every budget row, oldest first."""
    return [
        {
            "id": int(i),
            "time": t,
            "epsilon": parse_frac(e),
            "delta": parse_frac(d),
            "session": s,
            "note": n,
        }
        for i, t, e, d, s, n in conn.execute(
            "SELECT id, time, epsilon, delta, session, note FROM budget ORDER BY id"
        )
    ]
