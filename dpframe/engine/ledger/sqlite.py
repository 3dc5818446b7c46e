"""The durable ledger: an embedded SQLite file, the source of truth across processes.

A charge is checked and inserted in one ``BEGIN IMMEDIATE`` transaction (one writer at a time),
in WAL mode with ``synchronous=FULL``, and committed before :meth:`SqliteLedger.charge` returns:
concurrent writers never overspend together, and a process killed at any instant either
committed its charge or charged nothing. A charge is O(1): it reads the sealed running totals of
the chain head, never the entries. The hash chain is verified on open since its verified
checkpoint (:func:`.chain.verify_chain`), and whole on every full read and by :meth:`verify`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

from ..._json import jsonable
from ...core.accountant import Accountant
from ...core.accounting import Number, PrivacyCost
from ...core.numbers import format_number
from ...errors import LedgerError, OutcomeNotRecordedError
from . import migration
from .chain import (
    Head,
    advance_checkpoint,
    append,
    hash_at,
    read_head,
    verify_chain,
    write_head,
)
from .charges import (
    charged_by,
    check_cost,
    check_status,
    event_json,
    meta_fields,
    now,
    plan_charge,
    refusal,
)
from .connection import LedgerConnection
from .create import budget_values, create_ledger
from .diagnose import SQLITE_CANTOPEN, SQLITE_READONLY, corrupt, sqlite_code, tampered
from .events import Events
from .files import create_atomically, ledger_file
from .legacy import (
    check_header,
    check_legacy,
    has_no_chain,
    legacy_costs,
    legacy_spent,
    legacy_total,
    needs_migration,
    premigration_hashes,
)
from .reports import LedgerSnapshot as LedgerSnapshot
from .reports import checked_arguments, checked_path, snapshot
from .room import free, reserve
from .schema import (
    APP_ID,
    SCHEMA_VERSION,
    SQLITE_MAGIC,
    frac_text,
    read_budget_history,
    read_entries,
    table_names,
)
from .units import check_unit, meta_unit, unit_refused

_T = TypeVar("_T")


class _NotPending(LedgerError):
    """:meth:`SqliteLedger.record` was asked for an entry that has no pending charge."""


class SqliteLedger:
    """A durable ledger in an embedded SQLite file (no server).

    ``SqliteLedger(path, epsilon, delta)`` creates the file atomically (its folder must exist;
    :mod:`.files`) or opens it; a path that is not a non-empty regular file (after following
    links) is refused before SQLite touches it, and a schema-1 ledger is refused until
    :meth:`migrate` (``dpframe ledger migrate``) has migrated it.
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
        accountant: str | None = None,
    ) -> None:
        self._events = Events(accountant)
        self.path, eps_total, delta_total = checked_arguments(
            path, epsilon, delta, neighbouring, allow_budget_change, readonly
        )
        self._setup(name, readonly, timeout,
                    needs_file=readonly or not create or eps_total is None)
        try:
            if not self.readonly and not self.path.exists():
                assert eps_total is not None
                self._create_file(eps_total, delta_total, neighbouring or "add_remove")
            if self.readonly:
                self._open_readonly(self._verify_tail)
            else:
                self._open_writable(eps_total, delta_total, neighbouring, allow_budget_change)
        except BaseException:
            self.close()
            raise

    def _setup(self, name: str | None, readonly: bool, timeout: float, *,
               needs_file: bool) -> None:
        self._name = name
        if not hasattr(self, "_events"):
            self._events = Events(None)
        self._legacy = False  # a schema-1 ledger opened read-only (no chain)
        self._verified: dict[str, Any] | None = None  # the open's verified walk (a checkpoint)
        self._wal = True
        self._links: dict[int, dict[str, Any]] = {}  # entry id -> chain head after its charge
        self.path = ledger_file(self.path, must_exist=needs_file)
        self._db = LedgerConnection(self.path, readonly=bool(readonly), timeout=float(timeout))
        if self.path.exists():
            self._check_header()

    @classmethod
    def read_snapshot(
        cls, path: str | os.PathLike[str], *, integrity: bool = False, last: int | None = None
    ) -> LedgerSnapshot:
        """Open the ledger at ``path`` read-only, read it (every entry, or the ``last`` ones)
        and close it: what ``dpframe ledger show`` prints, from one transaction in which the
        hash chain is verified since its checkpoint (as on every open). ``integrity=True``
        verifies the whole chain instead, also runs SQLite's full ``integrity_check`` (after
        the chain) and refuses a schema-1 ledger, which has no chain, as :meth:`verify` does.
        ``LedgerError`` as opening read-only otherwise."""
        ledger = cls.__new__(cls)
        ledger.path = checked_path(path).absolute()
        ledger._setup(None, True, 60.0, needs_file=True)
        try:
            return ledger._open_readonly(lambda conn: ledger._snapshot(conn, integrity, last))
        finally:
            ledger.close()

    @classmethod
    def migrate(cls, path: str | os.PathLike[str], *, session: str | None = None,
                timeout: float = 60.0, backup: str | os.PathLike[str] | None = None,
                dry_run: bool = False) -> dict[str, Any]:
        """Migrate the ledger of schema 1, 2 or 3 at ``path`` to schema 4, in one transaction
        (:func:`~.legacy.migrate_any`), after writing a backup of it (``PATH.bak-<schema>``,
        or ``backup``; :mod:`.migration`). Returns :meth:`verify`'s report plus ``migrated``
        (False: the ledger was already current, nothing written), ``from_schema`` and
        ``backup`` (the path written); ``LedgerError`` otherwise, nothing changed. With
        ``dry_run``, the migration runs on a private copy: nothing is written."""
        if dry_run:
            return migration.dry_run(cls, path, session=session, timeout=timeout, backup=backup)
        return migration.migrate_file(cls, path, session=session, timeout=timeout, backup=backup)

    @property
    def accountant(self) -> Accountant:
        """The composition rule (:mod:`.events`): on a schema-4 ledger the session's (PLD by
        default when delta > 0: the recorded events are recomposed), basic otherwise."""
        return self._events.accountant

    # -- connection --------------------------------------------------------------------------

    @property
    def readonly(self) -> bool:
        """True when the ledger was opened read-only (every write raises ``LedgerError``)."""
        return self._db.readonly

    def _check_header(self) -> None:
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(20)
        except OSError as exc:
            raise LedgerError(f"cannot read ledger {self.path}: {exc.strerror}") from exc
        if head[:16] != SQLITE_MAGIC:
            raise LedgerError(f"{self.path} is not a dpframe ledger (not an SQLite database)")
        self._wal = head[18:20] == b"\x02\x02"  # already in WAL mode (every dpframe ledger)

    def _create_file(self, epsilon: Fraction, delta: Fraction, rel: str) -> None:
        """Create the ledger atomically (:mod:`.files`): built whole in a temporary file, then
        linked to its name; if another process created it first, its ledger is opened."""
        create_atomically(
            self.path, lambda conn: create_ledger(conn, self.path, epsilon, delta, rel, self._name)
        )
        self.path = ledger_file(self.path, must_exist=True)  # ours, or the winner's
        self._check_header()

    def close(self) -> None:
        """Close the connection (the ledger reopens it when used again)."""
        self._db.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        with contextlib.suppress(Exception):
            self.close()

    # -- opening -----------------------------------------------------------------------------

    def _open_writable(
        self,
        epsilon: Fraction | None,
        delta: Fraction | None,
        neighbouring: str | None,
        allow_budget_change: bool,
    ) -> None:
        nothing = "nothing was changed"
        self._prepare_writable(nothing)
        verified = self._db.transaction(
            lambda conn: self._init_or_check(
                conn, epsilon, delta, neighbouring, allow_budget_change
            ),
            write=True,
            nothing=nothing,
        )
        if not verified:
            self._db.read(self._verify)

    def _prepare_writable(self, nothing: str) -> None:
        """Refuse a foreign or corrupt file before anything writes, then make sure the ledger
        is in WAL mode (every ledger dpframe creates already is)."""

        def inspect(conn: sqlite3.Connection) -> set[str]:
            tables = table_names(conn)
            if "dpframe_schema" not in tables:
                raise LedgerError(f"{self.path} is an SQLite database but not a dpframe ledger")
            return tables

        # Before anything writes (WAL mode changes the header): refuse foreign or corrupt files.
        self._db.read(inspect)

        def wal(conn: sqlite3.Connection) -> None:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            if not mode or str(mode[0]).lower() != "wal":
                raise LedgerError(f"ledger {self.path}: cannot enable WAL mode")

        if not self._wal:  # every ledger dpframe creates is in WAL mode already
            self._db.transaction(wal, write=True, nothing=nothing, begin="")

    def _open_readonly(self, read: Callable[[sqlite3.Connection], _T]) -> _T:
        """Open read-only: refuse what is not a sound dpframe ledger, then ``read(conn)`` in
        the same transaction (which verifies the chain of a schema-2 ledger)."""

        def inspect(conn: sqlite3.Connection) -> _T:
            tables = table_names(conn)
            if "dpframe_schema" not in tables:
                raise LedgerError(f"{self.path} is an SQLite database but not a dpframe ledger")
            row = conn.execute("SELECT app, version FROM dpframe_schema").fetchone()
            if row is None or row[0] != APP_ID:
                raise LedgerError(f"{self.path} is not a dpframe ledger")
            self._check_version(row[1])
            self._events.version = int(row[1])
            if int(row[1]) < 2:
                check_legacy(conn, self.path)
                self._legacy = True
                legacy_total(conn)
            else:
                check_header(conn, self.path, int(row[1]), stamp=False)
                self._events.use(int(row[1]), self._head(conn, check_last=False).budget)
            return read(conn)

        try:
            return self._db.read(inspect)
        except LedgerError as exc:
            cause = exc.__cause__
            if self._db.immutable or cause is None or sqlite_code(cause) not in (
                SQLITE_CANTOPEN, SQLITE_READONLY
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
            self._db.immutable = True
            return self._db.read(inspect)

    def _check_version(self, version: Any) -> None:
        if not isinstance(version, int):
            raise tampered(self.path, "its schema version is malformed")
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
        """Check the ledger and its budget (in the open's write transaction). True when the
        whole chain was verified here."""
        if "dpframe_schema" not in table_names(conn):  # created whole, never here (.files)
            raise LedgerError(f"{self.path} is an SQLite database but not a dpframe ledger")
        self._check_schema(conn, neighbouring)
        head = self._head(conn, check_last=True)
        self._events.check(self.path, self._events.version, head.budget if epsilon is None
                           else (Fraction(epsilon), Fraction(delta or 0)))
        # the rows since the verified checkpoint (O(tail)); the checkpoint moves to the head
        # verified here with this ledger's first charge, never by the open itself: a run refused
        # after its open leaves the file as it was
        checked = verify_chain(conn, self.path, tail=True)
        self._verified = checked["state"] if checked["checked"] else None
        verified = True
        if epsilon is None:
            return verified
        want = (Fraction(epsilon), Fraction(delta or 0))
        if want == head.budget:
            return verified
        self._change_budget(conn, head, want, allow_budget_change, verified)
        return True

    def _check_schema(self, conn: sqlite3.Connection, neighbouring: str | None) -> bool:
        """Check the schema row (refusing a schema-1 ledger: ``dpframe ledger migrate``) and
        the neighbouring relation. False: the chain is still to be verified."""
        row = conn.execute("SELECT app, version, neighbouring FROM dpframe_schema").fetchone()
        if row is None or row[0] != APP_ID:
            raise LedgerError(f"{self.path} is not a dpframe ledger")
        self._check_version(row[1])
        if int(row[1]) < 2:  # never migrated silently (legacy.py): refused, nothing changed
            check_legacy(conn, self.path)
            raise needs_migration(self.path)
        self._events.version = int(row[1])
        check_header(conn, self.path, int(row[1]), stamp=True)
        if neighbouring is not None and row[2] != neighbouring:
            raise LedgerError(
                f"ledger {self.path} accounts under neighbouring={row[2]!r}, not "
                f"{neighbouring!r}: epsilons under different relations do not add up"
            )
        return False

    def _change_budget(
        self,
        conn: sqlite3.Connection,
        head: Head,
        want: tuple[Fraction, Fraction],
        allow_budget_change: bool,
        verified: bool,
    ) -> None:
        """Record the budget ``want`` (only with ``allow_budget_change``, and on a chain that
        verifies)."""
        stored = head.budget
        if not allow_budget_change:
            raise LedgerError(
                f"ledger {self.path} has budget epsilon={format_number(stored[0])}, "
                f"delta={format_number(stored[1])}; this session asks for "
                f"epsilon={format_number(want[0])}, delta={format_number(want[1])}. "
                "Pass allow_budget_change=True (the CLI: dpframe run --allow-budget-change) to "
                "change it (the change is recorded)"
            )
        if not verified:  # never extend a chain that does not verify
            self._verify(conn)
        head, _ = append(conn, head, "budget", budget_values(
            want[0], want[1], "changed (allow_budget_change=True)", self._name))
        write_head(conn, replace(head, budget=want))

    # -- the chain ---------------------------------------------------------------------------

    def _head(self, conn: sqlite3.Connection, *, check_last: bool) -> Head:
        return read_head(conn, self.path, check_last=check_last)

    def _verify(self, conn: sqlite3.Connection) -> dict[str, Any]:
        return verify_chain(conn, self.path)

    def _verify_chain(self, conn: sqlite3.Connection) -> dict[str, Any] | None:
        """Verify the chain, if the ledger has one (a schema-1 ledger read as it is has none)."""
        return None if self._legacy else self._verify(conn)

    def _verify_tail(self, conn: sqlite3.Connection) -> dict[str, Any] | None:
        """Verify the chain since its verified checkpoint (the whole chain if it has none), if
        the ledger has a chain: what every open checks (``chain.verify_chain``)."""
        return None if self._legacy else verify_chain(conn, self.path, tail=True)

    def _integrity_check(self, conn: sqlite3.Connection) -> None:
        bad = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        if bad != ["ok"]:
            raise corrupt(self.path)

    def _total(self, conn: sqlite3.Connection) -> tuple[Fraction, Fraction]:
        if self._legacy:
            return legacy_total(conn)
        return self._head(conn, check_last=False).budget

    def _spent(self, conn: sqlite3.Connection) -> tuple[Fraction, Fraction]:
        if self._legacy:
            return legacy_spent(conn)
        head = self._head(conn, check_last=False)
        if self._events.composes:
            return self._events.spend(conn, self.path, head.budget)[1]
        return head.spent

    @staticmethod
    def _neighbouring(conn: sqlite3.Connection) -> str:
        return str(conn.execute("SELECT neighbouring FROM dpframe_schema").fetchone()[0])

    def _snapshot(self, conn: sqlite3.Connection, integrity: bool,
                  last: int | None = None) -> LedgerSnapshot:
        chain = self._verify_chain(conn) if integrity else self._verify_tail(conn)
        if integrity:
            self._integrity_check(conn)
            if chain is None:
                raise has_no_chain(self.path)
        snap = snapshot(conn, self.path, chain, legacy=self._legacy, last=last)
        if self._events.composes:  # schema 4, delta > 0: what a (PLD) session spends
            snap = replace(snap, spent=self._events.spend(conn, self.path, snap.total)[1])
        return snap

    # -- interface ---------------------------------------------------------------------------

    def total(self) -> tuple[Fraction, Fraction]:
        """The current budget ``(epsilon, delta)``."""
        return self._db.read(self._total)

    def neighbouring(self) -> str:
        """The neighbouring relation the ledger was created with."""
        return self._db.read(self._neighbouring)

    def spent(self) -> tuple[Fraction, Fraction]:
        """The ``(epsilon, delta)`` charged so far, by every process (O(1): the sealed head)."""
        return self._db.read(self._spent)

    def fits(self, cost: PrivacyCost) -> bool:
        """Whether ``cost`` fits now (no side effect; another process may charge meanwhile)."""
        cost = check_cost(cost)
        if self._legacy:
            return self._db.read(
                lambda c: plan_charge(legacy_total(c), *legacy_costs(c), cost)[2]
            )

        def go(conn: sqlite3.Connection) -> bool:
            head = self._head(conn, check_last=False)
            if self._events.composes:
                return plan_charge(head.budget, *self._events.spend(conn, self.path, head.budget),
                                   cost)[2]
            return plan_charge(head.budget, head.totals, head.spent, cost)[2]

        return self._db.read(go)

    def privacy_unit(self) -> str | None:
        """The privacy unit the ledger protects (None until a release or a binding fixes it)."""
        if self._legacy:
            return None
        return self._db.read(lambda c: self._head(c, check_last=False).unit)

    def bind_privacy_unit(self, unit: str) -> None:
        """Record ``unit`` as the ledger's privacy unit, in its own transaction, without a
        charge; ``PrivacyUnitError`` (nothing written) if the ledger protects another unit."""
        unit = check_unit(unit)
        current = self.privacy_unit()
        if current == unit:
            return
        if current is not None:
            raise unit_refused(current, unit)

        def go(conn: sqlite3.Connection) -> None:
            head = self._head(conn, check_last=True)
            if head.unit is None:
                head, _ = append(conn, head, "units",
                                 {"time": now(), "unit": unit, "session": self._name})
                write_head(conn, replace(head, unit=unit))
            elif head.unit != unit:
                raise unit_refused(head.unit, unit)

        self._db.transaction(go, write=True, nothing="nothing was recorded")

    def charge(self, cost: PrivacyCost, meta: Mapping[str, Any]) -> int:
        """Check that ``cost`` fits and insert it, in one ``BEGIN IMMEDIATE`` transaction.

        Raises ``BudgetExceededError`` (transaction rolled back, nothing written) if not, and
        ``PrivacyUnitError`` (likewise) when ``meta["privacy_unit"]`` differs from the unit the
        ledger protects; the first charge naming a unit records it. When this returns, the
        charge is committed to the file. O(1): reads the sealed running totals, not the entries.
        """
        return self.charge_many([(cost, meta)])[0]

    def charge_many(self, charges: Sequence[tuple[PrivacyCost, Mapping[str, Any]]]
                    ) -> list[int]:
        """Charge each ``(cost, meta)`` in order, all in one ``BEGIN IMMEDIATE`` transaction:
        every entry is committed (status ``charged``) or, when the last spend would not fit or
        a unit differs, none is (``BudgetExceededError`` / ``PrivacyUnitError`` naming the whole
        batch's need). A run reserves its whole cost so: concurrent runs never interleave. Each
        entry's chain head (for exports' provenance) is kept: :meth:`chain_head_of`."""
        rows = [(check_cost(c), meta_fields(m), meta_unit(m)) for c, m in charges]
        for _, fields, _ in rows:
            if fields["session"] is None:
                fields["session"] = self._name

        def go(conn: sqlite3.Connection) -> list[tuple[int, dict[str, Any]]]:
            if self._verified is not None:  # the open's verified head: the new checkpoint
                advance_checkpoint(conn, self.path, self._verified)
            head = self._head(conn, check_last=True)
            ledger_id = conn.execute("SELECT ledger_id FROM dpframe_schema").fetchone()[0]
            composes = self._events.composes
            # the spend checked: the basic one of the head, or (schema 4, PLD/RDP) the events'
            # recomposition under this same write lock (another process's charges included)
            totals, spent = (self._events.spend(conn, self.path, head.budget) if composes
                             else (head.totals, head.spent))
            start_spent, charged = spent, []
            for cost, fields, unit in rows:
                head, entry_id = self._charge_row(conn, head, cost, fields, unit)
                charged.append((entry_id, {"ledger_id": ledger_id, "seq": head.rows,
                                           "hash": head.hash}))
                if composes:
                    after = totals.add(cost)
                    _, spent, _ = plan_charge(head.budget, totals, spent, cost, after)
                    totals = after
            spent = spent if composes else head.spent
            if not (spent[0] <= head.budget[0] and spent[1] <= head.budget[1]):
                raise self._refusal(conn, head.budget, start_spent, spent, rows)
            write_head(conn, head)
            reserve(conn, [entry_id for entry_id, _ in charged])  # room for the outcomes
            return charged

        charged = self._db.transaction(go, write=True, nothing="nothing was charged")
        self._verified = None
        self._db.checkpoint()  # the outcomes will rewrite the log, not grow it (.room)
        for entry_id, link in charged:
            self._links[entry_id] = link
        return [entry_id for entry_id, _ in charged]

    def _refusal(self, conn: sqlite3.Connection, total: tuple[Fraction, Fraction],
                 old: tuple[Fraction, Fraction], new: tuple[Fraction, Fraction],
                 rows: Sequence[tuple[PrivacyCost, Any, Any]]) -> Exception:
        """The refusal of a batch (:func:`.charges.refusal`: it names the accountant that
        charged the ledger when that one would accept it); read only when refusing."""
        entries = (read_entries(conn, with_unit=True, with_event=True)
                   if self._events.version >= 4 else [])
        return refusal(total, old, new, self.accountant, entries, [r[0] for r in rows])

    def chain_head_of(self, entry_id: int) -> dict[str, Any] | None:
        """The chain head right after the charge ``entry_id`` was committed: ``ledger_id``,
        ``seq`` (its position in the hash chain) and ``hash`` (its row hash), as exports'
        provenance carries it (``dpframe ledger verify --against`` finds it again in the
        ledger). None for an entry this object did not charge."""
        link = self._links.get(entry_id)
        return None if link is None else dict(link)

    def premigration_chain(self, ledger_id: str) -> tuple[int, list[str]] | None:
        """The row hashes of this ledger's chain before ``dpframe ledger migrate`` re-hashed it
        under the identity ``ledger_id`` (:func:`.legacy.premigration_hashes`), or None."""
        return self._db.read(lambda conn: premigration_hashes(conn, str(ledger_id)))

    def link_at(self, seq: int) -> str | None:
        """The row hash at position ``seq`` of the hash chain (None if the chain is shorter).
        Only meaningful once :meth:`verify` has passed."""

        return None if self._legacy else self._db.read(lambda conn: hash_at(conn, int(seq)))

    def _charge_row(self, conn: sqlite3.Connection, head: Head, cost: PrivacyCost,
                    fields: dict[str, Any], unit: str | None) -> tuple[Head, int]:
        """Append one charged entry (and a first unit binding) after ``head``; the new head
        (not yet written) and the entry's id. The caller checks the budget."""
        if unit is not None and head.unit is not None and unit != head.unit:
            raise unit_refused(head.unit, unit)
        old, new, _ = plan_charge(head.budget, head.totals, head.spent, cost)
        if unit is not None and head.unit is None:
            head, _ = append(conn, head, "units",
                             {"time": now(), "unit": unit, "session": fields["session"]})
            head = replace(head, unit=unit)
        head, entry_id = append(
            conn, head, "entries",
            {
                "time": now(),
                "session": fields["session"],
                "query": fields["query"],
                "columns": json.dumps(fields["columns"]),
                "mechanism": fields["mechanism"],
                "requested_epsilon": frac_text(cost.epsilon),
                "requested_delta": frac_text(cost.delta),
                "rho": None if cost.rho is None else frac_text(cost.rho),
                "epsilon": frac_text(new[0] - old[0]),
                "delta": frac_text(new[1] - old[1]),
                "spent_epsilon": frac_text(new[0]),
                "spent_delta": frac_text(new[1]),
                "seeded": int(fields["seeded"]),
                "pid": os.getpid(),
                "privacy_unit": unit,
            },
            extra={"status": "charged", "details": "{}",
                   **({"event": json.dumps(event_json(cost, charged_by(self.accountant)),
                                           separators=(",", ":"))}
                      if head.version >= 4 else {})},
        )
        return replace(head, spent=new, totals=head.totals.add(cost)), entry_id

    def record(self, entry_id: int, status: str, details: Mapping[str, Any]) -> None:
        """Mark a charged entry ``"released"`` or ``"failed"`` (once): appends a chained
        outcome row (and updates the entry's ``status``/``details`` copy)."""
        status = check_status(status)
        det = json.dumps(jsonable(dict(details or {})), allow_nan=False)
        if isinstance(entry_id, bool) or not isinstance(entry_id, int):
            raise LedgerError(f"no ledger entry with id {entry_id!r}")

        def go(conn: sqlite3.Connection) -> None:
            head = self._head(conn, check_last=True)
            row = conn.execute("SELECT status FROM entries WHERE id = ?", (entry_id,)).fetchone()
            if row is None:
                raise _NotPending(f"no ledger entry with id {entry_id!r}")
            if row[0] != "charged":
                raise _NotPending(f"ledger entry {entry_id} is already {row[0]}")
            free(conn, entry_id)  # the pages reserved by the charge (.room)
            head, _ = append(conn, head, "outcomes",
                             {"entry_id": entry_id, "time": now(), "status": status,
                              "details": det})
            conn.execute("UPDATE entries SET status = ?, details = ? WHERE id = ?",
                         (status, det, entry_id))
            write_head(conn, head)

        try:
            self._db.transaction(go, write=True, nothing="its outcome was not recorded")
        except _NotPending:
            raise
        except LedgerError as exc:
            raise OutcomeNotRecordedError(
                f"ledger entry {entry_id} was charged: its budget is spent, committed and "
                f"counted, but recording its outcome ({status}) failed: {exc}. The entry stays "
                "'charged' (dpframe ledger show lists it)"
            ) from exc
        self._db.checkpoint()  # the next outcome rewrites the log from its start (.room)

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, oldest first. The whole chain is verified first (``LedgerError`` if it
        does not): a full read never shows an edited or truncated ledger."""

        def go(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            self._verify_chain(conn)
            return read_entries(conn, with_unit=not self._legacy,
                                with_event=self._events.version >= 4)

        return self._db.read(go)

    def budget_history(self) -> list[dict[str, Any]]:
        """Every budget the ledger has had, oldest first (creation, then recorded changes)."""
        return self._db.read(read_budget_history)

    def verify(self, *, integrity: bool = True) -> dict[str, Any]:
        """Verify the ledger now: SQLite's full ``integrity_check`` (with ``integrity``), the
        whole hash chain, and every accounting invariant (each entry's charge and cumulative
        spend, the running totals, the outcomes, the privacy unit). Returns ``rows`` (chain
        length), ``head`` (last hash: keep a copy elsewhere to detect a forged chain later),
        ``entries``, ``ledger_id`` and ``schema_version``; raises ``LedgerError`` otherwise."""

        def go(conn: sqlite3.Connection) -> dict[str, Any]:
            if integrity:
                self._integrity_check(conn)
            if self._legacy:
                raise has_no_chain(self.path)
            return self._verify(conn)

        return self._db.read(go)

    def describe(self) -> str:
        """A short description for reports."""
        return f"SQLite ledger {self.path}" + (" (read-only)" if self.readonly else "")
