"""One measure's plan and release, and the base class every aggregate implements.

An :class:`Aggregate` (one module per aggregate in :mod:`dpframe.core.aggregates`) owns
everything that differs between aggregates: the checks of its arguments against public
information, its plan (sensitivity, mechanism, exact requests, budget split), its release
(adding the planned noise to the exact aggregates, then post-processing) and its public
description. Everything here is a function of public information except
:meth:`Aggregate.release`, which :func:`dpframe.core.apply.apply_plan` calls: the only place
noise meets data. This module does not know pandas, nor any aggregate: a plan holds the
aggregate's mechanisms by name and its params of the aggregate's own type
(:class:`MeasurePlan`), a release the layout its aggregate gives it (:class:`BinLayout`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from ..errors import ValidationError
from .exact.compute import AggregateRequest, ExactAggregates
from .knorm import JointRelease, JointRole
from .noise.mechanisms import ExponentialSpec, NoiseSpec, noise_spec
from .noise.rng import RandomSource
from .query import NO_PARAMS, Measure, NoParams
from .sensitivity import Contribution, Relation, Sensitivity, count_sensitivity, sum_sensitivity

if TYPE_CHECKING:
    from .query import Query


#: One named mechanism of a measure: additive noise, the exponential mechanism, or its part
#: of a joint K-norm release shared with other measures (:mod:`dpframe.core.knorm`).
Mechanism = NoiseSpec | ExponentialSpec | JointRole

#: An aggregate's own public parameters (:attr:`MeasurePlan.params`).
P = TypeVar("P")


@dataclass(frozen=True)
class MeasurePlan(Generic[P]):
    """How one measure is released (public: shown by dry runs, recorded in the ledger).

    ``mechanisms`` are its mechanisms by name, in the order the release draws them (additive
    noise: ``"count"``, ``"sum"``, ``"squares"``; the exponential mechanism: ``"choice"``,
    and a quantile interval's ``"ci_lower"`` / ``"ci_upper"``). ``params`` are the aggregate's
    own public parameters (a mean's clamping bounds, a histogram's bins, a quantile's cells),
    of a type its module defines and only it reads. Generic code (budgets, the Gaussian
    block, hints) sees the mechanisms by kind, never by an aggregate's field."""

    measure: Measure
    epsilon: Fraction
    delta: Fraction
    requests: list[AggregateRequest]
    mechanisms: Mapping[str, Mechanism]
    params: P
    #: The released form of a count vector (histograms, grouped counts): ``"nonnegative"``
    #: (projected, :mod:`dpframe.core.projection`) or ``"raw"`` (``postprocess=None``); None
    #: where no projection applies (every other measure, an ungrouped count).
    form: str | None = None

    def additive(self, name: str) -> NoiseSpec:
        """The additive noise ``name``."""
        spec = self.mechanisms[name]
        assert isinstance(spec, NoiseSpec), name
        return spec

    def exponential(self, name: str = "choice") -> ExponentialSpec:
        """The exponential mechanism ``name``."""
        spec = self.mechanisms[name]
        assert isinstance(spec, ExponentialSpec), name
        return spec

    def joint(self) -> JointRole | None:
        """The measure's part of a joint K-norm release (``"joint"``), or None."""
        role = self.mechanisms.get("joint")
        return role if isinstance(role, JointRole) else None

    def noises(self) -> list[NoiseSpec]:
        """Every additive noise, in the order drawn."""
        return [s for s in self.mechanisms.values() if isinstance(s, NoiseSpec)]


@dataclass(frozen=True)
class BinLayout:
    """Values laid out in bins along a second axis (a histogram fills it): the edges and which
    side of each bin is closed, as ``pd.cut`` takes them. Public: declared."""

    edges: tuple[float, ...]
    right: bool = True
    include_lowest: bool = False


@dataclass
class MeasureRelease:
    """Noisy values of one measure, per group (and per bin when ``layout`` says so), with
    interval bounds where they exist."""

    name: str
    column: str | None
    values: np.ndarray
    lower: np.ndarray | None
    upper: np.ndarray | None
    description: dict[str, object]
    layout: BinLayout | None = None


def mechanism_name(spec: Mechanism) -> str:
    """The public name of a mechanism part, as descriptions and the ledger show it."""
    if isinstance(spec, JointRole):
        return "k-norm (box, joint)"
    if isinstance(spec, ExponentialSpec):
        if hasattr(spec, "levels"):
            return "joint exponential (JointExp)"
        return "exponential (permute-and-flip)"
    if spec.kind == "laplace":
        return "geometric" if spec.integer else "granular laplace"
    return "discrete gaussian"


@dataclass(frozen=True)
class PlanContext:
    """The public facts every aggregate plans from: the query, the neighbouring relation, the
    contribution bound of a privacy unit and the columns' kinds."""

    query: Query
    relation: Relation
    contribution: Contribution
    column_kinds: Mapping[str, str]

    @property
    def grouped(self) -> bool:
        return bool(self.query.by)

    @property
    def count_form(self) -> str | None:
        """The form of a count vector this query asks for (:attr:`MeasurePlan.form`):
        ``"nonnegative"`` by default, ``"raw"`` with ``postprocess=None``; None for a rollup
        (its levels are the consistent least-squares estimate, never projected)."""
        if self.query.rollup is not None:
            return None
        return "raw" if self.query.postprocess is None else self.query.postprocess

    def count_sensitivity(self) -> Sensitivity:
        """Of a count per group (also per bin of a distinct count): one unit moves it by at most
        its rows in each group it touches."""
        return count_sensitivity(self.relation, self.contribution, self.grouped)

    def sum_sensitivity(self, req: AggregateRequest) -> Sensitivity:
        """Of a fixed-point sum: every row's integer lies in ``[ilo, ihi]`` by construction, so
        the bound is over ``[ilo * unit, ihi * unit]``, not over the declared bounds."""
        return sum_sensitivity(self.relation, req.ilo * req.unit, req.ihi * req.unit,
                               self.contribution, self.grouped)

    def additive(self, s: Sensitivity, eps: Fraction, delta: Fraction, rho: Fraction | None,
                 integer: bool, unit: Fraction | None = None) -> NoiseSpec:
        """The query's additive mechanism (Laplace family, or Gaussian calibrated to ``rho``)
        for a statistic of sensitivity ``s`` at budget ``(eps, delta)``."""
        if self.query.mechanism == "gaussian":
            assert rho is not None
            return noise_spec("gaussian", s.l2, eps, delta, changed=s.changed, integer=integer,
                              rho=rho, min_granularity=unit)
        return noise_spec("laplace", s.l1, eps, changed=s.changed, integer=integer,
                          min_granularity=unit)


@dataclass(frozen=True)
class Rows:
    """The exact aggregates of the released groups, in release order (``keep``)."""

    exact: ExactAggregates
    keep: npt.NDArray[np.intp]
    #: joint releases drawn for this release, by identity: every measure sharing one reads
    #: the same draw (drawn once, when the first of them is released)
    drawn: dict[int, dict[str, np.ndarray]] = field(default_factory=dict, compare=False)

    def values(self, req: AggregateRequest) -> np.ndarray:
        return self.exact.values[req.key][self.keep]

    def counts(self, req: AggregateRequest) -> np.ndarray:
        return self.exact.counts[req.key][self.keep]

    def joint(self, rel: JointRelease, rng: RandomSource) -> dict[str, np.ndarray]:
        """The noisy coordinates of the joint release ``rel``, by name (drawn once)."""
        known = self.drawn.get(id(rel))
        if known is None:
            exact = []
            for src in rel.sources:
                part = self.values(src.request) if src.part == "values" else self.counts(
                    src.request)
                if src.rows is not None:  # missing rows filled with the integer of 0
                    filled = self.values(src.rows) - self.counts(src.request)
                    part = np.asarray(part, dtype=object) + np.asarray(filled, dtype=object) * (
                        src.fill)
                exact.append(part)
            noisy = rel.spec.release(exact, rel.units, rng)
            known = {c.name: v for c, v in zip(rel.spec.coordinates, noisy, strict=True)}
            self.drawn[id(rel)] = known
        return known


class Aggregate(Generic[P]):
    """One aggregate: its checks, plan, release and description (see the module docstring).

    Class attributes state what fronts, specs and docs need: ``op`` (the Query's name),
    ``names`` (the front methods and spec aggregates that build it), ``needs_column``,
    ``numeric`` (its column must be numeric), ``exponential`` (released by the exponential
    mechanism: pure DP, outside a Gaussian block), ``in_agg`` (``agg`` may release it, one value
    per group beside others), :meth:`arguments` (what each name takes after the column) and
    ``mechanism_pages`` (the docs pages of its mechanisms, under ``docs/mechanisms/``). The
    CLI's tables, ``agg``'s names and the spec's positional arguments are derived from these
    (:mod:`dpframe.core.aggregates`), never kept by hand. ``main`` names the mechanism of
    :attr:`MeasurePlan.mechanisms` whose name and noise the description leads with. ``P`` is
    the type of its plans' :attr:`MeasurePlan.params`; ``params_type`` that of its measures'
    own arguments, which :meth:`measure` builds and checks. ``additive``, ``zero_when_empty``,
    ``rollup`` and ``value_name`` tell plots, exports, hints and rollups what they need.
    """

    op: ClassVar[str]
    names: ClassVar[tuple[str, ...]]
    summary: ClassVar[str]
    needs_column: ClassVar[bool] = True
    numeric: ClassVar[bool] = True
    exponential: ClassVar[bool] = False
    in_agg: ClassVar[bool] = True
    mechanism_pages: ClassVar[tuple[str, ...]] = ("geometric", "granular-laplace",
                                                  "discrete-gaussian")
    main: ClassVar[str] = "count"
    #: An ungrouped release is an integer (``DPInt``), not a ``DPFloat`` (generated fronts).
    integer_result: ClassVar[bool] = False
    #: The type of its measures' :attr:`Measure.params <dpframe.core.query.Measure.params>`: a
    #: frozen dataclass its module defines, checking its fields when built
    #: (:func:`~dpframe.core.validate.validate_measure` refuses a measure with others).
    params_type: ClassVar[type[Any]] = NoParams
    #: Its description's ``ci_half_width`` is the half-width of the released value itself
    #: (plots and exports draw it; a mean's describes its noisy sum, not the ratio).
    additive: ClassVar[bool] = False
    #: Its exact value is zero where a group has no row (the near-zero hint checks it).
    zero_when_empty: ClassVar[bool] = False
    #: ``rollup=True`` may release it: the sum of its leaves is each level's exact value.
    rollup: ClassVar[bool] = False
    #: The name of a lone measure's value column in exported tables when its values are not
    #: named after its column (``"count"``: counts of rows, per group or bin); None otherwise.
    value_name: ClassVar[str | None] = None

    def measure(self, column: str | None = None, *, label: str = "",
                weight: Fraction = Fraction(1), **params: Any) -> Measure[Any]:
        """A measure of this aggregate: ``params`` are the fields of :attr:`params_type`,
        which checks them (``ValidationError`` before any charge)."""
        own = NO_PARAMS if self.params_type is NoParams and not params else self.params_type(
            **params)
        return Measure(self.op, column, label, weight, own)

    def levels(self, m: Measure[Any]) -> tuple[Fraction, ...] | None:
        """The levels of a measure released at several levels at once (one value per group
        and level, in the order asked: a joint quantile's), or None (one value per group)."""
        return None

    def arguments(self, name: str) -> tuple[str, ...]:
        """The arguments the front method and spec entry ``name`` need after the column (a
        quantile's level ``q``, a histogram's ``bins``); public."""
        return ()

    def front_doc(self, name: str) -> str:
        """The docstring of the front methods the fronts generate for ``name`` when they
        have none of their own (``dpframe/fronts/registered.py``): an aggregate that takes
        only a column needs no front edit. The options' texts are appended by ``releases``."""
        return f"Noisy {self.summary} (the ``{self.op}`` release)."

    def check(self, m: Measure, query: Query) -> None:
        """Checks of the measure's own arguments (public); the column checks are generic."""
        assert m.column is not None
        query.bounds_of(m.column)  # raises BoundsError when missing or malformed

    def cells(self, m: Measure, groups: int = 1) -> int:
        """Exact counters each group needs (for the memory bound checked before a charge), in a
        release over ``groups`` declared groups."""
        return 1

    def plan(self, ctx: PlanContext, m: Measure, eps: Fraction, delta: Fraction,
             rho: Fraction | None) -> MeasurePlan[P]:
        raise NotImplementedError

    def release(self, mp: MeasurePlan[P], rows: Rows, rng: RandomSource, level: float,
                want_ci: bool) -> MeasureRelease:
        """Add the planned noise to the released groups' exact aggregates."""
        raise NotImplementedError

    def mechanism(self, mp: MeasurePlan[P]) -> str:
        """The name of the mechanism releasing ``mp`` (dry runs, the ledger, provenance): that
        of its ``main`` mechanism."""
        return mechanism_name(mp.mechanisms.get("joint") or mp.mechanisms[self.main])

    def describe_common(self, mp: MeasurePlan[P]) -> dict[str, object]:
        """What every measure's description starts with."""
        m = mp.measure
        bounds = self.clamp_bounds(mp)
        return {"aggregate": m.name, "column": m.column, "mechanism": self.mechanism(mp),
                "epsilon": float(mp.epsilon), "delta": float(mp.delta),
                "bounds": None if bounds is None else [float(bounds[0]), float(bounds[1])]}

    def clamp_bounds(self, mp: MeasurePlan[P]) -> tuple[float, float] | None:
        """The declared ``(lo, hi)`` the measure clamps its column's values to (public), or
        None when it clamps nothing (counts; a histogram drops values outside its edges).
        Stated as ``"bounds"`` in every measure's description: the release (and its interval)
        is about the clamped values, not the raw ones."""
        return None

    def describe(self, mp: MeasurePlan[P], level: float) -> dict[str, object]:
        """Public description: mechanism, then the ``main`` noise's scale, granularity,
        sensitivity and interval half-width, then :meth:`describe_parts`, then its rho."""
        role = mp.joint()
        if role is not None:
            return {**self.describe_common(mp), **describe_joint(role, level),
                    **self.joint_parts(mp, level)}
        noise = mp.additive(self.main)
        d = self.describe_common(mp)
        d.update(noise_scale=noise.scale, granularity=float(noise.granularity),
                 sensitivity=float(noise.sensitivity), ci_level=level,
                 ci_half_width=noise.half_width(level))
        if mp.form is not None:  # which form the values are (public: the query's option)
            d["postprocess"] = None if mp.form == "raw" else mp.form
        d.update(self.describe_parts(mp, level))
        if noise.rho is not None:
            d["rho"] = float(noise.rho)
        return d

    def describe_parts(self, mp: MeasurePlan[P], level: float) -> dict[str, object]:
        """What the description adds for the mechanisms beside ``main`` (none by default)."""
        return {}

    def joint_parts(self, mp: MeasurePlan[P], level: float) -> dict[str, object]:
        """What the description of a measure in a joint release adds (none by default)."""
        return {}

    def half_width(self, mp: MeasurePlan[P], level: float, min_rows: int | None) -> float:
        """The half-width of the ``level`` interval in the result's units, when it does not
        depend on the data (accuracy-first queries); ``ValidationError`` otherwise."""
        raise ValidationError(
            f"accuracy= is not available for {self.op}: its error depends on the data (use "
            "epsilon=; dry_run=True shows the noise). Accuracy-first works for count, sum, "
            "histogram and mean (with min_rows=)")


class AdditiveCount(Aggregate[P]):
    """Shared by aggregates released as one noisy integer per group (or per bin): the noise
    ``"count"``."""

    numeric = False
    integer_result = True

    def release(self, mp: MeasurePlan[P], rows: Rows, rng: RandomSource, level: float,
                want_ci: bool) -> MeasureRelease:
        role = mp.joint()
        if role is not None:  # a count of an agg sharing its K-norm release
            noisy = rows.joint(role.release, rng)[role.value]
            hw = role.release.spec.half_width(role.value, level)
        else:
            noise = mp.additive("count")
            noisy = noise.add_noise(self.exact_counts(mp, rows), Fraction(1), rng)
            hw = noise.half_width(level)
        m = mp.measure
        return MeasureRelease(m.name, m.column, noisy, noisy - hw, noisy + hw,
                              self.describe(mp, level), self.layout(mp))

    def exact_counts(self, mp: MeasurePlan[P], rows: Rows) -> np.ndarray:
        return rows.values(mp.requests[0])

    def layout(self, mp: MeasurePlan[P]) -> BinLayout | None:
        """How the counts are laid out (one per group by default)."""
        return None

    def half_width(self, mp: MeasurePlan[P], level: float, min_rows: int | None) -> float:
        role = mp.joint()
        if role is not None:
            return role.release.spec.half_width(role.value, level)
        return mp.additive("count").half_width(level)


def describe_joint(role: JointRole, level: float) -> dict[str, object]:
    """A joint release's public description, as a measure sharing it shows it: the
    mechanism's epsilon, its coordinates' box half-widths (sensitivities) and lattice steps,
    the measures sharing it; ``epsilon_share``, the share of the query's epsilon this measure
    pooled into it (the shares add up to the joint's epsilon); this measure's
    ``noise_scale`` (its value coordinate's ``Delta / epsilon'``, the K-norm's radius scale),
    the standard deviation and the
    ``level`` half-width of ``value + shift * count`` (a mean's interval is its own)."""
    spec = role.release.spec
    hw = spec.half_width(role.value, level, role.shift if role.count else 0.0, role.count)
    std = math.hypot(spec.std(role.value), abs(role.shift) * spec.std(role.count)
                     if role.count else 0.0)
    return {"noise_scale": spec.radius_scale(role.value), "noise_std": std,
            "granularity": float(spec.coordinates[spec.index(role.value)].granularity),
            "sensitivity": float(spec.coordinates[spec.index(role.value)].sensitivity),
            "ci_level": level, "ci_half_width": hw,
            "epsilon_share": float(role.share),
            "joint": {"mechanism": "k-norm, box K (Hardt and Talwar 2010)",
                      "epsilon": float(spec.epsilon),
                      "coordinates": {c.name: {"sensitivity": float(c.sensitivity),
                                               "granularity": float(c.granularity)}
                                      for c in spec.coordinates},
                      "shared_by": list(role.release.shared_by)}}
