"""Privacy ledgers: where a session's budget and every charge live.

Two stores share one interface (:class:`Ledger`):

- :class:`MemoryLedger`: in-process, guarded by a lock; gone with the process.
- :class:`SqliteLedger`: an embedded SQLite file, the source of truth across processes. Charges
  run in ``BEGIN IMMEDIATE`` transactions (one writer at a time, checked and inserted
  atomically), the database is in WAL mode with ``synchronous=FULL``, so concurrent writers never
  overspend together and a process killed at any instant either committed its charge or
  charged nothing. A release is computed only after its charge has committed.

Fractions are stored exactly as TEXT ``"num/den"``. Every entry also stores the session's
cumulative spend after it (``spent_epsilon``, ``spent_delta``); the spend is monotone (the
running maximum of :func:`~dpframe.core.accounting.session_spend`, which is always a valid
bound) and every charge is the difference of two consecutive spends, so charges are never
negative.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from ._json import jsonable
from .core.accounting import (
    Number,
    PrivacyCost,
    SpendTotals,
    _fmt,
    session_spend,
    validate_delta,
    validate_epsilon,
)
from .errors import BudgetExceededError, LedgerError, ValidationError

SCHEMA_VERSION = 1
APP_ID = "dpframe-ledger"
STATUSES = ("charged", "released", "failed")
NEIGHBOURING = ("add_remove", "change_one")
_SQLITE_MAGIC = b"SQLite format 3\x00"
_T = TypeVar("_T")


@runtime_checkable
class Ledger(Protocol):
    """What a session needs from a ledger store."""

    def total(self) -> tuple[Fraction, Fraction]:
        """The budget ``(epsilon, delta)``."""
        ...

    def spent(self) -> tuple[Fraction, Fraction]:
        """The ``(epsilon, delta)`` charged so far (all entries, whatever their status)."""
        ...

    def fits(self, cost: PrivacyCost) -> bool:
        """Whether ``cost`` would fit now. No side effect."""
        ...

    def charge(self, cost: PrivacyCost, meta: Mapping[str, Any]) -> int:
        """Atomically check that ``cost`` fits and record it; return the entry id.

        Raises :class:`~dpframe.errors.BudgetExceededError` with nothing written otherwise.
        """
        ...

    def record(self, entry_id: int, status: str, details: Mapping[str, Any]) -> None:
        """Mark a charged entry ``"released"`` or ``"failed"`` with release details."""
        ...

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, oldest first, as dicts (Fractions for budget numbers)."""
        ...


# --------------------------------------------------------------------------------------------
# Shared logic
# --------------------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _frac_text(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


def _parse_frac(text: str | None) -> Fraction | None:
    if text is None:
        return None
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError, TypeError) as exc:
        raise LedgerError("ledger holds a malformed budget number; the file is corrupt") from exc




def _plan(
    total: tuple[Fraction, Fraction],
    costs: list[PrivacyCost] | SpendTotals,
    last_spent: tuple[Fraction, Fraction],
    cost: PrivacyCost,
) -> tuple[tuple[Fraction, Fraction], tuple[Fraction, Fraction], bool]:
    """The spend before and after ``cost`` and whether it fits ``total``."""
    totals = costs if isinstance(costs, SpendTotals) else _fold(costs)
    before = totals.spend()
    old = (max(before.epsilon, last_spent[0]), max(before.delta, last_spent[1]))
    after = totals.add(cost).spend()
    new = (max(after.epsilon, old[0]), max(after.delta, old[1]))
    return old, new, new[0] <= total[0] and new[1] <= total[1]


def _fold(costs: Iterable[PrivacyCost]) -> SpendTotals:
    totals = SpendTotals()
    for c in costs:
        totals = totals.add(c)
    return totals


def _exceeded(
    total: tuple[Fraction, Fraction],
    old: tuple[Fraction, Fraction],
    new: tuple[Fraction, Fraction],
) -> BudgetExceededError:
    need = (new[0] - old[0], new[1] - old[1])
    left = (max(total[0] - old[0], Fraction(0)), max(total[1] - old[1], Fraction(0)))
    return BudgetExceededError(
        f"privacy budget exceeded: this query needs epsilon={_fmt(need[0])}, "
        f"delta={_fmt(need[1])} but only epsilon={_fmt(left[0])}, delta={_fmt(left[1])} "
        f"remain (total epsilon={_fmt(total[0])}, delta={_fmt(total[1])}); "
        "nothing was computed or charged"
    )


def _check_cost(cost: Any) -> PrivacyCost:
    if not isinstance(cost, PrivacyCost):
        raise ValidationError(f"cost must be a PrivacyCost, not {type(cost).__name__}")
    return cost


def _check_status(status: Any) -> str:
    if status not in ("released", "failed"):
        raise ValidationError(f"status must be 'released' or 'failed', got {status!r}")
    return str(status)


def _meta_fields(meta: Mapping[str, Any]) -> dict[str, Any]:
    cols = meta.get("columns") or []
    if isinstance(cols, str):
        cols = [cols]
    return {
        "session": None if meta.get("session") is None else str(meta.get("session")),
        "query": str(meta.get("query", "")),
        "columns": [str(c) for c in cols],
        "mechanism": str(meta.get("mechanism", "")),
        "seeded": bool(meta.get("seeded", False)),
    }


# --------------------------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------------------------


class MemoryLedger:
    """An in-process ledger. Thread-safe; charges are checked and inserted under one lock."""

    def __init__(self, epsilon: Number, delta: Number = 0) -> None:
        self._total = (validate_epsilon(epsilon), validate_delta(delta))
        self._rows: list[dict[str, Any]] = []
        self._costs: list[PrivacyCost] = []
        self._totals = SpendTotals()
        self._lock = threading.Lock()

    def total(self) -> tuple[Fraction, Fraction]:
        """The budget ``(epsilon, delta)``."""
        return self._total

    def _last_spent(self) -> tuple[Fraction, Fraction]:
        if not self._rows:
            return Fraction(0), Fraction(0)
        return self._rows[-1]["spent_epsilon"], self._rows[-1]["spent_delta"]

    def spent(self) -> tuple[Fraction, Fraction]:
        """The ``(epsilon, delta)`` charged so far."""
        with self._lock:
            return self._last_spent()

    def fits(self, cost: PrivacyCost) -> bool:
        """Whether ``cost`` fits now (no side effect)."""
        cost = _check_cost(cost)
        with self._lock:
            return _plan(self._total, self._totals, self._last_spent(), cost)[2]

    def charge(self, cost: PrivacyCost, meta: Mapping[str, Any]) -> int:
        """Check and record ``cost`` atomically; ``BudgetExceededError`` if it does not fit."""
        cost = _check_cost(cost)
        fields = _meta_fields(meta)
        with self._lock:
            old, new, ok = _plan(self._total, self._totals, self._last_spent(), cost)
            if not ok:
                raise _exceeded(self._total, old, new)
            entry_id = len(self._rows) + 1
            self._costs.append(cost)
            self._totals = self._totals.add(cost)
            self._rows.append(
                {
                    "id": entry_id,
                    "time": _now(),
                    **fields,
                    "requested_epsilon": cost.epsilon,
                    "requested_delta": cost.delta,
                    "rho": cost.rho,
                    "epsilon": new[0] - old[0],
                    "delta": new[1] - old[1],
                    "spent_epsilon": new[0],
                    "spent_delta": new[1],
                    "status": "charged",
                    "details": {},
                }
            )
            return entry_id

    def record(self, entry_id: int, status: str, details: Mapping[str, Any]) -> None:
        """Mark entry ``entry_id`` as ``"released"`` or ``"failed"``."""
        status = _check_status(status)
        det = jsonable(dict(details or {}))
        with self._lock:
            if not isinstance(entry_id, int) or not 1 <= entry_id <= len(self._rows):
                raise LedgerError(f"no ledger entry with id {entry_id!r}")
            row = self._rows[entry_id - 1]
            if row["status"] != "charged":
                raise LedgerError(f"ledger entry {entry_id} is already {row['status']}")
            row["status"] = status
            row["details"] = det

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, oldest first (copies)."""
        with self._lock:
            return [
                {**r, "columns": list(r["columns"]), "details": dict(r["details"])}
                for r in self._rows
            ]

    def describe(self) -> str:
        """A short description for reports."""
        return "in-memory ledger"


# --------------------------------------------------------------------------------------------
# SQLite
# --------------------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE dpframe_schema (
    app TEXT NOT NULL,
    version INTEGER NOT NULL,
    created TEXT NOT NULL,
    neighbouring TEXT NOT NULL
);
CREATE TABLE budget (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    epsilon TEXT NOT NULL,
    delta TEXT NOT NULL,
    session TEXT,
    note TEXT NOT NULL
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
    pid INTEGER
);
"""

_ENTRY_COLS = (
    "id, time, session, query, columns, mechanism, requested_epsilon, requested_delta, rho, "
    "epsilon, delta, spent_epsilon, spent_delta, seeded, status, details"
)


class SqliteLedger:
    """A durable ledger in an embedded SQLite file (no server).

    ``SqliteLedger(path, epsilon, delta)`` creates the file (its folder must exist) or opens it.
    An existing ledger keeps its budget: opening it with a different total raises
    :class:`~dpframe.errors.LedgerError` unless ``allow_budget_change=True`` (the change is then
    recorded in the ``budget`` table). ``epsilon=None`` opens an existing ledger with its stored
    budget. The neighbouring relation is fixed at creation: epsilons under different relations
    do not add up, so a mismatch is refused. A file that is not a dpframe ledger, or is
    corrupt, raises ``LedgerError`` and is left untouched.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        epsilon: Number | None = None,
        delta: Number | None = None,
        *,
        neighbouring: str | None = None,
        name: str | None = None,
        allow_budget_change: bool = False,
        create: bool = True,
        timeout: float = 60.0,
    ) -> None:
        if isinstance(path, bool) or not isinstance(path, str | os.PathLike):
            raise ValidationError(f"ledger must be a file path, not {type(path).__name__}")
        p = Path(os.fspath(path)).expanduser()
        if str(path) in ("", ":memory:"):
            raise ValidationError("ledger path must name a file (use ledger=None for memory)")
        if neighbouring is not None and neighbouring not in NEIGHBOURING:
            raise ValidationError(f"neighbouring must be one of {NEIGHBOURING}")
        eps_total = None if epsilon is None else validate_epsilon(epsilon)
        delta_total = validate_delta(0 if delta is None else delta)
        self.path = p.absolute()
        self._timeout = float(timeout)
        self._name = name
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._lock = threading.RLock()
        if not self.path.parent.is_dir():
            raise LedgerError(
                f"cannot create ledger {self.path}: folder {self.path.parent} does not exist"
            )
        if self.path.is_dir():
            raise LedgerError(f"ledger path {self.path} is a folder, not a file")
        exists = self.path.exists() and self.path.stat().st_size > 0
        if exists:
            self._check_header()
        elif not create or eps_total is None:
            raise LedgerError(f"no ledger at {self.path} (a new ledger needs a budget)")
        conn = self._connect()
        try:
            self._open_schema(conn, eps_total, delta_total, neighbouring, allow_budget_change)
        except BaseException:
            self.close()
            raise

    # -- connection --------------------------------------------------------------------------

    def _check_header(self) -> None:
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(16)
        except OSError as exc:
            raise LedgerError(f"cannot read ledger {self.path}: {exc.strerror}") from exc
        if head != _SQLITE_MAGIC:
            raise LedgerError(f"{self.path} is not a dpframe ledger (not an SQLite database)")

    def _connect(self) -> sqlite3.Connection:
        """The connection of this process (reopened after a fork)."""
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        try:
            conn = sqlite3.connect(
                str(self.path),
                timeout=self._timeout,
                isolation_level=None,
                check_same_thread=False,
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot open ledger {self.path}: {exc}") from exc
        self._conn = conn
        self._pid = os.getpid()
        return conn

    def close(self) -> None:
        """Close the connection (the ledger reopens it when used again)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __del__(self) -> None:  # pragma: no cover - best effort
        with contextlib.suppress(Exception):
            self.close()

    def _wrap(self, exc: sqlite3.Error) -> LedgerError:
        msg = str(exc)
        if "locked" in msg or "busy" in msg:
            return LedgerError(f"ledger {self.path} is busy (another process holds it): {msg}")
        return LedgerError(f"ledger {self.path} is unreadable or corrupt: {msg}")

    # -- schema ------------------------------------------------------------------------------

    def _open_schema(
        self,
        conn: sqlite3.Connection,
        epsilon: Fraction | None,
        delta: Fraction | None,
        neighbouring: str | None,
        allow_budget_change: bool,
    ) -> None:
        try:
            tables = {
                r[0]
                for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            if tables and "dpframe_schema" not in tables:
                raise LedgerError(f"{self.path} is an SQLite database but not a dpframe ledger")
            if tables:
                ok = conn.execute("PRAGMA quick_check").fetchone()
                if not ok or ok[0] != "ok":
                    raise LedgerError(f"ledger {self.path} is corrupt (integrity check failed)")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            if not mode or str(mode[0]).lower() != "wal":
                raise LedgerError(f"ledger {self.path}: cannot enable WAL mode")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._init_or_check(conn, epsilon, delta, neighbouring, allow_budget_change)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._wrap(exc) from exc

    def _init_or_check(
        self,
        conn: sqlite3.Connection,
        epsilon: Fraction | None,
        delta: Fraction | None,
        neighbouring: str | None,
        allow_budget_change: bool,
    ) -> None:
        has = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'dpframe_schema'"
        ).fetchone()
        rel = neighbouring or "add_remove"
        if not has:
            if epsilon is None:
                raise LedgerError(f"{self.path} is not a dpframe ledger and no budget was given")
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            conn.execute(
                "INSERT INTO dpframe_schema (app, version, created, neighbouring) "
                "VALUES (?, ?, ?, ?)",
                (APP_ID, SCHEMA_VERSION, _now(), rel),
            )
            self._insert_budget(conn, epsilon, delta or Fraction(0), "created")
            return
        row = conn.execute("SELECT app, version, neighbouring FROM dpframe_schema").fetchone()
        if row is None or row[0] != APP_ID:
            raise LedgerError(f"{self.path} is not a dpframe ledger")
        if int(row[1]) > SCHEMA_VERSION:
            raise LedgerError(
                f"ledger {self.path} has schema version {row[1]}; this dpframe reads up to "
                f"{SCHEMA_VERSION}: upgrade dpframe"
            )
        if neighbouring is not None and row[2] != neighbouring:
            raise LedgerError(
                f"ledger {self.path} accounts under neighbouring={row[2]!r}, not "
                f"{neighbouring!r}: epsilons under different relations do not add up"
            )
        stored = self._total(conn)
        if epsilon is None:
            return
        want = (Fraction(epsilon), Fraction(delta or 0))
        if want != stored:
            if not allow_budget_change:
                raise LedgerError(
                    f"ledger {self.path} has budget epsilon={_fmt(stored[0])}, "
                    f"delta={_fmt(stored[1])}; this session asks for epsilon={_fmt(want[0])}, "
                    f"delta={_fmt(want[1])}. Pass allow_budget_change=True to change it "
                    "(the change is recorded)"
                )
            self._insert_budget(conn, want[0], want[1], "changed (allow_budget_change=True)")

    def _insert_budget(
        self, conn: sqlite3.Connection, eps: Fraction, delta: Fraction, note: str
    ) -> None:
        conn.execute(
            "INSERT INTO budget (time, epsilon, delta, session, note) VALUES (?, ?, ?, ?, ?)",
            (_now(), _frac_text(Fraction(eps)), _frac_text(Fraction(delta)), self._name, note),
        )

    @staticmethod
    def _total(conn: sqlite3.Connection) -> tuple[Fraction, Fraction]:
        row = conn.execute("SELECT epsilon, delta FROM budget ORDER BY id DESC LIMIT 1").fetchone()
        if row is None:
            raise LedgerError("ledger has no budget; the file is corrupt")
        eps, delta = _parse_frac(row[0]), _parse_frac(row[1])
        assert eps is not None and delta is not None
        return eps, delta

    @staticmethod
    def _costs_and_last(
        conn: sqlite3.Connection,
    ) -> tuple[list[PrivacyCost], tuple[Fraction, Fraction]]:
        costs: list[PrivacyCost] = []
        last = (Fraction(0), Fraction(0))
        for e, d, r, se, sd in conn.execute(
            "SELECT requested_epsilon, requested_delta, rho, spent_epsilon, spent_delta "
            "FROM entries ORDER BY id"
        ):
            eps, delta = _parse_frac(e), _parse_frac(d)
            assert eps is not None and delta is not None
            costs.append(PrivacyCost(eps, delta, _parse_frac(r)))
            s_e, s_d = _parse_frac(se), _parse_frac(sd)
            assert s_e is not None and s_d is not None
            last = (s_e, s_d)
        return costs, last

    def _read(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``fn(conn)`` in a read transaction (a consistent snapshot)."""
        with self._lock:
            conn = self._connect()
            try:
                conn.execute("BEGIN")
                try:
                    return fn(conn)
                finally:
                    conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise self._wrap(exc) from exc

    # -- interface ---------------------------------------------------------------------------

    def total(self) -> tuple[Fraction, Fraction]:
        """The current budget ``(epsilon, delta)`` (the latest row of ``budget``)."""
        return self._read(self._total)

    def neighbouring(self) -> str:
        """The neighbouring relation the ledger was created with."""
        row = self._read(lambda c: c.execute("SELECT neighbouring FROM dpframe_schema").fetchone())
        return str(row[0])

    def spent(self) -> tuple[Fraction, Fraction]:
        """The ``(epsilon, delta)`` charged so far, by every process."""

        def go(conn: sqlite3.Connection) -> tuple[Fraction, Fraction]:
            costs, last = self._costs_and_last(conn)
            s = session_spend(costs)
            return max(s.epsilon, last[0]), max(s.delta, last[1])

        return self._read(go)

    def fits(self, cost: PrivacyCost) -> bool:
        """Whether ``cost`` fits now (no side effect; another process may charge meanwhile)."""
        cost = _check_cost(cost)

        def go(conn: sqlite3.Connection) -> bool:
            costs, last = self._costs_and_last(conn)
            return _plan(self._total(conn), costs, last, cost)[2]

        return self._read(go)

    def charge(self, cost: PrivacyCost, meta: Mapping[str, Any]) -> int:
        """Check that ``cost`` fits and insert it, in one ``BEGIN IMMEDIATE`` transaction.

        Raises ``BudgetExceededError`` (transaction rolled back, nothing written) if not. When
        this returns, the charge is committed to the file.
        """
        cost = _check_cost(cost)
        fields = _meta_fields(meta)
        if fields["session"] is None:
            fields["session"] = self._name
        with self._lock:
            conn = self._connect()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    total = self._total(conn)
                    costs, last = self._costs_and_last(conn)
                    old, new, ok = _plan(total, costs, last, cost)
                    if not ok:
                        raise _exceeded(total, old, new)
                    cur = conn.execute(
                        "INSERT INTO entries (time, session, query, columns, mechanism, "
                        "requested_epsilon, requested_delta, rho, epsilon, delta, "
                        "spent_epsilon, spent_delta, seeded, status, details, pid) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'charged', '{}', ?)",
                        (
                            _now(),
                            fields["session"],
                            fields["query"],
                            json.dumps(fields["columns"]),
                            fields["mechanism"],
                            _frac_text(cost.epsilon),
                            _frac_text(cost.delta),
                            None if cost.rho is None else _frac_text(cost.rho),
                            _frac_text(new[0] - old[0]),
                            _frac_text(new[1] - old[1]),
                            _frac_text(new[0]),
                            _frac_text(new[1]),
                            int(fields["seeded"]),
                            os.getpid(),
                        ),
                    )
                    entry_id = cur.lastrowid
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise self._wrap(exc) from exc
        assert entry_id is not None
        return int(entry_id)

    def record(self, entry_id: int, status: str, details: Mapping[str, Any]) -> None:
        """Mark a charged entry ``"released"`` or ``"failed"`` (once)."""
        status = _check_status(status)
        det = json.dumps(jsonable(dict(details or {})), allow_nan=False)
        with self._lock:
            conn = self._connect()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    row = conn.execute(
                        "SELECT status FROM entries WHERE id = ?", (int(entry_id),)
                    ).fetchone()
                    if row is None:
                        raise LedgerError(f"no ledger entry with id {entry_id!r}")
                    if row[0] != "charged":
                        raise LedgerError(f"ledger entry {entry_id} is already {row[0]}")
                    conn.execute(
                        "UPDATE entries SET status = ?, details = ? WHERE id = ?",
                        (status, det, int(entry_id)),
                    )
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise self._wrap(exc) from exc

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, oldest first."""

        def go(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            out = []
            for row in conn.execute(f"SELECT {_ENTRY_COLS} FROM entries ORDER BY id"):
                (i, t, sess, q, cols, mech, re_, rd, rho, e, d, se, sd, seeded, st, det) = row
                try:
                    columns = json.loads(cols)
                    details = json.loads(det)
                except json.JSONDecodeError as exc:
                    raise LedgerError("ledger entry is malformed; the file is corrupt") from exc
                out.append(
                    {
                        "id": int(i),
                        "time": t,
                        "session": sess,
                        "query": q,
                        "columns": columns,
                        "mechanism": mech,
                        "requested_epsilon": _parse_frac(re_),
                        "requested_delta": _parse_frac(rd),
                        "rho": _parse_frac(rho),
                        "epsilon": _parse_frac(e),
                        "delta": _parse_frac(d),
                        "spent_epsilon": _parse_frac(se),
                        "spent_delta": _parse_frac(sd),
                        "seeded": bool(seeded),
                        "status": st,
                        "details": details,
                    }
                )
            return out

        return self._read(go)

    def budget_history(self) -> list[dict[str, Any]]:
        """Every budget the ledger has had, oldest first (creation, then recorded changes)."""

        def go(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            return [
                {
                    "id": int(i),
                    "time": t,
                    "epsilon": _parse_frac(e),
                    "delta": _parse_frac(d),
                    "session": s,
                    "note": n,
                }
                for i, t, e, d, s, n in conn.execute(
                    "SELECT id, time, epsilon, delta, session, note FROM budget ORDER BY id"
                )
            ]

        return self._read(go)

    def describe(self) -> str:
        """A short description for reports."""
        return f"SQLite ledger {self.path}"


def spend_of(entries: Iterable[Mapping[str, Any]]) -> PrivacyCost:
    """:func:`session_spend` of ledger entries (dicts as returned by ``entries()``)."""
    return session_spend(
        PrivacyCost(e["requested_epsilon"], e["requested_delta"], e.get("rho"))
        for e in entries
    )


__all__ = [
    "SCHEMA_VERSION",
    "Ledger",
    "MemoryLedger",
    "SqliteLedger",
    "spend_of",
]
