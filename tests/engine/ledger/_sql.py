"""Raw SQL on a ledger file, as an attacker or a crash would leave it (tests only)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def run_sql(path: Path, *statements: str) -> None:
    """Run ``statements`` on the SQLite file at ``path`` in autocommit mode, bypassing dpframe."""
    con = sqlite3.connect(path, isolation_level=None)
    try:
        for stmt in statements:
            con.execute(stmt)
    finally:
        con.close()
