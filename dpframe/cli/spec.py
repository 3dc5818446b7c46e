"""Declarative release specs (TOML) for ``dpframe run``: parse, check, plan, execute.

A spec names an input (CSV, Parquet or Arrow files), declared bounds and keys, the privacy
unit, and a list of queries with their epsilon; see docs/cli.md for the format and
examples/release.toml for an example. Everything that can be checked without spending is
checked first (spec structure, columns, bounds, keys, the whole run's cost against the
ledger's remaining budget); only then are queries released, each through the ordinary release
path (charge, compute, noise, ledger record), and written atomically.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from ..core.accounting import PrivacyCost, session_spend
from ..core.query import Query
from ..errors import ValidationError
from ..fronts.frame import PrivateFrame
from .schema import AGGREGATES, OUTPUT_FORMATS, QueryTable, SpecModel
from .spec_errors import SpecError, spec_error

#: A spec is a small text file; anything larger is some other file given by mistake.
MAX_SPEC_BYTES = 1 << 20
#: Fields that only one aggregate uses (the others ignore them).
_ONLY_FOR = {"bins": "histogram", "q": "quantile", "aggregates": "agg"}


@dataclass
class QuerySpec:
    """One query of a spec."""

    name: str
    aggregate: str
    epsilon: float
    column: str | None = None
    by: list[str] = field(default_factory=list)
    private_keys: bool = False
    delta: float = 0.0
    mechanism: str | None = None
    ci: float | None = None
    bins: list[float] | None = None
    right: bool = True
    include_lowest: bool = False
    q: float | None = None
    resolution: int | None = None
    aggregates: dict[str, list[str]] | None = None
    weights: dict[str, float] | None = None
    selection_share: float | None = None


@dataclass(frozen=True)
class GenerateSpec:
    """``[input] generate``: built-in synthetic data made in memory (no real person)."""

    dataset: str
    people: int
    seed: int

    def describe(self) -> str:
        return (f"built-in synthetic {self.dataset} ({self.people:,} people, seed {self.seed}; "
                "no real person)")


@dataclass
class ReleaseSpec:
    """A parsed spec; paths are absolute (relative ones are resolved from the spec's folder)."""

    path: Path
    name: str
    epsilon: float
    delta: float
    neighbouring: str
    ledger: Path | None
    seed: int | None
    input_paths: list[str]
    input_generate: GenerateSpec | None
    input_format: str | None
    input_columns: list[str] | None
    batch_size: int
    csv_types: dict[str, str]
    delimiter: str | None
    partitions: int | None
    partition_rows: int | None
    spill_dir: Path | None
    privacy_unit: str | None
    max_rows_per_unit: int | None
    max_groups_per_unit: int | None
    bounds: dict[str, tuple[float, float]]
    keys: dict[str, list[object]]
    output_dir: str
    output_format: str
    queries: list[QuerySpec]

    def output_folder(self, now: datetime | None = None) -> Path:
        """The output folder, with ``{date}``, ``{time}`` and ``{name}`` filled in."""
        t = now or datetime.now(UTC)
        try:
            rel = self.output_dir.format(date=t.strftime("%Y-%m-%d"),
                                         time=t.strftime("%H%M%S"), name=self.name)
        except (KeyError, IndexError, ValueError):
            raise SpecError("[output] dir may only use {date}, {time} and {name}") from None
        return (self.path.parent / rel).absolute()

    @property
    def output_suffix(self) -> str:
        """The suffix of the release files (``.parquet`` or ``.arrow``)."""
        return OUTPUT_FORMATS[self.output_format]

    def output_path(self, folder: Path, query: QuerySpec) -> Path:
        return folder / f"{query.name}{self.output_suffix}"

    def output_paths(self, folder: Path) -> list[Path]:
        """Every file a run writes into ``folder``."""
        return [self.output_path(folder, q) for q in self.queries]

    def frame_options(self) -> dict[str, Any]:
        """The declarations of the private frame the queries run on (as for ``df.dp``)."""
        return {"bounds": self.bounds, "keys": self.keys, "privacy_unit": self.privacy_unit,
                "max_rows_per_unit": self.max_rows_per_unit,
                "max_groups_per_unit": self.max_groups_per_unit}


def load_spec(path: str | os.PathLike[str]) -> ReleaseSpec:
    """Read and check the structure of a TOML release spec (no data is read).

    Every way a spec can be unreadable (no file, a folder, not UTF-8, empty, not TOML) is a
    :class:`SpecError` naming the file, never quoting its content."""
    p = Path(os.fspath(path)).expanduser().absolute()
    return parse_spec(_read_toml(p), p)


def _read_bytes(p: Path) -> bytes:
    try:
        if p.is_dir():
            raise SpecError(f"{p} is a folder, not a spec file")
        with open(p, "rb") as f:
            data = f.read(MAX_SPEC_BYTES + 1)
    except FileNotFoundError:
        raise SpecError(f"no spec file at {p}") from None
    except PermissionError:
        raise SpecError(f"cannot read the spec {p}: permission denied") from None
    except OSError as exc:
        raise SpecError(f"cannot read the spec {p} ({type(exc).__name__})") from None
    if len(data) > MAX_SPEC_BYTES:
        raise SpecError(f"{p.name} is larger than {MAX_SPEC_BYTES >> 20} MiB: not a spec file")
    return data


def _read_toml(p: Path) -> dict[str, Any]:
    try:
        text = _read_bytes(p).decode("utf-8-sig")  # a byte-order mark (Windows editors) is fine
    except UnicodeDecodeError as exc:
        raise SpecError(f"{p.name} is not UTF-8 text (invalid byte at offset {exc.start}): a "
                        "TOML spec must be UTF-8") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{p.name} is not valid TOML: {exc}") from None
    if not raw:
        raise SpecError(f"{p.name} is empty: a spec needs [release], [input] and at least one "
                        "[[query]] (see docs/cli.md)")
    return raw


def parse_spec(raw: Mapping[str, Any], path: Path) -> ReleaseSpec:
    """Check a decoded spec against the schema and resolve its paths against ``path``'s
    folder."""
    try:
        m = SpecModel.model_validate(dict(raw))
    except PydanticValidationError as exc:
        raise spec_error(exc, raw) from None
    base = path.parent

    def resolve(p: str | None) -> Path | None:
        return None if p is None else (base / p).absolute()

    inp, gen = m.input, m.input.generate
    return ReleaseSpec(
        path=path, name=m.release.name or path.stem, epsilon=m.release.epsilon,
        delta=m.release.delta, neighbouring=m.release.neighbouring,
        ledger=resolve(m.release.ledger), seed=m.release.seed,
        input_paths=[p if os.path.isabs(p) else str(base / p) for p in inp.path or []],
        input_generate=None if gen is None else GenerateSpec(gen.dataset, gen.people,
                                                             gen.seed),
        input_format=inp.format, input_columns=inp.columns, batch_size=inp.batch_size,
        csv_types=dict(inp.types), delimiter=inp.delimiter, partitions=inp.partitions,
        partition_rows=inp.partition_rows, spill_dir=resolve(inp.spill_dir),
        privacy_unit=m.privacy.unit, max_rows_per_unit=m.privacy.max_rows_per_unit,
        max_groups_per_unit=m.privacy.max_groups_per_unit, bounds=dict(m.bounds),
        keys={k: list(v) for k, v in m.keys.items()}, output_dir=m.output.dir,
        output_format=m.output.format,
        queries=[_query_spec(q, i) for i, q in enumerate(m.query)])


def _query_spec(q: QueryTable, i: int) -> QuerySpec:
    """A ``[[query]]`` table as a QuerySpec (fields of other aggregates left out)."""
    unused = {f for f, agg in _ONLY_FOR.items() if agg != q.aggregate}
    given = q.model_dump(exclude={"name", "keys", "by", "weights", *unused})
    return QuerySpec(name=q.name or f"query{i + 1}", by=list(q.by or []),
                     private_keys=q.keys == "private", weights=q.weights or None, **given)


# -- running -------------------------------------------------------------------------------------

class _CapturingFrame(PrivateFrame):
    """A PrivateFrame that also keeps the Query each call builds (to price a whole run)."""

    captured: list[Query]

    @property
    def plan_backend(self) -> Any:
        """The backend the frame's queries run on."""
        return self._backend

    def _run(self, query: Query, dry_run: bool) -> Any:
        self.captured.append(query)
        return super()._run(query, dry_run)


def make_frame(spec: ReleaseSpec, backend: Any, session: Any) -> PrivateFrame:
    """The private frame a spec's queries run on."""
    return capturing_frame(backend, session, bounds=spec.bounds, keys=spec.keys,
                           privacy_unit=spec.privacy_unit,
                           max_rows_per_unit=spec.max_rows_per_unit,
                           max_groups_per_unit=spec.max_groups_per_unit)


def capturing_frame(backend: Any, session: Any, **options: Any) -> PrivateFrame:
    """A private frame whose queries :func:`plan_queries` can price (``options`` as for
    ``df.dp``)."""
    frame = _CapturingFrame(backend, session, **options)
    frame.captured = []
    return frame


def invoke(frame: PrivateFrame, q: QuerySpec, dry_run: bool) -> Any:
    """Run one query through the ordinary front (``dry_run``: plan only, nothing spent)."""
    common: dict[str, Any] = {"epsilon": q.epsilon, "dry_run": dry_run}
    if q.aggregate not in ("max", "min", "median", "quantile"):
        common.update(delta=q.delta, mechanism=q.mechanism)
    elif q.by:
        common["delta"] = q.delta
    if q.resolution is not None and q.aggregate in ("max", "min", "median", "quantile", "agg"):
        common["resolution"] = q.resolution
    if q.ci is not None and q.aggregate in ("count", "sum", "mean", "agg", "histogram"):
        common["ci"] = q.ci
    if q.by:
        target: Any = frame.groupby(q.by, keys="private" if q.private_keys else None)
        if q.selection_share is not None:
            common["selection_share"] = q.selection_share
    else:
        target = frame
    if q.aggregate == "median" and q.by:  # grouped median: the 0.5 quantile
        return target.quantile(q.column, 0.5, **common)
    fn: Callable[..., Any] = getattr(target, q.aggregate)
    if q.aggregate == "count":
        return fn(q.column, **common)
    if q.aggregate == "histogram":
        return fn(q.column, q.bins, right=q.right, include_lowest=q.include_lowest, **common)
    if q.aggregate == "quantile":
        return fn(q.column, q.q, **common)
    if q.aggregate == "agg":
        if q.weights is not None:
            common["weights"] = q.weights
        return fn(q.aggregates, **common)
    return fn(q.column, **common)


@dataclass
class RunPlan:
    """What a run would do: each query's public plan and the whole run's cost."""

    explains: list[dict[str, Any]]
    costs: list[PrivacyCost]
    spent_before: tuple[Fraction, Fraction]
    spent_after: tuple[Fraction, Fraction]
    total: tuple[Fraction, Fraction]

    @property
    def fits(self) -> bool:
        return self.spent_after[0] <= self.total[0] and self.spent_after[1] <= self.total[1]


def plan_run(spec: ReleaseSpec, backend: Any, session: Any) -> RunPlan:
    """Validate and price every query with no side effect (typed errors on a bad spec)."""
    return plan_queries(make_frame(spec, backend, session), spec.queries, session)


def plan_queries(frame: PrivateFrame, queries: Sequence[QuerySpec], session: Any) -> RunPlan:
    """Validate and price ``queries`` on ``frame`` with no side effect: each query's public
    plan, and the whole run composed with the ledger's existing charges (as the ledger composes
    them), so a run that does not fit is refused before its first charge."""
    from ..engine.release import prepare

    if not isinstance(frame, _CapturingFrame):
        raise TypeError("plan_queries needs a frame from make_frame or capturing_frame")
    explains: list[dict[str, Any]] = []
    costs: list[PrivacyCost] = []
    for q in queries:
        try:
            explains.append(invoke(frame, q, dry_run=True))
        except ValidationError as exc:
            raise type(exc)(f"query {q.name!r}: {exc}") from None
        costs.append(prepare(session, frame.captured[-1], frame.plan_backend).cost)
    store = session.ledger_store
    existing = [entry_cost(e) for e in store.entries()]
    before = session.spent_exact
    spend = session_spend([*existing, *costs])
    after = (max(spend.epsilon, before[0]), max(spend.delta, before[1]))
    return RunPlan(explains, costs, before, after, session.total_exact)


def entry_cost(entry: Mapping[str, Any]) -> PrivacyCost:
    """The cost a ledger entry charged."""
    return PrivacyCost(entry["requested_epsilon"], entry["requested_delta"], entry.get("rho"))


def charged_by(session: Any, entry_ids: Sequence[int]) -> tuple[Fraction, Fraction]:
    """What the entries ``entry_ids`` add to the ledger's spent budget, composed exactly as the
    ledger composes (the spend of every entry minus the spend of the others)."""
    mine = set(entry_ids)
    entries = list(session.ledger_store.entries())
    every = session_spend([entry_cost(e) for e in entries])
    others = session_spend([entry_cost(e) for e in entries if e["id"] not in mine])
    return every.epsilon - others.epsilon, every.delta - others.delta


__all__ = ["AGGREGATES", "MAX_SPEC_BYTES", "GenerateSpec", "QuerySpec", "ReleaseSpec", "RunPlan",
           "SpecError", "capturing_frame", "charged_by", "invoke", "load_spec", "make_frame",
           "parse_spec", "plan_queries", "plan_run"]
