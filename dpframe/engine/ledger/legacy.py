"""Schema-1 ledgers (dpframe 0.1, no hash chain): read as they are when opened read-only, and
upgraded in place to schema 2 the first time they are opened with write access (the chain is
computed over their rows as they are then, once their accounting has been checked)."""

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
from .schema import (
    CHAINED,
    SCHEMA_2,
    SCHEMA_VERSION,
    STATUSES,
    UPGRADE_1_TO_2,
    parse_frac,
    run_script,
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
    return Head.first(genesis(app, created, rel, ledger_id), (Fraction(0), Fraction(0)))


_COLS = {t: ", ".join(c) for t, c in CHAINED.items()}


def _chain_budget(conn: sqlite3.Connection, head: Head, rid: int, when: str) -> Head:
    """Chain budget row ``rid``; the head records its budget."""
    vals = conn.execute(f"SELECT {_COLS['budget']} FROM budget WHERE id = ?", (rid,)).fetchone()
    head = link(conn, head, "budget", rid, list(vals))
    be, bd = parse_frac(vals[1]), parse_frac(vals[2])
    assert be is not None and bd is not None
    return replace(head, budget=(be, bd))


def _chain_entry(conn: sqlite3.Connection, head: Head, rid: int, when: str) -> Head:
    """Chain entry ``rid``, then its recorded outcome (if any) as an outcome row; the head
    records the entry's cumulative spend."""
    vals = conn.execute(f"SELECT {_COLS['entries']} FROM entries WHERE id = ?",
                        (rid,)).fetchone()
    head = link(conn, head, "entries", rid, list(vals))
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


def upgrade(conn: sqlite3.Connection, path: Path) -> None:
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
    write_head(conn, replace(head, totals=totals), insert=True)
