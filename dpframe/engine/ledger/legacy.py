"""Schema-1 ledgers (dpframe 0.1, no hash chain): read as they are when opened read-only,
refused by every writable open, and migrated to schema 2 only by an explicit
``dpframe ledger migrate PATH`` (:func:`migrate`), which records the migration as a chained
budget row (shown by ``dpframe ledger show``).

No silent migration: a schema-1 file has no chain, so anyone can edit it with plain SQL; one that
was a chained ledger and was *downgraded* (chain dropped, version set to 1, rows deleted) would
otherwise be re-chained and vouched for with a smaller spend (issue 31.3). Before a schema-1
ledger is read or migrated, :func:`legacy_remains` looks for what a genuine one never has: the
mark dpframe >= 0.2 writes in SQLite's header, tables, columns, indexes, views or triggers of a
newer schema, more than one schema row, and gaps in the row numbering (dpframe 0.1 never deleted
a row, so AUTOINCREMENT's counter equals the number of rows). Any of these refuses the file as
tampered with. What it cannot see: a file rebuilt by hand to match 0.1 exactly (columns dropped,
``sqlite_sequence`` and the header pragmas reset, rows renumbered) is indistinguishable from a
genuine 0.1 ledger. That is why migration is explicit and recorded (it gives the ledger a new
identity), and why exports carry the chain head (``dpframe ledger verify --against``)."""

from __future__ import annotations

import heapq
import sqlite3
import uuid
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from ...core.accounting import PrivacyCost, SpendTotals, session_spend
from ...errors import LedgerError
from .chain import Head, append, genesis, link, write_head
from .charges import now
from .diagnose import tampered
from .schema import (
    CHAINED,
    LEGACY_COLUMNS,
    SCHEMA_2,
    SCHEMA_VERSION,
    STATUSES,
    UPGRADE_1_TO_2,
    frac_text,
    header_version,
    parse_frac,
    run_script,
    stamp_header,
)


def legacy_total(conn: sqlite3.Connection) -> tuple[Fraction, Fraction]:
    """The budget of a schema-1 ledger (its last budget row)."""
    row = conn.execute("SELECT epsilon, delta FROM budget ORDER BY id DESC LIMIT 1").fetchone()
    if row is None:
        raise LedgerError("ledger has no budget; the file is corrupt")
    eps, delta = parse_frac(row[0]), parse_frac(row[1])
    assert eps is not None and delta is not None
    return eps, delta


def legacy_costs(
    conn: sqlite3.Connection,
) -> tuple[list[PrivacyCost], tuple[Fraction, Fraction]]:
    """The requested costs of a schema-1 ledger's entries and its last recorded spend."""
    costs: list[PrivacyCost] = []
    last = (Fraction(0), Fraction(0))
    for e, d, r, se, sd in conn.execute(
        "SELECT requested_epsilon, requested_delta, rho, spent_epsilon, spent_delta "
        "FROM entries ORDER BY id"
    ):
        eps, delta = parse_frac(e), parse_frac(d)
        assert eps is not None and delta is not None
        costs.append(PrivacyCost(eps, delta, parse_frac(r)))
        s_e, s_d = parse_frac(se), parse_frac(sd)
        assert s_e is not None and s_d is not None
        last = (s_e, s_d)
    return costs, last


def legacy_spent(conn: sqlite3.Connection) -> tuple[Fraction, Fraction]:
    """The spend of a schema-1 ledger."""
    costs, last = legacy_costs(conn)
    s = session_spend(costs)
    return max(s.epsilon, last[0]), max(s.delta, last[1])


def _checked_accounting(
    entries: list[tuple[Any, ...]], path: Path
) -> tuple[SpendTotals, tuple[Fraction, Fraction]]:
    """The running totals and the last spend of schema-1 entries (``id, time,
    requested_epsilon, requested_delta, rho, epsilon, delta, spent_epsilon, spent_delta,
    status, details``), once every number and status is checked."""
    totals, last = SpendTotals(), (Fraction(0), Fraction(0))
    for _, _, re_, rd, rho, e, d, se, sd, status, _ in entries:
        q_e, q_d, r_rho = parse_frac(re_), parse_frac(rd), parse_frac(rho)
        c_e, c_d, s_e, s_d = (parse_frac(x) for x in (e, d, se, sd))
        if None in (q_e, q_d, c_e, c_d, s_e, s_d) or status not in STATUSES:
            raise LedgerError(f"ledger {path} holds a malformed entry; it is corrupt")
        assert q_e is not None and q_d is not None and s_e is not None and s_d is not None
        totals = totals.add(PrivacyCost(q_e, q_d, r_rho))
        last = (max(last[0], s_e), max(last[1], s_d))
    return totals, last


def _new_chain(conn: sqlite3.Connection, when: str) -> Head:
    """Mark the ledger as schema 2 with a new identity; the head of its empty chain."""
    ledger_id = uuid.uuid4().hex
    conn.execute("UPDATE dpframe_schema SET version = ?, ledger_id = ?, upgraded = ?",
                 (SCHEMA_VERSION, ledger_id, when))
    app, created, rel = conn.execute(
        "SELECT app, created, neighbouring FROM dpframe_schema").fetchone()
    return Head.first(genesis(app, created, rel, ledger_id, SCHEMA_VERSION),
                      (Fraction(0), Fraction(0)), SCHEMA_VERSION)


_COLS = {t: ", ".join(c) for t, c in CHAINED.items()}


def _chain_budget(conn: sqlite3.Connection, head: Head, rid: int, when: str) -> Head:
    """Chain budget row ``rid``; the head records its budget."""
    vals = conn.execute(f"SELECT {_COLS['budget']} FROM budget WHERE id = ?", (rid,)).fetchone()
    head = link(conn, head, "budget", rid)
    be, bd = parse_frac(vals[1]), parse_frac(vals[2])
    assert be is not None and bd is not None
    return replace(head, budget=(be, bd))


def _chain_entry(conn: sqlite3.Connection, head: Head, rid: int, when: str) -> Head:
    """Chain entry ``rid``, then its recorded outcome (if any) as an outcome row; the head
    records the entry's cumulative spend."""
    vals = conn.execute(f"SELECT {_COLS['entries']} FROM entries WHERE id = ?",
                        (rid,)).fetchone()
    head = link(conn, head, "entries", rid)
    se, sd = parse_frac(vals[10]), parse_frac(vals[11])
    assert se is not None and sd is not None
    head = replace(head, spent=(se, sd))
    status, det = conn.execute(
        "SELECT status, details FROM entries WHERE id = ?", (rid,)).fetchone()
    if status != "charged":
        head, _ = append(conn, head, "outcomes", {
            "entry_id": rid, "time": when, "status": status, "details": det})
    return head


_CHAIN_ROW = {"budget": _chain_budget, "entries": _chain_entry}


def upgrade(conn: sqlite3.Connection, path: Path) -> Head:
    """Schema 1 -> 2 in place (in the open's write transaction): add the chain columns and
    tables, and chain the existing rows as they are (budget rows and entries in time order,
    each entry's recorded outcome right after it)."""
    budgets = conn.execute(
        "SELECT id, time, epsilon, delta, session, note FROM budget ORDER BY id"
    ).fetchall()
    entries = conn.execute(
        "SELECT id, time, requested_epsilon, requested_delta, rho, epsilon, delta, "
        "spent_epsilon, spent_delta, status, details FROM entries ORDER BY id"
    ).fetchall()
    if not budgets:
        raise LedgerError(f"ledger {path} has no budget; the file is corrupt")
    # schema-1 accounting must be sound before it is vouched for
    totals, last = _checked_accounting(entries, path)
    for b in budgets:
        parse_frac(b[2])
        parse_frac(b[3])
    run_script(conn, UPGRADE_1_TO_2 + ";" + SCHEMA_2)
    when = now()
    head = _new_chain(conn, when)
    order = heapq.merge([("budget", str(b[1]), int(b[0])) for b in budgets],
                        [("entries", str(e[1]), int(e[0])) for e in entries],
                        key=lambda x: x[1])
    for table, _, rid in order:
        head = _CHAIN_ROW[table](conn, head, rid, when)
    if head.spent != last:
        raise LedgerError(f"ledger {path}: its spend does not add up; it is corrupt")
    head = replace(head, totals=totals)
    write_head(conn, head, insert=True)
    return head


def _columns(conn: sqlite3.Connection, table: str) -> tuple[str, ...]:
    return tuple(str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})"))


def _numbering_gap(conn: sqlite3.Connection) -> bool:
    """Whether a table's ids are not ``1..n`` or AUTOINCREMENT's counter is not ``n`` (a row
    was deleted: dpframe 0.1 never deleted one)."""
    counters = dict(conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall())
    if set(counters) - {"budget", "entries"}:
        return True
    for table in ("budget", "entries"):
        n, low, high = conn.execute(f"SELECT count(*), min(id), max(id) FROM {table}").fetchone()
        if n and (low != 1 or high != n):
            return True
        if counters.get(table, 0) != n:
            return True
    return False


def legacy_remains(conn: sqlite3.Connection) -> str | None:
    """What, in a file that says it is schema 1, a genuine dpframe 0.1 ledger never has (None
    if nothing): the remains of a newer, chained ledger that was downgraded."""
    header = (conn.execute("PRAGMA application_id").fetchone()[0],
              conn.execute("PRAGMA user_version").fetchone()[0])
    if header != (0, 0):
        return "its SQLite header carries the mark of a newer, chained ledger"
    objects = conn.execute(
        "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").fetchall()
    if {t for t, _ in objects} != {"table"}:
        return "it holds indexes, views or triggers that a schema-1 ledger never had"
    if {n for _, n in objects} != set(LEGACY_COLUMNS):
        return "it holds tables that a schema-1 ledger never had"
    if any(_columns(conn, t) != cols for t, cols in LEGACY_COLUMNS.items()):
        return "its tables have columns of a newer, chained ledger"
    if conn.execute("SELECT count(*) FROM dpframe_schema").fetchone()[0] != 1:
        return "its schema row is missing or duplicated"
    if _numbering_gap(conn):
        return "its row numbering shows deleted rows (dpframe 0.1 never deleted one)"
    return None


def check_legacy(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse (as tampered with) a schema-1 file with the remains of a newer ledger."""
    what = legacy_remains(conn)
    if what is not None:
        raise tampered(path, f"it says it is a schema-1 (dpframe 0.1) ledger but {what} "
                             "(a downgraded ledger)")


def check_header(conn: sqlite3.Connection, path: Path, version: int, *, stamp: bool) -> None:
    """Refuse (as tampered with) a chained ledger whose SQLite header names another schema than
    its schema row (a schema-3 ledger relabelled as schema 2, whose genesis hash also differs);
    with ``stamp`` (a writable open), mark a schema-2 ledger created before dpframe marked the
    header."""
    header = header_version(conn)
    if header == version:
        return
    if version == 2 and header == 0:
        if stamp:
            stamp_header(conn, version)
        return
    raise tampered(path, f"its schema row says schema {version} but its SQLite header says "
                         f"schema {header} (a downgraded ledger)")


def needs_migration(path: Path) -> LedgerError:
    """A writable open of a schema-1 ledger: refused, nothing changed."""
    return LedgerError(
        f"ledger {path} was written by dpframe 0.1 (schema 1, no hash chain) and is not "
        "migrated silently; nothing was changed. Check that it is the ledger you expect, then "
        f"run `dpframe ledger migrate {path}` (the migration is recorded in the ledger)"
    )


MIGRATION_NOTE = (
    "migrated from schema 1 by `dpframe ledger migrate`: the rows before this one are chained "
    "as the schema-1 file held them, which had no hash chain to verify"
)


def migrate(conn: sqlite3.Connection, path: Path, session: str | None) -> None:
    """Schema 1 -> 2, explicitly (in one write transaction): refuse a downgraded file
    (:func:`check_legacy`), chain the rows (:func:`upgrade`), then record the migration as a
    chained budget row (same budget, note :data:`MIGRATION_NOTE`) and mark the header."""
    check_legacy(conn, path)
    head = upgrade(conn, path)
    head, _ = append(conn, head, "budget", {
        "time": now(), "epsilon": frac_text(head.budget[0]),
        "delta": frac_text(head.budget[1]), "session": session, "note": MIGRATION_NOTE,
    })
    write_head(conn, head)
    stamp_header(conn, SCHEMA_VERSION)
