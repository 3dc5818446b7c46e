"""The release path of a DP bound choice (:mod:`dpframe.core.choose_bounds`): the same steps as
:func:`dpframe.engine.release.run_release`, for a release whose output is a choice of
contribution bounds rather than an aggregate.

1. validate (the request is built validated; the session's privacy unit; the columns read,
   as a release checks its own: a CSV column that no declaration types is refused) -> typed
   error
2. check the budget                                    -> BudgetExceededError, nothing read
3. the backend computes exact rows per (unit, group)   -> InputError on an operational fault
4. charge the ledger (one charge: epsilon, delta 0)
5. the core releases the noisy histograms and chooses; the release is recorded

No noisy value exists before the charge; a failure after it keeps the charge and records the
entry failed, as every release does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..backends.base import Backend
from ..core.accounting import PrivacyCost
from ..core.choose_bounds import BoundsRequest, ChosenBounds, choose
from ..errors import InputError

if TYPE_CHECKING:
    from .session import Session


def check_columns(request: BoundsRequest, backend: Backend) -> None:
    """The columns the choice reads (the unit and ``by``), checked as a release checks its
    own (:func:`dpframe.engine.release.prepare` asks ``backend.schema(query.columns)``): a CSV
    column that no declaration types is refused (ValidationError, before any charge) whatever
    its values, since read as text, one unit's id spelled ``100``, ``0100`` and ``00100``
    would count as three units in the histograms."""
    backend.schema(request.columns)


def run_bounds_choice(session: Session, request: BoundsRequest, backend: Backend
                      ) -> ChosenBounds:
    """Charge ``request.epsilon`` once and return the chosen bounds with their provenance."""
    from .._version import __version__

    session.check_privacy_unit(request.privacy_unit)
    check_columns(request, backend)
    cost = PrivacyCost(request.epsilon)
    session.require(cost)
    bound = backend.bind(request.columns)
    defect: Exception | None = None
    exact: Any = None
    try:
        exact = bound.exact(request.compute_request(), None)
    except InputError:
        raise
    except OSError as exc:  # its message may quote a path or a value: name its type only
        raise InputError(f"cannot read the input ({type(exc).__name__}); nothing was "
                         "charged") from None
    except Exception as exc:  # a defect: charged and recorded failed, as after a charge
        defect = exc
    entry = session.charge(cost, query=request.description(), columns=request.columns,
                           mechanism="geometric histograms", privacy_unit=request.privacy_unit)
    try:
        if defect is not None:
            raise defect
        chosen = choose(request, exact, session.rng)
    except BaseException:
        session.record(entry, status="failed", details={})
        raise
    chosen.provenance.update(
        ledger_entry=entry, ledger_head=session.ledger_head(entry), session=session.name,
        seeded=session.seed is not None, library_version=__version__,
        query=request.description())
    session.record(entry, status="released", details={
        "noise_scale": chosen.provenance["noise_scale"], "ci_half_width": None,
        "plan": {k: chosen.provenance[k] for k in (
            "mechanism", "epsilon_per_histogram", "sensitivity", "candidates", "bounds")}})
    return chosen
