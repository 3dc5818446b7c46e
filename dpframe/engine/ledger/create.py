"""A new SQLite ledger's tables and first budget row (at the current schema, :mod:`.schema`)."""

from __future__ import annotations

import sqlite3
import uuid
from fractions import Fraction
from pathlib import Path
from typing import Any

from ...errors import LedgerError
from .chain import Head, append, genesis, write_head
from .charges import now
from .schema import APP_ID, SCHEMA, SCHEMA_2, SCHEMA_VERSION, frac_text, run_script, stamp_header


def create_ledger(conn: sqlite3.Connection, path: Path, epsilon: Fraction | None,
                  delta: Fraction | None, rel: str, session: str | None) -> None:
    """Create the ledger's tables and its first budget row, in an empty database."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'").fetchone():
        raise LedgerError(f"{path} is an SQLite database but not a dpframe ledger")
    if epsilon is None:
        raise LedgerError(f"{path} is not a dpframe ledger and no budget was given")
    delta = delta or Fraction(0)
    run_script(conn, SCHEMA + ";" + SCHEMA_2)
    created, ledger_id = now(), uuid.uuid4().hex
    conn.execute(
        "INSERT INTO dpframe_schema (app, version, created, neighbouring, ledger_id) "
        "VALUES (?, ?, ?, ?, ?)",
        (APP_ID, SCHEMA_VERSION, created, rel, ledger_id),
    )
    head = Head.first(genesis(APP_ID, created, rel, ledger_id, SCHEMA_VERSION), (epsilon, delta),
                      SCHEMA_VERSION)
    head, _ = append(conn, head, "budget", budget_values(epsilon, delta, "created", session))
    write_head(conn, head, insert=True)
    stamp_header(conn, SCHEMA_VERSION)


def budget_values(eps: Fraction, delta: Fraction, note: str, session: str | None
                  ) -> dict[str, Any]:
    """A budget row's chained values."""
    return {
        "time": now(),
        "epsilon": frac_text(Fraction(eps)),
        "delta": frac_text(Fraction(delta)),
        "session": session,
        "note": note,
    }
