"""Declarative release specs (TOML) for ``dpframe run``: read, check and resolve.

A spec names an input (CSV, Parquet or Arrow files, or built-in synthetic data), declared
bounds and keys, the privacy unit, and a list of queries with their epsilon; see docs/cli.md for
the format and examples/release.toml for an example. Its structure is checked here, with no
data read (``dpframe.cli.schema``); ``dpframe.cli.runner`` checks the rest and runs it.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from ..core.aggregates import NAMES
from .schema import AGGREGATES, OUTPUT_FORMATS, QueryTable, SpecModel
from .spec_errors import SpecError, spec_error

#: A spec is a small text file; anything larger is some other file given by mistake.
MAX_SPEC_BYTES = 1 << 20


def _taken_by(aggregate: str) -> tuple[str, ...]:
    """The fields of its own a ``[[query]]`` of ``aggregate`` takes: ``agg``'s mapping, or the
    aggregate's arguments (:meth:`~dpframe.core.measure.Aggregate.arguments`)."""
    return ("aggregates",) if aggregate == "agg" else NAMES[aggregate].arguments(aggregate)


#: Fields that only the aggregates taking them use (the others ignore them): ``agg``'s mapping
#: and every aggregate's own arguments (a quantile's ``q``, a histogram's ``bins``).
_OWN_FIELDS = frozenset(("aggregates", *(f for n in NAMES for f in _taken_by(n))))


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
    bins: list[float] | int | None = None
    right: bool = True
    include_lowest: bool | None = None
    q: float | None = None
    resolution: int | None = None
    aggregates: dict[str, list[str]] | None = None
    weights: dict[str, float] | None = None
    selection_share: float | None = None
    diagnostics: float | None = None
    #: ``continual = {...}``: horizon, start or night, fill_gaps, state, integer
    continual: dict[str, Any] | None = None
    postprocess: str | None = None


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
    max_rows_per_group: int | None
    bounds: dict[str, tuple[float, float]]
    keys: dict[str, list[object]]
    output_dir: str
    output_format: str
    queries: list[QuerySpec]
    #: ``"arrow"`` (a scan) or ``"spark"`` (dpframe.backends.spark), and a Spark table
    input_engine: str = "arrow"
    input_table: str | None = None
    #: ``[run] id``: a run id template (dpframe.cli.runids), None for a run without one
    run_id: str | None = None

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

    def columns_read(self) -> list[str]:
        """The input columns the queries read (the privacy unit's too), in spec order."""
        read = [self.privacy_unit] if self.privacy_unit is not None else []
        for q in self.queries:
            read += [*([q.column] if q.column is not None else []), *q.by,
                     *(q.aggregates or {})]
        return list(dict.fromkeys(read))

    def frame_options(self) -> dict[str, Any]:
        """The declarations of the private frame the queries run on (as for ``df.dp``)."""
        return {"bounds": self.bounds, "keys": self.keys, "privacy_unit": self.privacy_unit,
                "max_rows_per_unit": self.max_rows_per_unit,
                "max_groups_per_unit": self.max_groups_per_unit,
                "max_rows_per_group": self.max_rows_per_group}


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
        max_groups_per_unit=m.privacy.max_groups_per_unit,
        max_rows_per_group=m.privacy.max_rows_per_group, bounds=dict(m.bounds),
        keys={k: list(v) for k, v in m.keys.items()}, output_dir=m.output.dir,
        output_format=m.output.format,
        queries=[_query_spec(q, i) for i, q in enumerate(m.query)],
        input_engine=inp.engine, input_table=inp.table, run_id=m.run.id)


def _query_spec(q: QueryTable, i: int) -> QuerySpec:
    """A ``[[query]]`` table as a QuerySpec (fields of other aggregates left out)."""
    unused = _OWN_FIELDS - set(_taken_by(q.aggregate))
    given = q.model_dump(exclude={"name", "keys", "by", "weights", *unused})
    return QuerySpec(name=q.name or f"query{i + 1}", by=list(q.by or []),
                     private_keys=q.keys == "private", weights=q.weights or None, **given)


__all__ = ["AGGREGATES", "MAX_SPEC_BYTES", "GenerateSpec", "QuerySpec", "ReleaseSpec",
           "SpecError", "load_spec", "parse_spec"]
