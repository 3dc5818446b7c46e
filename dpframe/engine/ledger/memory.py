"""The in-process ledger: a session's budget and charges, gone with the process."""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from ..._json import jsonable
from ...core.accountant import Accountant, Totals, accountant_for
from ...core.accounting import Number, PrivacyCost, validate_delta, validate_epsilon
from ...errors import LedgerError
from .charges import (
    check_cost,
    check_status,
    event_json,
    exceeded,
    meta_fields,
    now,
    plan_charge,
)
from .units import check_unit, meta_unit, unit_refused


class MemoryLedger:
    """An in-process ledger. Thread-safe; charges are checked and inserted under one lock.

    A charge changes the state with one ``list.append`` of the entry and the running totals
    after it, so an interrupt (a Python signal handler runs between bytecodes) finds the charge
    either wholly made or not made at all. A first unit is bound just before that append: an
    interrupt in between leaves the unit bound and nothing charged, which only refuses more."""

    def __init__(self, epsilon: Number, delta: Number = 0, *,
                 accountant: str | Accountant | None = None) -> None:
        self._total = (validate_epsilon(epsilon), validate_delta(delta))
        #: The composition rule (:mod:`dpframe.core.accountant`): PLD by default when delta > 0,
        #: exact basic composition for a pure-DP budget.
        self.accountant: Accountant = accountant_for(accountant, self._total)
        self._log: list[tuple[dict[str, Any], Totals]] = []
        self._unit: str | None = None
        self._lock = threading.Lock()
        self._pid = os.getpid()

    @property
    def _totals(self) -> Totals:
        return self._log[-1][1] if self._log else self.accountant.start()

    def total(self) -> tuple[Fraction, Fraction]:
        """The budget ``(epsilon, delta)``."""
        return self._total

    def _last_spent(self) -> tuple[Fraction, Fraction]:
        if not self._log:
            return Fraction(0), Fraction(0)
        last = self._log[-1][0]
        return last["spent_epsilon"], last["spent_delta"]

    def spent(self) -> tuple[Fraction, Fraction]:
        """The ``(epsilon, delta)`` charged so far."""
        with self._lock:
            return self._last_spent()

    def fits(self, cost: PrivacyCost) -> bool:
        """Whether ``cost`` fits now (no side effect)."""
        cost = check_cost(cost)
        with self._lock:
            return plan_charge(self._total, self._totals, self._last_spent(), cost)[2]

    def privacy_unit(self) -> str | None:
        """The privacy unit this ledger protects (None until a release or a binding fixes it)."""
        with self._lock:
            return self._unit

    def bind_privacy_unit(self, unit: str) -> None:
        """Record ``unit`` as the ledger's privacy unit; ``PrivacyUnitError`` if it differs."""
        unit = check_unit(unit)
        with self._lock:
            if self._unit is None:
                self._unit = unit
            elif self._unit != unit:
                raise unit_refused(self._unit, unit)

    def charge(self, cost: PrivacyCost, meta: Mapping[str, Any]) -> int:
        """Check and record ``cost`` atomically; ``BudgetExceededError`` if it does not fit,
        ``PrivacyUnitError`` if ``meta["privacy_unit"]`` is not the ledger's unit."""
        return self.charge_many([(cost, meta)])[0]

    def charge_many(self, charges: Sequence[tuple[PrivacyCost, Mapping[str, Any]]]
                    ) -> list[int]:
        """Charge each ``(cost, meta)`` in order, all or none, under one lock; the state changes
        by one ``list.extend`` (an interrupt finds all of them made or none)."""
        rows = [(check_cost(c), meta_fields(m), meta_unit(m)) for c, m in charges]
        if os.getpid() != self._pid:  # a forked copy would spend the same budget again
            raise LedgerError("an in-memory budget belongs to the process that made it: a "
                              "forked process cannot spend it (share a budget between "
                              "processes with ledger='budget.sqlite')")
        with self._lock:
            bound = self._unit
            made: list[tuple[dict[str, Any], Totals]] = []
            totals, spent = self._totals, self._last_spent()
            start = spent
            for cost, fields, unit in rows:
                if unit is not None and bound is not None and unit != bound:
                    raise unit_refused(bound, unit)
                bound = unit if bound is None else bound
                after = totals.add(cost)
                old, new, _ = plan_charge(self._total, totals, spent, cost, after)
                made.append((self._row(len(self._log) + len(made) + 1, cost, fields, unit,
                                       old, new), after))
                totals, spent = after, new
            if not (spent[0] <= self._total[0] and spent[1] <= self._total[1]):
                raise exceeded(self._total, start, spent)
            self._unit = bound
            self._log.extend(made)  # the one change a charge makes
            return [row["id"] for row, _ in made]

    @staticmethod
    def _row(entry_id: int, cost: PrivacyCost, fields: dict[str, Any], unit: str | None,
             old: tuple[Fraction, Fraction], new: tuple[Fraction, Fraction]) -> dict[str, Any]:
        """A charged entry taking the spend from ``old`` to ``new``."""
        return {
            "id": entry_id,
            "time": now(),
            **fields,
            "requested_epsilon": cost.epsilon,
            "requested_delta": cost.delta,
            "rho": cost.rho,
            "event": event_json(cost),
            "epsilon": new[0] - old[0],
            "delta": new[1] - old[1],
            "spent_epsilon": new[0],
            "spent_delta": new[1],
            "status": "charged",
            "details": {},
            "privacy_unit": unit,
        }

    def record(self, entry_id: int, status: str, details: Mapping[str, Any]) -> None:
        """Mark entry ``entry_id`` as ``"released"`` or ``"failed"``."""
        status = check_status(status)
        det = jsonable(dict(details or {}))
        with self._lock:
            if not isinstance(entry_id, int) or not 1 <= entry_id <= len(self._log):
                raise LedgerError(f"no ledger entry with id {entry_id!r}")
            row, totals = self._log[entry_id - 1]
            if row["status"] != "charged":
                raise LedgerError(f"ledger entry {entry_id} is already {row['status']}")
            self._log[entry_id - 1] = ({**row, "status": status, "details": det}, totals)

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, oldest first (copies)."""
        with self._lock:
            return [
                {**r, "columns": list(r["columns"]), "details": dict(r["details"]),
                 "event": copy.deepcopy(r.get("event"))}
                for r, _ in self._log
            ]

    def describe(self) -> str:
        """A short description for reports."""
        return "in-memory ledger"
