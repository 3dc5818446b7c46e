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
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ._json import jsonable
from .core.apply import CoreRelease
from .errors import ValidationError

PROVENANCE_KEY = b"dpframe"
FORMAT = "dpframe.release"
FORMAT_VERSION = 1

Result = CoreRelease | pd.Series | pd.DataFrame | int | float


# -- provenance ----------------------------------------------------------------------------------



def _document(prov: Mapping[str, Any], by: Sequence[str], columns: dict[str, str],
              measure_columns: list[dict[str, str | None]], rows: int,
              extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The provenance document (docs/export.md) from a release's provenance dict."""
    from ._version import __version__

    measures = [dict(m) for m in prov.get("measures", []) or []]
    for m, cols in zip(measures, measure_columns, strict=False):
        m["output"] = cols
    sel = prov.get("key_selection")
    mechs = [str(m.get("mechanism")) for m in measures]
    if sel:
        mechs.append(str(sel.get("mechanism", "key selection")))
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
        "seeded": bool(prov.get("seeded", False)),
        "neighbouring": prov.get("relation", prov.get("neighbouring")),
        "privacy_unit": prov.get("privacy_unit"),
        "max_rows_per_unit": prov.get("max_rows_per_unit"),
        "max_groups_per_unit": prov.get("max_groups_per_unit"),
        "epsilon": prov.get("epsilon"),
        "delta": prov.get("delta"),
        "charge_epsilon": prov.get("charge_epsilon", prov.get("epsilon")),
        "charge_delta": prov.get("charge_delta", prov.get("delta")),
        "mechanism": ", ".join(dict.fromkeys(mechs)) or None,
        "noise_scale": single.get("noise_scale"),
        "granularity": single.get("granularity"),
        "ci_level": single.get("ci_level"),
        "ci_half_width": single.get("ci_half_width"),
        "group_by": list(by),
        "keys": "none" if not by else ("private" if sel else "public"),
        "key_selection": sel,
        "measures": measures,
        "columns": columns,
        "rows": rows,
    }
    if extra:
        doc.update(extra)
    return jsonable(doc)


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


# -- tables from releases ------------------------------------------------------------------------

def _value_name(m: Any, multi: bool, taken: set[str]) -> str:
    base = "count" if m.column is None or m.name in ("count", "histogram") else str(m.column)
    if multi or base in taken:
        base = f"{m.column}.{m.name}" if m.column is not None else m.name
    return base


def _table_from_core(r: CoreRelease) -> tuple[pa.Table, dict[str, Any]]:
    by = list(r.by)
    n_groups = len(r.keys)
    hist = [m for m in r.measures if m.bins is not None]
    if hist and len(r.measures) > 1:  # pragma: no cover - fronts never build this
        raise ValidationError("cannot export a histogram together with other aggregates")
    nbins = len(hist[0].bins) - 1 if hist and hist[0].bins is not None else 1
    rep = np.repeat(np.arange(n_groups), nbins)
    data: dict[str, Any] = {}
    roles: dict[str, str] = {}
    for i, col in enumerate(by):
        data[col] = [r.keys[g][i] for g in rep]
        roles[col] = "key"
    if hist:
        edges = np.asarray(hist[0].bins, dtype=np.float64)
        data["bin_left"] = np.tile(edges[:-1], n_groups)
        data["bin_right"] = np.tile(edges[1:], n_groups)
        roles["bin_left"], roles["bin_right"] = "bin_left", "bin_right"
    multi = len(r.measures) > 1
    outputs: list[dict[str, str | None]] = []
    field_docs: dict[str, Any] = {}
    for m in r.measures:
        name = _value_name(m, multi, set(data))
        data[name] = np.asarray(m.values).reshape(-1)
        roles[name] = "value"
        out: dict[str, str | None] = {"value": name, "lower": None, "upper": None}
        if m.lower is not None and m.upper is not None:
            lo = np.asarray(m.lower, dtype=np.float64).reshape(-1)
            hi = np.asarray(m.upper, dtype=np.float64).reshape(-1)
            if lo.size == 0 or not (np.isnan(lo).all() and np.isnan(hi).all()):
                lname, uname = ("lower", "upper") if not multi else (f"{name}_lower",
                                                                     f"{name}_upper")
                data[lname], data[uname] = lo, hi
                roles[lname], roles[uname] = "lower", "upper"
                out.update(lower=lname, upper=uname)
        outputs.append(out)
        field_docs[name] = m.description
    table = pa.table({k: pa.array(v) if isinstance(v, list) else v for k, v in data.items()})
    doc = _document(r.provenance, by, roles, outputs, table.num_rows,
                    {"bins_closed": ("right" if hist[0].right else "left"),
                     "bins_include_lowest": hist[0].include_lowest} if hist else None)
    return _with_metadata(table, doc, field_docs), doc


def _flatten(col: object) -> str:
    if isinstance(col, tuple):
        return ".".join(str(c) for c in col if c not in ("", None))
    return str(col)


def _table_from_pandas(obj: pd.Series | pd.DataFrame, prov: Mapping[str, Any]
                       ) -> tuple[pa.Table, dict[str, Any]]:
    if isinstance(obj, pd.Series):
        name = obj.name if obj.name is not None else "value"
        df = obj.to_frame(name=name)
    else:
        df = obj.copy()
    df.columns = [_flatten(c) for c in df.columns]
    value_cols = list(df.columns)
    roles: dict[str, str] = {}
    extra: dict[str, Any] = {}
    idx = df.index
    by: list[str] = []
    if isinstance(idx, pd.IntervalIndex):
        df.insert(0, "bin_left", np.asarray(idx.left, dtype=np.float64))
        df.insert(1, "bin_right", np.asarray(idx.right, dtype=np.float64))
        roles["bin_left"], roles["bin_right"] = "bin_left", "bin_right"
        extra["bins_closed"] = idx.closed
        df = df.reset_index(drop=True)
    else:
        names = [n if n is not None else (f"key{i}" if idx.nlevels > 1 else "key")
                 for i, n in enumerate(idx.names)]
        if not (idx.nlevels == 1 and isinstance(idx, pd.RangeIndex) and idx.name is None):
            df.index = idx.set_names(names)
            by = [str(n) for n in names]
            df = df.reset_index()
            for n in by:
                roles[n] = "key"
    measures = list(prov.get("measures", []) or [])
    outputs: list[dict[str, str | None]] = []
    field_docs: dict[str, Any] = {}
    for i, m in enumerate(measures):
        if len(measures) == 1:
            value = value_cols[0]
            lower = "lower" if "lower" in value_cols else None
            upper = "upper" if "upper" in value_cols else None
        else:
            value = f"{m.get('column')}.{m.get('aggregate')}"
            if value not in value_cols and i < len(value_cols):
                value = value_cols[i]
            lower = f"{value}_lower" if f"{value}_lower" in value_cols else None
            upper = f"{value}_upper" if f"{value}_upper" in value_cols else None
        outputs.append({"value": value, "lower": lower, "upper": upper})
        roles[value] = "value"
        field_docs[value] = m
        for c, role in ((lower, "lower"), (upper, "upper")):
            if c is not None:
                roles[c] = role
    for c in value_cols:
        roles.setdefault(c, "value")
    table = pa.Table.from_pandas(df, preserve_index=False)
    doc = _document(prov, by, roles, outputs, table.num_rows, extra)
    return _with_metadata(table, doc, field_docs), doc


def _table_from_scalar(value: int | float, prov: Mapping[str, Any]
                       ) -> tuple[pa.Table, dict[str, Any]]:
    measures = list(prov.get("measures", []) or [])
    m = measures[0] if len(measures) == 1 else {}
    agg, col = m.get("aggregate"), m.get("column")
    name = "count" if col is None or agg in ("count", "histogram") else str(col)
    data: dict[str, Any] = {name: [float(value) if isinstance(value, float) else int(value)]}
    out: dict[str, str | None] = {"value": name, "lower": None, "upper": None}
    roles = {name: "value"}
    hw = m.get("ci_half_width")
    lower, upper = getattr(value, "lower", None), getattr(value, "upper", None)
    if lower is not None and upper is not None:  # a scalar result's own interval
        data["lower"], data["upper"] = [lower], [upper]
        out.update(lower="lower", upper="upper")
        roles.update(lower="lower", upper="upper")
    elif agg in ("count", "sum") and isinstance(hw, int | float):
        data["lower"], data["upper"] = [float(value) - hw], [float(value) + hw]
        out.update(lower="lower", upper="upper")
        roles.update(lower="lower", upper="upper")
    table = pa.table(data)
    doc = _document(prov, [], roles, [out], 1)
    return _with_metadata(table, doc, {name: m} if m else {}), doc


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
    ``.attrs["dp"]``), a release (``dpf.last_release(session)``), or a plain number together
    with ``provenance=`` (the release it came from, or its provenance dict). Key columns come
    first, then, for histograms, ``bin_left`` / ``bin_right``, then values (and ``lower`` /
    ``upper`` interval bounds when known). See docs/export.md.
    """
    if isinstance(result, CoreRelease):
        return _table_from_core(result)[0]
    prov = _provenance_of(result, provenance)
    if prov is None:
        raise ValidationError(
            "this result carries no provenance: export a grouped result (it keeps "
            ".attrs['dp']), dpf.last_release(session), or pass provenance=")
    if isinstance(result, pd.Series | pd.DataFrame):
        return _table_from_pandas(result, prov)[0]
    if isinstance(result, bool) or not isinstance(result, int | float | np.integer
                                                  | np.floating):
        raise ValidationError("to_arrow takes a dpframe result: a number, a pandas Series or "
                              "DataFrame, or a release")
    return _table_from_scalar(result.item() if isinstance(result, np.generic) else result,
                              prov)[0]


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
    as it was."""
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
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(folder)
    return target


def to_parquet(result: Result, path: str | os.PathLike[str], *,
               provenance: Mapping[str, Any] | CoreRelease | None = None,
               compression: str = "snappy") -> Path:
    """Write a release to a Parquet file atomically (provenance in the key-value metadata
    under ``dpframe``); returns the absolute path."""
    import pyarrow.parquet as pq

    table = to_arrow(result, provenance=provenance)
    return atomic_write(path, lambda tmp: pq.write_table(table, tmp, compression=compression))


def to_ipc(result: Result, path: str | os.PathLike[str], *,
           provenance: Mapping[str, Any] | CoreRelease | None = None) -> Path:
    """Write a release to an Arrow IPC file (Feather v2) atomically; returns the path."""
    table = to_arrow(result, provenance=provenance)

    def write(tmp: str) -> None:
        with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table)

    return atomic_write(path, write)


def read_provenance(source: str | os.PathLike[str] | pa.Table | pa.Schema) -> dict[str, Any]:
    """The provenance document of an exported table, Parquet file or Arrow IPC file."""
    if isinstance(source, pa.Table):
        schema = source.schema
    elif isinstance(source, pa.Schema):
        schema = source
    else:
        p = os.fspath(source)
        with open(p, "rb") as f:
            magic = f.read(4)
        if magic == b"PAR1":
            import pyarrow.parquet as pq

            schema = pq.read_schema(p)
        else:
            with pa.memory_map(p) as src:
                schema = pa.ipc.open_file(src).schema
    meta = schema.metadata or {}
    if PROVENANCE_KEY not in meta:
        raise ValidationError("no dpframe provenance in this table")
    return json.loads(meta[PROVENANCE_KEY])


__all__ = ["FORMAT", "FORMAT_VERSION", "PROVENANCE_KEY", "atomic_write", "read_provenance",
           "to_arrow", "to_ipc", "to_parquet"]
