"""A SQLite ledger's accountant: which composition rule a session uses on the file, and the
spend recomposed from the privacy events schema-4 entries record (issue 47, item 1).

On a schema-4 ledger, a session whose accountant composes events (PLD, the default when the
budget's delta > 0, or RDP) spends what its accountant composes from every entry's event, as
the in-memory ledger does (the running maximum of the spend after each charge,
:func:`~.charges.plan_charge`): recomposed from the file, so a reopened session spends exactly
what the events compose to. The chain head keeps the basic (exact) totals, an upper bound the
chain vouches for. A ledger of schema 1, 2 or 3 records no events: a session that would compose
them is refused (:class:`~dpframe.errors.LedgerMigrationError`) until ``dpframe ledger migrate``;
a basic one (``accountant="basic"``, or any pure-DP session) opens it as before.
"""

from __future__ import annotations

import json
import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any

from ...core.accountant import Accountant, BasicAccountant, PrivacyEvent, Totals, accountant_for
from ...core.accounting import PrivacyCost
from ...errors import LedgerMigrationError
from .chain import verify_chain
from .charges import plan_charge
from .diagnose import tampered
from .schema import SCHEMA_VERSION, parse_frac

Pair = tuple[Fraction, Fraction]


class Events:
    """The accountant of one ledger object (named ``name``: None, ``"basic"``, ``"pld"`` or
    ``"rdp"``) and its recomposition so far."""

    def __init__(self, name: str | None) -> None:
        accountant_for(name, (Fraction(1), Fraction(0)))  # the name checked
        self.name = name
        self.version = SCHEMA_VERSION
        self.accountant: Accountant = BasicAccountant((Fraction(0), Fraction(0)))
        #: (last entry id read, the accountant's totals, the spend, the budget composed for)
        self._replay: tuple[int, Totals, Pair, Pair] | None = None

    def use(self, version: int, budget: Pair) -> None:
        """The accountant for a ledger of schema ``version`` and ``budget``: the session's on
        schema 4, basic on older ones (they record no events)."""
        self.version = version
        self.accountant = (accountant_for(self.name, budget) if version >= 4
                           else BasicAccountant(budget))

    def check(self, path: Path, version: int, budget: Pair) -> None:
        """Refuse (``LedgerMigrationError``, in the open's transaction: nothing written or
        charged) a ledger of schema 2 or 3 when the session's accountant composes events;
        never a silent migration. Then :meth:`use` it."""
        wanted = accountant_for(self.name, budget)
        if version < 4 and wanted.name != "basic":
            raise LedgerMigrationError(
                f"ledger {path} has schema {version}, whose entries record no privacy events, "
                f"and this session composes them with the {wanted.name!r} accountant; nothing "
                f"was changed or charged. Migrate it explicitly with `dpframe ledger migrate "
                f"{path}` (each entry keeps its (epsilon, delta) as its event; the migration is "
                "recorded), or open it with accountant='basic'")
        self.use(version, budget)

    @property
    def composes(self) -> bool:
        """Whether the spend is recomposed from the recorded events (schema 4, PLD or RDP)."""
        return self.version >= 4 and self.accountant.name != "basic"

    def spend(self, conn: sqlite3.Connection, path: Path, budget: Pair) -> tuple[Totals, Pair]:
        """The accountant's totals and spend of every entry's event, in the caller's
        transaction (a charge's: under its write lock, other processes' charges included):
        the entries since the last call are read and added (O(new entries)). The first call
        reads every event, so it verifies the whole chain first (an open verifies only the rows
        after its checkpoint): an event edited anywhere refuses the ledger instead of lowering
        the spend. Later calls add rows appended since, each under the head's check."""
        if budget != self.accountant.budget:
            self.use(self.version, budget)
        state = self._replay
        if state is None:  # every event is read: the whole chain vouches for them first
            verify_chain(conn, path)
        if state is None or state[3] != budget:
            state = (0, self.accountant.start(), (Fraction(0), Fraction(0)), budget)
        last, totals, spent, _ = state
        rows = conn.execute("SELECT id, requested_epsilon, requested_delta, rho, event "
                            "FROM entries WHERE id > ? ORDER BY id", (last,)).fetchall()
        for rid, re_, rd, rho, text in rows:
            cost = _entry_cost(path, rid, re_, rd, rho, text)
            after = totals.add(cost)
            _, spent, _ = plan_charge(budget, totals, spent, cost, after)
            totals, last = after, int(rid)
        self._replay = (last, totals, spent, budget)
        return totals, spent


def _entry_cost(path: Path, rid: Any, re_: Any, rd: Any, rho: Any, text: Any) -> PrivacyCost:
    """The cost an entry's row records, with its event (``LedgerError`` if malformed)."""
    try:
        eps, delta, r = parse_frac(re_), parse_frac(rd), parse_frac(rho)
        event = PrivacyEvent.from_json(json.loads(text))
        assert eps is not None and delta is not None
        return PrivacyCost(eps, delta, r, event=event)
    except (TypeError, ValueError, AssertionError) as exc:  # ValidationError included
        raise tampered(path, f"the privacy event of entry #{rid} is malformed") from exc
