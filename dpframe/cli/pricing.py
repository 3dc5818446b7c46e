"""Pricing a run before its first charge: each query built and planned once, and the run's
charges simulated one by one with the ledger's own rule (:func:`plan_charge`: the spend is a
running maximum), so a run the plan says fits is charged exactly as planned."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ..core.accounting import PrivacyCost
from ..core.query import Query
from ..engine.ledger.charges import fold, plan_charge
from ..engine.release import prepare
from ..errors import ValidationError
from ..fronts.frame import PrivateFrame
from .queries import build_query
from .spec import QuerySpec

if TYPE_CHECKING:
    from ..backends.base import Backend
    from ..core.plan import ReleasePlan
    from ..engine.session import Session


@dataclass(frozen=True)
class PricedQuery:
    """A spec query, the Query the front built for it and its plan (mechanisms, cost)."""

    spec: QuerySpec
    query: Query
    plan: ReleasePlan


@dataclass
class RunPlan:
    """What a run would do: each query's public plan and the whole run's cost."""

    explains: list[dict[str, Any]]
    costs: list[PrivacyCost]
    spent_before: tuple[Fraction, Fraction]
    spent_after: tuple[Fraction, Fraction]  # the ledger's spend after the run's last charge
    total: tuple[Fraction, Fraction]

    @property
    def fits(self) -> bool:
        """Whether every charge of the run fits (the spend only rises: the last one decides)."""
        return self.spent_after[0] <= self.total[0] and self.spent_after[1] <= self.total[1]

    def over_budget(self, hint: str = "") -> str:
        """The refusal of a run that does not fit (``hint``: what to do, after "remain")."""
        need = _minus(self.spent_after, self.spent_before)
        left = [max(x, Fraction(0)) for x in _minus(self.total, self.spent_before)]
        return (f"privacy budget exceeded: this run needs epsilon={float(need[0]):.6g}, "
                f"delta={float(need[1]):.3g} but only epsilon={float(left[0]):.6g}, "
                f"delta={float(left[1]):.3g} remain{hint}; nothing was computed")


def _minus(a: tuple[Fraction, Fraction], b: tuple[Fraction, Fraction]
           ) -> tuple[Fraction, Fraction]:
    return a[0] - b[0], a[1] - b[1]


def price_queries(session: Session, backend: Backend, declarations: Mapping[str, Any],
                  queries: Sequence[QuerySpec]) -> list[PricedQuery]:
    """Build and plan each query once on a frame with ``declarations`` (bounds, keys, unit),
    with no side effect: a typed error naming the query when one is invalid."""
    import pyarrow as pa

    try:
        frame = PrivateFrame(backend, session, **declarations)
        return [_priced(frame, session, backend, q) for q in queries]
    except (pa.ArrowException, OSError) as exc:
        raise ValidationError(f"cannot read the input ({type(exc).__name__})") from None


def _priced(frame: PrivateFrame, session: Session, backend: Backend, q: QuerySpec
            ) -> PricedQuery:
    try:
        query = build_query(frame, q)
        return PricedQuery(q, query, prepare(session, query, backend))
    except ValidationError as exc:
        raise type(exc)(f"query {q.name!r}: {exc}") from None


def plan_run(session: Session, priced: Sequence[PricedQuery]) -> RunPlan:
    """The run of ``priced`` charged one query at a time after the ledger's existing charges,
    by the ledger's own rule (:func:`plan_charge`), so that a run that does not fit at any
    of its charges is refused before its first one, and ``spent_after`` is the spend the
    ledger will record after the run's last charge (when no one else charges meanwhile)."""
    costs = [p.plan.cost for p in priced]
    total = session.total_exact
    before = session.spent_exact
    totals = fold(entry_cost(e) for e in session.ledger_store.entries())
    spent = before
    for cost in costs:
        after_totals = totals.add(cost)
        spent = plan_charge(total, totals, spent, cost, after_totals)[1]
        totals = after_totals
    return RunPlan([p.plan.describe() for p in priced], costs, before, spent, total)


def entry_cost(entry: Mapping[str, Any]) -> PrivacyCost:
    """The cost a ledger entry charged."""
    return PrivacyCost(entry["requested_epsilon"], entry["requested_delta"], entry.get("rho"))


def charged_by(session: Session, entry_ids: Sequence[int]) -> tuple[Fraction, Fraction]:
    """What the entries ``entry_ids`` added to the ledger's spent budget: the sum of the
    charges the ledger recorded for them (each the rise of its running spend), which is
    ``spent_after - spent_before`` of the run's plan when no one else charged meanwhile."""
    mine = set(entry_ids)
    charged = [(e["epsilon"], e["delta"]) for e in session.ledger_store.entries()
               if e["id"] in mine]
    return (sum((e for e, _ in charged), Fraction(0)),
            sum((d for _, d in charged), Fraction(0)))


__all__ = ["PricedQuery", "RunPlan", "charged_by", "entry_cost", "plan_run", "price_queries"]
