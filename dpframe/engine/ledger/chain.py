"""The SHA-256 hash chain of a SQLite ledger: row digests, the sealed head, verification.

Every accounting row (budget rows, entries, outcomes, the privacy-unit binding) is a link of
one chain: ``row_hash = sha256(prev_hash || canonical row)``, the first ``prev_hash`` being a
hash of the ledger's identity. The chain's head (row count, last hash) and the running totals
the ledger charges from are kept in the ``chain_head`` row, updated in the same transaction and
sealed by a hash. A deleted (even the last), edited, inserted or reordered row fails
verification; it is never read as a smaller spend. The hash is not keyed: it detects edits made
with ordinary tools, not a forger who recomputes the whole chain.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from ...core.accounting import SpendTotals
from ...errors import LedgerError
from .diagnose import tampered
from .schema import APP_ID, CHAINED, NEIGHBOURING, frac_text, parse_frac

_ZERO_HASH = "0" * 64
_HEAD_COLS = (
    "rows, hash, budget_epsilon, budget_delta, spent_epsilon, spent_delta, pure_epsilon, "
    "all_delta, gauss_epsilon, gauss_delta, gauss_rho, any_gauss, privacy_unit"
)


def _canon(values: Iterable[Any]) -> str:
    return json.dumps(list(values), ensure_ascii=True, separators=(",", ":"))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def row_hash(prev: str, table: str, seq: int, rid: int, values: Iterable[Any]) -> str:
    """``sha256(prev_hash || canonical serialization)`` of one chained row."""
    return _sha(prev + "\n" + _canon([table, seq, rid, *values]))


def genesis(app: Any, created: Any, neighbouring: Any, ledger_id: Any) -> str:
    """The ``prev_hash`` of the first row: the ledger's identity and neighbouring relation."""
    return _sha(_ZERO_HASH + "\n" + _canon(["genesis", app, created, neighbouring, ledger_id]))


def _seal(stored: list[Any]) -> str:
    return _sha("head\n" + _canon(stored))


@dataclass(frozen=True)
class Head:
    """The ``chain_head`` row: chain position and the running totals charges are checked on."""

    rows: int
    hash: str
    budget: tuple[Fraction, Fraction]
    spent: tuple[Fraction, Fraction]
    totals: SpendTotals
    unit: str | None

    @classmethod
    def first(cls, genesis_hash: str, budget: tuple[Fraction, Fraction]) -> Head:
        """The head of a chain with no row yet."""
        return cls(0, genesis_hash, budget, (Fraction(0), Fraction(0)), SpendTotals(), None)

    def stored(self) -> list[Any]:
        """The head's values as stored (and sealed), in ``chain_head`` column order."""
        t = self.totals
        return [
            self.rows, self.hash, frac_text(self.budget[0]), frac_text(self.budget[1]),
            frac_text(self.spent[0]), frac_text(self.spent[1]), frac_text(t.pure_eps),
            frac_text(t.all_delta), frac_text(t.g_eps), frac_text(t.g_delta),
            frac_text(t.g_rho), int(t.any_g), self.unit,
        ]


def link(conn: sqlite3.Connection, head: Head, table: str, rid: int, values: list[Any]) -> Head:
    """Chain the row ``rid`` of ``table`` (with hashed ``values``) after ``head``."""
    seq = head.rows + 1
    digest = row_hash(head.hash, table, seq, rid, values)
    conn.execute(f"UPDATE {table} SET seq = ?, prev_hash = ?, row_hash = ? WHERE id = ?",
                 (seq, head.hash, digest, rid))
    return replace(head, rows=seq, hash=digest)


def append(
    conn: sqlite3.Connection, head: Head, table: str, values: Mapping[str, Any],
    extra: Mapping[str, Any] | None = None,
) -> tuple[Head, int]:
    """Insert one chained row after ``head``; the new head and the row's id."""
    cols = CHAINED[table]
    vals = [values[c] for c in cols]
    more = dict(extra or {})
    names = ", ".join((*cols, *more))
    marks = ", ".join("?" for _ in range(len(cols) + len(more)))
    cur = conn.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})",
                       (*vals, *more.values()))
    rid = cur.lastrowid
    assert rid is not None
    return link(conn, head, table, int(rid), vals), int(rid)


def write_head(conn: sqlite3.Connection, head: Head, *, insert: bool = False) -> None:
    """Store ``head`` (sealed) in ``chain_head``: inserted for a new chain, else updated."""
    stored = head.stored()
    if insert:
        conn.execute(
            f"INSERT INTO chain_head (id, {_HEAD_COLS}, seal) VALUES "
            f"(1, {', '.join('?' for _ in stored)}, ?)",
            (*stored, _seal(stored)),
        )
        return
    sets = ", ".join(f"{c.strip()} = ?" for c in _HEAD_COLS.split(","))
    cur = conn.execute(f"UPDATE chain_head SET {sets}, seal = ? WHERE id = 1",
                       (*stored, _seal(stored)))
    if cur.rowcount != 1:
        raise LedgerError("ledger chain head is missing")


def read_head(conn: sqlite3.Connection, path: Path, *, check_last: bool) -> Head:
    """The sealed ``chain_head`` row; with ``check_last``, also check that it points at the
    last chained row (O(log n): catches a deleted or appended last row)."""
    try:
        row = conn.execute(f"SELECT {_HEAD_COLS}, seal FROM chain_head WHERE id = 1").fetchone()
    except sqlite3.OperationalError as exc:
        raise tampered(path, "its chain head table is missing") from exc
    if row is None:
        raise tampered(path, "its chain head is missing")
    stored, seal = list(row[:-1]), row[-1]
    if seal != _seal(stored):
        raise tampered(path, "its chain head (running totals) was edited")
    try:
        fr = [parse_frac(x) for x in stored[2:11]]
    except LedgerError as exc:
        raise tampered(path, "its chain head holds a malformed number") from exc
    if any(f is None for f in fr) or not isinstance(stored[0], int):
        raise tampered(path, "its chain head is malformed")
    f = [x for x in fr if x is not None]
    head = Head(
        rows=stored[0], hash=str(stored[1]), budget=(f[0], f[1]), spent=(f[2], f[3]),
        totals=SpendTotals(pure_eps=f[4], all_delta=f[5], g_eps=f[6], g_delta=f[7],
                           g_rho=f[8], any_g=bool(stored[11])),
        unit=stored[12],
    )
    if check_last:
        last: tuple[int, str] | None = None
        for table in CHAINED:
            r = conn.execute(
                f"SELECT seq, row_hash FROM {table} ORDER BY seq DESC LIMIT 1"
            ).fetchone()
            if r is None:
                continue
            if r[0] is None:
                raise tampered(path, "a row has no place in the hash chain")
            if last is None or r[0] > last[0]:
                last = (r[0], r[1])
        if last != (head.rows, head.hash):
            raise tampered(
                path, "its last rows do not match the chain head (a row was deleted or added)"
            )
    return head


def verify_chain(conn: sqlite3.Connection, path: Path) -> dict[str, Any]:
    """Check the whole chain and every accounting invariant; O(rows). ``LedgerError`` on
    the first violation."""
    schema = conn.execute(
        "SELECT app, version, created, neighbouring, ledger_id FROM dpframe_schema"
    ).fetchall()
    if len(schema) != 1 or schema[0][0] != APP_ID:
        raise tampered(path, "its schema row is missing or duplicated")
    app, version, created, relation, ledger_id = schema[0]
    if relation not in NEIGHBOURING:
        raise tampered(path, "its neighbouring relation is malformed")
    head = read_head(conn, path, check_last=False)
    running = genesis(app, created, relation, ledger_id)

    def stream(table: str) -> Iterator[tuple[int, str, tuple[Any, ...]]]:
        cols = ", ".join(CHAINED[table])
        copy = ", status, details" if table == "entries" else ""
        for r in conn.execute(
            f"SELECT seq, id, prev_hash, row_hash, {cols}{copy} FROM {table} ORDER BY seq"
        ):
            if not isinstance(r[0], int):
                raise tampered(path, f"a row of {table} has no place in the hash chain")
            yield r[0], table, r

    n = 0
    budget: tuple[Fraction, Fraction] | None = None
    spent = (Fraction(0), Fraction(0))
    pure = all_d = g_e = g_d = g_r = Fraction(0)
    any_g = False
    unit: str | None = None
    last_entry = 0
    copies: dict[int, tuple[str, str]] = {}
    outcomes: dict[int, tuple[str, str]] = {}
    n_fields = {t: len(c) for t, c in CHAINED.items()}
    for seq, table, r in heapq.merge(*(stream(t) for t in CHAINED), key=lambda x: x[0]):
        n += 1
        if seq != n:
            raise tampered(path, f"row {n} of its hash chain is missing or duplicated")
        rid, prev, digest = r[1], r[2], r[3]
        values = r[4 : 4 + n_fields[table]]
        if prev != running or digest != row_hash(running, table, seq, rid, values):
            raise tampered(path, f"row {n} of its hash chain ({table} #{rid}) was changed")
        running = digest
        if table == "budget":
            be, bd = parse_frac(values[1]), parse_frac(values[2])
            if be is None or bd is None or be <= 0 or not 0 <= bd <= 1:
                raise tampered(path, f"budget #{rid} is malformed")
            budget = (be, bd)
        elif budget is None:
            raise tampered(path, "its first chained row is not its budget")
        elif table == "entries":
            (_, _, _, _, _, re_, rd, rho, e, d, se, sd, _, _, eunit) = values
            nums = [parse_frac(x) for x in (re_, rd, e, d, se, sd)]
            if any(x is None for x in nums) or rid <= last_entry:
                raise tampered(path, f"entry #{rid} is malformed")
            q_e, q_d, c_e, c_d, s_e, s_d = (x for x in nums if x is not None)
            r_rho = parse_frac(rho)
            if c_e < 0 or c_d < 0 or (s_e, s_d) != (spent[0] + c_e, spent[1] + c_d):
                raise tampered(path, f"entry #{rid} does not add up with the entries before")
            if eunit is not None and eunit != unit:
                raise tampered(path, f"entry #{rid} names another privacy unit")
            spent, last_entry = (s_e, s_d), rid
            if r_rho is None:
                pure, all_d = pure + q_e, all_d + q_d
            else:
                all_d, g_e, g_d, g_r, any_g = (all_d + q_d, g_e + q_e, g_d + q_d,
                                               g_r + r_rho, True)
            copies[rid] = (r[-2], r[-1])
        elif table == "outcomes":
            entry_id, _, status, details = values
            if entry_id not in copies or entry_id in outcomes:
                raise tampered(path, f"outcome #{rid} names no pending entry")
            if status not in ("released", "failed"):
                raise tampered(path, f"outcome #{rid} is malformed")
            outcomes[entry_id] = (status, details)
        else:  # units
            if unit is not None or not isinstance(values[1], str):
                raise tampered(path, "its privacy unit was bound twice")
            unit = values[1]
    if n != head.rows or running != head.hash:
        raise tampered(
            path,
            "its chain ends before its recorded head (rows were deleted at the end)"
            if n < head.rows else "its rows do not match its chain head",
        )
    totals = SpendTotals(pure_eps=pure, all_delta=all_d, g_eps=g_e, g_delta=g_d, g_rho=g_r,
                         any_g=any_g)
    bound = totals.spend()
    if (budget != head.budget or spent != head.spent or totals != head.totals
            or unit != head.unit or spent[0] < bound.epsilon or spent[1] < bound.delta):
        raise tampered(path, "its chain head disagrees with its rows")
    for eid, copy in copies.items():
        if copy != outcomes.get(eid, ("charged", "{}")):
            raise tampered(path, f"the status of entry #{eid} disagrees with its outcome")
    return {
        "rows": n,
        "head": running,
        "entries": len(copies),
        "ledger_id": ledger_id,
        "schema_version": version,
    }
