"""The :class:`Releaser` every front holds (``PrivateFrame``, ``PrivateGroupBy``): a frame's
declarations, the building of a :class:`~dpframe.core.query.Query` from a method's measures
and options, accuracy-first epsilon, and the run through the session's release path (or its
preview under ``query`` / ``explain``). It knows no front class, so no front imports a class
that depends on it. No sensitivity, noise or budget logic lives here: the engine and the core
hold every rule, on the path all fronts share.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Unpack

import numpy as np

from ..backends.base import Backend
from ..core.accuracy import validate_accuracy
from ..core.aggregates import aggregate, histogram_edges
from ..core.apply import CoreRelease
from ..core.names import close_names
from ..core.numbers import to_fraction
from ..core.query import DeclaredContribution, Measure, Query, normalise_keys
from ..core.validate import check_query
from ..errors import KeysError, UnknownColumnError, ValidationError
from .arguments import (
    Combos,
    check_declared_columns,
    check_unit,
    combinations_for,
    declarations,
    key_frame,
    rollup_shares,
)
from .docs import DEFAULTS, ReleaseOptions
from .results import ContributionBounds, diagnostics_as_numbers

if TYPE_CHECKING:
    from ..engine.session import Session

class Previewed(Exception):
    """How a release under ``query`` / ``explain`` ends: its Query or plan (``result``), raised
    from :meth:`Releaser.run` to the verb, past the method's wrapping of a release."""

    def __init__(self, result: object) -> None:
        super().__init__("preview")
        self.result = result


@dataclass(frozen=True)
class Releaser:
    """A frame's public declarations and the way from a front method's call to a release.

    Frozen: ``sample``, ``bounds()`` and previews make new releasers (``dataclasses.replace``),
    so a front shared by several group-bys and selections never changes under them."""

    backend: Backend
    given_session: Session | None
    bounds: Mapping[str, tuple[float, float]]
    keys: Mapping[str, tuple[object, ...] | str]
    combos: Combos | None
    unit: str | None
    contribution: DeclaredContribution
    sample_rate: Fraction | None = None
    mode: str | None = None  # "query" / "explain": releases stop at their preview

    @classmethod
    def declare(cls, backend: Backend, session: Session | None, *,
                bounds: Mapping[str, tuple[float, float]] | None, keys: object, schema: Any,
                privacy_unit: str | None, contribution: tuple[object, object, object],
                strict: bool) -> Releaser:
        """The releaser of ``df.dp(...)``'s declarations, each checked against the public
        schema (a typed error, nothing spent, for any that does not hold)."""
        from ..engine.session import Session

        if session is not None and not isinstance(session, Session):
            raise ValidationError("the first argument must be a dpframe Session")
        if strict is not True and strict is not False:
            raise ValidationError("strict must be True or False")
        declared_keys, combos = key_frame(keys)  # a DataFrame of declared combinations
        if strict:
            check_declared_columns(backend.schema(), bounds, declared_keys)
        b, k = declarations(bounds, declared_keys, schema)
        check_unit(backend.schema(), privacy_unit, *contribution)
        return cls(backend, session, b, normalise_keys(k),  # a string is not a key list
                   combos, privacy_unit, DeclaredContribution(
                       *(None if v is None else int(v) for v in contribution)))  # type: ignore[call-overload]

    @property
    def session(self) -> Session:
        if self.given_session is not None:
            return self.given_session
        from ..engine.session import active_session

        return active_session()

    def sampled(self, rate: float) -> Releaser:
        """Releases on a Poisson sample of the units at ``rate`` (times an earlier rate),
        rounded up to a multiple of 2**-53."""
        q = to_fraction(rate, "rate", positive=True)
        if q > 1:
            raise ValidationError("rate must be in (0, 1]")
        if self.sample_rate is not None:
            q *= self.sample_rate
        return dataclasses.replace(self, sample_rate=Fraction(math.ceil(q * (1 << 53)),
                                                              1 << 53))

    def declared(self) -> dict[str, Any]:
        """The declarations (public): bounds, keys, unit, T/k/R, rate, column kinds."""
        return {
            "bounds": dict(self.bounds),
            "keys": {k: list(v) if isinstance(v, tuple) else v for k, v in self.keys.items()},
            "privacy_unit": self.unit,
            "max_rows_per_unit": self.contribution.rows_per_unit,
            "max_groups_per_unit": self.contribution.groups_per_unit,
            "max_rows_per_group": self.contribution.rows_per_group,
            "sample_rate": None if self.sample_rate is None else float(self.sample_rate),
            "columns": dict(self.backend.schema()),
        }

    def query(self, measures: list[Measure], description: str = "", *,
              by: tuple[str, ...] = (), private: bool = False, rollup: object = False,
              level_shares: object = None, margins_name: object = "All",
              **options: Unpack[ReleaseOptions]) -> Query:
        """The Query of a front method's call: its options parsed (numbers to exact
        fractions, aliases to names), every refusal left to the core. ``rollup``,
        ``level_shares`` and ``margins_name`` are those of a grouped count or sum."""
        o: dict[str, Any] = {**DEFAULTS, **options}
        shares = rollup_shares(rollup, level_shares, len(by), o["accuracy"])
        epsilon = o["epsilon"]
        if o["accuracy"] is not None or epsilon is None:
            epsilon = self.epsilon_for(measures, description, by=by, private=private,
                                       **options)
        # parsing only: numbers to exact fractions, the 'geometric' alias to its name; every
        # refusal is the core's (core/validate.py), on the path all fronts share
        eps = to_fraction(epsilon, "epsilon", positive=True)
        dlt = to_fraction(o["delta"], "delta")
        mech = "laplace" if o["mechanism"] == "geometric" else o["mechanism"]
        keys = self.resolved_keys(by if not private else ())
        given = o["selection_share"]
        share = Fraction(1, 2) if given is None else to_fraction(
            given, "selection_share", positive=True)
        diag = (None if o["diagnostics"] is None
                else to_fraction(o["diagnostics"], "diagnostics", positive=True))
        return Query(tuple(measures), eps, dlt, bounds=self.bounds, by=by, keys=keys,
                     private_keys=private, privacy_unit=self.unit,
                     max_rows_per_unit=self.contribution.rows_per_unit,
                     max_groups_per_unit=self.contribution.groups_per_unit,
                     max_rows_per_group=self.contribution.rows_per_group,
                     mechanism=mech,  # type: ignore[arg-type]
                     ci=o["ci"], selection_share=share,
                     sample_rate=self.sample_rate, description=description, diagnostics=diag,
                     combos=combinations_for(by, self.combos, keys) if not private else None,
                     rollup=shares, margins_name=margins_name,  # type: ignore[arg-type]
                     postprocess=o["postprocess"], selection_share_given=given is not None)

    def epsilon_for(self, measures: list[Measure], description: str, *,
                    by: tuple[str, ...], private: bool,
                    **options: Unpack[ReleaseOptions]) -> Fraction:
        """``accuracy=`` instead of ``epsilon=``: the smallest epsilon (3 significant digits,
        rounded up) whose ``ci`` half-width (level 0.95 by default) is at most ``accuracy`` in
        the result's units (core/accuracy.py). Depends on the arguments and the public schema
        only, never on the data."""
        from ..engine.release import epsilon_for

        accuracy, min_rows = options.get("accuracy"), options.get("min_rows")
        validate_accuracy(options.get("epsilon"), accuracy, len(measures), min_rows)  # only a
        # front knows whether epsilon= was given; the engine runs the rest of the rules again
        base_options: ReleaseOptions = {**options, "epsilon": 1.0, "accuracy": None}
        base = self.query(measures, description, by=by, private=private, **base_options)
        return epsilon_for(self.session, base, self.backend, accuracy, min_rows)

    def resolved_keys(self, by: tuple[str, ...]) -> dict[str, tuple[object, ...]]:
        """Declared key lists, with ``"categories"`` resolved from the dtype of a Categorical
        (its declared categories: public by the analyst's explicit say-so,
        docs/privacy.md#group-keys)."""
        keys: dict[str, tuple[object, ...]] = {}
        for col, declared in self.keys.items():
            if not isinstance(declared, str):
                keys[col] = declared
            elif col in by:
                cats = self.backend.categories(col) if col in self.backend.schema() else None
                if cats is None:
                    raise KeysError(f"keys={{{col!r}: 'categories'}} needs a Categorical column "
                                    "with declared categories; declare the key list instead")
                keys[col] = normalise_keys({col: list(cats)})[col]  # type: ignore[assignment]
        return keys

    def run(self, query: Query) -> CoreRelease:
        """Send ``query`` through the session's release path; in a preview, raise
        :class:`Previewed` with the checked Query (``"query"``: nothing planned or charged)
        or the plan (``"explain"``: nothing computed or charged) instead."""
        from ..engine.release import explain, named_closely, run_release

        if self.mode == "query":  # checked as a release checks it (core/validate.py)
            try:
                checked = check_query(query, self.backend.schema(query.columns))
            except UnknownColumnError as exc:  # close names among all columns (public)
                raise named_closely(exc, self.backend) from None
            raise Previewed(checked)
        if self.mode == "explain":
            raise Previewed(explain(self.session, query, self.backend))
        release = run_release(self.session, query, self.backend)
        diagnostics_as_numbers(release.provenance)
        return release

    def previewed(self, mode: str, call: Callable[[Releaser], object]) -> Any:
        """``call`` on this releaser in ``mode`` (``"query"`` / ``"explain"``): the result of
        the release it makes, with the session left as it was."""
        try:
            call(dataclasses.replace(self, mode=mode))
        except Previewed as done:
            return done.result
        raise AssertionError("a front method returned without a release")  # pragma: no cover

    def histogram_measure(self, column: str, bins: Sequence[float] | int, right: bool,
                          include_lowest: bool | None) -> Measure:
        """The histogram measure of ``bins`` (edges, or a number of equal bins over the
        column's declared bounds, the lowest included unless ``include_lowest=False``)."""
        if isinstance(bins, int | np.integer) and not isinstance(bins, bool):
            edges = histogram_edges(int(bins), self.bounds.get(column), column)
            include_lowest = True if include_lowest is None else include_lowest
        else:
            try:
                edges = tuple(float(b) for b in bins)  # type: ignore[union-attr]
            except (TypeError, ValueError):
                raise ValidationError("bins must be a list of numbers or a number of bins"
                                      ) from None
        include_lowest = False if include_lowest is None else include_lowest
        return aggregate("histogram").measure(column, edges=edges, right=right,
                                              include_lowest=include_lowest)

    def choose_contribution_bounds(self, epsilon: float, by: str | Sequence[str] | None,
                                   cap: int, release_epsilon: float, release: str
                                   ) -> ContributionBounds:
        """The DP choice of T, k and R (``PrivateFrame.choose_contribution_bounds``)."""
        from ..core.choose_bounds import BoundsRequest
        from ..engine.bounds import run_bounds_choice

        eps = to_fraction(epsilon, "epsilon", positive=True)
        rel = to_fraction(release_epsilon, "release_epsilon", positive=True)
        if self.unit is None:
            raise ValidationError("choose_contribution_bounds needs a privacy_unit: declare it "
                                  "in df.dp(..., privacy_unit=...)")
        cols = () if by is None else (by,) if isinstance(by, str) else tuple(by)
        if not all(isinstance(c, str) for c in cols):
            raise ValidationError("groupby columns are named by strings")
        schema = self.backend.schema()
        for col in cols:
            if col not in schema:
                raise UnknownColumnError(f"unknown column {col!r}{close_names(col, schema)}",
                                         col)
        keys = self.resolved_keys(cols)
        request = BoundsRequest(eps, self.unit, cols, {c: keys[c] for c in cols if c in keys},
                                cap, rel, self.session.neighbouring, release)
        chosen = run_bounds_choice(self.session, request, self.backend)
        return ContributionBounds(chosen.bounds, chosen.provenance)
