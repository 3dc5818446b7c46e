"""Privacy ledgers: where a session's budget and every charge live.

Two stores share one interface (:class:`Ledger`):

- :class:`MemoryLedger`: in-process, guarded by a lock; gone with the process.
- :class:`SqliteLedger`: an embedded SQLite file, the source of truth across processes.

Guarantees of the SQLite ledger (docs/cli.md, "The ledger's guarantees"):

- **Atomic, durable charges.** A charge is checked and inserted in one ``BEGIN IMMEDIATE``
  transaction (one writer at a time), in WAL mode with ``synchronous=FULL``, and committed before
  :meth:`SqliteLedger.charge` returns: concurrent writers never overspend together, a process
  killed at any instant either committed its charge or charged nothing, and a release is
  computed only after its charge is on disk.
- **Interrupt-safe transactions.** Every transaction (open, create, upgrade, budget change,
  charge, record) runs through one helper: waiting for another process's lock happens in Python
  between short attempts (so Ctrl-C interrupts the wait at once, with nothing open); while a
  transaction is open in the main thread, Python-level signal handlers (``KeyboardInterrupt``,
  ``SystemExit`` from a SIGTERM handler...) are held back and run right after it has committed
  or rolled back; a ``finally`` rolls back whatever is still open, and a connection found inside
  a transaction is rolled back before it is used. An interrupt therefore never leaves the ledger
  locked and never wedges the session.
- **Tamper evidence.** Every accounting row (budget rows, entries, outcomes, the privacy-unit
  binding) is a link of one hash chain: ``row_hash = sha256(prev_hash || canonical row)``, the
  first ``prev_hash`` being a hash of the ledger's identity. The chain's head (row count, last
  hash) and the running totals the ledger charges from are kept in the ``chain_head`` row,
  updated in the same transaction and sealed by a hash. The chain is verified on open and on
  every full read (:meth:`SqliteLedger.entries`, :meth:`SqliteLedger.verify`): a deleted (even
  the last), edited, inserted or reordered row raises :class:`~dpframe.errors.LedgerError`; it
  is never read as a smaller spend. Outcomes (released / failed) are their own chained rows, so
  recording one appends and never rewrites a hashed row. The hash is not keyed: it detects
  edits made with ordinary tools, not a forger who recomputes the whole chain (compare the head
  printed by ``dpframe ledger show --verify`` with a copy kept elsewhere for that).
- **One privacy unit.** The ledger records the unit it protects (``"rows"`` or a unit code) with
  the first charge that names one, or :meth:`SqliteLedger.bind_privacy_unit`; a charge under
  another unit raises :class:`~dpframe.errors.PrivacyUnitError` in the same transaction and
  charges nothing.

Fractions are stored exactly as TEXT ``"num/den"``. Every entry also stores the session's
cumulative spend after it (``spent_epsilon``, ``spent_delta``); the spend is monotone (the
running maximum of :func:`~dpframe.core.accounting.session_spend`, which is always a valid
bound) and every charge is the difference of two consecutive spends, so charges are never
negative. A charge is O(1): it reads the sealed running totals of ``chain_head``, never the
entries.

Schema 2 (dpframe 0.2) adds the chain to schema 1 (dpframe 0.1). A schema-1 ledger is upgraded
in place the first time it is opened with write access (the chain is computed over its rows as
they are then); opened read-only, it is read as it is, without a chain to verify.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import json
import os
import random
import signal
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable
from urllib.parse import quote

from .._json import jsonable
from ..core.accounting import (
    Number,
    PrivacyCost,
    SpendTotals,
    format_number,
    session_spend,
    validate_delta,
    validate_epsilon,
)
from ..errors import BudgetExceededError, LedgerError, PrivacyUnitError, ValidationError

SCHEMA_VERSION = 2
APP_ID = "dpframe-ledger"
STATUSES = ("charged", "released", "failed")
NEIGHBOURING = ("add_remove", "change_one")
ROW_UNIT = "rows"
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

        ``meta["privacy_unit"]`` (optional, a string: ``"rows"`` or a unit code) is checked
        against the unit the ledger protects in the same transaction, and recorded when the
        ledger has none yet. Raises :class:`~dpframe.errors.BudgetExceededError` or
        :class:`~dpframe.errors.PrivacyUnitError` with nothing written otherwise.
        """
        ...

    def record(self, entry_id: int, status: str, details: Mapping[str, Any]) -> None:
        """Mark a charged entry ``"released"`` or ``"failed"`` with release details."""
        ...

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, oldest first, as dicts (Fractions for budget numbers)."""
        ...

    def privacy_unit(self) -> str | None:
        """The privacy unit the ledger protects, or None while no release has fixed it."""
        ...

    def bind_privacy_unit(self, unit: str) -> None:
        """Record ``unit`` as the ledger's privacy unit (no charge); ``PrivacyUnitError`` if
        the ledger already protects another one."""
        ...


# --------------------------------------------------------------------------------------------
# Signals: hold Python-level handlers back while a transaction is open
# --------------------------------------------------------------------------------------------

_HELD_SIGNALS = tuple(
    getattr(signal, n)
    for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGUSR1", "SIGUSR2")
    if hasattr(signal, n)
)
_holding = False
_pending: list[tuple[int, Any]] = []
_original: dict[int, Any] = {}


def _proxy_handler(signum: int, frame: Any) -> None:
    """Installed while a transaction is open: hold the signal back, or (when left installed
    by an interrupted restore) behave exactly as the handler it replaced."""
    if _holding:
        _pending.append((signum, frame))
        return
    handler = _original.get(signum)
    if callable(handler):
        handler(signum, frame)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Run the block with Python signal handlers held back; run them right after it.

    Python runs signal handlers (``KeyboardInterrupt`` for SIGINT) in the main thread between
    bytecodes: one landing between ``BEGIN`` and ``COMMIT`` (or inside a ``finally`` that rolls
    back) would leave a write transaction open. Inside this block the handlers only note the
    signal; after it (transaction committed or rolled back) they run as usual. Other threads
    never receive Python signal handlers, so nothing is needed there.
    """
    global _holding
    if _holding or threading.current_thread() is not threading.main_thread():
        yield
        return
    installed: list[int] = []
    _pending.clear()
    for s in _HELD_SIGNALS:
        try:
            current = signal.getsignal(s)
            if current is _proxy_handler:
                installed.append(s)
            elif callable(current):
                _original[s] = current
                signal.signal(s, _proxy_handler)
                installed.append(s)
        except (ValueError, OSError):  # pragma: no cover - not the main interpreter
            pass
    _holding = True
    try:
        yield
    finally:
        _holding = False
        for s in installed:
            if signal.getsignal(s) is _proxy_handler:
                signal.signal(s, _original[s])
        held = list(_pending)
        _pending.clear()
        for signum, frame in held:
            handler = _original.get(signum)
            if callable(handler):
                handler(signum, frame)


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
    if not isinstance(text, str):
        raise LedgerError("ledger holds a malformed budget number; the file is corrupt")
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
        f"privacy budget exceeded: this query needs epsilon={format_number(need[0])}, "
        f"delta={format_number(need[1])} but only epsilon={format_number(left[0])}, "
        f"delta={format_number(left[1])} remain (total epsilon={format_number(total[0])}, "
        f"delta={format_number(total[1])}); "
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


def _check_unit(unit: Any) -> str:
    if not isinstance(unit, str) or not unit:
        raise ValidationError(
            "privacy_unit must be a non-empty string ('rows' or the unit column's name)"
        )
    return unit


def _meta_unit(meta: Mapping[str, Any]) -> str | None:
    unit = meta.get("privacy_unit")
    return None if unit is None else _check_unit(unit)


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


_COLUMN_PREFIX = "column:"


def unit_code(unit: str | None) -> str:
    """How a privacy unit is recorded in a ledger: ``"rows"``, or ``"column:<name>"``."""
    return ROW_UNIT if unit is None else _COLUMN_PREFIX + unit


def unit_name(code: str) -> str:
    """The unit column's name, or ``"rows"`` for row-level releases."""
    return code[len(_COLUMN_PREFIX):] if code.startswith(_COLUMN_PREFIX) else ROW_UNIT


def _describe_unit(code: str) -> str:
    if code.startswith(_COLUMN_PREFIX):
        return f"the values of column {unit_name(code)!r}"
    return "single rows"


def privacy_unit_message(bound: str, asked: str) -> str:
    """Why a release under ``asked`` is refused by a session protecting ``bound``."""
    if bound.startswith(_COLUMN_PREFIX):
        how = (f"pass privacy_unit={unit_name(bound)!r} and max_rows_per_unit to df.dp(...), "
               "or use another session and ledger for")
    else:
        how = ("declare dpf.Session(privacy_unit=...) on a new session and ledger for")
    return (f"this session (and its ledger) protects {_describe_unit(bound)}; a release "
            f"protecting {_describe_unit(asked)} would not be bounded by its budget: {how} "
            f"releases protecting {_describe_unit(asked)}")


def _unit_refused(bound: str, asked: str) -> PrivacyUnitError:
    return PrivacyUnitError(privacy_unit_message(bound, asked) + "; nothing was charged")


# --------------------------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------------------------


class MemoryLedger:
    """An in-process ledger. Thread-safe; charges are checked and inserted under one lock
    (with Python signal handlers held back while the state changes, so an interrupt never
    leaves a half-written entry)."""

    def __init__(self, epsilon: Number, delta: Number = 0) -> None:
        self._total = (validate_epsilon(epsilon), validate_delta(delta))
        self._rows: list[dict[str, Any]] = []
        self._totals = SpendTotals()
        self._unit: str | None = None
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

    def privacy_unit(self) -> str | None:
        """The privacy unit this ledger protects (None until a release or a binding fixes it)."""
        with self._lock:
            return self._unit

    def bind_privacy_unit(self, unit: str) -> None:
        """Record ``unit`` as the ledger's privacy unit; ``PrivacyUnitError`` if it differs."""
        unit = _check_unit(unit)
        with self._lock:
            if self._unit is None:
                self._unit = unit
            elif self._unit != unit:
                raise _unit_refused(self._unit, unit)

    def charge(self, cost: PrivacyCost, meta: Mapping[str, Any]) -> int:
        """Check and record ``cost`` atomically; ``BudgetExceededError`` if it does not fit,
        ``PrivacyUnitError`` if ``meta["privacy_unit"]`` is not the ledger's unit."""
        cost = _check_cost(cost)
        fields = _meta_fields(meta)
        unit = _meta_unit(meta)
        with self._lock:
            if unit is not None and self._unit is not None and unit != self._unit:
                raise _unit_refused(self._unit, unit)
            old, new, ok = _plan(self._total, self._totals, self._last_spent(), cost)
            if not ok:
                raise _exceeded(self._total, old, new)
            entry_id = len(self._rows) + 1
            row = {
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
                "privacy_unit": unit,
            }
            totals = self._totals.add(cost)
            with _signals_held():
                if unit is not None and self._unit is None:
                    self._unit = unit
                self._rows.append(row)
                self._totals = totals
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
            self._rows[entry_id - 1] = {**row, "status": status, "details": det}

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
# SQLite: schema, chain and diagnoses
# --------------------------------------------------------------------------------------------

_SCHEMA = """
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
    row_hash TEXT
)
"""

# Schema-2 additions, shared by new ledgers and the upgrade of schema-1 ones.
_SCHEMA_2 = """
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

_UPGRADE_1_TO_2 = """
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
_CHAINED: dict[str, tuple[str, ...]] = {
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

# SQLite primary result codes (sqlite3.h).
_SQLITE_ERROR = 1
_SQLITE_PERM = 3
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_SQLITE_READONLY = 8
_SQLITE_IOERR = 10
_SQLITE_CORRUPT = 11
_SQLITE_FULL = 13
_SQLITE_CANTOPEN = 14
_SQLITE_AUTH = 23
_SQLITE_NOTADB = 26

_BUSY_SLICE_MS = 5  # SQLite's own wait per attempt; the rest of the wait is interruptible
_ZERO_HASH = "0" * 64


def _canon(values: Iterable[Any]) -> str:
    return json.dumps(list(values), ensure_ascii=True, separators=(",", ":"))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _row_hash(prev: str, table: str, seq: int, rid: int, values: Iterable[Any]) -> str:
    """``sha256(prev_hash || canonical serialization)`` of one chained row."""
    return _sha(prev + "\n" + _canon([table, seq, rid, *values]))


def _genesis(app: Any, created: Any, neighbouring: Any, ledger_id: Any) -> str:
    """The ``prev_hash`` of the first row: the ledger's identity and neighbouring relation."""
    return _sha(_ZERO_HASH + "\n" + _canon(["genesis", app, created, neighbouring, ledger_id]))


def _sqlite_code(exc: BaseException) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


def _is_busy(exc: BaseException) -> bool:
    return _sqlite_code(exc) in (_SQLITE_BUSY, _SQLITE_LOCKED)


@dataclass(frozen=True)
class _Head:
    """The ``chain_head`` row: chain position and the running totals charges are checked on."""

    rows: int
    hash: str
    budget: tuple[Fraction, Fraction]
    spent: tuple[Fraction, Fraction]
    totals: SpendTotals
    unit: str | None

    def stored(self) -> list[Any]:
        t = self.totals
        return [
            self.rows, self.hash, _frac_text(self.budget[0]), _frac_text(self.budget[1]),
            _frac_text(self.spent[0]), _frac_text(self.spent[1]), _frac_text(t.pure_eps),
            _frac_text(t.all_delta), _frac_text(t.g_eps), _frac_text(t.g_delta),
            _frac_text(t.g_rho), int(t.any_g), self.unit,
        ]


_HEAD_COLS = (
    "rows, hash, budget_epsilon, budget_delta, spent_epsilon, spent_delta, pure_epsilon, "
    "all_delta, gauss_epsilon, gauss_delta, gauss_rho, any_gauss, privacy_unit"
)


def _seal(stored: list[Any]) -> str:
    return _sha("head\n" + _canon(stored))


_BUSY = object()


# --------------------------------------------------------------------------------------------
# SQLite
# --------------------------------------------------------------------------------------------


class SqliteLedger:
    """A durable ledger in an embedded SQLite file (no server).

    ``SqliteLedger(path, epsilon, delta)`` creates the file (its folder must exist) or opens it.
    An existing ledger keeps its budget: opening it with a different total raises
    :class:`~dpframe.errors.LedgerError` unless ``allow_budget_change=True`` (the change is then
    recorded in the ``budget`` table). ``epsilon=None`` opens an existing ledger with its stored
    budget. The neighbouring relation is fixed at creation: epsilons under different relations
    do not add up, so a mismatch is refused. A file that is not a dpframe ledger, or is
    corrupt, or whose hash chain does not verify, raises ``LedgerError`` and is left untouched.

    ``readonly=True`` opens an existing ledger without writing anything (``mode=ro``; on
    read-only media, where SQLite cannot create the ``-wal``/``-shm`` files, ``immutable=1``
    when no write-ahead log is pending): every read works, every write raises ``LedgerError``.
    ``timeout`` is how long a write waits for another process's lock (seconds); the wait is
    interruptible.
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
        readonly: bool = False,
    ) -> None:
        if isinstance(path, bool) or not isinstance(path, str | os.PathLike):
            raise ValidationError(f"ledger must be a file path, not {type(path).__name__}")
        p = Path(os.fspath(path)).expanduser()
        if str(path) in ("", ":memory:"):
            raise ValidationError("ledger path must name a file (use ledger=None for memory)")
        if neighbouring is not None and neighbouring not in NEIGHBOURING:
            raise ValidationError(f"neighbouring must be one of {NEIGHBOURING}")
        if readonly and (epsilon is not None or allow_budget_change):
            raise ValidationError("a ledger opened read-only cannot be given a budget")
        eps_total = None if epsilon is None else validate_epsilon(epsilon)
        delta_total = validate_delta(0 if delta is None else delta)
        self.path = p.absolute()
        self._timeout = float(timeout)
        self._name = name
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._lock = threading.RLock()
        self._readonly = bool(readonly)
        self._immutable = False
        self._legacy = False  # a schema-1 ledger opened read-only (no chain)
        if not self.path.parent.is_dir():
            raise LedgerError(
                f"cannot create ledger {self.path}: folder {self.path.parent} does not exist"
            )
        if self.path.is_dir():
            raise LedgerError(f"ledger path {self.path} is a folder, not a file")
        exists = self.path.exists() and self.path.stat().st_size > 0
        if exists:
            self._check_header()
        elif self._readonly or not create or eps_total is None:
            raise LedgerError(f"no ledger at {self.path} (a new ledger needs a budget)")
        try:
            if self._readonly:
                self._open_readonly()
            else:
                self._open_writable(eps_total, delta_total, neighbouring, allow_budget_change)
        except BaseException:
            self.close()
            raise

    # -- connection --------------------------------------------------------------------------

    @property
    def readonly(self) -> bool:
        """True when the ledger was opened read-only (every write raises ``LedgerError``)."""
        return self._readonly

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
        self._conn = None
        try:
            if self._readonly:
                uri = "file:" + quote(str(self.path), safe="/") + "?mode=ro"
                if self._immutable:
                    uri += "&immutable=1"
                conn = sqlite3.connect(
                    uri, uri=True, timeout=0, isolation_level=None, check_same_thread=False
                )
            else:
                conn = sqlite3.connect(
                    str(self.path), timeout=0, isolation_level=None, check_same_thread=False
                )
            try:
                conn.execute(f"PRAGMA busy_timeout = {_BUSY_SLICE_MS}")
                if not self._readonly:
                    # every commit is on disk before charge() returns (WAL: fsync per commit)
                    conn.execute("PRAGMA synchronous = FULL")
            except BaseException:
                conn.close()
                raise
        except sqlite3.Error as exc:
            raise self._diagnose(exc, "nothing was read or written") from exc
        self._conn = conn
        self._pid = os.getpid()
        return conn

    def close(self) -> None:
        """Close the connection (the ledger reopens it when used again)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()
            self._conn = None

    def __del__(self) -> None:  # pragma: no cover - best effort
        with contextlib.suppress(Exception):
            self.close()

    def _drop_connection(self, conn: sqlite3.Connection) -> None:
        with contextlib.suppress(sqlite3.Error):
            conn.close()
        if self._conn is conn:
            self._conn = None

    # -- diagnoses ---------------------------------------------------------------------------

    def _why_readonly(self) -> str:
        folder = self.path.parent
        with contextlib.suppress(OSError):
            if os.statvfs(folder).f_flag & os.ST_RDONLY:
                return "its file system is mounted read-only"
        if self.path.exists() and not os.access(self.path, os.W_OK):
            return "the file is not writable"
        if not os.access(folder, os.W_OK):
            return (f"its folder {folder} is not writable (SQLite needs to create the -wal and "
                    "-shm files beside the ledger)")
        if self._readonly:
            return "it was opened read-only"
        return "SQLite refused to write to it"

    def _diagnose(self, exc: BaseException, nothing: str) -> LedgerError:
        """One precise ``LedgerError`` per cause, from SQLite's result code."""
        code = _sqlite_code(exc)
        name = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
        where = f"ledger {self.path}"
        if code in (_SQLITE_BUSY, _SQLITE_LOCKED):
            return self._locked(nothing)
        if code in (_SQLITE_READONLY, _SQLITE_PERM, _SQLITE_AUTH) or (
            code == _SQLITE_CANTOPEN and self._cannot_write()
        ):
            return LedgerError(
                f"{where} is read-only: {self._why_readonly()} ({name}); {nothing}. "
                "`dpframe ledger show` can still read it; a session needs write access"
            )
        if code == _SQLITE_FULL or (code == _SQLITE_IOERR and self._disk_full()):
            return LedgerError(
                f"the disk holding {where} is full ({name}); {nothing}. Free some space "
                "and retry: the ledger itself is intact"
            )
        if code == _SQLITE_CORRUPT:
            return LedgerError(
                f"{where} is corrupt ({name}): SQLite found damaged pages; {nothing}. "
                "Restore it from a backup"
            )
        if code == _SQLITE_NOTADB:
            return LedgerError(f"{self.path} is not a dpframe ledger (not an SQLite database)")
        if code == _SQLITE_IOERR:
            return LedgerError(f"I/O error on {where} ({name}); {nothing}")
        if code == _SQLITE_CANTOPEN:
            return LedgerError(f"cannot open {where} ({name}); {nothing}")
        if code == _SQLITE_ERROR and ("no such table" in str(exc) or "no such column" in str(exc)):
            return self._tampered("a table or column of the ledger is missing")
        return LedgerError(f"{where}: unexpected SQLite error {name}: {exc}; {nothing}")

    def _cannot_write(self) -> bool:
        folder = self.path.parent
        with contextlib.suppress(OSError):
            if os.statvfs(folder).f_flag & os.ST_RDONLY:
                return True
        if self.path.exists() and not os.access(self.path, os.W_OK):
            return True
        return not os.access(folder, os.W_OK)

    def _disk_full(self) -> bool:
        try:
            st = os.statvfs(self.path.parent)
        except OSError:
            return False
        return st.f_bavail == 0 or (os.geteuid() == 0 and st.f_bfree == 0)

    def _locked(self, nothing: str) -> LedgerError:
        return LedgerError(
            f"ledger {self.path} is locked: another process has held its write lock for more "
            f"than {self._timeout:g} s; {nothing}. Retry when that process is done"
        )

    def _tampered(self, what: str) -> LedgerError:
        return LedgerError(
            f"ledger {self.path} fails verification: {what}. It was modified outside dpframe "
            "(a row deleted, edited, inserted or reordered) or is damaged, so its spend cannot "
            "be trusted and it is not used; restore it from a backup"
        )

    def _read_only_error(self, nothing: str) -> LedgerError:
        return LedgerError(
            f"ledger {self.path} is read-only: it was opened with readonly=True; {nothing}"
        )

    # -- transactions ------------------------------------------------------------------------

    def _transaction(
        self,
        fn: Callable[[sqlite3.Connection], _T],
        *,
        write: bool,
        nothing: str,
        begin: str | None = None,
    ) -> _T:
        """Run ``fn(conn)`` in one transaction, safe against interrupts at any point.

        Waiting for another process's lock happens here, in Python, between attempts of at most
        ``_BUSY_SLICE_MS`` each: ``KeyboardInterrupt`` ends the wait with nothing open. A write
        attempt runs with signal handlers held back (:func:`_signals_held`), so an interrupt
        lands after the commit or the rollback; ``finally`` rolls back whatever is still open
        (and drops the connection if even that fails); a connection found in a transaction
        (left by an interruption elsewhere) is rolled back before use. ``fn`` must have no side
        effect outside the database: it may run more than once.
        """
        if write and self._readonly:
            raise self._read_only_error(nothing)
        stmt = begin if begin is not None else ("BEGIN IMMEDIATE" if write else "BEGIN")
        deadline = time.monotonic() + self._timeout
        pause = 0.001
        with self._lock:
            while True:
                conn = self._connect()
                if write:
                    with _signals_held():
                        outcome = self._attempt(conn, fn, stmt, nothing)
                else:
                    outcome = self._attempt(conn, fn, stmt, nothing)
                if outcome is not _BUSY:
                    return outcome  # type: ignore[return-value]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._locked(nothing)
                time.sleep(min(left, pause * (0.5 + random.random())))
                pause = min(pause * 2, 0.05)

    def _attempt(
        self, conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], _T], stmt: str,
        nothing: str,
    ) -> _T | object:
        try:
            if conn.in_transaction:  # left open by an interruption: never reuse it
                conn.execute("ROLLBACK")
            if stmt:
                conn.execute(stmt)
            result = fn(conn)
            if conn.in_transaction:
                conn.execute("COMMIT")
            return result
        except sqlite3.Error as exc:
            if _is_busy(exc):
                return _BUSY  # rolled back below; retried after an interruptible pause
            raise self._diagnose(exc, nothing) from exc
        finally:
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                if conn.in_transaction:  # could not roll back: closing the connection does
                    self._drop_connection(conn)

    def _read(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``fn(conn)`` in a read transaction (a consistent snapshot)."""
        return self._transaction(fn, write=False, nothing="nothing was changed")

    # -- opening -----------------------------------------------------------------------------

    def _open_writable(
        self,
        epsilon: Fraction | None,
        delta: Fraction | None,
        neighbouring: str | None,
        allow_budget_change: bool,
    ) -> None:
        nothing = "nothing was changed"

        def inspect(conn: sqlite3.Connection) -> set[str]:
            tables = self._tables(conn)
            if tables and "dpframe_schema" not in tables:
                raise LedgerError(f"{self.path} is an SQLite database but not a dpframe ledger")
            if tables:
                self._quick_check(conn)
            return tables

        # Before anything writes (WAL mode changes the header): refuse foreign or corrupt files.
        self._read(inspect)

        def wal(conn: sqlite3.Connection) -> None:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            if not mode or str(mode[0]).lower() != "wal":
                raise LedgerError(f"ledger {self.path}: cannot enable WAL mode")

        self._transaction(wal, write=True, nothing=nothing, begin="")

        verified = self._transaction(
            lambda conn: self._init_or_check(
                conn, epsilon, delta, neighbouring, allow_budget_change
            ),
            write=True,
            nothing=nothing,
        )
        if not verified:
            self._read(self._verify)

    def _open_readonly(self) -> None:
        def inspect(conn: sqlite3.Connection) -> None:
            tables = self._tables(conn)
            if "dpframe_schema" not in tables:
                raise LedgerError(f"{self.path} is an SQLite database but not a dpframe ledger")
            self._quick_check(conn)
            row = conn.execute("SELECT app, version FROM dpframe_schema").fetchone()
            if row is None or row[0] != APP_ID:
                raise LedgerError(f"{self.path} is not a dpframe ledger")
            self._check_version(row[1])
            if int(row[1]) < 2:
                self._legacy = True
                self._legacy_total(conn)
                return
            self._verify(conn)

        try:
            self._read(inspect)
        except LedgerError as exc:
            cause = exc.__cause__
            if self._immutable or cause is None or _sqlite_code(cause) not in (
                _SQLITE_CANTOPEN, _SQLITE_READONLY
            ):
                raise
            # Read-only media: SQLite cannot create the -shm/-wal files. Without them a reader
            # may only use immutable=1, which ignores a write-ahead log: refuse if one is pending.
            wal_file = Path(str(self.path) + "-wal")
            if wal_file.exists() and wal_file.stat().st_size > 0:
                raise LedgerError(
                    f"ledger {self.path} is on read-only media with a pending write-ahead log "
                    f"({wal_file.name}) and no -shm file: SQLite cannot read it there without "
                    "ignoring recent charges. Copy the ledger with its -wal file to a writable "
                    "folder and read the copy"
                ) from exc
            self.close()
            self._immutable = True
            self._read(inspect)

    @staticmethod
    def _tables(conn: sqlite3.Connection) -> set[str]:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _quick_check(self, conn: sqlite3.Connection) -> None:
        ok = conn.execute("PRAGMA quick_check").fetchone()
        if not ok or ok[0] != "ok":
            raise LedgerError(
                f"ledger {self.path} is corrupt (SQLite integrity check failed): restore it from "
                "a backup"
            )

    def _check_version(self, version: Any) -> None:
        if not isinstance(version, int):
            raise self._tampered("its schema version is malformed")
        if version > SCHEMA_VERSION:
            raise LedgerError(
                f"ledger {self.path} has schema version {version}; this dpframe reads up to "
                f"{SCHEMA_VERSION}: upgrade dpframe"
            )

    def _init_or_check(
        self,
        conn: sqlite3.Connection,
        epsilon: Fraction | None,
        delta: Fraction | None,
        neighbouring: str | None,
        allow_budget_change: bool,
    ) -> bool:
        """Create, upgrade or check the ledger (in the open's write transaction). True when the
        whole chain was verified here."""
        tables = self._tables(conn)
        rel = neighbouring or "add_remove"
        if "dpframe_schema" not in tables:
            if tables:
                raise LedgerError(f"{self.path} is an SQLite database but not a dpframe ledger")
            if epsilon is None:
                raise LedgerError(f"{self.path} is not a dpframe ledger and no budget was given")
            self._create(conn, epsilon, delta or Fraction(0), rel)
            return True
        row = conn.execute("SELECT app, version, neighbouring FROM dpframe_schema").fetchone()
        if row is None or row[0] != APP_ID:
            raise LedgerError(f"{self.path} is not a dpframe ledger")
        self._check_version(row[1])
        verified = False
        if int(row[1]) < 2:
            self._upgrade(conn)
            verified = True
        if neighbouring is not None and row[2] != neighbouring:
            raise LedgerError(
                f"ledger {self.path} accounts under neighbouring={row[2]!r}, not "
                f"{neighbouring!r}: epsilons under different relations do not add up"
            )
        head = self._head(conn, check_last=True)
        if epsilon is None:
            return verified
        want = (Fraction(epsilon), Fraction(delta or 0))
        if want != head.budget:
            stored = head.budget
            if not allow_budget_change:
                raise LedgerError(
                    f"ledger {self.path} has budget epsilon={format_number(stored[0])}, "
                    f"delta={format_number(stored[1])}; this session asks for "
                    f"epsilon={format_number(want[0])}, delta={format_number(want[1])}. "
                    "Pass allow_budget_change=True to change it (the change is recorded)"
                )
            if not verified:  # never extend a chain that does not verify
                self._verify(conn)
                verified = True
            head, _ = self._append(conn, head, "budget", self._budget_values(
                want[0], want[1], "changed (allow_budget_change=True)"))
            self._write_head(conn, replace(head, budget=want))
        return verified

    def _create(
        self, conn: sqlite3.Connection, epsilon: Fraction, delta: Fraction, rel: str
    ) -> None:
        for stmt in (_SCHEMA + ";" + _SCHEMA_2).split(";"):
            if stmt.strip():
                conn.execute(stmt)
        created, ledger_id = _now(), uuid.uuid4().hex
        conn.execute(
            "INSERT INTO dpframe_schema (app, version, created, neighbouring, ledger_id) "
            "VALUES (?, ?, ?, ?, ?)",
            (APP_ID, SCHEMA_VERSION, created, rel, ledger_id),
        )
        head = _Head(0, _genesis(APP_ID, created, rel, ledger_id), (epsilon, delta),
                     (Fraction(0), Fraction(0)), SpendTotals(), None)
        head, _ = self._append(conn, head, "budget",
                               self._budget_values(epsilon, delta, "created"))
        self._write_head(conn, head, insert=True)

    def _budget_values(self, eps: Fraction, delta: Fraction, note: str) -> dict[str, Any]:
        return {
            "time": _now(),
            "epsilon": _frac_text(Fraction(eps)),
            "delta": _frac_text(Fraction(delta)),
            "session": self._name,
            "note": note,
        }

    # -- the chain ---------------------------------------------------------------------------

    @staticmethod
    def _append(
        conn: sqlite3.Connection, head: _Head, table: str, values: Mapping[str, Any],
        extra: Mapping[str, Any] | None = None,
    ) -> tuple[_Head, int]:
        """Insert one chained row after ``head``; the new head and the row's id."""
        cols = _CHAINED[table]
        vals = [values[c] for c in cols]
        more = dict(extra or {})
        names = ", ".join((*cols, *more))
        marks = ", ".join("?" for _ in range(len(cols) + len(more)))
        cur = conn.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})",
                           (*vals, *more.values()))
        rid = cur.lastrowid
        assert rid is not None
        seq = head.rows + 1
        digest = _row_hash(head.hash, table, seq, int(rid), vals)
        conn.execute(f"UPDATE {table} SET seq = ?, prev_hash = ?, row_hash = ? WHERE id = ?",
                     (seq, head.hash, digest, rid))
        return replace(head, rows=seq, hash=digest), int(rid)

    @staticmethod
    def _write_head(conn: sqlite3.Connection, head: _Head, *, insert: bool = False) -> None:
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

    def _head(self, conn: sqlite3.Connection, *, check_last: bool) -> _Head:
        """The sealed ``chain_head`` row; with ``check_last``, also check that it points at the
        last chained row (O(log n): catches a deleted or appended last row)."""
        try:
            row = conn.execute(f"SELECT {_HEAD_COLS}, seal FROM chain_head WHERE id = 1").fetchone()
        except sqlite3.OperationalError as exc:
            raise self._tampered("its chain head table is missing") from exc
        if row is None:
            raise self._tampered("its chain head is missing")
        stored, seal = list(row[:-1]), row[-1]
        if seal != _seal(stored):
            raise self._tampered("its chain head (running totals) was edited")
        try:
            fr = [_parse_frac(x) for x in stored[2:11]]
        except LedgerError as exc:
            raise self._tampered("its chain head holds a malformed number") from exc
        if any(f is None for f in fr) or not isinstance(stored[0], int):
            raise self._tampered("its chain head is malformed")
        f = [x for x in fr if x is not None]
        head = _Head(
            rows=stored[0], hash=str(stored[1]), budget=(f[0], f[1]), spent=(f[2], f[3]),
            totals=SpendTotals(pure_eps=f[4], all_delta=f[5], g_eps=f[6], g_delta=f[7],
                               g_rho=f[8], any_g=bool(stored[11])),
            unit=stored[12],
        )
        if check_last:
            last: tuple[int, str] | None = None
            for table in _CHAINED:
                r = conn.execute(
                    f"SELECT seq, row_hash FROM {table} ORDER BY seq DESC LIMIT 1"
                ).fetchone()
                if r is None:
                    continue
                if r[0] is None:
                    raise self._tampered("a row has no place in the hash chain")
                if last is None or r[0] > last[0]:
                    last = (r[0], r[1])
            if last != (head.rows, head.hash):
                raise self._tampered(
                    "its last rows do not match the chain head (a row was deleted or added)"
                )
        return head

    def _verify(self, conn: sqlite3.Connection) -> dict[str, Any]:
        """Check the whole chain and every accounting invariant; O(rows). ``LedgerError`` on
        the first violation."""
        schema = conn.execute(
            "SELECT app, version, created, neighbouring, ledger_id FROM dpframe_schema"
        ).fetchall()
        if len(schema) != 1 or schema[0][0] != APP_ID:
            raise self._tampered("its schema row is missing or duplicated")
        app, version, created, relation, ledger_id = schema[0]
        if relation not in NEIGHBOURING:
            raise self._tampered("its neighbouring relation is malformed")
        head = self._head(conn, check_last=False)
        running = _genesis(app, created, relation, ledger_id)

        def stream(table: str) -> Iterator[tuple[int, str, tuple[Any, ...]]]:
            cols = ", ".join(_CHAINED[table])
            copy = ", status, details" if table == "entries" else ""
            for r in conn.execute(
                f"SELECT seq, id, prev_hash, row_hash, {cols}{copy} FROM {table} ORDER BY seq"
            ):
                if not isinstance(r[0], int):
                    raise self._tampered(f"a row of {table} has no place in the hash chain")
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
        n_fields = {t: len(c) for t, c in _CHAINED.items()}
        for seq, table, r in heapq.merge(*(stream(t) for t in _CHAINED), key=lambda x: x[0]):
            n += 1
            if seq != n:
                raise self._tampered(f"row {n} of its hash chain is missing or duplicated")
            rid, prev, digest = r[1], r[2], r[3]
            values = r[4 : 4 + n_fields[table]]
            if prev != running or digest != _row_hash(running, table, seq, rid, values):
                raise self._tampered(f"row {n} of its hash chain ({table} #{rid}) was changed")
            running = digest
            if table == "budget":
                be, bd = _parse_frac(values[1]), _parse_frac(values[2])
                if be is None or bd is None or be <= 0 or not 0 <= bd <= 1:
                    raise self._tampered(f"budget #{rid} is malformed")
                budget = (be, bd)
            elif budget is None:
                raise self._tampered("its first chained row is not its budget")
            elif table == "entries":
                (_, _, _, _, _, re_, rd, rho, e, d, se, sd, _, _, eunit) = values
                nums = [_parse_frac(x) for x in (re_, rd, e, d, se, sd)]
                if any(x is None for x in nums) or rid <= last_entry:
                    raise self._tampered(f"entry #{rid} is malformed")
                q_e, q_d, c_e, c_d, s_e, s_d = (x for x in nums if x is not None)
                r_rho = _parse_frac(rho)
                if c_e < 0 or c_d < 0 or (s_e, s_d) != (spent[0] + c_e, spent[1] + c_d):
                    raise self._tampered(f"entry #{rid} does not add up with the entries before")
                if eunit is not None and eunit != unit:
                    raise self._tampered(f"entry #{rid} names another privacy unit")
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
                    raise self._tampered(f"outcome #{rid} names no pending entry")
                if status not in ("released", "failed"):
                    raise self._tampered(f"outcome #{rid} is malformed")
                outcomes[entry_id] = (status, details)
            else:  # units
                if unit is not None or not isinstance(values[1], str):
                    raise self._tampered("its privacy unit was bound twice")
                unit = values[1]
        if n != head.rows or running != head.hash:
            raise self._tampered(
                "its chain ends before its recorded head (rows were deleted at the end)"
                if n < head.rows else "its rows do not match its chain head"
            )
        totals = SpendTotals(pure_eps=pure, all_delta=all_d, g_eps=g_e, g_delta=g_d, g_rho=g_r,
                             any_g=any_g)
        bound = totals.spend()
        if (budget != head.budget or spent != head.spent or totals != head.totals
                or unit != head.unit or spent[0] < bound.epsilon or spent[1] < bound.delta):
            raise self._tampered("its chain head disagrees with its rows")
        for eid, copy in copies.items():
            if copy != outcomes.get(eid, ("charged", "{}")):
                raise self._tampered(f"the status of entry #{eid} disagrees with its outcome")
        return {
            "rows": n,
            "head": running,
            "entries": len(copies),
            "ledger_id": ledger_id,
            "schema_version": version,
        }

    def _upgrade(self, conn: sqlite3.Connection) -> None:
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
            raise LedgerError(f"ledger {self.path} has no budget; the file is corrupt")
        # schema-1 accounting must be sound before it is vouched for
        totals, last = SpendTotals(), (Fraction(0), Fraction(0))
        for _, _, re_, rd, rho, e, d, se, sd, status, _ in entries:
            q_e, q_d, r_rho = _parse_frac(re_), _parse_frac(rd), _parse_frac(rho)
            c_e, c_d, s_e, s_d = (_parse_frac(x) for x in (e, d, se, sd))
            if None in (q_e, q_d, c_e, c_d, s_e, s_d) or status not in STATUSES:
                raise LedgerError(f"ledger {self.path} holds a malformed entry; it is corrupt")
            assert q_e is not None and q_d is not None and s_e is not None and s_d is not None
            totals = totals.add(PrivacyCost(q_e, q_d, r_rho))
            last = (max(last[0], s_e), max(last[1], s_d))
        for b in budgets:
            _parse_frac(b[2])
            _parse_frac(b[3])
        for stmt in (_UPGRADE_1_TO_2 + ";" + _SCHEMA_2).split(";"):
            if stmt.strip():
                conn.execute(stmt)
        ledger_id, now = uuid.uuid4().hex, _now()
        conn.execute("UPDATE dpframe_schema SET version = ?, ledger_id = ?, upgraded = ?",
                     (SCHEMA_VERSION, ledger_id, now))
        app, created, rel = conn.execute(
            "SELECT app, created, neighbouring FROM dpframe_schema").fetchone()
        head = _Head(0, _genesis(app, created, rel, ledger_id), (Fraction(0), Fraction(0)),
                     (Fraction(0), Fraction(0)), SpendTotals(), None)
        cols = {t: ", ".join(c) for t, c in _CHAINED.items()}
        rows: list[tuple[str, str, int]] = [("budget", str(b[1]), int(b[0])) for b in budgets]
        order = heapq.merge(rows, [("entries", str(e[1]), int(e[0])) for e in entries],
                            key=lambda x: x[1])
        spent = (Fraction(0), Fraction(0))
        for table, _, rid in order:
            vals = conn.execute(f"SELECT {cols[table]} FROM {table} WHERE id = ?",
                                (rid,)).fetchone()
            seq = head.rows + 1
            digest = _row_hash(head.hash, table, seq, rid, vals)
            conn.execute(f"UPDATE {table} SET seq = ?, prev_hash = ?, row_hash = ? WHERE id = ?",
                         (seq, head.hash, digest, rid))
            head = replace(head, rows=seq, hash=digest)
            if table == "budget":
                be, bd = _parse_frac(vals[1]), _parse_frac(vals[2])
                assert be is not None and bd is not None
                head = replace(head, budget=(be, bd))
                continue
            se, sd = _parse_frac(vals[10]), _parse_frac(vals[11])
            assert se is not None and sd is not None
            spent = (se, sd)
            status, det = conn.execute(
                "SELECT status, details FROM entries WHERE id = ?", (rid,)).fetchone()
            if status != "charged":
                head, _ = self._append(conn, head, "outcomes", {
                    "entry_id": rid, "time": now, "status": status, "details": det})
        if spent != last:
            raise LedgerError(f"ledger {self.path}: its spend does not add up; it is corrupt")
        self._write_head(conn, replace(head, spent=last, totals=totals), insert=True)

    # -- schema-1 ledgers opened read-only ---------------------------------------------------

    @staticmethod
    def _legacy_total(conn: sqlite3.Connection) -> tuple[Fraction, Fraction]:
        row = conn.execute("SELECT epsilon, delta FROM budget ORDER BY id DESC LIMIT 1").fetchone()
        if row is None:
            raise LedgerError("ledger has no budget; the file is corrupt")
        eps, delta = _parse_frac(row[0]), _parse_frac(row[1])
        assert eps is not None and delta is not None
        return eps, delta

    @staticmethod
    def _legacy_costs(
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

    @classmethod
    def _legacy_spent(cls, conn: sqlite3.Connection) -> tuple[Fraction, Fraction]:
        costs, last = cls._legacy_costs(conn)
        s = session_spend(costs)
        return max(s.epsilon, last[0]), max(s.delta, last[1])

    # -- interface ---------------------------------------------------------------------------

    def total(self) -> tuple[Fraction, Fraction]:
        """The current budget ``(epsilon, delta)``."""
        if self._legacy:
            return self._read(self._legacy_total)
        return self._read(lambda c: self._head(c, check_last=False).budget)

    def neighbouring(self) -> str:
        """The neighbouring relation the ledger was created with."""
        row = self._read(lambda c: c.execute("SELECT neighbouring FROM dpframe_schema").fetchone())
        return str(row[0])

    def spent(self) -> tuple[Fraction, Fraction]:
        """The ``(epsilon, delta)`` charged so far, by every process (O(1): the sealed head)."""
        if self._legacy:
            return self._read(self._legacy_spent)
        return self._read(lambda c: self._head(c, check_last=False).spent)

    def fits(self, cost: PrivacyCost) -> bool:
        """Whether ``cost`` fits now (no side effect; another process may charge meanwhile)."""
        cost = _check_cost(cost)
        if self._legacy:
            return self._read(lambda c: _plan(self._legacy_total(c), *self._legacy_costs(c),
                                              cost)[2])

        def go(conn: sqlite3.Connection) -> bool:
            head = self._head(conn, check_last=False)
            return _plan(head.budget, head.totals, head.spent, cost)[2]

        return self._read(go)

    def privacy_unit(self) -> str | None:
        """The privacy unit the ledger protects (None until a release or a binding fixes it)."""
        if self._legacy:
            return None
        return self._read(lambda c: self._head(c, check_last=False).unit)

    def bind_privacy_unit(self, unit: str) -> None:
        """Record ``unit`` as the ledger's privacy unit, in its own transaction, without a
        charge; ``PrivacyUnitError`` (nothing written) if the ledger protects another unit."""
        unit = _check_unit(unit)
        current = self.privacy_unit()
        if current == unit:
            return
        if current is not None:
            raise _unit_refused(current, unit)

        def go(conn: sqlite3.Connection) -> None:
            head = self._head(conn, check_last=True)
            if head.unit is None:
                head, _ = self._append(conn, head, "units",
                                       {"time": _now(), "unit": unit, "session": self._name})
                self._write_head(conn, replace(head, unit=unit))
            elif head.unit != unit:
                raise _unit_refused(head.unit, unit)

        self._transaction(go, write=True, nothing="nothing was recorded")

    def charge(self, cost: PrivacyCost, meta: Mapping[str, Any]) -> int:
        """Check that ``cost`` fits and insert it, in one ``BEGIN IMMEDIATE`` transaction.

        Raises ``BudgetExceededError`` (transaction rolled back, nothing written) if not, and
        ``PrivacyUnitError`` (likewise) when ``meta["privacy_unit"]`` differs from the unit the
        ledger protects; the first charge naming a unit records it. When this returns, the
        charge is committed to the file. O(1): reads the sealed running totals, not the entries.
        """
        cost = _check_cost(cost)
        fields = _meta_fields(meta)
        unit = _meta_unit(meta)
        if fields["session"] is None:
            fields["session"] = self._name

        def go(conn: sqlite3.Connection) -> int:
            head = self._head(conn, check_last=True)
            if unit is not None and head.unit is not None and unit != head.unit:
                raise _unit_refused(head.unit, unit)
            old, new, ok = _plan(head.budget, head.totals, head.spent, cost)
            if not ok:
                raise _exceeded(head.budget, old, new)
            if unit is not None and head.unit is None:
                head, _ = self._append(conn, head, "units",
                                       {"time": _now(), "unit": unit, "session": fields["session"]})
                head = replace(head, unit=unit)
            head, entry_id = self._append(
                conn, head, "entries",
                {
                    "time": _now(),
                    "session": fields["session"],
                    "query": fields["query"],
                    "columns": json.dumps(fields["columns"]),
                    "mechanism": fields["mechanism"],
                    "requested_epsilon": _frac_text(cost.epsilon),
                    "requested_delta": _frac_text(cost.delta),
                    "rho": None if cost.rho is None else _frac_text(cost.rho),
                    "epsilon": _frac_text(new[0] - old[0]),
                    "delta": _frac_text(new[1] - old[1]),
                    "spent_epsilon": _frac_text(new[0]),
                    "spent_delta": _frac_text(new[1]),
                    "seeded": int(fields["seeded"]),
                    "pid": os.getpid(),
                    "privacy_unit": unit,
                },
                extra={"status": "charged", "details": "{}"},
            )
            self._write_head(conn, replace(head, spent=new, totals=head.totals.add(cost)))
            return entry_id

        return self._transaction(go, write=True, nothing="nothing was charged")

    def record(self, entry_id: int, status: str, details: Mapping[str, Any]) -> None:
        """Mark a charged entry ``"released"`` or ``"failed"`` (once): appends a chained
        outcome row (and updates the entry's ``status``/``details`` copy)."""
        status = _check_status(status)
        det = json.dumps(jsonable(dict(details or {})), allow_nan=False)
        if isinstance(entry_id, bool) or not isinstance(entry_id, int):
            raise LedgerError(f"no ledger entry with id {entry_id!r}")

        def go(conn: sqlite3.Connection) -> None:
            head = self._head(conn, check_last=True)
            row = conn.execute("SELECT status FROM entries WHERE id = ?", (entry_id,)).fetchone()
            if row is None:
                raise LedgerError(f"no ledger entry with id {entry_id!r}")
            if row[0] != "charged":
                raise LedgerError(f"ledger entry {entry_id} is already {row[0]}")
            head, _ = self._append(conn, head, "outcomes",
                                   {"entry_id": entry_id, "time": _now(), "status": status,
                                    "details": det})
            conn.execute("UPDATE entries SET status = ?, details = ? WHERE id = ?",
                         (status, det, entry_id))
            self._write_head(conn, head)

        self._transaction(go, write=True, nothing="the outcome was not recorded")

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, oldest first. The whole chain is verified first (``LedgerError`` if it
        does not): a full read never shows an edited or truncated ledger."""

        def go(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            if not self._legacy:
                self._verify(conn)
            unit_col = "privacy_unit" if not self._legacy else "NULL"
            out = []
            for row in conn.execute(
                f"SELECT {_ENTRY_COLS}, {unit_col} FROM entries ORDER BY id"
            ):
                (i, t, sess, q, cols, mech, re_, rd, rho, e, d, se, sd, seeded, st, det,
                 unit) = row
                try:
                    columns = json.loads(cols)
                    details = json.loads(det)
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
                        "privacy_unit": unit,
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

    def verify(self, *, integrity: bool = True) -> dict[str, Any]:
        """Verify the ledger now: SQLite's full ``integrity_check`` (with ``integrity``), the
        whole hash chain, and every accounting invariant (each entry's charge and cumulative
        spend, the running totals, the outcomes, the privacy unit). Returns ``rows`` (chain
        length), ``head`` (last hash: keep a copy elsewhere to detect a forged chain later),
        ``entries``, ``ledger_id`` and ``schema_version``; raises ``LedgerError`` otherwise."""

        def go(conn: sqlite3.Connection) -> dict[str, Any]:
            if integrity:
                bad = [r[0] for r in conn.execute("PRAGMA integrity_check")]
                if bad != ["ok"]:
                    raise LedgerError(
                        f"ledger {self.path} is corrupt (SQLite integrity check failed): "
                        "restore it from a backup"
                    )
            if self._legacy:
                raise LedgerError(
                    f"ledger {self.path} was written by dpframe 0.1 (schema 1) and has no hash "
                    "chain to verify; open it once with write access (any session) to upgrade "
                    "it in place"
                )
            return self._verify(conn)

        return self._read(go)

    def describe(self) -> str:
        """A short description for reports."""
        return f"SQLite ledger {self.path}" + (" (read-only)" if self._readonly else "")


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
    "privacy_unit_message",
    "spend_of",
    "unit_code",
    "unit_name",
]
