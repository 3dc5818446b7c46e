"""What a :class:`~dpframe.fronts.frame.PrivateFrame` is besides its aggregates: its
declarations, the plumbing that builds a Query and sends it through the session's release
path (no sensitivity, noise or budget logic), and the pandas-shaped ways to other fronts
(``groupby``, column selections, ``pipe``, ``sample``, ``query``).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar, Self, Unpack, cast

from ..backends.base import Backend
from ..core.accuracy import validate_accuracy
from ..core.aggregates import NAMES
from ..core.apply import CoreRelease
from ..core.names import close_names
from ..core.numbers import to_fraction
from ..core.query import (
    Measure,
    Query,
    normalise_keys,
)
from ..core.validate import check_query
from ..errors import KeysError, OptionError, UnknownColumnError, ValidationError
from .arguments import (
    check_declared_columns,
    check_unit,
    column_attribute,
    combinations_for,
    declarations,
    identifiers,
    key_frame,
    options_checked,
    pipe_to,
    rollup_shares,
)
from .docs import DEFAULTS, ReleaseOptions
from .groupby import PrivateGroupBy
from .results import ContributionBounds, diagnostics_as_numbers
from .selection import PrivateSelection

if TYPE_CHECKING:
    from ..engine.session import Session
    from .frame import PrivateFrame


class Previewed(Exception):
    """How a release under ``query`` / ``explain`` ends: its Query or plan (``result``), raised
    from :meth:`FrameBase._run` to the verb, past the method's wrapping of a release."""

    def __init__(self, result: object) -> None:
        super().__init__("preview")
        self.result = result


@options_checked
class FrameBase:
    """The declarations and release plumbing of a private frame; the aggregates are
    :class:`~dpframe.fronts.frame.PrivateFrame`'s."""

    _grouped: ClassVar[bool] = False  # selections tell group-bys from frames by it

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass's methods (PrivateFrame's aggregates) refuse misspelled options with
        an OptionError too (:func:`~dpframe.fronts.arguments.options_checked`)."""
        super().__init_subclass__(**kwargs)
        options_checked(cls)

    def __init__(
        self,
        backend: Backend,
        session: Session | None = None,
        *,
        bounds: Mapping[str, tuple[float, float]] | None = None,
        keys: Mapping[str, Sequence[object] | str] | None = None,
        schema: Any = None,
        privacy_unit: str | None = None,
        max_rows_per_unit: int | None = None,
        max_groups_per_unit: int | None = None,
        max_rows_per_group: int | None = None,
        strict: bool = True,
    ) -> None:
        from ..engine.session import Session

        if session is not None and not isinstance(session, Session):
            raise ValidationError("the first argument must be a dpframe Session")
        self._backend = backend
        self._session = session
        if strict is not True and strict is not False:
            raise ValidationError("strict must be True or False")
        declared_keys, self._combos = key_frame(keys)  # a DataFrame of declared combinations
        if strict:
            check_declared_columns(backend.schema(), bounds, declared_keys)
        b, k = declarations(bounds, declared_keys, schema)
        self._bounds = b
        self._keys = normalise_keys(k)  # checks the key lists (a string is not a key list)
        check_unit(backend.schema(), privacy_unit, max_rows_per_unit, max_groups_per_unit,
                   max_rows_per_group)
        self._unit = privacy_unit
        # T, k, R as declared (None: not declared; sensitivity.contribution normalizes them)
        self._bounds_tkr = tuple(None if b is None else int(b) for b in (
            max_rows_per_unit, max_groups_per_unit, max_rows_per_group))
        self._sample_rate: Fraction | None = None
        self._mode: str | None = None  # "query" / "explain": releases stop at their preview

    def sample(self, rate: float) -> Self:
        """Queries on a Poisson sample of the privacy units at ``rate``, charged the amplified
        cost ln(1 + q (e^eps - 1)) for the epsilon given to each aggregate (add_remove only).
        The rate is rounded up to a multiple of 2**-53 (the rate actually used and charged). A
        sample of a sample is one sample at the product of the rates (``sample(0.5)
        .sample(0.5)`` samples at 0.25), as two independent Poisson samplings are."""
        q = to_fraction(rate, "rate", positive=True)
        if q > 1:
            raise ValidationError("rate must be in (0, 1]")
        if self._sample_rate is not None:
            q *= self._sample_rate
        out = copy.copy(self)
        out._sample_rate = Fraction(math.ceil(q * (1 << 53)), 1 << 53)
        return out

    def declared(self) -> dict[str, Any]:
        """What this frame declares (public): bounds, keys, privacy unit and contribution
        bounds, sampling rate, and the columns with their public kinds."""
        return {
            "bounds": dict(self._bounds),
            "keys": {k: list(v) if isinstance(v, tuple) else v for k, v in self._keys.items()},
            "privacy_unit": self._unit,
            "max_rows_per_unit": self._bounds_tkr[0],
            "max_groups_per_unit": self._bounds_tkr[1],
            "max_rows_per_group": self._bounds_tkr[2],
            "sample_rate": None if self._sample_rate is None else float(self._sample_rate),
            "columns": dict(self._backend.schema()),
        }

    def __repr__(self) -> str:
        d = self.declared()
        unit = "rows" if d["privacy_unit"] is None else (
            f"{d['privacy_unit']!r} (max_rows_per_unit={d['max_rows_per_unit']}, "
            f"max_groups_per_unit={d['max_groups_per_unit']}, "
            f"max_rows_per_group={d['max_rows_per_group']})")
        return (f"PrivateFrame(columns={list(d['columns'])}, bounds={d['bounds']}, "
                f"keys={sorted(d['keys'])}, privacy_unit={unit})")

    def _repr_html_(self) -> str:
        """Notebook display: declared bounds and keys, the privacy unit, the columns."""
        from ..display.html import frame_html

        return frame_html(self.declared())

    @property
    def session(self) -> Session:
        if self._session is not None:
            return self._session
        from ..engine.session import active_session

        return active_session()

    def _query(self, measures: list[Measure], description: str = "", *,
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
            epsilon = self._epsilon_for(measures, description, by=by, private=private,
                                        **options)
        # parsing only: numbers to exact fractions, the 'geometric' alias to its name; every
        # refusal is the core's (core/validate.py), on the path all fronts share
        eps = to_fraction(epsilon, "epsilon", positive=True)
        dlt = to_fraction(o["delta"], "delta")
        mech = "laplace" if o["mechanism"] == "geometric" else o["mechanism"]
        keys = self._resolved_keys(by if not private else ())
        given = o["selection_share"]
        share = Fraction(1, 2) if given is None else to_fraction(
            given, "selection_share", positive=True)
        diag = (None if o["diagnostics"] is None
                else to_fraction(o["diagnostics"], "diagnostics", positive=True))
        return Query(tuple(measures), eps, dlt, bounds=self._bounds, by=by, keys=keys,
                     private_keys=private, privacy_unit=self._unit,
                     max_rows_per_unit=self._bounds_tkr[0],
                     max_groups_per_unit=self._bounds_tkr[1],
                     max_rows_per_group=self._bounds_tkr[2],
                     mechanism=mech,  # type: ignore[arg-type]
                     ci=o["ci"], selection_share=share,
                     sample_rate=self._sample_rate, description=description, diagnostics=diag,
                     combos=combinations_for(by, self._combos, keys) if not private else None,
                     rollup=shares, margins_name=margins_name,  # type: ignore[arg-type]
                     postprocess=o["postprocess"], selection_share_given=given is not None)

    def _epsilon_for(self, measures: list[Measure], description: str, *,
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
        base = self._query(measures, description, by=by, private=private, **base_options)
        return epsilon_for(self.session, base, self._backend, accuracy, min_rows)

    def _resolved_keys(self, by: tuple[str, ...]) -> dict[str, tuple[object, ...]]:
        """Declared key lists, with ``"categories"`` resolved from the dtype of a Categorical
        (its declared categories: public by the analyst's explicit say-so,
        docs/privacy.md#group-keys)."""
        keys: dict[str, tuple[object, ...]] = {}
        for col, declared in self._keys.items():
            if not isinstance(declared, str):
                keys[col] = declared
            elif col in by:
                cats = self._backend.categories(col) if col in self._backend.schema() else None
                if cats is None:
                    raise KeysError(f"keys={{{col!r}: 'categories'}} needs a Categorical column "
                                    "with declared categories; declare the key list instead")
                keys[col] = normalise_keys({col: list(cats)})[col]  # type: ignore[assignment]
        return keys

    def query(self, aggregate: str, *args: Any, by: str | Sequence[str] | None = None,
              keys: str | None = None, **kwargs: Any) -> Query:
        """The Query that ``self[.groupby(by, keys=keys)].<aggregate>(*args, **kwargs)`` would
        release, after the same checks (the same typed errors: core/validate.py), with
        nothing planned, charged or run: for pipelines that price, store or run queries later
        (``dpframe.engine.release.prepare`` / ``run_release``).

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> priv = pd.DataFrame({"g": ["a", "b"], "x": [1.0, 3.0]}).dp(
            ...     dpf.Session(1, seed=1), bounds={"x": (0, 5)}, keys={"g": ["a", "b"]})
            >>> q = priv.query("sum", "x", by="g", epsilon=0.5)
            >>> q.by, float(q.epsilon), [m.op for m in q.measures]
            (('g',), 0.5, ['sum'])
        """
        out: Query = self._verb("query", aggregate, args, by, keys, kwargs)
        return out

    def explain(self, aggregate: str, *args: Any, by: str | Sequence[str] | None = None,
                keys: str | None = None, **kwargs: Any) -> dict[str, Any]:
        """The plan of ``self[.groupby(by, keys=keys)].<aggregate>(*args, **kwargs)``, with
        nothing computed or charged: its mechanisms, noise scales, intervals, cost (the
        epsilon ``accuracy=`` chooses) and whether it fits the remaining budget, as a dict.
        Takes what :meth:`query` takes; the same typed errors as the release itself. It
        reads only the public schema and declarations, never the data.

        Example:
            >>> import dpframe as dpf, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> priv = pd.DataFrame({"x": range(100)}).dp(dpf.Session(10, seed=1))
            >>> plan = priv.explain("count", accuracy=10)
            >>> (measure,) = plan["measures"]
            >>> plan["epsilon"], measure["ci_half_width"] <= 10
            (0.285, True)
        """
        out: dict[str, Any] = self._verb("explain", aggregate, args, by, keys, kwargs)
        return out

    def _verb(self, mode: str, aggregate: str, args: tuple[Any, ...],
              by: str | Sequence[str] | None, keys: str | None, kwargs: dict[str, Any]) -> Any:
        """What ``self[.groupby(by, keys=keys)].<aggregate>(*args, **kwargs)`` gives in
        ``mode`` (``"query"``: its checked Query; ``"explain"``: its plan)."""
        if aggregate not in (*NAMES, "agg", "bounds", "describe"):
            raise ValidationError(f"unknown aggregate {aggregate!r}"
                                  f"{close_names(aggregate, [*NAMES, 'agg', 'bounds'])}")
        if "dry_run" in kwargs:
            raise OptionError(f"{mode}() takes no dry_run: it is the preview itself")

        def call(frame: FrameBase) -> object:
            target: Any = frame if by is None else frame.groupby(by, keys=keys)
            return getattr(target, aggregate)(*args, **kwargs)

        return self._preview(mode, call)

    def _preview(self, mode: str, call: Callable[[Any], object]) -> Any:
        """``call`` on a copy of this frame whose releases stop before anything is planned or
        charged (``"query"``: the checked Query is the result) or charged (``"explain"``:
        the plan is): both leave the session as it was."""
        frame = copy.copy(self)
        frame._mode = mode
        try:
            call(frame)
        except Previewed as done:
            return done.result
        raise AssertionError("a front method returned without a release")  # pragma: no cover

    def _run(self, query: Query) -> CoreRelease:
        """Send ``query`` through the session's release path; under :meth:`query` or
        :meth:`explain`, raise :class:`Previewed` with their result instead."""
        from ..engine.release import explain, named_closely, run_release

        if self._mode == "query":  # the Query is the result, checked as a release checks it
            # (core/validate.py), nothing planned or charged
            try:
                checked = check_query(query, self._backend.schema(query.columns))
            except UnknownColumnError as exc:  # close names among all columns (public)
                raise named_closely(exc, self._backend) from None
            raise Previewed(checked)
        if self._mode == "explain":
            raise Previewed(explain(self.session, query, self._backend))
        release = run_release(self.session, query, self._backend)
        diagnostics_as_numbers(release.provenance)
        return release

    def contribution_bounds(self, *, epsilon: float, by: str | Sequence[str] | None = None,
                            cap: int = 1000, release_epsilon: float = 1.0,
                            release: str = "sum") -> ContributionBounds:
        """A DP choice of the contribution bounds T, k and R (``max_rows_per_unit``,
        ``max_groups_per_unit``, ``max_rows_per_group``) for a release grouped by ``by``
        (ungrouped: T only); ``priv.groupby(by).contribution_bounds(...)`` is the same.

        Spends ``epsilon`` once (delta 0), like any release: noisy histograms of each unit's
        rows, groups and largest group over the candidates 1, 2, 3, 5, 7, 10, 15, ... up to ``cap``
        (sensitivity 1 each: one unit is in one bin), then the bounds that minimise the
        estimated per-group RMSE of the release they are for, at ``release_epsilon`` over the
        declared keys' groups: noise against the bias of the rows the bounds drop
        (:mod:`dpframe.core.choose_bounds` has the proof and each release's error model).
        Needs ``privacy_unit``; the frame may declare no bound yet.

        :param release: the release the bounds are tuned for: ``"count"``, ``"sum"`` (the
            default), ``"mean"`` or ``"quantile"`` (also median, max, min). A count or a sum
            pays for every dropped row, so it keeps more rows; a mean or a quantile is hurt
            less by dropped rows than by noise, so it bounds tighter.
        :returns: a dict of all three bounds, ``max_rows_per_unit``, ``max_groups_per_unit``
            and ``max_rows_per_group``, always: an int for each bound that binds, None for
            one that does not (not declared: the release derives it and it drops nothing
            more), to pass as ``df.dp(..., **bounds)``.

        Example:
            >>> import dpframe as dpf, numpy as np, pandas as pd, warnings
            >>> warnings.simplefilter("ignore")  # seeded: insecure, docs only
            >>> rng = np.random.default_rng(0)
            >>> uid = np.repeat(np.arange(2000), rng.integers(1, 11, 2000))
            >>> df = pd.DataFrame({"uid": uid, "g": rng.integers(0, 20, uid.size)})
            >>> s = dpf.Session(1.0, seed=1)
            >>> priv = df.dp(s, privacy_unit="uid", keys={"g": list(range(20))})
            >>> bounds = priv.groupby("g").contribution_bounds(epsilon=0.1, release_epsilon=0.9)
            >>> bounds
            {'max_rows_per_unit': 10, 'max_groups_per_unit': None, 'max_rows_per_group': None}
            >>> counts = df.dp(s, privacy_unit="uid", keys={"g": list(range(20))},
            ...                **bounds).groupby("g").count(epsilon=0.9)
        """
        from ..core.choose_bounds import BoundsRequest
        from ..engine.bounds import run_bounds_choice

        eps = to_fraction(epsilon, "epsilon", positive=True)
        rel = to_fraction(release_epsilon, "release_epsilon", positive=True)
        if self._unit is None:
            raise ValidationError("contribution_bounds needs a privacy_unit: declare it in "
                                  "df.dp(..., privacy_unit=...)")
        cols = () if by is None else (by,) if isinstance(by, str) else tuple(by)
        if not all(isinstance(c, str) for c in cols):
            raise ValidationError("groupby columns are named by strings")
        schema = self._backend.schema()
        for col in cols:
            if col not in schema:
                raise UnknownColumnError(f"unknown column {col!r}{close_names(col, schema)}",
                                         col)
        keys = self._resolved_keys(cols)
        request = BoundsRequest(eps, self._unit, cols, {c: keys[c] for c in cols if c in keys},
                                cap, rel, self.session.neighbouring, release)
        chosen = run_bounds_choice(self.session, request, self._backend)
        return ContributionBounds(chosen.bounds, chosen.provenance)

    def _front(self) -> PrivateFrame:
        """This frame as the PrivateFrame it is (FrameBase is only ever PrivateFrame's base)."""
        return cast("PrivateFrame", self)

    def __getitem__(self, column: str) -> PrivateSelection:
        """Column selection, as in pandas: ``priv["income"].mean(epsilon=0.2)``."""
        if not isinstance(column, str):
            if not isinstance(column, list | tuple) or not all(
                    isinstance(c, str) for c in column):
                raise ValidationError(
                    "a private frame cannot filter its rows: filter the pandas frame before "
                    ".dp, e.g. df[df['origin'] == 'JFK'].dp(session, ...) (a filter on "
                    "public criteria; priv['income'] selects one column by its name)")
            raise ValidationError("select one column by its name: priv['income'] (a list of "
                                  "columns is for group-bys: priv.groupby(...)[['a', 'b']])")
        return PrivateSelection(self._front(), column)

    def __getattr__(self, name: str) -> PrivateSelection:
        """Attribute access to a column, as in pandas: ``priv.income.mean(epsilon=0.2)``."""
        return PrivateSelection(self._front(), column_attribute(self, name))

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *identifiers(self._backend.schema())]

    def pipe(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """``func(self, *args, **kwargs)``, as ``DataFrame.pipe``: chains of reusable steps."""
        return pipe_to(self, func, args, kwargs)

    def groupby(self, by: str | Sequence[str], keys: str | None = None, *,
                sort: bool = False) -> PrivateGroupBy:
        """Group by public keys (declared, pandera isin, or Categorical) or ``keys="private"``.

        Results come in declared-key order (public keys) or the core's total order (private
        keys); ``sort=True`` sorts them by label as ``df.groupby(sort=True)`` does, so they line
        up with pandas' own group-bys (post-processing of released labels)."""
        try:
            cols = (by,) if isinstance(by, str) else tuple(by)
        except TypeError:
            raise ValidationError("groupby columns are named by strings") from None
        if not cols:
            raise ValidationError("groupby needs at least one column")
        if not all(isinstance(c, str) for c in cols):
            raise ValidationError("groupby columns are named by strings")
        if keys not in (None, "public", "private"):
            raise ValidationError("keys must be 'private' (DP key selection) or omitted")
        if not isinstance(sort, bool):
            raise ValidationError("sort must be True or False")
        return PrivateGroupBy(self._front(), cols, keys == "private", sort)
