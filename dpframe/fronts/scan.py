"""``dpf.scan``: the pandas-shaped ``.dp`` query API over data read batch by batch.

``dpf.scan("events/*.parquet").dp(session, bounds=..., keys=...)`` returns the same
:class:`~dpframe.fronts.frame.PrivateFrame` as ``df.dp(...)``; only the backend differs
(:class:`~dpframe.backends.arrow.ArrowBackend`). Queries are planned, charged and noised by the
same release path as pandas, so a query has the same sensitivity, noise scale and charge
whichever front runs it. See docs/scan.md for memory and the privacy-unit method.

:class:`BatchSource` is the extension point for engines that stream Arrow themselves (the Polars
front, :mod:`dpframe.fronts.polars`; the DuckDB backend): record batches from a factory, with a
known schema. It lives in :mod:`dpframe.backends.arrow.batches` and is re-exported here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.dataset as ds

from ..backends.arrow import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_PARTITION_ROWS,
    ArrowBackend,
    BatchFactory,
    BatchSource,
    DatasetSource,
)
from .arguments import document_dp
from .frame import PrivateFrame

if TYPE_CHECKING:
    from ..engine.session import Session


#: The engine knobs' parameter texts, for the fronts that stream Arrow batches (Polars, DuckDB).
ENGINE_DOC = """:param batch_size: rows per batch (default 2**20).
:param progress: show a progress bar (default: on a terminal).
:param partition_rows: rows per partition of a privacy-unit plan.
:param partitions: how many partitions a privacy-unit plan uses.
:param spill_dir: where partitions spill (default: a temporary folder).
"""


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


__all__ = ["ENGINE_DOC", "BatchFactory", "BatchSource", "Scan", "scan"]
