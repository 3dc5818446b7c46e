"""The one release path every front and backend shares (docs/architecture.md).

0. bind the backend to the columns the query reads (pandas: one snapshot of each)
1. validate the query against the public schema        -> typed error, nothing spent
2. plan it (sensitivity, mechanism, cost): every check that can fail runs here
3. charge the session's ledger                           -> BudgetExceededError, nothing spent
4. backend computes exact aggregates (never noise)
5. the privacy core adds noise; the release is recorded in the ledger
Whether a query is answered depends only on its arguments and the public schema, never on the
data (PRIVACY.md): an empty frame or an all-missing column is released with noise like any
other, so no backend refuses data. A failure after the charge is a defect; should one happen, it
keeps the charge and marks the ledger entry failed.
"""

from __future__ import annotations

import os
import sys
import warnings
import weakref
from typing import TYPE_CHECKING, Any, cast

from ..backends.base import Backend
from ..core.apply import CoreRelease, apply_plan
from ..core.names import close_names
from ..core.plan import ReleasePlan, plan_release
from ..core.query import Query
from ..errors import NearZeroWarning, UnknownColumnError

if TYPE_CHECKING:
    from .session import Session

#: The last release of each session (exports of scalar results read it: ``last_release``).
_LAST: weakref.WeakKeyDictionary[Any, CoreRelease] = weakref.WeakKeyDictionary()


def last_release(session: Session) -> CoreRelease | None:
    """The last successful release of ``session`` (values and provenance), or None.

    With several threads sharing a session this may be another thread's release: every result
    carries its own provenance (``result.attrs["dp"]``, scalars included), which is what
    exports and audits should read."""
    return _LAST.get(session)


def prepare(session: Session, query: Query, backend: Backend) -> ReleasePlan:
    """Steps 1-2: validate and plan, with no side effect."""
    plan = plan_release(query, session.neighbouring, backend.schema(query.columns))
    session.check_privacy_unit(query.privacy_unit)
    return plan


def _named_closely(exc: UnknownColumnError, backend: Backend) -> UnknownColumnError:
    """The refusal of an unknown column with the close names among all of the data's columns
    (the check saw only the columns the query reads; names are public schema)."""
    return UnknownColumnError(
        f"unknown column {exc.column!r}{close_names(exc.column, backend.schema())}", exc.column)


def explain(session: Session, query: Query, backend: Backend) -> dict[str, Any]:
    """A dry run: the plan's mechanisms, noise scales, error bounds and whether it fits."""
    try:
        plan = prepare(session, query, backend.bind(query.columns))
    except UnknownColumnError as exc:
        raise _named_closely(exc, backend) from None
    d = plan.describe()
    d["fits_budget"] = session.fits(plan.cost)
    d["remaining"] = session.remaining
    return d


def run_release(session: Session, query: Query, backend: Backend) -> CoreRelease:
    """Validate, charge, compute, add noise, record."""
    from .._version import __version__

    bound = backend.bind(query.columns)  # one snapshot of the columns the release reads
    try:
        plan = prepare(session, query, bound)
    except UnknownColumnError as exc:
        raise _named_closely(exc, backend) from None
    backend = bound
    entry = session.charge(plan.cost, query=query.description or plan.mechanism,
                           columns=query.columns, mechanism=plan.mechanism,
                           privacy_unit=query.privacy_unit)
    try:
        gen = session.rng.sampling_generator(needed=plan.compute.draws_at_random)
        exact = backend.exact(plan.compute, gen)
        release = apply_plan(plan, exact, session.rng)
    except BaseException:
        session.record(entry, status="failed", details={})
        raise
    first = release.measures[0].description
    session.record(entry, status="released", details={
        "noise_scale": first.get("noise_scale"),
        "ci_half_width": first.get("ci_half_width"),
        "ci_half_width_times_rows": first.get("ci_half_width_times_rows"),
        "granularity": first.get("granularity"),
        "plan": release.provenance,
    })
    release.provenance.update(
        ledger_entry=entry, ledger_head=session.ledger_head(entry), session=session.name,
        seeded=session.seed is not None, library_version=__version__, query=query.description,
    )
    _LAST[session] = release
    for hint in cast(list[str], release.provenance.get("warnings", [])):
        warnings.warn(f"dpframe: {hint}", NearZeroWarning, stacklevel=_caller_level())
    return release


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _caller_level() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside dpframe (the
    user's line, whatever front led here)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    return level
