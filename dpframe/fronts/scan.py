"""``dpf.scan``: the pandas-shaped ``.dp`` query API over data read batch by batch.

``dpf.scan("events/*.parquet").dp(session, bounds=..., keys=...)`` returns the same
:class:`~dpframe.fronts.frame.PrivateFrame` as ``df.dp(...)``; only the backend differs
(:class:`~dpframe.backends.arrow.ArrowBackend`). Queries are planned, charged and noised by the
same release path as pandas, so a query has the same sensitivity, noise scale and charge
whichever front runs it. See docs/scan.md for memory and the privacy-unit method.

:class:`BatchSource` is the extension point for engines that stream Arrow themselves (the Polars
front, :mod:`dpframe.fronts.polars`): record batches from a factory, with a known schema.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.dataset as ds

from ..backends.arrow import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_PARTITION_ROWS,
    ArrowBackend,
    DatasetSource,
    conform_batch,
    public_schema,
)
from ..errors import ValidationError
from .arguments import document_dp
from .frame import PrivateFrame

if TYPE_CHECKING:
    from ..engine.session import Session


#: ``factory(columns, batch_size, dictionary)``: a fresh iterable of record batches.
BatchFactory = Callable[[Sequence[str], int, Sequence[str]], Iterable[pa.RecordBatch]]


class BatchSource(DatasetSource):
    """A scan source made of record batches from a factory instead of files or a Dataset.

    ``schema`` is the public Arrow schema (names and types only, never read from the data).
    ``batches(columns, batch_size, dictionary)`` returns a *fresh* iterable of
    ``pyarrow.RecordBatch`` holding those columns, about ``batch_size`` rows each, every time it
    is called: a release reads the source once, and several releases (or a backend making two
    passes) call it again. ``dictionary`` names the string key columns the backend would like
    as Arrow dictionaries (it factorizes them once per batch anyway): a hint, like Parquet's
    ``dictionary_columns``, that changes no value. Each batch is conformed to ``schema`` like a
    file's batch (a value of another type is missing, a missing column all missing; nothing
    raises on a value). ``rows``, when known without reading the data, sizes the privacy-unit
    partitions (else ``partitions=`` or the default of 16).
    """

    #: a plain string column is looked up directly; encoding it would hash every row first
    dictionary_public_keys = False

    def __init__(self, schema: pa.Schema, batches: BatchFactory, *,
                 rows: int | None = None) -> None:
        # not DatasetSource.__init__: there is no dataset; every method the backend uses is here
        names = schema.names
        if len(set(names)) != len(names):
            raise ValidationError("a column name appears more than once: give each column a "
                                  "unique name")
        self._schema = public_schema(schema)  # the types every reader handles
        self._factory = batches
        self._rows = rows

    @property
    def arrow_schema(self) -> pa.Schema:
        return self._schema

    @property
    def files(self) -> list[str] | None:
        return None

    def batches(self, columns: Sequence[str], batch_size: int,
                dictionary: Sequence[str] = ()) -> Generator[pa.RecordBatch, None, None]:
        """The factory's batches of ``columns``, conformed to the schema."""
        cols = list(columns)
        expected = pa.schema([self._schema.field(c) for c in cols])
        for batch in self._factory(cols, batch_size, list(dictionary)):
            yield conform_batch(batch, expected)

    def row_count(self) -> int | None:
        return self._rows

    def size_bytes(self) -> int | None:
        return None


class Scan:
    """A dataset read lazily, batch by batch; ``.dp(...)`` starts private queries over it."""

    def __init__(self, source: DatasetSource, *, batch_size: int = DEFAULT_BATCH_SIZE,
                 progress: bool | None = None, partition_rows: int = DEFAULT_PARTITION_ROWS,
                 partitions: int | None = None,
                 spill_dir: str | os.PathLike[str] | None = None) -> None:
        self.source = source
        self.backend = ArrowBackend(source, batch_size=batch_size, progress=progress,
                                    partition_rows=partition_rows, partitions=partitions,
                                    spill_dir=spill_dir)

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema (column names and types: public)."""
        return self.source.arrow_schema

    @property
    def columns(self) -> list[str]:
        """Column names."""
        return list(self.schema.names)

    def dp(self, session: Session | None = None, **options: Any) -> PrivateFrame:
        """Private aggregates over the scan; same options as ``df.dp(...)``
        (docs/reference.md#larger-than-memory-scans)."""
        return PrivateFrame(self.backend, session, **options)

    dp = document_dp(dp, PrivateFrame)

    def __repr__(self) -> str:
        files = self.source.files
        where = f"{len(files)} file(s)" if files is not None else "in-memory/dataset"
        return f"Scan({where}, columns={self.columns})"


def scan(source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | ds.Dataset
         | pa.Table | Any, *, types: Mapping[str, Any] | Any = None,
         columns: Sequence[str] | None = None,
         format: str | ds.FileFormat | None = None, batch_size: int = DEFAULT_BATCH_SIZE,
         progress: bool | None = None, partition_rows: int = DEFAULT_PARTITION_ROWS,
         partitions: int | None = None, spill_dir: str | os.PathLike[str] | None = None,
         partitioning: Any = None) -> Scan:
    """Scan Parquet, CSV or Arrow IPC files (a path, a glob, a folder or a list), a
    ``pyarrow.dataset.Dataset`` or a ``pyarrow.Table``, batch by batch.

    ``types`` declares the types of CSV columns: ``{"income": "float64", "state": "string"}``
    (Arrow type names, as a release spec's ``[input] types``; or ``pyarrow`` types, numpy or
    pandas dtypes), or a pandera ``DataFrameSchema`` (its columns' dtypes). A CSV holds text:
    every CSV column a query reads must be declared (here, or by a ``CsvFileFormat``'s
    ``column_types``), or the query is refused with a ValidationError before any charge, since
    a type inferred from the values would let one row decide whether it is answered and by
    which mechanism. A value that does not spell its declared type is missing, as in the CLI
    (docs/scan.md). Parquet and IPC files carry their types (``types`` is refused there).

    ``columns`` restricts the visible columns; ``format`` overrides the format inferred from
    file names; ``batch_size`` is rows per record batch; ``progress`` shows a progress bar on
    stderr (default: only on a terminal); ``partition_rows`` / ``partitions`` / ``spill_dir``
    tune the two-pass plan of privacy-unit queries (docs/scan.md); ``partitioning`` is passed to
    ``pyarrow.dataset.dataset`` for a folder (e.g. ``"hive"``).
    """
    src = DatasetSource(source, format=format, columns=columns, partitioning=partitioning,
                        types=_declared_types(types))
    return Scan(src, batch_size=batch_size, progress=progress, partition_rows=partition_rows,
                partitions=partitions, spill_dir=spill_dir)


def _declared_types(types: Any) -> Mapping[str, Any] | None:
    """``types=`` as a mapping column -> declared type: a pandera ``DataFrameSchema`` gives
    the dtypes of its columns that have one (its other columns stay undeclared)."""
    columns = getattr(types, "columns", None)
    if types is None or isinstance(types, Mapping) or not isinstance(columns, Mapping):
        return types
    return {name: getattr(col.dtype, "type", col.dtype) for name, col in columns.items()
            if getattr(col, "dtype", None) is not None}


__all__ = ["BatchSource", "Scan", "scan"]
