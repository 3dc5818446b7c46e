"""What every ledger store does the same way for a charge: check its arguments, work out the
spend before and after it, and word the refusal.

The spend is monotone: the running maximum of :func:`~dpframe.core.accounting.session_spend`
(always a valid bound), so each charge, the difference of two consecutive spends, is never
negative. A refusal names only public budget numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from fractions import Fraction
from functools import lru_cache
from typing import Any

from ...core.accountant import Accountant, PrivacyEvent, Totals, accountant_for, event_of
from ...core.accounting import PrivacyCost, SpendTotals
from ...core.numbers import format_number
from ...errors import AccountantMismatchError, BudgetExceededError, ValidationError

Pair = tuple[Fraction, Fraction]


def now() -> str:
    """The current UTC time as stored in ledgers (ISO 8601, microseconds)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def check_cost(cost: Any) -> PrivacyCost:
    """``cost`` if it is a :class:`PrivacyCost`; ``ValidationError`` otherwise."""
    if not isinstance(cost, PrivacyCost):
        raise ValidationError(f"cost must be a PrivacyCost, not {type(cost).__name__}")
    return cost


def check_status(status: Any) -> str:
    """``status`` if it is an outcome (``"released"`` or ``"failed"``)."""
    if status not in ("released", "failed"):
        raise ValidationError(f"status must be 'released' or 'failed', got {status!r}")
    return str(status)


def meta_fields(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The descriptive fields of a charge's ``meta``, normalised for storage."""
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


def charged_by(accountant: Accountant) -> dict[str, str]:
    """Which accountant charged an entry, with its version (``dp_accounting``'s for PLD and
    RDP, dpframe's for basic composition): stored beside the entry's event (hashed with it on
    schema 4)."""
    return {"accountant": accountant.name, "accountant_version": _version_of(accountant.name)}


@lru_cache(maxsize=8)
def _version_of(name: str) -> str:
    """What versions the accountant ``name`` (read once: ``importlib.metadata`` costs about a
    millisecond a call)."""
    if name == "basic":
        from ..._version import __version__

        return f"dpframe {__version__}"
    from importlib.metadata import version as dist_version

    return f"dp_accounting {dist_version('dp-accounting')}"


def event_json(cost: PrivacyCost, by: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The versioned JSON of ``cost``'s privacy event, as ledgers store it, with the accountant
    that charged it (:func:`charged_by`) when given (readers ignore those keys)."""
    return {**event_of(cost).to_json(), **(by or {})}


def refusal(total: Pair, old: Pair, new: Pair, accountant: Accountant,
            entries: Iterable[Mapping[str, Any]], costs: Sequence[PrivacyCost]
            ) -> BudgetExceededError:
    """The refusal of ``costs`` (charged together) by ``accountant`` on a ledger holding
    ``entries`` (dicts with ``event``, ``requested_epsilon``...): :class:`AccountantMismatchError`
    naming the accountant that charged them when that one, composing the same events, would
    accept them;
    :func:`exceeded` otherwise. Every accountant's spend is a valid bound of the same releases
    (each event states its mechanism's loss), so either choice is sound; only the looser one
    refuses more."""
    plain = exceeded(total, old, new)
    rows = list(entries)
    names = {str(e["event"].get("accountant")) for e in rows
             if isinstance(e.get("event"), Mapping) and e["event"].get("accountant")}
    for name in sorted(names - {accountant.name}):
        other = accountant_for(name, total)
        if other.name == accountant.name:
            continue
        totals, spent = other.start(), (Fraction(0), Fraction(0))
        # the running maximum, as that accountant's session replays it, then the new costs
        for c in [*(entry_cost(e) for e in rows), *costs]:
            _, spent, _ = plan_charge(total, totals, spent, c)
            totals = totals.add(c)
        if spent[0] <= total[0] and spent[1] <= total[1]:
            version = next(str(e["event"].get("accountant_version", "")) for e in rows
                           if isinstance(e.get("event"), Mapping)
                           and e["event"].get("accountant") == name)
            return AccountantMismatchError(
                f"{plain} This ledger's releases were charged by the {name!r} accountant "
                f"({version}); this session composes them with {accountant.name!r}, a valid but "
                f"looser bound of the same releases, by which less remains. Open it with "
                f"accountant={name!r}, which accepts this query")
    return plain


def entry_cost(entry: Mapping[str, Any]) -> PrivacyCost:
    """The cost a ledger entry records, with its privacy event when it has one."""
    ev = entry.get("event")
    return PrivacyCost(entry["requested_epsilon"], entry["requested_delta"], entry.get("rho"),
                       event=None if not ev else PrivacyEvent.from_json(ev))


def fold(costs: Iterable[PrivacyCost], start: Totals | None = None) -> Totals:
    """The running totals of ``costs`` (from ``start``: an accountant's empty totals; today's
    exact basic totals by default)."""
    totals: Totals = SpendTotals() if start is None else start
    for c in costs:
        totals = totals.add(c)
    return totals


def plan_charge(
    total: Pair, costs: list[PrivacyCost] | Totals, last_spent: Pair, cost: PrivacyCost,
    after_totals: Totals | None = None,
) -> tuple[Pair, Pair, bool]:
    """The spend before and after ``cost`` and whether it fits ``total``. A caller that keeps
    the totals after ``cost`` passes them as ``after_totals`` (``totals.add(cost)``), so their
    spend is computed once."""
    totals = fold(costs) if isinstance(costs, list) else costs
    before = totals.spend()
    old = (max(before.epsilon, last_spent[0]), max(before.delta, last_spent[1]))
    after = (totals.add(cost) if after_totals is None else after_totals).spend()
    new = (max(after.epsilon, old[0]), max(after.delta, old[1]))
    return old, new, new[0] <= total[0] and new[1] <= total[1]


def exceeded(total: Pair, old: Pair, new: Pair) -> BudgetExceededError:
    """The refusal of a charge taking the spend from ``old`` to ``new`` past ``total``."""
    need = (new[0] - old[0], new[1] - old[1])
    left = (max(total[0] - old[0], Fraction(0)), max(total[1] - old[1], Fraction(0)))
    fmt = format_number
    return BudgetExceededError(
        f"privacy budget exceeded: this query needs epsilon={fmt(need[0])}, "
        f"delta={fmt(need[1])} but only epsilon={fmt(left[0])}, delta={fmt(left[1])} "
        f"remain (total epsilon={fmt(total[0])}, delta={fmt(total[1])}); "
        "nothing was computed or charged"
    )


def spend_of(entries: Iterable[Mapping[str, Any]], start: Totals | None = None
             ) -> PrivacyCost:
    """The spend of ledger entries (dicts as returned by ``entries()``), recomposed from their
    events by the accountant whose empty totals are ``start`` (basic by default)."""
    return fold((entry_cost(e) for e in entries), start).spend()
