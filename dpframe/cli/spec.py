"""Declarative release specs (TOML) for ``dpframe run``: parse, check, plan, execute.

A spec names an input (CSV, Parquet or Arrow files), declared bounds and keys, the privacy
unit, and a list of queries with their epsilon; see docs/cli.md for the format and
examples/release.toml for an example. Everything that can be checked without spending is
checked first (spec structure, columns, bounds, keys, the whole run's cost against the
ledger's remaining budget); only then are queries released, each through the ordinary release
path (charge, compute, noise, ledger record), and written atomically.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    model_validator,
)
from pydantic import ValidationError as PydanticValidationError

from ..core.accounting import PrivacyCost, session_spend
from ..core.query import Query
from ..datasets import DATASETS
from ..errors import ValidationError
from ..fronts.frame import PrivateFrame


class SpecError(ValidationError):
    """The release spec is malformed (unknown field, wrong type, missing value)."""


AGGREGATES = ("count", "count_distinct", "sum", "mean", "var", "std", "max", "min", "median",
              "quantile", "histogram", "agg")
OUTPUT_FORMATS = {"parquet": ".parquet", "arrow": ".arrow", "ipc": ".arrow"}
#: A spec is a small text file; anything larger is some other file given by mistake.
MAX_SPEC_BYTES = 1 << 20
#: pyarrow reads batches of at most 2**31 - 1 rows (a C int).
MAX_BATCH_SIZE = (1 << 31) - 1
#: Query names become file names: ``<name>.parquet`` must stay under the usual 255-byte limit.
MAX_NAME_BYTES = 200
#: Built-in synthetic inputs (``[input] generate``): at most this many people.
MAX_GENERATED_PEOPLE = 10_000_000

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

    def output_path(self, folder: Path, query: QuerySpec) -> Path:
        return folder / f"{query.name}{OUTPUT_FORMATS[self.output_format]}"

    def output_paths(self, folder: Path) -> list[Path]:
        """Every file a run writes into ``folder``."""
        return [self.output_path(folder, q) for q in self.queries]


# -- the spec's schema ----------------------------------------------------------------------------
#
# Declarative (pydantic, strict: TOML's own types, no coercion of "1" to 1 or true to 1, unknown
# fields refused). Every failure becomes one SpecError naming sections and fields, never values.

def _number(v: Any) -> Any:
    """A finite TOML number, kept as given (an int stays an int); never a bool."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise ValueError("must be a finite number")
    return v


def _pair(v: Any) -> tuple[Any, Any]:
    if not isinstance(v, list) or len(v) != 2:
        raise ValueError("must be [lo, hi]")
    try:
        return _number(v[0]), _number(v[1])
    except ValueError:
        raise ValueError("must be [lo, hi]: two finite numbers") from None


def _one_or_many(v: Any) -> Any:
    return [v] if isinstance(v, str) else v


def _no_nul(v: str) -> str:
    if "\x00" in v:
        raise ValueError("must be a path without NUL characters")
    return v


def _file_name(v: str) -> str:
    if (any(c in v for c in "/\\:") or v.startswith(".")
            or any(ord(c) < 32 or ord(c) == 127 for c in v)
            or len(v.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES):
        raise ValueError(f"must be usable as a file name (no '/', '\\', ':' or control "
                         f"characters, not starting with '.', at most {MAX_NAME_BYTES} bytes)")
    return v


def _template(v: str) -> str:
    try:
        v.format(date="2000-01-01", time="000000", name="name")
    except (KeyError, IndexError, ValueError, AttributeError, TypeError):
        raise ValueError("may only use {date}, {time} and {name}") from None
    return v


_Number = Annotated[float, PlainValidator(_number)]
_Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
_NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
_Level = Annotated[float, Field(gt=0, lt=1)]
_Count = Annotated[int, Field(ge=1)]
_Text = Annotated[str, Field(min_length=1)]
_PathText = Annotated[str, Field(min_length=1), AfterValidator(_no_nul)]
_Texts = Annotated[list[_Text], BeforeValidator(_one_or_many), Field(min_length=1)]


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _Release(_Table):
    epsilon: _Positive
    name: _Text | None = None
    delta: _NonNegative = 0.0
    neighbouring: Literal["add_remove", "change_one"] = "add_remove"
    ledger: _PathText | None = None
    seed: Annotated[int, Field(ge=0)] | None = None


class _Generate(_Table):
    dataset: Literal[DATASETS]  # type: ignore[valid-type]
    people: Annotated[int, Field(ge=1, le=MAX_GENERATED_PEOPLE)] = 10_000
    seed: Annotated[int, Field(ge=0)] = 0


_FILE_ONLY = ("format", "types", "delimiter")


class _Input(_Table):
    path: Annotated[list[Annotated[_PathText, AfterValidator(_no_nul)]],
                    BeforeValidator(_one_or_many), Field(min_length=1)] | None = None
    generate: _Generate | None = None
    format: Literal["csv", "parquet", "ipc", "arrow", "feather"] | None = None
    columns: _Texts | None = None
    batch_size: Annotated[int, Field(ge=1, le=MAX_BATCH_SIZE)] = 1 << 20
    types: dict[str, str] = {}
    delimiter: Annotated[str, Field(min_length=1, max_length=1)] | None = None
    partitions: _Count | None = None
    partition_rows: _Count | None = None
    spill_dir: _PathText | None = None

    @model_validator(mode="after")
    def _one_source(self) -> _Input:
        if (self.path is None) == (self.generate is None):
            raise ValueError("needs path (a CSV/Parquet/Arrow file, glob or folder) or "
                             "generate (built-in synthetic data), not both")
        used = [f for f in _FILE_ONLY if f in self.model_fields_set]
        if self.generate is not None and used:
            raise ValueError(f"{used[0]} applies to files: it cannot be used with generate")
        return self


class _Privacy(_Table):
    unit: _Text | None = None
    max_rows_per_unit: _Count | None = None
    max_groups_per_unit: _Count | None = None  # default 1, with a unit

    @model_validator(mode="after")
    def _bounded(self) -> _Privacy:
        if self.unit is not None and self.max_rows_per_unit is None:
            raise ValueError("unit needs max_rows_per_unit (a contribution bound)")
        if self.unit is None and (self.max_rows_per_unit is not None
                                  or self.max_groups_per_unit is not None):
            raise ValueError("max_rows_per_unit and max_groups_per_unit bound the rows of a "
                             "unit: they need unit (each row is its own unit otherwise)")
        return self


class _Output(_Table):
    dir: Annotated[_PathText, AfterValidator(_template)] = "releases"
    format: Literal[tuple(OUTPUT_FORMATS)] = "parquet"  # type: ignore[valid-type]


#: What each aggregate needs (a field that is None or empty is missing), and what it refuses.
_NEEDS: dict[str, tuple[str, ...]] = {
    "count": (), "count_distinct": ("column",), "sum": ("column",), "mean": ("column",),
    "var": ("column",), "std": ("column",), "max": ("column",),
    "min": ("column",), "median": ("column",), "quantile": ("column", "q"),
    "histogram": ("column", "bins"), "agg": ("aggregates", "by"),
}
_NEED_TEXT = {"column": "a column", "q": "q (a level in [0, 1])",
              "bins": "bins = [edges...]", "aggregates": "aggregates = {column = [ops]}",
              "by": "by"}
_REFUSES = {"histogram": ("by", "histograms cannot be grouped (use by on a count)")}


class _Query(_Table):
    aggregate: Literal[AGGREGATES]  # type: ignore[valid-type]
    epsilon: _Positive
    name: Annotated[str, Field(min_length=1), AfterValidator(_file_name)] | None = None
    column: _Text | None = None
    by: _Texts | None = None
    keys: Literal["public", "private"] = "public"
    delta: _NonNegative = 0.0
    mechanism: Literal["laplace", "gaussian"] | None = None
    ci: _Level | None = None
    bins: Annotated[list[_Number], Field(min_length=2)] | None = None
    right: bool = True
    include_lowest: bool = False
    q: Annotated[float, Field(ge=0, le=1)] | None = None
    resolution: Annotated[int, Field(ge=2)] | None = None
    aggregates: Annotated[dict[str, _Texts], Field(min_length=1)] | None = None
    weights: dict[str, _Number] | None = None
    selection_share: _Level | None = None

    @model_validator(mode="after")
    def _complete(self) -> _Query:
        missing = [f for f in _NEEDS[self.aggregate] if getattr(self, f) in (None, [], {})]
        if missing:
            raise ValueError(f"aggregate {self.aggregate!r} needs {_NEED_TEXT[missing[0]]}")
        refused = _REFUSES.get(self.aggregate)
        if refused and getattr(self, refused[0]):
            raise ValueError(refused[1])
        if self.keys == "private" and not self.by:
            raise ValueError("keys = 'private' needs by")
        return self


class _Spec(_Table):
    release: _Release
    input: _Input
    query: Annotated[list[_Query], Field(min_length=1)]
    privacy: _Privacy = _Privacy()
    bounds: dict[str, Annotated[tuple[float, float], PlainValidator(_pair)]] = {}
    keys: dict[str, Annotated[list[Any], Field(min_length=1)]] = {}
    output: _Output = _Output()

    @model_validator(mode="after")
    def _unique_names(self) -> _Spec:
        names = [q.name or f"query{i + 1}" for i, q in enumerate(self.query)]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"two queries are named {dup[0]!r}: names must be unique")
        return self


# -- error messages: sections and fields, never values ------------------------------------------

_SECTIONS: dict[tuple[str, ...], type[BaseModel]] = {
    (): _Spec, ("release",): _Release, ("input",): _Input, ("input", "generate"): _Generate,
    ("privacy",): _Privacy, ("output",): _Output, ("query",): _Query,
}
#: Messages for a missing table or field, by its location (query numbers left out).
_MISSING = {
    ("release",): "[release] needs epsilon (the ledger's total budget)",
    ("release", "epsilon"): "[release] needs epsilon (the ledger's total budget)",
    ("input",): "[input] needs path (a CSV/Parquet/Arrow file, glob or folder) or generate "
                "(built-in synthetic data)",
    ("query",): "the spec needs at least one [[query]]",
    ("query", "aggregate"): "needs aggregate (one of " + ", ".join(AGGREGATES) + ")",
    ("query", "epsilon"): "needs epsilon",
}
_MUST_BE = {
    "float_type": "a number", "int_type": "an integer", "string_type": "a string",
    "bool_type": "true or false", "dict_type": "a table", "model_type": "a table",
    "model_attributes_type": "a table", "list_type": "a list", "tuple_type": "a list",
    "finite_number": "a finite number", "string_too_short": "a non-empty string",
}
_COMPARE = {"greater_than": ("gt", "greater than"), "greater_than_equal": ("ge", "at least"),
            "less_than": ("lt", "less than"), "less_than_equal": ("le", "at most")}


def _where(loc: tuple[str | int, ...], raw: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The section a location is in ("[release]", "query 'x'", ...) and the field path."""
    if not loc:
        return "the spec", []
    head, rest = str(loc[0]), list(loc[1:])
    if head != "query" or head not in raw:
        return (f"[{head}]" if head in _Spec.model_fields else "the spec",
                [str(x) for x in rest] if head in _Spec.model_fields else [head])
    if not rest or not isinstance(rest[0], int):
        return "[[query]]", [str(x) for x in rest]
    i = rest[0]
    queries = raw.get("query")
    q = queries[i] if isinstance(queries, list) and i < len(queries) else None
    name = q.get("name") if isinstance(q, dict) else None
    section = (f"query {name!r}" if isinstance(name, str) and 0 < len(name) <= 40
               else f"[[query]] #{i + 1}")
    return section, [str(x) for x in rest[1:]]


def _field_text(path: list[str]) -> str:
    return ".".join(path)


def _message(err: Mapping[str, Any], raw: Mapping[str, Any]) -> str:
    loc = tuple(err["loc"])
    kind = str(err["type"])
    ctx = err.get("ctx") or {}
    section, path = _where(loc, raw)
    label = f"{section} {_field_text(path)}".strip()
    if kind == "extra_forbidden":
        model = _SECTIONS.get(tuple(str(x) for x in loc[:-1] if not isinstance(x, int)))
        allowed = f" (allowed: {', '.join(sorted(model.model_fields))})" if model else ""
        parent = f"{section} {_field_text(path[:-1])}".strip()
        return f"{parent}: unknown field {str(loc[-1])!r}{allowed}"
    if kind == "missing":
        key = tuple(str(x) for x in loc if not isinstance(x, int))
        hint = _MISSING.get(key)
        if hint is None:
            parent = f"{section} {_field_text(path[:-1])}".strip()
            return f"{parent} needs {loc[-1]}"
        return f"{section} {hint}" if key[0] == "query" and len(key) > 1 else hint
    if loc[:1] == ("query",) and len(loc) == 1:
        return "the spec needs at least one [[query]] (an array of tables: [[query]])"
    if kind == "value_error":
        text = str(ctx.get("error", err["msg"]))
        return f"{label} {text}" if path else f"{section}: {text}"
    if kind in _MUST_BE:
        return f"{label} must be {_MUST_BE[kind]}"
    if kind == "literal_error":
        return f"{label} must be {ctx.get('expected')}"
    if kind in _COMPARE:
        bound_name, words = _COMPARE[kind]
        bound = ctx.get(bound_name)
        shown = f"{bound:,}" if isinstance(bound, int) else f"{bound:g}"
        return f"{label} must be {words} {shown}"
    if kind in ("too_short", "too_long", "string_too_long"):
        n = ctx.get("min_length" if kind == "too_short" else "max_length")
        return f"{label} must have {'at least' if kind == 'too_short' else 'at most'} {n} " \
               f"item{'s' if n != 1 else ''}" if kind != "string_too_long" else \
               f"{label} must be at most {n} character{'s' if n != 1 else ''}"
    return f"{label} is not valid ({err['msg']})"


def _spec_error(exc: PydanticValidationError, raw: Mapping[str, Any]) -> SpecError:
    """One SpecError listing every problem (the first five), built from error locations and
    kinds only: ``include_input=False`` keeps values out of it."""
    errors = exc.errors(include_input=False, include_url=False)
    messages = list(dict.fromkeys(_message(e, raw) for e in errors))
    text = "; ".join(messages[:5])
    if len(messages) > 5:
        text += f" (and {len(messages) - 5} more)"
    return SpecError(text)


def load_spec(path: str | os.PathLike[str]) -> ReleaseSpec:
    """Read and check the structure of a TOML release spec (no data is read).

    Every way a spec can be unreadable (no file, a folder, not UTF-8, empty, not TOML) is a
    :class:`SpecError` naming the file, never quoting its content."""
    p = Path(os.fspath(path)).expanduser().absolute()
    return parse_spec(_read_toml(p), p)


def _read_toml(p: Path) -> dict[str, Any]:
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
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark (Windows editors) is fine
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
        m = _Spec.model_validate(dict(raw))
    except PydanticValidationError as exc:
        raise _spec_error(exc, raw) from None
    base = path.parent

    def resolve(p: str | None) -> Path | None:
        return None if p is None else (base / p).absolute()

    inp = m.input
    return ReleaseSpec(
        path=path, name=m.release.name or path.stem, epsilon=m.release.epsilon,
        delta=m.release.delta, neighbouring=m.release.neighbouring,
        ledger=resolve(m.release.ledger), seed=m.release.seed,
        input_paths=[str(base / p) if not os.path.isabs(p) else p for p in inp.path or []],
        input_generate=None if inp.generate is None else GenerateSpec(
            inp.generate.dataset, inp.generate.people, inp.generate.seed),
        input_format=inp.format, input_columns=inp.columns, batch_size=inp.batch_size,
        csv_types=dict(inp.types), delimiter=inp.delimiter, partitions=inp.partitions,
        partition_rows=inp.partition_rows, spill_dir=resolve(inp.spill_dir),
        privacy_unit=m.privacy.unit, max_rows_per_unit=m.privacy.max_rows_per_unit,
        max_groups_per_unit=m.privacy.max_groups_per_unit, bounds=dict(m.bounds),
        keys={k: list(v) for k, v in m.keys.items()}, output_dir=m.output.dir,
        output_format=m.output.format,
        queries=[_query_spec(q, i) for i, q in enumerate(m.query)])


def _query_spec(q: _Query, i: int) -> QuerySpec:
    agg = q.aggregate
    return QuerySpec(
        name=q.name or f"query{i + 1}", aggregate=agg, epsilon=q.epsilon, column=q.column,
        by=list(q.by or []), private_keys=q.keys == "private", delta=q.delta,
        mechanism=q.mechanism, ci=q.ci, right=q.right, include_lowest=q.include_lowest,
        resolution=q.resolution,
        selection_share=q.selection_share,
        bins=[float(b) for b in q.bins or []] if agg == "histogram" else None,
        q=q.q if agg == "quantile" else None,
        aggregates={c: list(v) for c, v in (q.aggregates or {}).items()} if agg == "agg"
        else None,
        weights=dict(q.weights) if q.weights else None)


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


def check_output_targets(folder: Path, files: Sequence[Path], where: str = "[output] dir"
                         ) -> None:
    """Check, creating nothing, that ``folder`` can be created (or is a folder) and that no file
    of ``files`` is a folder: an output that cannot be written fails before any charge."""
    try:
        if os.path.lexists(folder) and not folder.is_dir():
            raise SpecError(f"{where}: {folder} is a file, not a folder")
        ancestor = folder
        while not os.path.lexists(ancestor) and ancestor.parent != ancestor:
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise SpecError(f"{where}: cannot create {folder}: {ancestor} is not a folder")
        if not os.access(ancestor, os.W_OK | os.X_OK):
            raise SpecError(f"{where}: {ancestor} is not writable")
        for f in files:
            if f.is_dir():
                raise SpecError(f"{where}: {f} is a folder: a release file cannot replace it")
    except SpecError:
        raise
    except ValueError:  # a NUL character
        raise SpecError(f"{where} is not a usable path") from None
    except OSError as exc:
        raise SpecError(f"{where}: cannot use {folder} ({type(exc).__name__})") from None


def input_source(spec: ReleaseSpec) -> Any:
    """What ``dpf.scan`` reads: the input files, or the generated synthetic table."""
    g = spec.input_generate
    if g is not None:
        from ..datasets import synthetic

        return synthetic(g.dataset, g.people, g.seed)
    return spec.input_paths if len(spec.input_paths) > 1 else spec.input_paths[0]


def input_format(spec: ReleaseSpec) -> Any:
    """The pyarrow file format for the spec's input (CSV options applied)."""
    fmt = spec.input_format
    if fmt == "csv" or (fmt is None and (spec.csv_types or spec.delimiter)):
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.dataset as ds

        try:
            types = {c: pa.type_for_alias(t) for c, t in spec.csv_types.items()}
        except (ValueError, KeyError):
            raise SpecError("[input] types: unknown Arrow type name") from None
        parse = pacsv.ParseOptions(delimiter=spec.delimiter) if spec.delimiter else None
        return ds.CsvFileFormat(parse_options=parse,
                                convert_options=pacsv.ConvertOptions(column_types=types))
    if fmt in ("arrow", "feather"):
        return "ipc"
    return fmt


def describe_paths(paths: Sequence[str]) -> str:
    return ", ".join(paths)


__all__ = ["AGGREGATES", "GenerateSpec", "QuerySpec", "ReleaseSpec", "RunPlan", "SpecError",
           "capturing_frame", "charged_by", "check_output_targets", "input_source", "invoke",
           "load_spec", "make_frame", "parse_spec", "plan_queries", "plan_run"]
