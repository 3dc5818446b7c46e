"""``dpf.scan``: the pandas-shaped ``.dp`` query API over data read batch by batch.

``dpf.scan("events/*.parquet").dp(session, bounds=..., keys=...)`` returns the same
:class:`~dpframe.frontend.PrivateFrame` as ``df.dp(...)``; only the backend differs
(:class:`~dpframe.backends.arrow.ArrowBackend`). Queries are planned, charged and noised by the
same release path as pandas, so a query has the same sensitivity, noise scale and charge
whichever front runs it. See docs/scan.md for memory and the privacy-unit method.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.dataset as ds

from .backends.arrow import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_PARTITION_ROWS,
    ArrowBackend,
    DatasetSource,
)
from .frontend import PrivateFrame

if TYPE_CHECKING:
    from .session import Session


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
        """Private aggregates over the scan; same options as ``df.dp(...)`` (API.md)."""
        return PrivateFrame(self.backend, session, **options)

    def __repr__(self) -> str:
        files = self.source.files
        where = f"{len(files)} file(s)" if files is not None else "in-memory/dataset"
        return f"Scan({where}, columns={self.columns})"


def scan(source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | ds.Dataset
         | pa.Table | Any, *, columns: Sequence[str] | None = None,
         format: str | ds.FileFormat | None = None, batch_size: int = DEFAULT_BATCH_SIZE,
         progress: bool | None = None, partition_rows: int = DEFAULT_PARTITION_ROWS,
         partitions: int | None = None, spill_dir: str | os.PathLike[str] | None = None,
         partitioning: Any = None) -> Scan:
    """Scan Parquet, CSV or Arrow IPC files (a path, a glob, a folder or a list), a
    ``pyarrow.dataset.Dataset`` or a ``pyarrow.Table``, batch by batch.

    ``columns`` restricts the visible columns; ``format`` overrides the format inferred from
    file names; ``batch_size`` is rows per record batch; ``progress`` shows a progress bar on
    stderr (default: only on a terminal); ``partition_rows`` / ``partitions`` / ``spill_dir``
    tune the two-pass plan of privacy-unit queries (docs/scan.md); ``partitioning`` is passed to
    ``pyarrow.dataset.dataset`` for a folder (e.g. ``"hive"``).
    """
    src = DatasetSource(source, format=format, columns=columns, partitioning=partitioning)
    return Scan(src, batch_size=batch_size, progress=progress, partition_rows=partition_rows,
                partitions=partitions, spill_dir=spill_dir)


__all__ = ["Scan", "scan"]
