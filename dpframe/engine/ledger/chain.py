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
from dataclasses import dataclass, field, replace
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


_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))  # json.dumps's output


def _canon(values: Iterable[Any]) -> str:
    return _ENCODER.encode(values if isinstance(values, list) else list(values))


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


def _stored_head(conn: sqlite3.Connection, path: Path) -> list[Any]:
    """The values of the ``chain_head`` row, once its seal is checked."""
    try:
        row = conn.execute(f"SELECT {_HEAD_COLS}, seal FROM chain_head WHERE id = 1").fetchone()
    except sqlite3.OperationalError as exc:
        raise tampered(path, "its chain head table is missing") from exc
    if row is None:
        raise tampered(path, "its chain head is missing")
    stored, seal = list(row[:-1]), row[-1]
    if seal != _seal(stored):
        raise tampered(path, "its chain head (running totals) was edited")
    return stored


def _parse_head(stored: list[Any], path: Path) -> Head:
    try:
        fr = [parse_frac(x) for x in stored[2:11]]
    except LedgerError as exc:
        raise tampered(path, "its chain head holds a malformed number") from exc
    f = [x for x in fr if x is not None]
    if len(f) != len(fr) or not isinstance(stored[0], int):
        raise tampered(path, "its chain head is malformed")
    return Head(
        rows=stored[0], hash=str(stored[1]), budget=(f[0], f[1]), spent=(f[2], f[3]),
        totals=SpendTotals(pure_eps=f[4], all_delta=f[5], g_eps=f[6], g_delta=f[7],
                           g_rho=f[8], any_g=bool(stored[11])),
        unit=stored[12],
    )


def _last_row(conn: sqlite3.Connection, path: Path) -> tuple[int, str] | None:
    """``(seq, row_hash)`` of the last chained row of any table (None when there is none)."""
    last: tuple[int, str] | None = None
    for table in CHAINED:
        r = conn.execute(f"SELECT seq, row_hash FROM {table} ORDER BY seq DESC LIMIT 1").fetchone()
        if r is None:
            continue
        if isinstance(r[0], bool) or not isinstance(r[0], int):  # missing, or edited to text
            raise tampered(path, "a row has no place in the hash chain")
        if last is None or r[0] > last[0]:
            last = (r[0], r[1])
    return last


def read_head(conn: sqlite3.Connection, path: Path, *, check_last: bool) -> Head:
    """The sealed ``chain_head`` row; with ``check_last``, also check that it points at the
    last chained row (O(log n): catches a deleted or appended last row)."""
    head = _parse_head(_stored_head(conn, path), path)
    if check_last and _last_row(conn, path) != (head.rows, head.hash):
        raise tampered(
            path, "its last rows do not match the chain head (a row was deleted or added)"
        )
    return head


def _with_request(
    t: SpendTotals, epsilon: Fraction, delta: Fraction, rho: Fraction | None
) -> SpendTotals:
    """``t`` plus one requested cost, as :meth:`SpendTotals.add` adds it, from the numbers of a
    chained entry (no :class:`PrivacyCost` validation: a bad number fails as tampering)."""
    if rho is None:
        return SpendTotals(t.pure_eps + epsilon, t.all_delta + delta, t.g_eps, t.g_delta,
                           t.g_rho, t.any_g)
    return SpendTotals(t.pure_eps, t.all_delta + delta, t.g_eps + epsilon, t.g_delta + delta,
                       t.g_rho + rho, True)


_Row = tuple[Any, ...]
_WIDTH = {table: 4 + len(cols) for table, cols in CHAINED.items()}  # where a row's values end


@dataclass
class _Walk:
    """One verification pass over the chain, row by row in chain order: the running hash and
    the accounting the rows add up to, to be compared with the sealed head at the end."""

    path: Path
    running: str
    rows: int = 0
    budget: tuple[Fraction, Fraction] | None = None
    spent: tuple[Fraction, Fraction] = (Fraction(0), Fraction(0))
    totals: SpendTotals = field(default_factory=SpendTotals)
    unit: str | None = None
    last_entry: int = 0
    entries: int = 0
    copies: dict[int, tuple[str, str]] = field(default_factory=dict)
    outcomes: dict[int, tuple[str, str]] = field(default_factory=dict)
    #: Parsed numbers by their text (a nightly job charges the same few costs again and again)
    memo: dict[Any, Fraction | None] = field(default_factory=dict)
    #: How many entries requested each (epsilon, delta, rho), as texts: added to ``totals``
    #: once at the end (:meth:`all_totals`), not one Fraction sum per entry
    requests: dict[tuple[Any, Any, Any], int] = field(default_factory=dict)

    def all_totals(self) -> SpendTotals:
        """The running totals: those resumed from a checkpoint plus every request walked."""
        t = self.totals
        for (e, d, rho), n in self.requests.items():
            eps, delta, r = self.frac(e), self.frac(d), self.frac(rho)
            assert eps is not None and delta is not None
            t = _with_request(t, n * eps, n * delta, None if r is None else n * r)
        return t

    def frac(self, text: Any) -> Fraction | None:
        """:func:`parse_frac` of ``text``, remembered."""
        try:
            return self.memo[text]
        except KeyError:
            pass
        value = parse_frac(text)
        if len(self.memo) < 4096:
            self.memo[text] = value
        return value

    def state(self) -> dict[str, Any]:
        """What a verified checkpoint stores of this walk (the entries still without an
        outcome by id; their status copies are read again from the entries when resumed)."""
        t = self.all_totals()
        assert self.budget is not None
        return {
            "rows": self.rows, "hash": self.running,
            "budget": [frac_text(self.budget[0]), frac_text(self.budget[1])],
            "spent": [frac_text(self.spent[0]), frac_text(self.spent[1])],
            "totals": [frac_text(x) for x in (t.pure_eps, t.all_delta, t.g_eps, t.g_delta,
                                              t.g_rho)] + [int(t.any_g)],
            "unit": self.unit, "last_entry": self.last_entry, "entries": self.entries,
            "pending": sorted(e for e in self.copies if e not in self.outcomes),
        }

    @classmethod
    def resume(cls, conn: sqlite3.Connection, path: Path, state: Mapping[str, Any]) -> _Walk:
        """A walk continued after the checkpoint ``state`` (its pending entries' status copies
        read again)."""
        try:
            walk = cls(path, str(state["hash"]), rows=int(state["rows"]),
                       unit=state["unit"], last_entry=int(state["last_entry"]),
                       entries=int(state["entries"]))
            pending = [int(e) for e in state["pending"]]
            g = _state_numbers(state, path)
        except (KeyError, TypeError, ValueError, LedgerError) as exc:
            raise tampered(path, "its checkpoint is malformed") from exc
        walk.budget, walk.spent = (g[0], g[1]), (g[2], g[3])
        walk.totals = SpendTotals(pure_eps=g[4], all_delta=g[5], g_eps=g[6], g_delta=g[7],
                                  g_rho=g[8], any_g=bool(state["totals"][5]))
        for i in range(0, len(pending), 500):
            chunk = pending[i:i + 500]
            rows = conn.execute(
                f"SELECT id, status, details FROM entries WHERE id IN "
                f"({', '.join('?' for _ in chunk)})", chunk).fetchall()
            walk.copies.update((r[0], (r[1], r[2])) for r in rows)
        if len(walk.copies) != len(pending):
            raise tampered(path, "an entry pending at its checkpoint is missing")
        return walk

    def step(self, seq: int, table: str, r: _Row) -> None:
        """Check row ``r`` of ``table`` (``seq, id, prev_hash, row_hash, *values``), the
        ``seq``-th link of the chain, and add it to the accounting."""
        self.rows += 1
        n = self.rows
        if seq != n:
            raise tampered(self.path, f"row {n} of its hash chain is missing or duplicated")
        rid, prev, digest = r[1], r[2], r[3]
        values = r[4 : _WIDTH[table]]
        if prev != self.running or digest != row_hash(self.running, table, seq, rid, values):
            raise tampered(self.path, f"row {n} of its hash chain ({table} #{rid}) was changed")
        self.running = digest
        if table != "budget" and self.budget is None:
            raise tampered(self.path, "its first chained row is not its budget")
        _CHECKS[table](self, rid, values, r)

    def _budget_row(self, rid: int, values: _Row, r: _Row) -> None:
        be, bd = parse_frac(values[1]), parse_frac(values[2])
        if be is None or bd is None or be <= 0 or not 0 <= bd <= 1:
            raise tampered(self.path, f"budget #{rid} is malformed")
        self.budget = (be, bd)

    def _entry_row(self, rid: int, values: _Row, r: _Row) -> None:
        """Check an entry: its charge is not negative, its cumulative spend (as stored, text)
        is the spend before it plus its charge, its unit is the ledger's; count its request."""
        c_e, c_d = self._charged(rid, values)
        s_e, s_d = self.spent[0] + c_e, self.spent[1] + c_d
        if c_e < 0 or c_d < 0 or not self._is_spend(values[10], values[11], s_e, s_d):
            raise tampered(self.path, f"entry #{rid} does not add up with the entries before")
        unit = values[14]
        if unit is not None and unit != self.unit:
            raise tampered(self.path, f"entry #{rid} names another privacy unit")
        self.spent, self.last_entry = (s_e, s_d), rid
        self.entries += 1
        key = (values[5], values[6], values[7])  # requested epsilon, delta, rho (texts)
        self.requests[key] = self.requests.get(key, 0) + 1
        self.copies[rid] = (r[-2], r[-1])

    def _charged(self, rid: int, values: _Row) -> tuple[Fraction, Fraction]:
        """The charge (epsilon, delta) of entry ``rid``, once its numbers are well formed and
        its id follows the last entry's."""
        frac = self.frac
        c_e, c_d = frac(values[8]), frac(values[9])
        frac(values[7])  # a malformed rho fails here
        if (c_e is None or c_d is None or frac(values[5]) is None or frac(values[6]) is None
                or rid <= self.last_entry):
            raise tampered(self.path, f"entry #{rid} is malformed")
        return c_e, c_d

    def _is_spend(self, text_e: Any, text_d: Any, s_e: Fraction, s_d: Fraction) -> bool:
        """Whether the stored cumulative spend is ``(s_e, s_d)``: compared as text first (what
        dpframe writes), as numbers otherwise (a migrated schema-1 entry)."""
        if (text_e, text_d) == (frac_text(s_e), frac_text(s_d)):
            return True
        return (parse_frac(text_e), parse_frac(text_d)) == (s_e, s_d)

    def _outcome_row(self, rid: int, values: _Row, r: _Row) -> None:
        entry_id, _, status, details = values
        if entry_id not in self.copies or entry_id in self.outcomes:
            raise tampered(self.path, f"outcome #{rid} names no pending entry")
        if status not in ("released", "failed"):
            raise tampered(self.path, f"outcome #{rid} is malformed")
        self.outcomes[entry_id] = (status, details)

    def _unit_row(self, rid: int, values: _Row, r: _Row) -> None:
        if self.unit is not None or not isinstance(values[1], str):
            raise tampered(self.path, "its privacy unit was bound twice")
        self.unit = values[1]

    def finish(self, head: Head) -> None:
        """Check that the rows end where the sealed head says and add up to its totals, and
        that every entry's status copy matches its outcome."""
        if self.rows != head.rows or self.running != head.hash:
            raise tampered(
                self.path,
                "its chain ends before its recorded head (rows were deleted at the end)"
                if self.rows < head.rows else "its rows do not match its chain head",
            )
        if not self._agrees_with(head):
            raise tampered(self.path, "its chain head disagrees with its rows")
        for eid, copy in self.copies.items():
            if copy != self.outcomes.get(eid, ("charged", "{}")):
                raise tampered(self.path, f"the status of entry #{eid} disagrees with its outcome")

    def _agrees_with(self, head: Head) -> bool:
        totals = self.all_totals()
        bound = totals.spend()
        return (
            (self.budget, self.spent, totals, self.unit)
            == (head.budget, head.spent, head.totals, head.unit)
            and self.spent[0] >= bound.epsilon and self.spent[1] >= bound.delta
        )


def _state_numbers(state: Mapping[str, Any], path: Path) -> list[Fraction]:
    """Budget, spent and running totals of a checkpoint's state, in this order."""
    f = [parse_frac(x) for x in (*state["budget"], *state["spent"], *state["totals"][:5])]
    g = [x for x in f if x is not None]
    if len(g) != 9:
        raise tampered(path, "its checkpoint is malformed")
    return g


_CHECKS = {
    "budget": _Walk._budget_row,
    "entries": _Walk._entry_row,
    "outcomes": _Walk._outcome_row,
    "units": _Walk._unit_row,
}


def _chained_rows(
    conn: sqlite3.Connection, path: Path, table: str, *, after: int = 0
) -> Iterator[tuple[int, str, _Row]]:
    """``(seq, table, row)`` for the rows of ``table`` in chain order (those after position
    ``after`` when it is not 0; every row else, a row without a position included); an entry's
    row ends with its ``status`` and ``details`` copy."""
    cols = ", ".join(CHAINED[table])
    copy = ", status, details" if table == "entries" else ""
    where = f" WHERE seq > {int(after)}" if after else ""
    for r in conn.execute(
        f"SELECT seq, id, prev_hash, row_hash, {cols}{copy} FROM {table}{where} ORDER BY seq"
    ):
        if not isinstance(r[0], int):
            raise tampered(path, f"a row of {table} has no place in the hash chain")
        yield r[0], table, r


def verify_chain(conn: sqlite3.Connection, path: Path, *, tail: bool = False
                 ) -> dict[str, Any]:
    """Check the chain and every accounting invariant; ``LedgerError`` on the first violation.
    Returns ``rows``, ``head`` (last hash), ``entries``, ``ledger_id``, ``schema_version`` and
    ``checked`` (the rows walked).

    By default the whole chain, O(rows). With ``tail``, only the rows after the verified
    checkpoint (:data:`CHECKPOINT`), resumed from the state stored there, once the checkpoint's
    seal and its row (same position, same hash) are checked: O(rows since). ``state`` is what
    :func:`advance_checkpoint` stores as the next checkpoint. The checkpoint vouches for the
    rows before it only because they verified when it was written: a row before it edited
    since is found by the whole-chain check (``--verify``), not by ``tail``.
    """
    schema = conn.execute(
        "SELECT app, version, created, neighbouring, ledger_id FROM dpframe_schema"
    ).fetchall()
    if len(schema) != 1 or schema[0][0] != APP_ID:
        raise tampered(path, "its schema row is missing or duplicated")
    app, version, created, relation, ledger_id = schema[0]
    if relation not in NEIGHBOURING:
        raise tampered(path, "its neighbouring relation is malformed")
    head = read_head(conn, path, check_last=False)
    first = genesis(app, created, relation, ledger_id)
    if tail:
        _check_budget_rows(conn, path, first)
    walk = _start(conn, path, first, tail=tail)
    start = walk.rows
    rows = (_chained_rows(conn, path, t, after=start) for t in CHAINED)
    for seq, table, r in heapq.merge(*rows):  # positions are unique: compared alone
        walk.step(seq, table, r)
    walk.finish(head)
    return {
        "rows": walk.rows,
        "head": walk.running,
        "entries": walk.entries,
        "ledger_id": ledger_id,
        "schema_version": version,
        "checked": walk.rows - start,
        "state": walk.state(),
    }


def advance_checkpoint(conn: sqlite3.Connection, path: Path, state: Mapping[str, Any]) -> None:
    """Store ``state`` (verified by :func:`verify_chain` at an open) as the checkpoint, in a
    write transaction, unless the stored checkpoint is already at or past it: chained rows are
    append-only, so the rows it vouches for are those that verified."""
    stored = read_checkpoint(conn, path)
    if stored is None or int(stored["rows"]) < int(state["rows"]):
        write_checkpoint(conn, state)


def _check_budget_rows(conn: sqlite3.Connection, path: Path, first: str) -> None:
    """Every budget row (a handful: the first and one per budget change), wherever it sits in
    the chain, against its own hash and its predecessor's: a tail walk covers only the rows
    since the checkpoint, and a budget is what an edit would raise."""
    for seq, table, r in _chained_rows(conn, path, "budget"):
        rid, prev, digest = r[1], r[2], r[3]
        before = first if seq == 1 else hash_at(conn, seq - 1)
        if prev != before or digest != row_hash(prev, table, seq, rid, r[4 : _WIDTH[table]]):
            raise tampered(path, f"row {seq} of its hash chain ({table} #{rid}) was changed")


def hash_at(conn: sqlite3.Connection, seq: int) -> str | None:
    """The row hash at chain position ``seq`` (None when no row holds it)."""
    for table in CHAINED:
        row = conn.execute(f"SELECT row_hash FROM {table} WHERE seq = ?", (seq,)).fetchone()
        if row is not None:
            return str(row[0])
    return None


def _start(conn: sqlite3.Connection, path: Path, first: str, *, tail: bool) -> _Walk:
    """The walk to run: from the genesis hash ``first``, or (``tail``) from the stored
    checkpoint. Either way the checkpoint's row must still have the hash verified there."""
    stored = read_checkpoint(conn, path)
    if stored is not None:
        _check_checkpoint_row(conn, path, stored)
    if stored is None or not tail:
        return _Walk(path, first)
    _check_positions(conn, path)
    return _Walk.resume(conn, path, stored)


#: The verified checkpoint: a position of the chain, its row hash and the accounting up to it
#: (``state``, JSON), sealed like the head. Written by a writable open after verifying the
#: chain up to its head; outside the chain.
CHECKPOINT = """CREATE TABLE IF NOT EXISTS chain_checkpoint (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL,
    state TEXT NOT NULL,
    seal TEXT NOT NULL
)"""


def write_checkpoint(conn: sqlite3.Connection, state: Mapping[str, Any]) -> None:
    """Store ``state`` (a verified walk's, :meth:`_Walk.state`) as the checkpoint."""
    text = _canon([state])
    conn.execute(CHECKPOINT)
    conn.execute("INSERT OR REPLACE INTO chain_checkpoint (id, seq, hash, state, seal) "
                 "VALUES (1, ?, ?, ?, ?)",
                 (state["rows"], state["hash"], text, _seal([state["rows"], state["hash"], text])))


def read_checkpoint(conn: sqlite3.Connection, path: Path) -> dict[str, Any] | None:
    """The stored checkpoint's state (its seal checked); None when there is none (the whole
    chain is then walked)."""
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                          "name = 'chain_checkpoint'").fetchone()
    if exists is None:
        return None
    row = conn.execute("SELECT seq, hash, state, seal FROM chain_checkpoint "
                       "WHERE id = 1").fetchone()
    if row is None:
        return None
    seq, digest, text, seal = row
    if seal != _seal([seq, digest, text]):
        raise tampered(path, "its checkpoint was edited")
    try:
        state = json.loads(text)[0]
    except (TypeError, ValueError, IndexError, KeyError) as exc:
        raise tampered(path, "its checkpoint is malformed") from exc
    if not isinstance(state, dict) or (state.get("rows"), state.get("hash")) != (seq, digest):
        raise tampered(path, "its checkpoint is malformed")
    return state


def _check_positions(conn: sqlite3.Connection, path: Path) -> None:
    """No chained row lacks an integer position (O(log n) on the ``seq`` indexes): the rows a
    walk after a checkpoint skips are only those before it."""
    for table in CHAINED:
        for cond in ("seq IS NULL", "seq >= ''"):  # SQLite sorts text and blobs after numbers
            if conn.execute(f"SELECT 1 FROM {table} WHERE {cond} LIMIT 1").fetchone():
                raise tampered(path, f"a row of {table} has no place in the hash chain")


def _check_checkpoint_row(conn: sqlite3.Connection, path: Path, state: Mapping[str, Any]) -> None:
    """The row at the checkpoint's position still has the hash it had (a chain rewritten up to
    there, or cut before it, fails here)."""
    seq = state["rows"]
    if seq == 0:
        return
    for table in CHAINED:
        row = conn.execute(f"SELECT row_hash FROM {table} WHERE seq = ?", (seq,)).fetchone()
        if row is not None:
            if row[0] == state["hash"]:
                return
            break
    raise tampered(path, f"row {seq} of its hash chain is not the one verified at its "
                   "checkpoint (the chain was rewritten or cut)")
