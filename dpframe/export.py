"""Exports of releases to Arrow tables, Parquet and Arrow IPC files, with provenance.

Every exported table carries the release's provenance as JSON in its schema metadata under
``b"dpframe"`` (format ``dpframe.release`` version 1, documented field by field in
docs/export.md), and each value column repeats its own measure's description in its field
metadata. Any Parquet or Arrow reader can read both without dpframe. Files are written
atomically: to a temporary file in the target folder, flushed to disk, then renamed over the
target, so an interrupted export leaves either the old file or the new one, never a partial one.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ._json import jsonable
from .core.aggregates import released_as
from .core.apply import CoreRelease
from .core.digest import values_digest
from .core.measure import MeasureRelease
from .display.text import coverage_text
from .errors import DPWarning, OutputError, ValidationError

PROVENANCE_KEY = b"dpframe"
FORMAT = "dpframe.release"
FORMAT_VERSION = 1

Result = CoreRelease | pd.Series | pd.DataFrame | int | float


# -- provenance ----------------------------------------------------------------------------------


def _mechanism_text(measures: list[dict[str, Any]], sel: Mapping[str, Any] | None) -> str | None:
    """The distinct mechanisms of the measures and of the key selection, in order."""
    mechs = [str(m.get("mechanism")) for m in measures]
    if sel:
        mechs.append(str(sel.get("mechanism", "key selection")))
    return ", ".join(dict.fromkeys(mechs)) or None


def _keys_kind(by: Sequence[str], sel: Mapping[str, Any] | None) -> str:
    if not by:
        return "none"
    return "private" if sel else "public"


def _document(prov: Mapping[str, Any], layout: _Layout, rows: int) -> dict[str, Any]:
    """The provenance document (docs/export.md) from a release's provenance dict and the
    layout of its exported columns."""
    from ._version import __version__

    measures = [dict(m) for m in prov.get("measures", []) or []]
    for m, cols in zip(measures, layout.outputs, strict=False):
        m["output"] = cols
    sel = prov.get("key_selection")
    single = measures[0] if len(measures) == 1 else {}
    doc: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "library": "dpframe",
        "library_version": prov.get("library_version", __version__),
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "query": prov.get("query"),
        "session": prov.get("session"),
        "ledger_entry": prov.get("ledger_entry"),
        "ledger_head": prov.get("ledger_head"),
        "seeded": bool(prov.get("seeded", False)),
        "neighbouring": prov.get("relation", prov.get("neighbouring")),
        "privacy_unit": prov.get("privacy_unit"),
        "max_rows_per_unit": prov.get("max_rows_per_unit"),
        "max_groups_per_unit": prov.get("max_groups_per_unit"),
        "max_rows_per_group": prov.get("max_rows_per_group"),
        "covers": prov.get("covers") or coverage_text(dict(prov)),
        "epsilon": prov.get("epsilon"),
        "delta": prov.get("delta"),
        "charge_epsilon": prov.get("charge_epsilon", prov.get("epsilon")),
        "charge_delta": prov.get("charge_delta", prov.get("delta")),
        "mechanism": _mechanism_text(measures, sel),
        "noise_scale": single.get("noise_scale"),
        "granularity": single.get("granularity"),
        "ci_level": single.get("ci_level"),
        "ci_half_width": single.get("ci_half_width"),
        "group_by": list(layout.by),
        "keys": _keys_kind(layout.by, sel),
        "key_selection": sel,
        "measures": measures,
        "columns": layout.roles,
        "rows": rows,
        "values_digest": prov.get("values_digest"),
        "derived": bool(prov.get("derived", False)),
    }
    if prov.get("derived_from"):
        doc["derived_from"] = prov["derived_from"]
    if prov.get("diagnostics"):
        doc["diagnostics"] = diagnostics_document(prov["diagnostics"])
    doc.update(layout.extra)
    return jsonable(doc)


#: What the export states of each ``diagnostics=`` count beside its value and interval.
DIAGNOSTICS_STATED = ("epsilon", "mechanism", "sensitivity", "noise_scale", "ci_level",
                      "ci_half_width", "rows_dropped_cap")


def diagnostics_document(diagnostics: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``diagnostics=``'s noisy counts as ``{name: {"value", "lower", "upper", "epsilon",
    "noise_scale", "sensitivity", ...}}`` (from the ``DPInt`` of ``.attrs["dp"]`` or the core's
    dicts alike): public, noisy, charged, with the noise each got and, for ``rows_dropped``,
    the cap ``rows_dropped_cap`` of each unit's term."""
    out: dict[str, dict[str, Any]] = {}
    for name, v in diagnostics.items():
        if isinstance(v, Mapping):
            doc: dict[str, Any] = {k: int(v[k]) for k in ("value", "lower", "upper")}
            stated: Mapping[str, Any] = v
        else:
            doc = {"value": int(v), "lower": int(v.lower), "upper": int(v.upper)}
            stated = v.attrs["dp"]
        doc.update({k: stated[k] for k in DIAGNOSTICS_STATED if k in stated})
        out[name] = doc
    return out


def _with_metadata(table: pa.Table, doc: dict[str, Any],
                   field_docs: Mapping[str, Mapping[str, Any]]) -> pa.Table:
    fields = []
    for f in table.schema:
        if f.name in field_docs:
            meta = dict(f.metadata or {})
            meta[PROVENANCE_KEY] = json.dumps(jsonable(field_docs[f.name]), allow_nan=False,
                                              sort_keys=True).encode()
            f = f.with_metadata(meta)
        fields.append(f)
    meta = dict(table.schema.metadata or {})
    meta[PROVENANCE_KEY] = json.dumps(doc, allow_nan=False, sort_keys=True).encode()
    return pa.Table.from_arrays(table.columns, schema=pa.schema(fields, metadata=meta))


@dataclass
class _Layout:
    """What each exported column is: every source (a release, a pandas result, a number)
    describes its columns here, and :meth:`attach` turns that and the provenance into the
    document and the metadata, the same way for all."""

    by: list[str] = field(default_factory=list)
    roles: dict[str, str] = field(default_factory=dict)
    outputs: list[dict[str, str | None]] = field(default_factory=list)
    field_docs: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def add_keys(self, names: list[str]) -> None:
        self.by = names
        for n in names:
            self.roles[n] = "key"

    def add_bins(self, **extra: Any) -> None:
        """``bin_left`` / ``bin_right`` columns, described in the document by ``extra``."""
        self.roles["bin_left"], self.roles["bin_right"] = "bin_left", "bin_right"
        self.extra.update(extra)

    def add_measure(self, value: str, lower: str | None, upper: str | None,
                    doc: Mapping[str, Any] | None) -> None:
        """One measure's value column and interval columns; ``doc`` goes into the value
        column's field metadata."""
        self.outputs.append({"value": value, "lower": lower, "upper": upper})
        self.roles[value] = "value"
        if doc is not None:
            self.field_docs[value] = doc
        for c, role in ((lower, "lower"), (upper, "upper")):
            if c is not None:
                self.roles[c] = role

    def attach(self, table: pa.Table, prov: Mapping[str, Any]) -> pa.Table:
        """``table`` with the provenance document and the field documents in its metadata:
        the release's claim when its values are the released ones, else marked derived
        (:func:`claimed_provenance`)."""
        digest = exported_digest(table, [o["value"] for o in self.outputs])
        doc = _document(claimed_provenance(prov, digest), self, table.num_rows)
        return _with_metadata(table, doc, self.field_docs)


def exported_digest(table: pa.Table, value_columns: Sequence[str | None]) -> str:
    """The digest (:func:`~dpframe.core.digest.values_digest`) of a table's value columns."""
    return values_digest([table.column(c).to_numpy(zero_copy_only=False)
                          for c in value_columns if c is not None and c in table.column_names])


def claimed_provenance(prov: Mapping[str, Any], digest: str) -> Mapping[str, Any]:
    """``prov`` with the exported values' ``digest``; when the release recorded another digest
    (the values were changed after the release: ``r * 2`` keeps pandas' ``.attrs``), marked
    ``derived``, with no claim to the ledger entry or chain head (``derived_from`` names them),
    and a :class:`~dpframe.errors.DPWarning` says so."""
    if prov.get("derived"):  # post-processed by the front (bounds, describe): no claim
        return {**prov, "values_digest": digest, "ledger_entry": None, "ledger_head": None}
    recorded = prov.get("values_digest")
    if recorded is None or recorded == digest:
        return {**prov, "values_digest": digest}
    warnings.warn(
        "dpframe: these values differ from the release's (changed after it): exported as "
        f"derived, with no claim to ledger entry {prov.get('ledger_entry')}", DPWarning,
        stacklevel=4)
    return {**prov, "values_digest": digest, "derived": True, "ledger_entry": None,
            "ledger_head": None, "derived_from": {"ledger_entry": prov.get("ledger_entry"),
                                                  "values_digest": recorded}}


# -- tables from releases ------------------------------------------------------------------------

def _value_base(column: object, aggregate: object) -> str:
    """A lone measure's value column: its aggregate's ``value_name`` (``count`` for counts and
    histograms), ``count`` without a column, else its column."""
    agg = released_as(aggregate)
    if agg is not None and agg.value_name is not None:
        return agg.value_name
    return "count" if column is None else str(column)


def _value_name(m: MeasureRelease, multi: bool, taken: set[str]) -> str:
    base = _value_base(m.column, m.name)
    if multi or base in taken:
        base = f"{m.column}.{m.name}" if m.column is not None else m.name
    return base


def _core_bounds(m: MeasureRelease) -> tuple[np.ndarray, np.ndarray] | None:
    """A measure's interval bounds, unless it has none (no bounds, or only NaN)."""
    if m.lower is None or m.upper is None:
        return None
    lo = np.asarray(m.lower, dtype=np.float64).reshape(-1)
    hi = np.asarray(m.upper, dtype=np.float64).reshape(-1)
    if lo.size and np.isnan(lo).all() and np.isnan(hi).all():
        return None
    return lo, hi


def _core_keys(r: CoreRelease, hist: MeasureRelease | None, layout: _Layout) -> dict[str, Any]:
    """Key columns (a row per group, or per group and bin), then the bins' edges."""
    n_groups = len(r.keys)
    bins = hist.layout if hist is not None else None
    nbins = len(bins.edges) - 1 if bins is not None else 1
    rep = np.repeat(np.arange(n_groups), nbins)
    data: dict[str, Any] = {col: [r.keys[g][i] for g in rep] for i, col in enumerate(r.by)}
    layout.add_keys(list(r.by))
    if bins is not None:
        edges = np.asarray(bins.edges, dtype=np.float64)
        data["bin_left"] = np.tile(edges[:-1], n_groups)
        data["bin_right"] = np.tile(edges[1:], n_groups)
        layout.add_bins(bins_closed="right" if bins.right else "left",
                        bins_include_lowest=bins.include_lowest)
    return data


def _core_measure(m: MeasureRelease, multi: bool, data: dict[str, Any], layout: _Layout) -> None:
    """A measure's value column and, when it has an interval, ``lower`` / ``upper`` (with
    several measures: ``<value>_lower`` / ``<value>_upper``)."""
    name = _value_name(m, multi, set(data))
    data[name] = np.asarray(m.values).reshape(-1)
    lower = upper = None
    bounds = _core_bounds(m)
    if bounds is not None:
        lower, upper = (f"{name}_lower", f"{name}_upper") if multi else ("lower", "upper")
        data[lower], data[upper] = bounds
    layout.add_measure(name, lower, upper, m.description)


def _key_column(values: Sequence[object]) -> pa.Array:
    """Released keys as one Arrow column, never an error on a key: in their own type when
    Arrow holds them in one (ints within int64, or within uint64 when none is negative, floats,
    text, bytes, booleans, dates), else as text, each key's ``str`` (keys of several types from
    an object column, such as ``1`` and ``"a"``; ints past both; decimals of several scales).
    No key released: a text column (never Arrow's null type)."""
    if len(values) == 0:
        return pa.array([], type=pa.large_string())
    for kind in (None, pa.uint64()):  # inferred, then uint64 (keys of a uint64 column)
        try:
            return pa.array(list(values), type=kind)
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            continue
    return pa.array([str(v) for v in values], type=pa.large_string())


def file_rows(r: CoreRelease) -> int:
    """The rows an export of ``r`` holds (:func:`to_arrow`, ``to_parquet``): one per released
    group (one for an ungrouped release), times a histogram's bins; every measure of an ``agg``
    is a column of the same rows."""
    hist = next((m for m in r.measures if m.layout is not None), None)
    return len(r.keys) * (len(hist.layout.edges) - 1 if hist is not None and hist.layout
                          else 1)


def _table_from_core(r: CoreRelease) -> pa.Table:
    hist = [m for m in r.measures if m.layout is not None]
    if hist and len(r.measures) > 1:  # pragma: no cover - fronts never build this
        raise ValidationError("cannot export a histogram together with other aggregates")
    layout = _Layout()
    data = _core_keys(r, hist[0] if hist else None, layout)
    for m in r.measures:
        _core_measure(m, len(r.measures) > 1, data, layout)
    table = pa.table({k: _key_column(v) if isinstance(v, list) else v
                      for k, v in data.items()})
    return layout.attach(table, r.provenance)


def _flatten(col: object) -> str:
    if isinstance(col, tuple):
        return ".".join(str(c) for c in col if c not in ("", None))
    return str(col)


def _index_columns(df: pd.DataFrame, layout: _Layout) -> pd.DataFrame:
    """The index as leading columns: bin edges for a histogram, else keys (``key``, ``key0``,
    ... when unnamed); a default RangeIndex is dropped."""
    idx = df.index
    if isinstance(idx, pd.IntervalIndex):
        df.insert(0, "bin_left", np.asarray(idx.left, dtype=np.float64))
        df.insert(1, "bin_right", np.asarray(idx.right, dtype=np.float64))
        layout.add_bins(bins_closed=idx.closed)
        return df.reset_index(drop=True)
    if idx.nlevels == 1 and isinstance(idx, pd.RangeIndex) and idx.name is None:
        return df
    names = [n if n is not None else (f"key{i}" if idx.nlevels > 1 else "key")
             for i, n in enumerate(idx.names)]
    df.index = idx.set_names(names)
    layout.add_keys([str(n) for n in names])
    return df.reset_index()


def _present(name: str, columns: list[str]) -> str | None:
    return name if name in columns else None


def _measure_columns(m: Mapping[str, Any], i: int, n: int,
                     value_cols: list[str]) -> tuple[str, str | None, str | None]:
    """The value and interval columns of measure ``i`` of ``n``: a lone measure's are the
    first column, ``lower`` and ``upper``; several are ``column.aggregate`` (else the i-th
    column) with ``_lower`` / ``_upper`` suffixes."""
    if n == 1:
        return value_cols[0], _present("lower", value_cols), _present("upper", value_cols)
    value = f"{m.get('column')}.{m.get('aggregate')}"
    if value not in value_cols and i < len(value_cols):
        value = value_cols[i]
    return value, _present(f"{value}_lower", value_cols), _present(f"{value}_upper", value_cols)


def _table_from_pandas(obj: pd.Series | pd.DataFrame, prov: Mapping[str, Any]) -> pa.Table:
    if isinstance(obj, pd.Series):
        df = obj.to_frame(name=obj.name if obj.name is not None else "value")
    else:
        df = obj.copy()
    df.columns = [_flatten(c) for c in df.columns]
    value_cols = list(df.columns)
    layout = _Layout()
    df = _index_columns(df, layout)
    measures = list(prov.get("measures", []) or [])
    for i, m in enumerate(measures):
        layout.add_measure(*_measure_columns(m, i, len(measures), value_cols), m)
    for c in value_cols:
        layout.roles.setdefault(c, "value")
    return layout.attach(_arrow_of_frame(df, layout.by), prov)


def _arrow_of_frame(df: pd.DataFrame, by: Sequence[str]) -> pa.Table:
    """``df`` as Arrow, its key columns of objects (private keys of an object column) through
    :func:`_key_column`: Arrow would infer one type from them, and fail on keys of several."""
    keys = [c for c in by if c in df.columns and df[c].dtype == object]
    table = pa.Table.from_pandas(df.drop(columns=keys), preserve_index=False)
    for c in keys:
        table = table.add_column(list(df.columns).index(c), c, _key_column(df[c].tolist()))
    return table


def _scalar_bounds(value: int | float, aggregate: object,
                   half_width: object) -> tuple[float, float] | None:
    """A scalar result's own interval, else a count's or sum's published half-width around
    the value."""
    lower, upper = getattr(value, "lower", None), getattr(value, "upper", None)
    if lower is not None and upper is not None:
        return lower, upper
    agg = released_as(aggregate)
    if agg is not None and agg.additive and isinstance(half_width, int | float):
        return float(value) - half_width, float(value) + half_width
    return None


def _table_from_scalar(value: int | float, prov: Mapping[str, Any]) -> pa.Table:
    measures = list(prov.get("measures", []) or [])
    m = measures[0] if len(measures) == 1 else {}
    name = _value_base(m.get("column"), m.get("aggregate"))
    data: dict[str, Any] = {name: [float(value) if isinstance(value, float) else int(value)]}
    lower = upper = None
    bounds = _scalar_bounds(value, m.get("aggregate"), m.get("ci_half_width"))
    if bounds is not None:
        lower, upper = "lower", "upper"
        data[lower], data[upper] = [bounds[0]], [bounds[1]]
    layout = _Layout()
    layout.add_measure(name, lower, upper, m or None)
    return layout.attach(pa.table(data), prov)


def _provenance_of(result: Any, provenance: Any) -> Mapping[str, Any] | None:
    if isinstance(provenance, CoreRelease):
        return provenance.provenance
    if provenance is not None:
        if not isinstance(provenance, Mapping):
            raise ValidationError("provenance must be a dict or a release")
        return provenance
    attrs = getattr(result, "attrs", None)
    if isinstance(attrs, Mapping) and isinstance(attrs.get("dp"), Mapping):
        return attrs["dp"]
    return None


def to_arrow(result: Result, *, provenance: Mapping[str, Any] | CoreRelease | None = None
             ) -> pa.Table:
    """A release as a ``pyarrow.Table`` with its provenance in the schema metadata.

    ``result`` is a scalar result (a number with ``.attrs["dp"]``, and ``.lower`` /
    ``.upper`` when asked with ``ci=``), a grouped result or histogram (pandas object with
    ``.attrs["dp"]``), a release (:class:`~dpframe.core.apply.CoreRelease`), or a plain
    number together with ``provenance=`` (the release it came from, or its provenance dict).
    Key columns come first, then, for histograms, ``bin_left`` / ``bin_right``, then values
    (and ``lower`` / ``upper`` interval bounds when known). See docs/export.md.
    """
    if isinstance(result, CoreRelease):
        return _table_from_core(result)
    prov = _provenance_of(result, provenance)
    if prov is None:
        raise ValidationError(
            "this result carries no provenance: export the result dpframe returned (it keeps "
            ".attrs['dp']), or pass provenance=")
    if isinstance(result, pd.Series | pd.DataFrame):
        return _table_from_pandas(result, prov)
    if isinstance(result, bool) or not isinstance(result, int | float | np.integer
                                                  | np.floating):
        raise ValidationError("to_arrow takes a dpframe result: a number, a pandas Series or "
                              "DataFrame, or a release")
    return _table_from_scalar(result.item() if isinstance(result, np.generic) else result,
                              prov)


# -- atomic files ----------------------------------------------------------------------------------

def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: str | os.PathLike[str], write: Callable[[str], None]) -> Path:
    """Call ``write(tmp)`` on a temporary name in ``path``'s folder, fsync it, and rename it
    over ``path``; on any error or interrupt the temporary file is removed and ``path`` is left
    as it was. An OS error (a full disk, a file-size limit) is raised as
    :class:`~dpframe.errors.OutputError`."""
    target = Path(os.fspath(path)).expanduser().absolute()
    folder = target.parent
    if not folder.is_dir():
        raise ValidationError(f"folder {folder} does not exist")
    if target.is_dir():
        raise ValidationError(f"{target} is a folder")
    tmp = folder / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        write(str(tmp))
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError) and not isinstance(exc, OutputError):
            raise OutputError(_write_failure(target, exc)) from None
        raise
    _fsync_dir(folder)
    return target


def _write_failure(target: Path, exc: OSError) -> str:
    """Why ``target`` could not be written: the OS's reason (a full disk, a file-size limit),
    never the file's content."""
    reason = os.strerror(exc.errno) if exc.errno else type(exc).__name__
    return (f"cannot write {target} ({reason}): the temporary file was removed and "
            f"{target.name} left as it was")


def to_parquet(result: Result, path: str | os.PathLike[str], *,
               provenance: Mapping[str, Any] | CoreRelease | None = None,
               compression: str = "snappy") -> Path:
    """Write a release to a Parquet file atomically (provenance in the key-value metadata
    under ``dpframe``, a CRC checksum on every page); returns the absolute path. A file that
    cannot be written (a full disk) raises :class:`~dpframe.errors.OutputError`."""
    import pyarrow.parquet as pq

    table = to_arrow(result, provenance=provenance)
    return atomic_write(path, lambda tmp: pq.write_table(table, tmp, compression=compression,
                                                         write_page_checksum=True))


def to_ipc(result: Result, path: str | os.PathLike[str], *,
           provenance: Mapping[str, Any] | CoreRelease | None = None) -> Path:
    """Write a release to an Arrow IPC file (Feather v2) atomically; returns the path."""
    table = to_arrow(result, provenance=provenance)

    def write(tmp: str) -> None:
        with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table)

    return atomic_write(path, write)


def _read_file(source: str | os.PathLike[str], whole: bool) -> pa.Table | pa.Schema:
    """A Parquet or Arrow IPC release file (told apart by its magic bytes): its schema, or
    with ``whole`` its table."""
    p = os.fspath(source)
    with open(p, "rb") as f:
        magic = f.read(4)
    if magic == b"PAR1":
        import pyarrow.parquet as pq

        return pq.read_table(p) if whole else pq.read_schema(p)
    with pa.memory_map(p) as src:
        reader = pa.ipc.open_file(src)
        return reader.read_all() if whole else reader.schema


def read_provenance(source: str | os.PathLike[str] | pa.Table | pa.Schema) -> dict[str, Any]:
    """The provenance document of an exported table, Parquet file or Arrow IPC file."""
    if isinstance(source, pa.Table):
        schema = source.schema
    elif isinstance(source, pa.Schema):
        schema = source
    else:
        read = _read_file(source, whole=False)
        schema = read.schema if isinstance(read, pa.Table) else read
    meta = schema.metadata or {}
    if PROVENANCE_KEY not in meta:
        raise ValidationError("no dpframe provenance in this table")
    return json.loads(meta[PROVENANCE_KEY])


def file_values_digest(source: str | os.PathLike[str]) -> str:
    """The digest of the values a release file holds (its provenance's value columns), read
    again from the file: what ``dpframe ledger verify --against`` compares with the ledger's."""
    table = _read_file(source, whole=True)
    assert isinstance(table, pa.Table)
    doc = read_provenance(table)
    outputs = [m.get("output") or {} for m in doc.get("measures") or []]
    return exported_digest(table, [o.get("value") for o in outputs])


__all__ = ["FORMAT", "FORMAT_VERSION", "PROVENANCE_KEY", "atomic_write", "read_provenance",
           "to_arrow", "to_ipc", "to_parquet"]
