"""The one release path every front and backend shares (docs/architecture.md).

0. bind the backend to the columns the query reads (pandas: one snapshot of each)
1. validate the query against the public schema        -> typed error, nothing spent
2. plan it (sensitivity, mechanism, cost): every check that can fail runs here
3. check that the cost fits the remaining budget         -> BudgetExceededError, nothing read
4. the backend computes the exact aggregates (never noise) -> InputError on an operational
   fault (a read error, a corrupt file, a file changed during the read), nothing spent
5. charge the session's ledger (checks the budget again, atomically) -> BudgetExceededError
6. the privacy core adds noise; the release is recorded in the ledger

No noisy value exists without a committed charge (docs/privacy.md#budget): the noise is drawn only
after step 5 commits. The exact half runs before the charge so that an operational fault refuses
with nothing spent; whether a query is answered still depends only on its arguments, the public
schema and the budget, never on the data
(docs/privacy.md#behaviour-that-does-not-depend-on-the-data): an empty frame or an all-missing
column is released with noise like any other, so no backend refuses data, and any other failure of
the exact half (a defect: it might depend on the data) is charged and recorded failed exactly as if
it had happened after the charge. An interrupt before step 5 charges nothing (no value left the
process). A failure after the charge is a defect; should one happen, it keeps the charge and marks
the ledger entry failed.

:func:`run_release` does all of this for one query; a ``dpframe run`` composes the same steps
for a whole run (:func:`compute_exact` for every query, :func:`charge_all` in one ledger
transaction, then :func:`add_noise` and :func:`publish` query by query).
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

from ..backends.base import Backend
from ..core.accuracy import epsilon_for_accuracy, measure_half_width, validate_accuracy
from ..core.apply import CoreRelease, apply_plan
from ..core.digest import values_digest
from ..core.hints import NO_KEYS
from ..core.names import close_names
from ..core.plan import ReleasePlan, plan_query, plan_release
from ..core.query import Query
from ..display.text import coverage_text
from ..errors import (
    InputError,
    KeySelectionWarning,
    NearZeroWarning,
    NoKeysReleasedWarning,
    UnknownColumnError,
)

if TYPE_CHECKING:
    from .session import Session

def prepare(session: Session, query: Query, backend: Backend) -> ReleasePlan:
    """Steps 1-2: validate and plan, with no side effect."""
    plan = plan_release(query, session.neighbouring, backend.schema(query.columns))
    session.check_privacy_unit(query.privacy_unit)
    return plan


def named_closely(exc: UnknownColumnError, backend: Backend) -> UnknownColumnError:
    """The refusal of an unknown column with the close names among all of the data's columns
    (the check saw only the columns the query reads; names are public schema)."""
    return UnknownColumnError(
        f"unknown column {exc.column!r}{close_names(exc.column, backend.schema())}", exc.column)


def _prepared(session: Session, query: Query, backend: Backend) -> tuple[ReleasePlan, Backend]:
    """:func:`prepare` on ``backend`` bound to the query's columns (one snapshot of them); an
    unknown column is refused with close names from all of the data's columns. The plan's
    advice is warned here, before anything is charged."""
    bound = backend.bind(query.columns)
    try:
        plan = prepare(session, query, bound)
    except UnknownColumnError as exc:
        raise named_closely(exc, backend) from None
    warn_advice(plan)  # before any charge (public parameters only)
    return plan, bound


def explain(session: Session, query: Query, backend: Backend) -> dict[str, Any]:
    """A dry run: the plan's mechanisms, noise scales, error bounds and whether it fits."""
    plan, _ = _prepared(session, query, backend)
    d = plan.describe()
    d["covers"] = coverage_text(d, grouped=bool(query.by))  # as the release will state it
    d["fits_budget"] = session.fits(plan.cost)
    d["remaining"] = session.remaining
    return d


def epsilon_for(session: Session, query: Query, backend: Backend, accuracy: object,
                min_rows: object = None) -> Fraction:
    """Accuracy-first: the smallest epsilon (three significant digits, rounded up) whose
    ``query.ci`` interval (95% by default) has at most the half-width ``accuracy``, in the
    result's units (core/accuracy.py); ``query.epsilon`` is ignored. Nothing is charged.

    The same refusals as a release (``query`` is validated as :func:`prepare` does) and those
    of ``accuracy=`` (:func:`~dpframe.core.accuracy.validate_accuracy`). The answer depends
    on the arguments and the public schema only, never on the data."""
    validate_accuracy(None, accuracy, len(query.measures), min_rows)
    base = replace(query, epsilon=Fraction(1))
    plan, bound = _prepared(session, base, backend)  # every refusal, before the search
    level = float(query.ci or 0.95)
    rows = None if min_rows is None else int(min_rows)  # type: ignore[call-overload]
    kinds: dict[str, str] = dict(bound.schema(query.columns))

    def half_width(eps: Fraction) -> float:
        p = plan_query(replace(base, epsilon=eps), plan.relation, kinds)
        return measure_half_width(p.measures[0], level, rows)

    return epsilon_for_accuracy(half_width, float(accuracy))  # type: ignore[arg-type]


@dataclass
class Computed:
    """A query's exact half, computed before any charge (no noise: nothing to release yet).

    ``defect``: the exact half failed otherwise than by an operational fault; the query is
    still charged (a refusal must not depend on the data) and recorded failed."""

    query: Query
    plan: ReleasePlan
    exact: Any = None
    defect: Exception | None = None

    def charge_meta(self) -> dict[str, Any]:
        """The ledger metadata of this query's charge (public: names, mechanism, unit)."""
        return {"query": self.query.description or self.plan.mechanism,
                "columns": self.query.columns, "mechanism": self.plan.mechanism,
                "privacy_unit": self.query.privacy_unit}


def compute_exact(session: Session, query: Query, backend: Backend) -> Computed:
    """Steps 0-4: validate, plan, check the budget, compute the exact aggregates.

    Nothing is charged. Raises the typed refusals of :func:`prepare`,
    :class:`~dpframe.errors.BudgetExceededError` before any data is read, and
    :class:`~dpframe.errors.InputError` for an operational fault of the read (an ``OSError``
    of any backend: I/O, a corrupt or changed file). Any other failure of the backend is kept
    as the result's ``defect``; an interrupt propagates (nothing charged, nothing computed
    leaves the process). The contribution-bounding generator is drawn just before the exact
    half, as it always was: it is sampling randomness, not output noise, and never released."""
    plan, backend = _prepared(session, query, backend)
    session.require(plan.cost)
    gen = session.rng.sampling_generator(needed=plan.compute.draws_at_random)
    try:
        exact = backend.exact(plan.compute, gen)
    except InputError:
        raise
    except OSError as exc:  # its message may quote a path or a value: name its type only
        raise InputError(f"cannot read the input or write a temporary file "
                         f"({type(exc).__name__}); nothing was charged") from None
    except Exception as exc:  # a defect: charged and recorded failed, as after a charge
        return Computed(query, plan, defect=exc)
    return Computed(query, plan, exact)


def charge_all(session: Session, computed: Sequence[Computed]) -> list[int]:
    """Step 5 for several queries at once: one ledger transaction charges all of them (each
    entry ``charged``) or none (``BudgetExceededError``)."""
    return session.charge_many([(c.plan.cost, c.charge_meta()) for c in computed])


def add_noise(session: Session, computed: Computed, entry: int
              ) -> tuple[CoreRelease, dict[str, Any]]:
    """Step 6a, after the charge ``entry`` committed: the noisy release (its provenance
    names the ledger entry) and the ledger details to record with it. A defect of the exact
    half, or any failure here, records the entry failed (its charge stands) and is raised."""
    from .._version import __version__

    try:
        if computed.defect is not None:
            raise computed.defect
        release = apply_plan(computed.plan, computed.exact, session.rng)
        # what the values and intervals are about, in words (public: declared bounds only)
        release.provenance["covers"] = coverage_text(release.provenance,
                                                     grouped=bool(computed.query.by))
    except BaseException:
        session.record(entry, status="failed", details={})
        raise
    first = release.measures[0].description
    digest = values_digest([m.values for m in release.measures])
    details = {
        "noise_scale": first.get("noise_scale"),
        "ci_half_width": first.get("ci_half_width"),
        "ci_half_width_times_rows": first.get("ci_half_width_times_rows"),
        "granularity": first.get("granularity"),
        "plan": dict(release.provenance),
        "values_digest": digest,
    }
    query = computed.query
    release.provenance.update(
        values_digest=digest, ledger_entry=entry, ledger_head=session.ledger_head(entry),
        session=session.name,
        seeded=session.seed is not None, library_version=__version__, query=query.description,
    )
    return release, details


def publish(session: Session, entry: int, release: CoreRelease,
            details: Mapping[str, Any]) -> None:
    """Step 6b: record the release in the ledger (``released``)."""
    session.record(entry, status="released", details=details)


def warn_hints(release: CoreRelease) -> None:
    """The release's hints (read from its noisy values and released keys: post-processing,
    core/hints.py) as :class:`~dpframe.errors.NearZeroWarning` or, for an empty private-key
    release, :class:`~dpframe.errors.NoKeysReleasedWarning`, pointed at the caller's line."""
    for hint in cast(list[str], release.provenance.get("warnings", [])):
        kind = NoKeysReleasedWarning if hint.startswith(NO_KEYS) else NearZeroWarning
        warnings.warn(f"dpframe: {hint}", kind, stacklevel=_caller_level())


def warn_advice(plan: ReleasePlan) -> None:
    """The plan's advice (public parameters only, core/plan.py), before any charge, as
    :class:`~dpframe.errors.KeySelectionWarning`."""
    for text in plan.advice:
        warnings.warn(f"dpframe: {text}", KeySelectionWarning, stacklevel=_caller_level())


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _caller_level() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside dpframe (the
    user's line, whatever front led here)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    return level


def run_release(session: Session, query: Query, backend: Backend) -> CoreRelease:
    """Validate, check the budget, compute the exact half, charge, add noise, record."""
    computed = compute_exact(session, query, backend)
    entry = session.charge(computed.plan.cost, **computed.charge_meta())
    release, details = add_noise(session, computed, entry)
    publish(session, entry, release, details)
    warn_hints(release)
    return release
