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
from typing import Any

from .core.accounting import PrivacyCost, session_spend
from .errors import ValidationError
from .frontend import PrivateFrame
from .query import Query


class SpecError(ValidationError):
    """The release spec is malformed (unknown field, wrong type, missing value)."""


AGGREGATES = ("count", "sum", "mean", "max", "min", "median", "quantile", "histogram", "agg")
OUTPUT_FORMATS = {"parquet": ".parquet", "arrow": ".arrow", "ipc": ".arrow"}

_RELEASE_FIELDS = {"name", "epsilon", "delta", "neighbouring", "ledger", "seed"}
_INPUT_FIELDS = {"path", "format", "columns", "batch_size", "types", "delimiter", "partitions",
                 "partition_rows", "spill_dir"}
_PRIVACY_FIELDS = {"unit", "max_rows_per_unit", "max_groups_per_unit"}
_OUTPUT_FIELDS = {"dir", "format"}
_QUERY_FIELDS = {"name", "aggregate", "column", "by", "keys", "epsilon", "delta", "mechanism",
                 "ci", "bins", "right", "q", "resolution", "aggregates", "weights",
                 "selection_share"}
_TOP = {"release", "input", "privacy", "bounds", "keys", "output", "query"}


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
    q: float | None = None
    resolution: int | None = None
    aggregates: dict[str, list[str]] | None = None
    weights: dict[str, float] | None = None
    selection_share: float | None = None


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
    max_groups_per_unit: int
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


# -- parsing -------------------------------------------------------------------------------------

def _table(d: Any, where: str, allowed: set[str]) -> dict[str, Any]:
    if d is None:
        return {}
    if not isinstance(d, dict):
        raise SpecError(f"{where} must be a table")
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise SpecError(f"{where}: unknown field {unknown[0]!r} (allowed: "
                        f"{', '.join(sorted(allowed))})")
    return d


def _num(v: Any, where: str, *, positive: bool = False, allow_zero: bool = True) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise SpecError(f"{where} must be a number")
    if v < 0 or (positive and v == 0) or (not allow_zero and v == 0):
        raise SpecError(f"{where} must be {'positive' if positive else 'non-negative'}")
    return float(v)


def _int(v: Any, where: str, minimum: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise SpecError(f"{where} must be an integer >= {minimum}")
    return v


def _str(v: Any, where: str) -> str:
    if not isinstance(v, str) or not v:
        raise SpecError(f"{where} must be a non-empty string")
    return v


def _str_list(v: Any, where: str) -> list[str]:
    if isinstance(v, str):
        return [v]
    if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
        raise SpecError(f"{where} must be a string or a list of strings")
    return list(v)


def load_spec(path: str | os.PathLike[str]) -> ReleaseSpec:
    """Read and check the structure of a TOML release spec (no data is read)."""
    p = Path(os.fspath(path)).expanduser().absolute()
    try:
        with open(p, "rb") as f:
            raw = tomllib.load(f)
    except FileNotFoundError:
        raise SpecError(f"no spec file at {p}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{p.name} is not valid TOML: {exc}") from None
    return parse_spec(raw, p)


def parse_spec(raw: Mapping[str, Any], path: Path) -> ReleaseSpec:
    """Check a decoded spec and resolve its paths against ``path``'s folder."""
    top = _table(dict(raw), "the spec", _TOP)
    base = path.parent
    rel = _table(top.get("release"), "[release]", _RELEASE_FIELDS)
    if "epsilon" not in rel:
        raise SpecError("[release] needs epsilon (the ledger's total budget)")
    name = _str(rel.get("name", path.stem), "[release] name")
    eps = _num(rel["epsilon"], "[release] epsilon", positive=True)
    delta = _num(rel.get("delta", 0.0), "[release] delta")
    neighbouring = rel.get("neighbouring", "add_remove")
    if neighbouring not in ("add_remove", "change_one"):
        raise SpecError("[release] neighbouring must be 'add_remove' or 'change_one'")
    ledger = rel.get("ledger")
    ledger_path = (base / _str(ledger, "[release] ledger")).absolute() if ledger else None
    seed = rel.get("seed")
    if seed is not None:
        seed = _int(seed, "[release] seed", 0)

    inp = _table(top.get("input"), "[input]", _INPUT_FIELDS)
    if "path" not in inp:
        raise SpecError("[input] needs path (a CSV/Parquet/Arrow file, glob or folder)")
    paths = [str(base / p) if not os.path.isabs(p) else p
             for p in _str_list(inp["path"], "[input] path")]
    fmt = inp.get("format")
    if fmt is not None and fmt not in ("csv", "parquet", "ipc", "arrow", "feather"):
        raise SpecError("[input] format must be 'csv', 'parquet' or 'ipc'")
    types = inp.get("types", {})
    if not isinstance(types, dict) or not all(isinstance(v, str) for v in types.values()):
        raise SpecError("[input] types must map column names to Arrow type names")
    delimiter = inp.get("delimiter")
    if delimiter is not None and (not isinstance(delimiter, str) or len(delimiter) != 1):
        raise SpecError("[input] delimiter must be one character")
    columns = _str_list(inp["columns"], "[input] columns") if "columns" in inp else None
    spill = inp.get("spill_dir")

    priv = _table(top.get("privacy"), "[privacy]", _PRIVACY_FIELDS)
    unit = priv.get("unit")
    if unit is not None:
        unit = _str(unit, "[privacy] unit")
        if "max_rows_per_unit" not in priv:
            raise SpecError("[privacy] unit needs max_rows_per_unit (a contribution bound)")
    max_rows = _int(priv["max_rows_per_unit"], "[privacy] max_rows_per_unit") \
        if "max_rows_per_unit" in priv else None
    max_groups = _int(priv.get("max_groups_per_unit", 1), "[privacy] max_groups_per_unit")

    bounds_raw = top.get("bounds", {})
    if not isinstance(bounds_raw, dict):
        raise SpecError("[bounds] must be a table of column = [lo, hi]")
    bounds: dict[str, tuple[float, float]] = {}
    for col, b in bounds_raw.items():
        if not isinstance(b, list) or len(b) != 2:
            raise SpecError(f"[bounds] {col} must be [lo, hi]")
        lo = b[0]
        hi = b[1]
        for v in (lo, hi):
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise SpecError(f"[bounds] {col} must be two numbers")
        bounds[str(col)] = (lo, hi)
    keys_raw = top.get("keys", {})
    if not isinstance(keys_raw, dict):
        raise SpecError("[keys] must be a table of column = [values...]")
    keys: dict[str, list[object]] = {}
    for col, vals in keys_raw.items():
        if not isinstance(vals, list) or not vals:
            raise SpecError(f"[keys] {col} must be a non-empty list of values")
        keys[str(col)] = list(vals)

    out = _table(top.get("output"), "[output]", _OUTPUT_FIELDS)
    out_dir = _str(out.get("dir", "releases"), "[output] dir")
    out_fmt = out.get("format", "parquet")
    if out_fmt not in OUTPUT_FORMATS:
        raise SpecError("[output] format must be 'parquet' or 'arrow'")

    qs_raw = top.get("query")
    if not isinstance(qs_raw, list) or not qs_raw:
        raise SpecError("the spec needs at least one [[query]]")
    queries = [_parse_query(q, i) for i, q in enumerate(qs_raw)]
    names = [q.name for q in queries]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SpecError(f"two queries are named {dup[0]!r}: names must be unique")

    return ReleaseSpec(
        path=path, name=name, epsilon=eps, delta=delta, neighbouring=neighbouring,
        ledger=ledger_path, seed=seed, input_paths=paths, input_format=fmt,
        input_columns=columns,
        batch_size=_int(inp.get("batch_size", 1 << 20), "[input] batch_size"),
        csv_types=dict(types), delimiter=delimiter,
        partitions=_int(inp["partitions"], "[input] partitions") if "partitions" in inp
        else None,
        partition_rows=_int(inp["partition_rows"], "[input] partition_rows")
        if "partition_rows" in inp else None,
        spill_dir=(base / _str(spill, "[input] spill_dir")).absolute() if spill else None,
        privacy_unit=unit, max_rows_per_unit=max_rows, max_groups_per_unit=max_groups,
        bounds=bounds, keys=keys, output_dir=out_dir, output_format=out_fmt, queries=queries)


def _parse_query(raw: Any, i: int) -> QuerySpec:
    where = f"[[query]] #{i + 1}"
    if isinstance(raw, dict) and isinstance(raw.get("name"), str):
        where = f"query {raw['name']!r}"
    q = _table(raw, where, _QUERY_FIELDS)
    name = _str(q.get("name", f"query{i + 1}"), f"{where} name")
    if any(c in name for c in "/\\:") or name.startswith("."):
        raise SpecError(f"{where}: name must be usable as a file name")
    agg = q.get("aggregate")
    if agg not in AGGREGATES:
        raise SpecError(f"{where}: aggregate must be one of {', '.join(AGGREGATES)}")
    if "epsilon" not in q:
        raise SpecError(f"{where}: epsilon is required")
    eps = _num(q["epsilon"], f"{where} epsilon", positive=True)
    column = _str(q["column"], f"{where} column") if "column" in q else None
    if agg in ("sum", "mean", "max", "min", "median", "quantile", "histogram") and column is None:
        raise SpecError(f"{where}: aggregate {agg!r} needs a column")
    by = _str_list(q["by"], f"{where} by") if "by" in q else []
    keys = q.get("keys", "public")
    if keys not in ("public", "private"):
        raise SpecError(f"{where}: keys must be 'public' or 'private'")
    if keys == "private" and not by:
        raise SpecError(f"{where}: keys = 'private' needs by")
    bins = None
    if agg == "histogram":
        b = q.get("bins")
        if not isinstance(b, list) or len(b) < 2 or not all(
                isinstance(x, int | float) and not isinstance(x, bool) for x in b):
            raise SpecError(f"{where}: histogram needs bins = [edges...]")
        bins = [float(x) for x in b]
        if by:
            raise SpecError(f"{where}: histograms cannot be grouped (use by on a count)")
    aggs = None
    if agg == "agg":
        a = q.get("aggregates")
        if not isinstance(a, dict) or not a:
            raise SpecError(f"{where}: aggregate 'agg' needs aggregates = {{column = [ops]}}")
        aggs = {str(c): _str_list(v, f"{where} aggregates.{c}") for c, v in a.items()}
        if not by:
            raise SpecError(f"{where}: aggregate 'agg' needs by")
    weights = q.get("weights")
    if weights is not None and (not isinstance(weights, dict) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in weights.values())):
        raise SpecError(f"{where}: weights must map 'column.aggregate' to numbers")
    mech = q.get("mechanism")
    if mech is not None and mech not in ("laplace", "gaussian"):
        raise SpecError(f"{where}: mechanism must be 'laplace' or 'gaussian'")
    ci = q.get("ci")
    if ci is not None:
        ci = _num(ci, f"{where} ci", positive=True)
    qv = q.get("q")
    if agg == "quantile":
        if qv is None:
            raise SpecError(f"{where}: quantile needs q (a level in [0, 1])")
        qv = _num(qv, f"{where} q")
    res = _int(q["resolution"], f"{where} resolution", 2) if "resolution" in q else None
    right = q.get("right", True)
    if not isinstance(right, bool):
        raise SpecError(f"{where}: right must be true or false")
    share = q.get("selection_share")
    if share is not None:
        share = _num(share, f"{where} selection_share", positive=True)
    return QuerySpec(name=name, aggregate=agg, epsilon=eps, column=column, by=by,
                     private_keys=keys == "private",
                     delta=_num(q.get("delta", 0.0), f"{where} delta"), mechanism=mech,
                     ci=ci, bins=bins, right=right, q=qv, resolution=res, aggregates=aggs,
                     weights=dict(weights) if weights else None, selection_share=share)


# -- running -------------------------------------------------------------------------------------

class _CapturingFrame(PrivateFrame):
    """A PrivateFrame that also keeps the Query each call builds (to price a whole run)."""

    captured: list[Query]

    def _run(self, query: Query, dry_run: bool) -> Any:
        self.captured.append(query)
        return super()._run(query, dry_run)


def make_frame(spec: ReleaseSpec, backend: Any, session: Any) -> PrivateFrame:
    """The private frame a spec's queries run on."""
    frame = _CapturingFrame(backend, session, bounds=spec.bounds, keys=spec.keys,
                            privacy_unit=spec.privacy_unit,
                            max_rows_per_unit=spec.max_rows_per_unit,
                            max_groups_per_unit=spec.max_groups_per_unit)
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
    if q.by:
        target: Any = frame.groupby(q.by, keys="private" if q.private_keys else None)
        if q.ci is not None and q.aggregate in ("count", "sum", "mean", "agg"):
            common["ci"] = q.ci
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
        if q.ci is not None:
            common["ci"] = q.ci
        return fn(q.column, q.bins, right=q.right, **common)
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
    from .release import prepare

    frame = make_frame(spec, backend, session)
    assert isinstance(frame, _CapturingFrame)
    explains: list[dict[str, Any]] = []
    costs: list[PrivacyCost] = []
    for q in spec.queries:
        try:
            explains.append(invoke(frame, q, dry_run=True))
        except ValidationError as exc:
            raise type(exc)(f"query {q.name!r}: {exc}") from None
        costs.append(prepare(session, frame.captured[-1], backend).cost)
    store = session.ledger_store
    existing = [PrivacyCost(e["requested_epsilon"], e["requested_delta"], e.get("rho"))
                for e in store.entries()]
    before = session.spent_exact
    spend = session_spend([*existing, *costs])
    after = (max(spend.epsilon, before[0]), max(spend.delta, before[1]))
    return RunPlan(explains, costs, before, after, session.total_exact)


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


__all__ = ["AGGREGATES", "QuerySpec", "ReleaseSpec", "RunPlan", "SpecError", "invoke",
           "load_spec", "make_frame", "parse_spec", "plan_run"]
