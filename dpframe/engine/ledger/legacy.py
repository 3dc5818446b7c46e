"""Schema-1 ledgers (dpframe 0.1, no hash chain): read as they are when opened read-only,
refused by every writable open, and migrated (to schema 4) only by an explicit
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
import json
import re
import sqlite3
import uuid
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from ...core.accountant import PrivacyEvent
from ...core.accounting import PrivacyCost, SpendTotals, session_spend
from ...errors import LedgerError, LedgerMigrationError
from .chain import Head, append, genesis, link, read_head, verify_chain, write_head
from .charges import now
from .diagnose import tampered
from .formats import ROW_HASH, WIDTH, row_sql
from .schema import (
    APP_ID,
    CHAINED,
    LEGACY_COLUMNS,
    SCHEMA_2,
    SCHEMA_VERSION,
    STATUSES,
    UPGRADE_1_TO_2,
    UPGRADE_3_TO_4,
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
    run_script(conn, UPGRADE_1_TO_2 + ";" + SCHEMA_2 + ";" + UPGRADE_3_TO_4)
    record_events(conn)
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


def needs_migration(path: Path) -> LedgerMigrationError:
    """A writable open of a schema-1 ledger: refused, nothing changed."""
    return LedgerMigrationError(
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


def has_no_chain(path: Path) -> LedgerError:
    """A schema-1 ledger asked to verify its chain."""
    return LedgerError(
        f"ledger {path} was written by dpframe 0.1 (schema 1) and has no hash chain to "
        f"verify; run `dpframe ledger migrate {path}` to migrate it (the migration is "
        "recorded in the ledger)")


def migrate_any(conn: sqlite3.Connection, path: Path, session: str | None,
                check_version: Callable[[Any], None]) -> bool:
    """``dpframe ledger migrate``, in the caller's write transaction: False (nothing written)
    for a ledger at the current schema. Schema 1 (dpframe 0.1): :func:`migrate` (refused if it
    shows remains of a newer ledger, :func:`legacy_remains`; its rows chained as they are);
    schema 2 or 3: :func:`rechain` (the whole chain verified, then re-hashed in the schema-4
    format). Either way every entry records its stated (epsilon, delta) as its privacy event
    and the migration is recorded as a chained budget row (``dpframe ledger show`` lists it)."""
    row = conn.execute("SELECT app, version FROM dpframe_schema").fetchone()
    if row is None or row[0] != APP_ID:
        raise LedgerError(f"{path} is not a dpframe ledger")
    check_version(row[1])
    if int(row[1]) >= SCHEMA_VERSION:
        return False
    if int(row[1]) < 2:
        migrate(conn, path, session)
    else:
        check_header(conn, path, int(row[1]), stamp=True)
        rechain(conn, path, session)
    return True


def record_events(conn: sqlite3.Connection) -> None:
    """Give every entry without an event (a ledger of schema 1, 2 or 3 being migrated) the
    generic (epsilon, delta) event of its stated cost: each release was calibrated to its
    requested (epsilon, delta), and PLD composes such an event as its dominating pair."""
    rows = conn.execute("SELECT id, requested_epsilon, requested_delta FROM entries "
                        "WHERE event IS NULL ORDER BY id").fetchall()
    for rid, re_, rd in rows:
        eps, delta = parse_frac(re_), parse_frac(rd)
        if eps is None or delta is None or eps < 0 or not 0 <= delta <= 1:
            raise LedgerError(f"ledger entry #{rid} has a malformed cost; the file is corrupt")
        event = json.dumps(PrivacyEvent.approx(eps, delta).to_json(), separators=(",", ":"))
        conn.execute("UPDATE entries SET event = ? WHERE id = ?", (event, rid))


RECHAIN_NOTE = (
    "migrated from schema {old} by `dpframe ledger migrate`: every entry before this row records "
    "its stated (epsilon, delta) as its privacy event; the chain was re-hashed in the schema-4 "
    "format (its head before: {head}; ledger id before: {ledger_id}; rows before: {rows})"
)
#: What :data:`RECHAIN_NOTE` records of the chain before a migration (read back by
#: :func:`premigration_hashes`).
_RECHAINED = re.compile(r"^migrated from schema (\d+) by .*\(its head before: ([0-9a-f]{64}); "
                        r"ledger id before: ([0-9a-f]+); rows before: (\d+)\)$", re.DOTALL)


def rechain(conn: sqlite3.Connection, path: Path, session: str | None) -> None:
    """Schema 2 or 3 -> 4, explicitly (in one write transaction): verify the whole chain in its
    own format first (nothing unverified is vouched for), record every entry's (epsilon, delta)
    event (:func:`record_events`), re-hash every chained row in chain order in the schema-4
    format (same positions, a new ledger identity), keep the head's budget, spend and basic
    totals, record the migration as a chained budget row and mark the header."""
    old, old_id = conn.execute("SELECT version, ledger_id FROM dpframe_schema").fetchone()
    old = int(old)
    verify_chain(conn, path)
    before = read_head(conn, path, check_last=True)
    conn.execute(UPGRADE_3_TO_4)
    record_events(conn)
    when, ledger_id = now(), uuid.uuid4().hex
    conn.execute("UPDATE dpframe_schema SET version = ?, ledger_id = ?, upgraded = ?",
                 (SCHEMA_VERSION, ledger_id, when))
    app, created, rel = conn.execute(
        "SELECT app, created, neighbouring FROM dpframe_schema").fetchone()
    head = replace(before, rows=0, hash=genesis(app, created, rel, ledger_id, SCHEMA_VERSION),
                   version=SCHEMA_VERSION)
    rows = sorted((int(seq), table, int(rid)) for table in CHAINED
                  for rid, seq in conn.execute(f"SELECT id, seq FROM {table}"))
    for seq, table, rid in rows:
        if seq != head.rows + 1:
            raise LedgerError(f"ledger {path}: its chain has a gap; it is corrupt")
        head = link(conn, head, table, rid)
    conn.execute("DROP TABLE IF EXISTS chain_checkpoint")  # its hash is of the old format
    head, _ = append(conn, head, "budget", {
        "time": now(), "epsilon": frac_text(head.budget[0]),
        "delta": frac_text(head.budget[1]), "session": session,
        "note": RECHAIN_NOTE.format(old=old, head=before.hash, ledger_id=old_id,
                                    rows=before.rows),
    })
    write_head(conn, head)
    stamp_header(conn, SCHEMA_VERSION)


def premigration_hashes(conn: sqlite3.Connection, ledger_id: str) -> tuple[int, list[str]] | None:
    """The row hashes the chain had before ``dpframe ledger migrate`` re-hashed it, when it was
    ledger ``ledger_id``: ``(its schema, [hash of row 1, 2, ...])``, or None when no migration
    of this ledger came from that identity. The migration's chained budget row (vouched by the
    current chain, verified by the caller) records the old identity, row count and head; the
    rows keep their positions and every value the old format hashed, so the old chain is
    recomputed from them in its own format and must end at that head (``LedgerError``
    otherwise): an export charged before the migration is then found at its position."""
    for (note,) in conn.execute("SELECT note FROM budget ORDER BY seq"):
        m = _RECHAINED.match(note or "")
        if m is None or m.group(3) != ledger_id:
            continue
        version, head, rows = int(m.group(1)), m.group(2), int(m.group(4))
        if version not in ROW_HASH:
            return None
        app, created, rel = conn.execute(
            "SELECT app, created, neighbouring FROM dpframe_schema").fetchone()
        running = genesis(app, created, rel, ledger_id, version)
        digest, sql = ROW_HASH[version], row_sql(version)
        found = sorted((r for t in CHAINED for r in conn.execute(
            f"{sql[t]} WHERE seq <= ?", (rows,))), key=lambda r: r[2])
        out: list[str] = []
        for r in found:
            running = digest((r[0], r[1], r[2], r[3], running, *r[5:]), WIDTH[r[1]])
            out.append(running)
        if len(out) != rows or (rows and out[-1] != head):
            raise LedgerError(f"ledger {ledger_id}: the chain before its migration does not "
                              "recompute to the head its migration recorded; the file is "
                              "corrupt")
        return version, out
    return None
