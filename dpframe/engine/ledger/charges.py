"""What every ledger store does the same way for a charge: check its arguments, work out the
spend before and after it, and word the refusal.

The spend is monotone: the running maximum of :func:`~dpframe.core.accounting.session_spend`
(always a valid bound), so each charge, the difference of two consecutive spends, is never
negative. A refusal names only public budget numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from ...core.accounting import PrivacyCost, SpendTotals, session_spend
from ...core.numbers import format_number
from ...errors import BudgetExceededError, ValidationError

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


def fold(costs: Iterable[PrivacyCost]) -> SpendTotals:
    """The running totals of ``costs``."""
    totals = SpendTotals()
    for c in costs:
        totals = totals.add(c)
    return totals


def plan_charge(
    total: Pair, costs: list[PrivacyCost] | SpendTotals, last_spent: Pair, cost: PrivacyCost,
    after_totals: SpendTotals | None = None,
) -> tuple[Pair, Pair, bool]:
    """The spend before and after ``cost`` and whether it fits ``total``. A caller that keeps
    the totals after ``cost`` passes them as ``after_totals`` (``totals.add(cost)``), so their
    spend is computed once."""
    totals = costs if isinstance(costs, SpendTotals) else fold(costs)
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


def spend_of(entries: Iterable[Mapping[str, Any]]) -> PrivacyCost:
    """:func:`session_spend` of ledger entries (dicts as returned by ``entries()``)."""
    return session_spend(
        PrivacyCost(e["requested_epsilon"], e["requested_delta"], e.get("rho"))
        for e in entries
    )
