"""The schema of a release spec (TOML), as strict pydantic models.

Strict: TOML's own types, no coercion of "1" to 1 or true to 1, unknown fields refused. Each
model is one table of the spec (docs/cli.md); ``dpframe.cli.spec_errors`` turns a validation
failure into one message naming sections and fields, never values.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
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

from ..core.aggregates import NAMES, Aggregate, positional
from ..datasets import DATASETS

#: A query's aggregates: the registry's names (core/aggregates), and ``agg``.
AGGREGATES = (*NAMES, "agg")
OUTPUT_FORMATS = {"parquet": ".parquet", "arrow": ".arrow", "ipc": ".arrow"}
#: pyarrow reads batches of at most 2**31 - 1 rows (a C int).
MAX_BATCH_SIZE = (1 << 31) - 1
#: Query names become file names: ``<name>.parquet`` must stay under the usual 255-byte limit.
MAX_NAME_BYTES = 200
#: Built-in synthetic inputs (``[input] generate``): at most this many people.
MAX_GENERATED_PEOPLE = 10_000_000


def _number(v: Any) -> Any:
    """A finite TOML number, kept as given (an int stays an int); never a bool."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise ValueError("must be a finite number")
    return v


def _edge(v: Any) -> Any:
    """A histogram edge: a TOML number, -inf and inf included (the outer edges may be
    infinite, as pd.cut takes them); never nan or a bool."""
    if isinstance(v, bool) or not isinstance(v, int | float) or math.isnan(v):
        raise ValueError("must be a number (the outer edges may be -inf and inf)")
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


def _floats(v: list[Any]) -> list[float]:
    return [float(x) for x in v]


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


def _run_template(v: str) -> str:
    try:
        v.format(date="2000-01-01", name="name")
    except (KeyError, IndexError, ValueError, AttributeError, TypeError):
        raise ValueError("may only use {date} and {name}") from None
    return v


_Number = Annotated[float, PlainValidator(_number)]
_Edge = Annotated[float, PlainValidator(_edge)]
_Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
_NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
_Level = Annotated[float, Field(gt=0, lt=1)]
_Count = Annotated[int, Field(ge=1)]
_Text = Annotated[str, Field(min_length=1)]
_PathText = Annotated[str, Field(min_length=1), AfterValidator(_no_nul)]
_Texts = Annotated[list[_Text], BeforeValidator(_one_or_many), Field(min_length=1)]


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ReleaseTable(_Table):
    """``[release]``: the session (name, budget, neighbouring relation, ledger)."""

    epsilon: _Positive
    name: _Text | None = None
    delta: _NonNegative = 0.0
    neighbouring: Literal["add_remove", "change_one"] = "add_remove"
    ledger: _PathText | None = None
    seed: Annotated[int, Field(ge=0)] | None = None


class GenerateTable(_Table):
    """``[input] generate``: built-in synthetic data."""

    dataset: Literal[DATASETS]  # type: ignore[valid-type]
    people: Annotated[int, Field(ge=1, le=MAX_GENERATED_PEOPLE)] = 10_000
    seed: Annotated[int, Field(ge=0)] = 0


#: ``[input]`` fields that apply to files only (not to ``generate``).
FILE_ONLY = ("format", "types", "delimiter")


class InputTable(_Table):
    """``[input]``: files (``path``) or built-in synthetic data (``generate``), and scan
    options."""

    path: Annotated[list[_PathText], BeforeValidator(_one_or_many),
                    Field(min_length=1)] | None = None
    generate: GenerateTable | None = None
    format: Literal["csv", "parquet", "ipc", "arrow", "feather"] | None = None
    columns: _Texts | None = None
    batch_size: Annotated[int, Field(ge=1, le=MAX_BATCH_SIZE)] = 1 << 20
    types: dict[str, str] = {}
    delimiter: Annotated[str, Field(min_length=1, max_length=1)] | None = None
    partitions: _Count | None = None
    partition_rows: _Count | None = None
    spill_dir: _PathText | None = None
    #: ``"spark"``: read the input through Spark (dpframe.backends.spark) instead of a scan
    engine: Literal["arrow", "spark"] = "arrow"
    #: a table of the Spark catalog (``engine = "spark"`` only)
    table: _Text | None = None

    @model_validator(mode="after")
    def _one_source(self) -> InputTable:
        if self.table is not None and self.engine != "spark":
            raise ValueError('table names a Spark table: it needs engine = "spark"')
        if sum(x is not None for x in (self.path, self.generate, self.table)) != 1:
            raise ValueError("needs path (a CSV/Parquet/Arrow file, glob or folder) or "
                             "generate (built-in synthetic data), not both (with engine = "
                             "\"spark\": or table, one of the three)")
        used = [f for f in FILE_ONLY if f in self.model_fields_set]
        if self.generate is not None and used:
            raise ValueError(f"{used[0]} applies to files: it cannot be used with generate")
        return self


class PrivacyTable(_Table):
    """``[privacy]``: the privacy unit and its contribution bounds."""

    unit: _Text | None = None
    max_rows_per_unit: _Count | None = None    # T: a unit's rows in the whole release
    max_groups_per_unit: _Count | None = None  # k (default: T, or 1 without T)
    max_rows_per_group: _Count | None = None   # R: a unit's rows in one group

    @model_validator(mode="after")
    def _bounded(self) -> PrivacyTable:
        if (self.unit is not None and self.max_rows_per_unit is None
                and self.max_rows_per_group is None):
            raise ValueError("unit needs max_rows_per_unit or max_rows_per_group (a "
                             "contribution bound)")
        if self.unit is None and (self.max_rows_per_unit is not None
                                  or self.max_groups_per_unit is not None
                                  or self.max_rows_per_group is not None):
            raise ValueError("max_rows_per_unit, max_groups_per_unit and max_rows_per_group "
                             "bound the rows of a unit: they need unit (each row is its own "
                             "unit otherwise)")
        return self


class OutputTable(_Table):
    """``[output]``: the folder (a template) and the file format."""

    dir: Annotated[_PathText, AfterValidator(_template)] = "releases"
    format: Literal[tuple(OUTPUT_FORMATS)] = "parquet"  # type: ignore[valid-type]


class RunTable(_Table):
    """``[run]``: the run id that makes a run idempotent (``{date}``, ``{name}`` filled in;
    dpframe.cli.runids)."""

    id: Annotated[_Text, AfterValidator(_run_template)] | None = None


#: What each aggregate needs (a field that is None or empty is missing), and what it refuses.
def needs(names: Mapping[str, Aggregate] = NAMES) -> dict[str, tuple[str, ...]]:
    """The fields each aggregate of a query needs, from the registry: a column unless the
    aggregate goes without (``needs_column``), then its own arguments (``q``, ``bins``)."""
    out = {name: positional(name, names)[0 if a.needs_column else 1:]
           for name, a in names.items()}
    return {**out, "agg": ("aggregates", "by")}


_NEEDS = needs()
_NEED_TEXT = {"column": "a column", "q": "q (a level in [0, 1])",
              "bins": "bins = [edges...] or a number of bins",
              "aggregates": "aggregates = {column = [ops]}",
              "by": "by"}


class ContinualTable(_Table):
    """``continual = { horizon = 365 }`` on a count or sum query: a running total over the
    horizon for one charge (docs/continual.md). ``start`` (a TOML date) numbers each run's
    night by its UTC date (night 1 on ``start``), else ``night`` is given, else each run adds
    the next night; ``fill_gaps`` adds skipped nights as empty ones; ``state`` is the private
    file of the tree's exact state (default: beside the ledger)."""

    horizon: Annotated[int, Field(ge=1, le=1 << 20)]
    start: datetime.date | None = None
    night: _Count | None = None
    fill_gaps: bool = False
    state: _PathText | None = None
    integer: bool = False

    @model_validator(mode="after")
    def _one_night(self) -> ContinualTable:
        if self.start is not None and self.night is not None:
            raise ValueError("start and night both number the night: give one")
        return self


class QueryTable(_Table):
    """One ``[[query]]``: an aggregate, its epsilon and its options."""

    aggregate: Literal[AGGREGATES]  # type: ignore[valid-type]
    epsilon: _Positive
    name: Annotated[str, Field(min_length=1), AfterValidator(_file_name)] | None = None
    column: _Text | None = None
    by: _Texts | None = None
    keys: Literal["public", "private"] = "public"
    delta: _NonNegative = 0.0
    mechanism: Literal["laplace", "gaussian"] | None = None
    ci: _Level | None = None
    bins: Annotated[list[_Edge], Field(min_length=2), AfterValidator(_floats)] | \
        Annotated[int, Field(ge=1, strict=True)] | None = None
    right: bool = True
    include_lowest: bool | None = None
    q: Annotated[float, Field(ge=0, le=1)] | None = None
    resolution: Annotated[int, Field(ge=2)] | None = None
    aggregates: Annotated[dict[str, _Texts], Field(min_length=1)] | None = None
    weights: dict[str, _Number] | None = None
    selection_share: _Level | None = None
    diagnostics: _Positive | None = None
    continual: ContinualTable | None = None
    #: histograms and grouped counts: "nonnegative" (the default) or "none" (raw counts; TOML
    #: has no null)
    postprocess: Literal["nonnegative", "none"] | None = None

    @model_validator(mode="after")
    def _complete(self) -> QueryTable:
        missing = [f for f in _NEEDS[self.aggregate] if getattr(self, f) in (None, [], {})]
        if missing:
            raise ValueError(f"aggregate {self.aggregate!r} needs {_NEED_TEXT[missing[0]]}")
        if self.keys == "private" and not self.by:
            raise ValueError("keys = 'private' needs by")
        if self.continual is not None:
            if self.aggregate not in ("count", "sum"):
                raise ValueError("continual goes on a count or sum query")
            if self.keys == "private" or len(self.by or []) > 1 or self.mechanism == "gaussian" \
                    or self.delta or self.diagnostics is not None:
                raise ValueError("a continual query takes at most one by column with public "
                                 "keys, and no delta, gaussian mechanism or diagnostics")
        return self


class SpecModel(_Table):
    """A whole release spec."""

    release: ReleaseTable
    input: InputTable
    query: Annotated[list[QueryTable], Field(min_length=1)]
    privacy: PrivacyTable = PrivacyTable()
    bounds: dict[str, Annotated[tuple[float, float], PlainValidator(_pair)]] = {}
    keys: dict[str, Annotated[list[Any], Field(min_length=1)]] = {}
    output: OutputTable = OutputTable()
    run: RunTable = RunTable()

    @model_validator(mode="after")
    def _continual_alone(self) -> SpecModel:
        kinds = {q.continual is None for q in self.query}
        if len(kinds) > 1:
            raise ValueError("a spec's queries are all continual or none: run continual "
                             "queries from a spec of their own")
        return self

    @model_validator(mode="after")
    def _unique_names(self) -> SpecModel:
        names = [q.name or f"query{i + 1}" for i, q in enumerate(self.query)]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"two queries are named {dup[0]!r}: names must be unique")
        return self


#: The model of each table, by its location in the spec (query numbers left out).
SECTIONS: dict[tuple[str, ...], type[BaseModel]] = {
    (): SpecModel, ("release",): ReleaseTable, ("input",): InputTable,
    ("input", "generate"): GenerateTable, ("privacy",): PrivacyTable, ("output",): OutputTable,
    ("run",): RunTable,
    ("query",): QueryTable, ("query", "continual"): ContinualTable,
}
