"""Privacy ledgers: where a session's budget and every charge live.

Two stores share one interface (:class:`Ledger`):

- :class:`MemoryLedger` (:mod:`.memory`): in-process, guarded by a lock; gone with the process.
- :class:`SqliteLedger` (:mod:`.sqlite`): an embedded SQLite file, the source of truth across
  processes.

Guarantees of the SQLite ledger (docs/cli.md, "The ledger's guarantees"):

- **Atomic, durable charges.** A charge is checked and inserted in one ``BEGIN IMMEDIATE``
  transaction (one writer at a time), in WAL mode with ``synchronous=FULL``, and committed before
  :meth:`SqliteLedger.charge` returns: concurrent writers never overspend together, a process
  killed at any instant either committed its charge or charged nothing, and a release is
  computed only after its charge is on disk.
- **Interrupt-safe transactions** (:mod:`.connection`, :mod:`.signals`). Waiting for another
  process's lock happens in Python between short attempts (Ctrl-C interrupts the wait at once,
  with nothing open); while a transaction is open in the main thread, Python-level signal
  handlers are held back and run right after it has committed or rolled back; whatever is
  still open is rolled back. An interrupt never leaves the ledger locked nor wedges the session.
- **Tamper evidence** (:mod:`.chain`). Every accounting row (budget rows, entries, outcomes, the
  privacy-unit binding) is a link of one SHA-256 hash chain whose head and running totals are
  sealed in the ``chain_head`` row. Every open verifies the rows since a sealed, verified
  checkpoint (position, row hash, accounting state; moved to the head by writable opens), and
  every full read the whole chain (:meth:`SqliteLedger.entries`, :meth:`SqliteLedger.verify`):
  a deleted (even the last), edited, inserted or reordered row (before the checkpoint: found
  by the whole chain, or on open when the hashes after it were recomputed) raises
  :class:`~dpframe.errors.LedgerError`; it is never
  read as a smaller spend. Outcomes (released / failed) are their own chained rows, so
  recording one appends and never rewrites a hashed row. The hash is not keyed: it detects
  edits made with ordinary tools, not a forger who recomputes the whole chain (compare the head
  printed by ``dpframe ledger show --verify`` with a copy kept elsewhere for that).
- **Room for every outcome** (:mod:`.room`). A charge's transaction also reserves room for its
  entry's outcome, which recording the outcome reuses: on a disk that filled up after the
  charge it writes no byte past the end of any ledger file. When recording still fails,
  :class:`~dpframe.errors.OutcomeNotRecordedError` says the budget was spent.
- **Precise diagnoses** (:mod:`.diagnose`): locked, read-only, full disk, corrupt, not a ledger
  and tampered with are told apart, and no message quotes a value read from the ledger.
- **One privacy unit** (:mod:`.units`). The ledger records the unit it protects (``"rows"`` or a
  unit code) with the first charge that names one, or :meth:`SqliteLedger.bind_privacy_unit`;
  a charge under another unit raises :class:`~dpframe.errors.PrivacyUnitError` in the same
  transaction and charges nothing.

Fractions are stored exactly as TEXT ``"num/den"`` (:mod:`.schema`). Every entry also stores the
session's cumulative spend after it (``spent_epsilon``, ``spent_delta``); the spend is monotone
(the running maximum of :func:`~dpframe.core.accounting.session_spend`, which is always a valid
bound) and every charge is the difference of two consecutive spends, so charges are never
negative (:mod:`.charges`). A charge is O(1): it reads the sealed running totals of
``chain_head``, never the entries.

- **Atomic creation, regular files only** (:mod:`.files`). A new ledger is built whole in a
  temporary file and hard-linked to its name (another process that created it first wins, and
  its ledger is opened); a path is checked before SQLite touches it: links are followed, and
  anything but a non-empty regular file is refused.
- **No downgrade** (:mod:`.legacy`). Schema 2 (dpframe 0.2) adds the chain to schema 1 (dpframe
  0.1); schema 3 hashes the same fields in a cheaper encoding (:mod:`.formats`; schema-2 ledgers
  keep theirs, and neither can be read as the other); schema 4 adds each entry's privacy event,
  chained, from which a session's accountant recomposes its spend (:mod:`.events`; schema 2/3
  ledgers are refused by PLD/RDP sessions until migrated). A schema-1 ledger is read as it is
  read-only, refused by writable opens, and migrated only by ``dpframe ledger migrate``
  (:meth:`SqliteLedger.migrate`), which records the migration as a chained budget row; a
  schema-1 claim with remains of a newer ledger is refused as tampered with. Every charge's
  chain head (:meth:`SqliteLedger.chain_head_of`) goes into the release's provenance, so
  ``dpframe ledger verify --against`` shows a ledger rolled back or replaced since.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Protocol, runtime_checkable

from ...core.accounting import PrivacyCost
from .charges import spend_of
from .memory import MemoryLedger
from .schema import APP_ID as APP_ID
from .schema import NEIGHBOURING as NEIGHBOURING
from .schema import SCHEMA_VERSION
from .schema import STATUSES as STATUSES
from .sqlite import SqliteLedger
from .units import ROW_UNIT as ROW_UNIT
from .units import privacy_unit_message, unit_code, unit_name


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
