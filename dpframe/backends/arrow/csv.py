"""CSV column types: declared, never inferred from the values
(docs/privacy.md#behaviour-that-does-not-depend-on-the-data).

A CSV file holds text. A type inferred from the values would let one person's row decide a
query: one ``abc`` in a column of numbers made it text, and a sum over it was refused (a
refusal is a one-bit release); one ``1.5`` made it a float, and the sum switched from the
geometric mechanism (an integer result) to granular Laplace (a float). So every CSV column a
query reads is typed by a declaration: ``dpf.scan(path, types={...})`` (a mapping or a pandera
schema's dtypes), a ``CsvFileFormat`` whose ``ConvertOptions(column_types=...)`` names it, or a
release spec's ``[input] types`` (which the CLI hands to ``dpf.scan`` as ``types=``: one code
path). A query that reads a CSV column without a declared type is refused before anything is
charged; the decision depends on the declaration, the query and the files' header names (public
schema), never on a value.

One rule for the values, in the CLI and in Python alike: each value is converted to its
declared type on its own, and a value that does not spell one is missing
(:func:`~dpframe.backends.arrow.conform.conform_array`). No count of such values exists
anywhere: not in a warning, a log line, an error or the metadata.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds

from ...errors import ValidationError

#: The type names a declaration may use, as messages show them: Arrow's names
#: (``pyarrow.type_for_alias``), the vocabulary of a release spec's ``[input] types`` too.
TYPE_NAMES = "int64, float64, string, bool, date32, timestamp[s], ..."


def _readable(t: pa.DataType) -> bool:
    """Whether a CSV field can spell a value of ``t``: numbers, booleans, text, bytes, dates,
    times, durations, decimals (not null, nested or dictionary types)."""
    kinds = (pa.types.is_integer, pa.types.is_floating, pa.types.is_boolean,
             pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
             pa.types.is_large_binary, pa.types.is_date, pa.types.is_timestamp,
             pa.types.is_time, pa.types.is_duration, pa.types.is_decimal)
    return any(kind(t) for kind in kinds)


def _from_dtype(given: Any) -> pa.DataType | None:
    """The Arrow type of a numpy or pandas dtype (a pandera column's), None when there is none
    a CSV field can spell (object, category)."""
    try:
        dt = pd.api.types.pandas_dtype(given)
    except (TypeError, ValueError):
        return None
    if isinstance(dt, pd.ArrowDtype):
        return dt.pyarrow_dtype
    if isinstance(dt, pd.StringDtype):
        return pa.string()
    if isinstance(dt, pd.DatetimeTZDtype):
        return pa.timestamp(dt.unit, tz=str(dt.tz))
    base = getattr(dt, "numpy_dtype", dt)  # nullable Int64, boolean, Float64
    if not isinstance(base, np.dtype) or base.kind not in "biufmMU":
        return None
    return pa.string() if base.kind == "U" else pa.from_numpy_dtype(base)


def csv_type(column: str, given: object) -> pa.DataType:
    """The declared type of the CSV column ``column``: an Arrow type name (``"int64"``,
    ``"float64"``, ``"string"``, ``"bool"``, ``"date32"``, ``"timestamp[s]"``: the names of
    ``pyarrow.type_for_alias``, as in a release spec), a ``pyarrow.DataType``, or a numpy or
    pandas dtype object (a pandera column's). A ValidationError names the column and the
    declaration, never a value."""
    t: pa.DataType | None
    if isinstance(given, str):
        try:
            t = pa.type_for_alias(given)
        except (ValueError, KeyError):
            raise ValidationError(f"unknown Arrow type name {given!r} for column {column!r}: "
                                  f"use {TYPE_NAMES}") from None
    elif isinstance(given, pa.DataType):
        t = given
    else:
        t = _from_dtype(given)
    if t is None or not _readable(t):
        raise ValidationError(f"column {column!r}: the declared type is none a CSV field can "
                              f"spell; use a number, boolean, text, date or time type "
                              f"({TYPE_NAMES})")
    return t


def csv_types(types: Mapping[str, object]) -> dict[str, pa.DataType]:
    """``types`` (column -> declared type, :func:`csv_type`) as Arrow types."""
    if not isinstance(types, Mapping):
        raise ValidationError("types must be a mapping {column: type name} (or a pandera "
                              "DataFrameSchema)")
    out: dict[str, pa.DataType] = {}
    for column, given in types.items():
        if not isinstance(column, str):
            raise ValidationError("types: columns are named by strings")
        out[column] = csv_type(column, given)
    return out


def _is_csv(d: ds.Dataset) -> bool:
    return isinstance(d, ds.FileSystemDataset) and isinstance(d.format, ds.CsvFileFormat)


def _format_declared(leaf: ds.FileSystemDataset) -> set[str]:
    """The columns the CSV format of ``leaf`` declares (``ConvertOptions(column_types=...)``)."""
    return set(leaf.format.default_fragment_scan_options.convert_options.column_types)


def declare(dataset: ds.Dataset, leaves: Iterable[ds.Dataset], types: Mapping[str, pa.DataType],
            headers: Iterable[Iterable[str]]) -> tuple[ds.Dataset, frozenset[str]]:
    """``dataset`` (whose leaf datasets are ``leaves``; the column names of its CSV files'
    headers are ``headers``) with its CSV columns typed by declaration, and the columns no
    declaration types.

    A column is a CSV column when a CSV file's header names it (a partition key read from the
    paths is not); it is declared by ``types`` or by the ``column_types`` of every CSV format
    of the dataset. A CSV column that is not declared is text in the schema (no type is
    inferred from the values: the first block's values set nothing) and a query that reads it
    is refused (:meth:`DatasetSource.check_declared`)."""
    csv = [d for d in leaves if _is_csv(d)]
    _check_declaration(dataset, csv, types)
    if not csv:
        return dataset, frozenset()
    read = {name for header in headers for name in header}
    declared = set(types).union(set.intersection(*(_format_declared(d) for d in csv)))
    undeclared = frozenset(c for c in dataset.schema.names if c in read and c not in declared)
    if not isinstance(dataset, ds.FileSystemDataset):
        return dataset, undeclared
    return _retyped(dataset, types, undeclared), undeclared


def _check_declaration(dataset: ds.Dataset, csv: list[ds.Dataset],
                       types: Mapping[str, pa.DataType]) -> None:
    """Refuse ``types`` for a dataset without CSV files, for a union (its children declare
    theirs in their formats), and for columns the dataset does not have."""
    if not types:
        return
    if not csv:
        raise ValidationError("column types are declared for CSV files only: Parquet and IPC "
                              "files and tables carry their own types")
    if not isinstance(dataset, ds.FileSystemDataset):
        raise ValidationError("types= declares the columns of CSV files or of one CSV "
                              "dataset: declare a union's in each child's "
                              "CsvFileFormat(convert_options=ConvertOptions("
                              "column_types=...))")
    unknown = [c for c in types if c not in dataset.schema.names]
    if unknown:
        raise ValidationError(f"a type is declared for {unknown[0]!r}, which is not a "
                              "column of the CSV files")


def _retyped(dataset: ds.FileSystemDataset, types: Mapping[str, pa.DataType],
             undeclared: frozenset[str]) -> ds.FileSystemDataset:
    """``dataset`` with the columns of ``types`` in their declared types and the
    ``undeclared`` ones text (its files, format and partitions unchanged)."""
    schema = pa.schema([f.with_type(types[f.name]) if f.name in types
                        else f.with_type(pa.string()) if f.name in undeclared else f
                        for f in dataset.schema])
    if schema.equals(dataset.schema):
        return dataset
    return ds.FileSystemDataset(list(dataset.get_fragments()), schema, dataset.format,
                                dataset.filesystem, root_partition=dataset.partition_expression)


def undeclared_message(columns: Iterable[str]) -> str:
    """The refusal of a query reading the CSV ``columns`` that no declaration types (names
    only, never a value)."""
    cols = list(columns)
    example = ", ".join(f"{c!r}: 'int64'" for c in cols)
    which = (f"column {cols[0]!r} has" if len(cols) == 1 else
             f"columns {', '.join(repr(c) for c in cols)} have")
    return (f"the CSV {which} no declared type: a "
            f"CSV holds text, and a type inferred from the values would let one row decide "
            f"whether a query is answered and by which mechanism. Declare the type of every "
            f"column the queries read: dpf.scan(..., types={{{example}}}) with Arrow type "
            f"names ({TYPE_NAMES})")


__all__ = ["TYPE_NAMES", "csv_type", "csv_types", "declare", "undeclared_message"]
