"""The SHA-256 hash chain of a SQLite ledger: row digests, the sealed head, verification.

Every accounting row (budget rows, entries, outcomes, the privacy-unit binding) is a link of
one chain: ``row_hash = sha256(encoding of (table, seq, id, prev_hash, *hashed values))``
(:mod:`.formats`: one encoding per schema version), the first ``prev_hash`` being a hash of the
ledger's identity. The chain's head (row count, last hash) and the running totals the ledger
charges from are kept in the ``chain_head`` row, updated in the same transaction and sealed by a
hash. A deleted (even the last), edited, inserted or reordered row fails verification; it is
never read as a smaller spend. The hash is not keyed: it detects edits made with ordinary
tools, not a forger who recomputes the whole chain. Nor are the seals of the head and the
checkpoint: what they state is vouched at every open by the chained rows at the checkpoint's
position (:func:`vouch_checkpoint`), so that lowering a spend means rewriting chained rows,
which every export's ``ledger_head`` pins.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from ...core.accounting import SpendTotals
from ...errors import LedgerError
from .diagnose import tampered
from .formats import GENESIS, ROW_HASH, WIDTH, Row, canon, row_sql, sha
from .schema import APP_ID, CHAINED, NEIGHBOURING, SCHEMA_VERSION, frac_text, parse_frac
from .walk import Walk

_HEAD_COLS = (
    "rows, hash, budget_epsilon, budget_delta, spent_epsilon, spent_delta, pure_epsilon, "
    "all_delta, gauss_epsilon, gauss_delta, gauss_rho, any_gauss, privacy_unit"
)


def genesis(app: Any, created: Any, neighbouring: Any, ledger_id: Any,
            version: int = SCHEMA_VERSION) -> str:
    """The ``prev_hash`` of the first row: the ledger's identity and neighbouring relation (and,
    from schema 3, its version)."""
    return GENESIS[version](app, created, neighbouring, ledger_id)


def _seal(stored: list[Any]) -> str:
    return sha("head\n" + canon(stored))


@dataclass(frozen=True)
class Head:
    """The ``chain_head`` row: chain position and the running totals charges are checked on."""

    rows: int
    hash: str
    budget: tuple[Fraction, Fraction]
    spent: tuple[Fraction, Fraction]
    totals: SpendTotals
    unit: str | None
    #: The ledger's schema version: how its rows are hashed (:mod:`.formats`; not stored here)
    version: int = SCHEMA_VERSION

    @classmethod
    def first(cls, genesis_hash: str, budget: tuple[Fraction, Fraction],
              version: int = SCHEMA_VERSION) -> Head:
        """The head of a chain with no row yet."""
        return cls(0, genesis_hash, budget, (Fraction(0), Fraction(0)), SpendTotals(), None,
                   version)

    def stored(self) -> list[Any]:
        """The head's values as stored (and sealed), in ``chain_head`` column order."""
        t = self.totals
        return [
            self.rows, self.hash, frac_text(self.budget[0]), frac_text(self.budget[1]),
            frac_text(self.spent[0]), frac_text(self.spent[1]), frac_text(t.pure_eps),
            frac_text(t.all_delta), frac_text(t.g_eps), frac_text(t.g_delta),
            frac_text(t.g_rho), int(t.any_g), self.unit,
        ]


def link(conn: sqlite3.Connection, head: Head, table: str, rid: int) -> Head:
    """Chain the row ``rid`` of ``table`` after ``head`` (hashed in the head's format)."""
    seq = head.rows + 1
    conn.execute(f"UPDATE {table} SET seq = ?, prev_hash = ? WHERE id = ?",
                 (seq, head.hash, rid))
    # hashed as stored (read back: exactly what a verification reads)
    row = conn.execute(f"{row_sql(head.version)[table]} WHERE id = ?", (rid,)).fetchone()
    digest = ROW_HASH[head.version](row, WIDTH[table])
    conn.execute(f"UPDATE {table} SET row_hash = ? WHERE id = ?", (digest, rid))
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
    return link(conn, head, table, int(rid)), int(rid)


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


def _parse_head(stored: list[Any], path: Path, version: int) -> Head:
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
        unit=stored[12], version=version,
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
    version = conn.execute("SELECT version FROM dpframe_schema").fetchone()
    if version is None or version[0] not in ROW_HASH:
        raise tampered(path, "its schema version is malformed")
    head = _parse_head(_stored_head(conn, path), path, version[0])
    if check_last and _last_row(conn, path) != (head.rows, head.hash):
        raise tampered(
            path, "its last rows do not match the chain head (a row was deleted or added)"
        )
    return head


def _finish(walk: Walk, head: Head) -> None:
    """Check that the rows walked end where the sealed head says and add up to its totals, and
    that no entry's status copy claims an outcome that no row records."""
    path = walk.path
    if walk.rows != head.rows or walk.running != head.hash:
        raise tampered(
            path,
            "its chain ends before its recorded head (rows were deleted at the end)"
            if walk.rows < head.rows else "its rows do not match its chain head",
        )
    totals = walk.all_totals()
    bound = totals.spend()
    agrees = (
        (walk.budget, walk.spent, totals, walk.unit)
        == (head.budget, head.spent, head.totals, head.unit)
        and walk.spent[0] >= bound.epsilon and walk.spent[1] >= bound.delta
    )
    if not agrees:
        raise tampered(path, "its chain head disagrees with its rows")
    eid = walk.unfinished()
    if eid is not None:
        raise tampered(path, f"the status of entry #{eid} disagrees with its outcome")


#: Chain positions fetched per window (one query per table, merged by their ``seq``).
WINDOW = 4096


def _walk_all(conn: sqlite3.Connection, walk: Walk) -> None:
    """Walk every chained row after ``walk.rows``, in chain order: window by window of
    positions, each table's rows of the window fetched along its ``seq`` index and merged by
    position (cheaper than SQLite's ``UNION ALL ... ORDER BY`` merge); then check that no row
    was left out (a position outside the windows walked, or none: the counts differ)."""
    start = walk.rows
    sql = row_sql(walk.version)
    selects = [f"{sql[t]} WHERE seq > ? AND seq <= ? ORDER BY seq" for t in CHAINED]
    while True:
        low = walk.rows
        parts = [conn.execute(q, (low, low + WINDOW)).fetchall() for q in selects]
        if not any(parts):
            break
        walk.run(parts)
    where = f" WHERE seq > {int(start)}" if start else ""  # every row, when walked whole
    held = sum(conn.execute(f"SELECT count(*) FROM {t}{where}").fetchone()[0] for t in CHAINED)
    if held != walk.rows - start:
        raise tampered(walk.path, "a chained row has no place in the hash chain (or a gap "
                                  "before it)")



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
    head = read_head(conn, path, check_last=False)  # checks the version
    first = genesis(app, created, relation, ledger_id, version)
    if tail:
        _check_budget_rows(conn, path, first, version)
    walk = _start(conn, path, first, version, tail=tail)
    start = walk.rows
    _walk_all(conn, walk)
    _finish(walk, head)
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


def _check_budget_rows(conn: sqlite3.Connection, path: Path, first: str, version: int) -> None:
    """Every budget row (a handful: the first and one per budget change), wherever it sits in
    the chain, against its own hash and its predecessor's: a tail walk covers only the rows
    since the checkpoint, and a budget is what an edit would raise."""
    digest = ROW_HASH[version]
    for r in conn.execute(f"{row_sql(version)['budget']} ORDER BY seq"):
        seq = r[2]
        if isinstance(seq, bool) or not isinstance(seq, int):
            raise tampered(path, "a row of budget has no place in the hash chain")
        before = first if seq == 1 else hash_at(conn, seq - 1)
        if r[4] != before or digest(r, WIDTH["budget"]) != r[0]:
            raise tampered(path, f"row {seq} of its hash chain (budget #{r[3]}) was changed")


def hash_at(conn: sqlite3.Connection, seq: int) -> str | None:
    """The row hash at chain position ``seq`` (None when no row holds it)."""
    for table in CHAINED:
        row = conn.execute(f"SELECT row_hash FROM {table} WHERE seq = ?", (seq,)).fetchone()
        if row is not None:
            return str(row[0])
    return None


def _start(conn: sqlite3.Connection, path: Path, first: str, version: int, *, tail: bool
           ) -> Walk:
    """The walk to run: from the genesis hash ``first``, or (``tail``) from the stored
    checkpoint. Either way the checkpoint's row must still have the hash verified there."""
    stored = read_checkpoint(conn, path)
    if stored is not None:
        _check_checkpoint_row(conn, path, stored)
    if stored is None or not tail:
        return Walk(path, first, version)
    _check_positions(conn, path)
    walk = Walk.resume(conn, path, version, stored)
    vouch_checkpoint(conn, walk, first)
    return walk


def _last_row_of(conn: sqlite3.Connection, walk: Walk, table: str, first: str) -> Row | None:
    """The last row of ``table`` at or before the checkpoint's position (verification layout),
    its hash and its link to the row before it checked (O(log n) on the ``seq`` index)."""
    row = conn.execute(f"{row_sql(walk.version)[table]} WHERE seq <= ? ORDER BY seq DESC LIMIT 1",
                       (walk.rows,)).fetchone()
    if row is None:
        return None
    seq = row[2]
    before = first if seq == 1 else hash_at(conn, seq - 1)
    if row[4] != before or ROW_HASH[walk.version](row, WIDTH[table]) != row[0]:
        raise tampered(walk.path, f"row {seq} of its hash chain ({table} #{row[3]}) was changed")
    return row


def _number(walk: Walk, text: Any, what: str) -> Fraction:
    x = walk.frac(text, what)
    if x is None:
        raise tampered(walk.path, f"{what} is malformed")
    return x


def _recorded(conn: sqlite3.Connection, walk: Walk, first: str) -> tuple[Any, ...]:
    """What the chained rows at or before the checkpoint's position record: the budget, the
    spend, the last entry's id and the privacy unit."""
    budget = _last_row_of(conn, walk, "budget", first)
    entry = _last_row_of(conn, walk, "entries", first)
    unit = _last_row_of(conn, walk, "units", first)
    zero = Fraction(0)
    return (
        None if budget is None else (_number(walk, budget[6], "a budget"),
                                     _number(walk, budget[7], "a budget")),
        (zero, zero) if entry is None else (_number(walk, entry[15], "an entry's spend"),
                                            _number(walk, entry[16], "an entry's spend")),
        0 if entry is None else entry[3],
        None if unit is None else unit[6],
    )


def _chained_totals(conn: sqlite3.Connection, walk: Walk) -> tuple[SpendTotals, int]:
    """The running totals and the number of entries that the chained entries at or before the
    checkpoint's position add up to: their requests, counted by text in one SQL aggregate and
    summed once each (as the walk sums them, :meth:`.walk.Walk.all_totals`). O(entries) in
    SQLite, without hashing; skipped (O(1)) when the vouched spend's delta is 0 (see
    :func:`vouch_checkpoint`)."""
    rows = conn.execute(
        "SELECT requested_epsilon, requested_delta, rho, count(*) FROM entries "
        "WHERE seq <= ? GROUP BY requested_epsilon, requested_delta, rho", (walk.rows,)
    ).fetchall()
    tally = Walk(walk.path, walk.running, walk.version)
    tally.requests = {(e, d, r): int(n) for e, d, r, n in rows}
    return tally.all_totals(), sum(tally.requests.values())


def _totals_agree(conn: sqlite3.Connection, walk: Walk, spent: tuple[Fraction, Fraction]
                  ) -> bool:
    """Whether the checkpoint's running totals (and its entry count) are exactly those of the
    chained entries at or before its position (finding 76). A verified chain's spend is at
    least its totals' composition (:func:`_finish`), whose delta is the sum of every requested
    delta: a vouched spend of delta 0 means that every entry requested delta 0, so no Gaussian
    term (which needs delta > 0 to fit any budget) and a pure epsilon sum equal to the spend
    (the composition only grows, and each charge records max(it, the spend before)). Then the
    totals are (spend epsilon, 0, ...) exactly, in O(1). Otherwise each term is recounted from
    the chained entries (:func:`_chained_totals`): a rho, delta or epsilon sum moved anywhere,
    even where the composition would still reach the recorded spend, is refused."""
    t = walk.totals
    if spent[1] == 0 and walk.entries == walk.last_entry:
        return t == SpendTotals(pure_eps=spent[0])
    totals, entries = _chained_totals(conn, walk)
    return (t, walk.entries) == (totals, entries)


def vouch_checkpoint(conn: sqlite3.Connection, walk: Walk, first: str) -> None:
    """What the checkpoint states (its seal is unkeyed: anyone can recompute it) must be what
    the chained rows at or before its position record (findings 74 and 76): the budget of the
    last budget row, the cumulative spend and id of the last entry (0 and none before any), the
    privacy unit of the units row (O(log n) on the ``seq`` indexes), and the running totals
    and entry count those entries add up to (:func:`_totals_agree`: O(1) on a pure-DP spend,
    else one SQL aggregate over the entries, cheaper than the whole-chain walk a PLD session's
    first recomposition pays). A forger must rewrite chained rows, which every export's
    ``ledger_head`` pins."""
    budget, spent, last, unit = _recorded(conn, walk, first)
    if (walk.budget, walk.spent, walk.last_entry, walk.unit) != (budget, spent, last, unit):
        raise tampered(walk.path, "its checkpoint disagrees with the chained rows at its "
                       "position")
    if not _totals_agree(conn, walk, spent):
        raise tampered(walk.path, "its checkpoint's running totals disagree with the entries "
                       "its chained rows record")


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
    """Store ``state`` (a verified walk's, :meth:`.walk.Walk.state`) as the checkpoint."""
    text = canon([state])
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
