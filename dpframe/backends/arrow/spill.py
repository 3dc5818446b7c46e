"""Spill files: the partitions of pass 1 of a privacy-unit scan, on disk until pass 2 reads them.

Each partition is one Arrow IPC file in a fresh temporary folder; the folder and every file in
it are deleted when the spill is closed, also on error or interrupt.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ..base import partition_order


def arrange(batch: pa.RecordBatch, partition: npt.NDArray[np.integer[Any]], parts: int
            ) -> tuple[pa.RecordBatch, npt.NDArray[np.intp]]:
    """The rows of ``batch`` ordered by ``partition`` (< 2**16; stable: a radix sort) and where
    each partition starts, for :meth:`SpillFiles.write_arranged`. Pure: it may run on any
    thread while another writes."""
    order, bounds = partition_order(partition, parts)
    # a permutation of the rows: no index can be out of bounds, so none is checked
    return pc.take(batch, pa.array(order), boundscheck=False), bounds


class SpillFiles:
    """``parts`` partition files in a temporary folder under ``where`` (None: the system's)."""

    def __init__(self, parts: int, where: str | None = None) -> None:
        self.parts = parts
        self.folder = Path(tempfile.mkdtemp(prefix="dpframe-spill-", dir=where))
        self._writers: dict[int, pa.ipc.RecordBatchFileWriter] = {}
        self._sinks: dict[int, Any] = {}

    def __enter__(self) -> SpillFiles:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _path(self, part: int) -> Path:
        return self.folder / f"part-{part:05d}.arrow"

    def write_arranged(self, rows: pa.RecordBatch, bounds: npt.NDArray[np.intp],
                       skip: Collection[int] = ()) -> None:
        """Append rows :func:`arrange` ordered by partition: ``rows[bounds[p]:bounds[p + 1]]``
        to the file of partition ``p``, for each partition not in ``skip``."""
        for p in range(self.parts):
            lo, hi = int(bounds[p]), int(bounds[p + 1])
            if hi > lo and p not in skip:
                self.write(p, rows.slice(lo, hi - lo))

    def write(self, part: int, rows: pa.RecordBatch) -> None:
        """Append ``rows`` to the file of partition ``part`` (nothing when there are none)."""
        if rows.num_rows:
            self._writer(part, rows.schema).write_batch(rows)

    def _writer(self, part: int, schema: pa.Schema) -> pa.ipc.RecordBatchFileWriter:
        if part not in self._writers:
            self._sinks[part] = pa.OSFile(os.fspath(self._path(part)), "wb")
            self._writers[part] = pa.ipc.new_file(self._sinks[part], schema)
        return self._writers[part]

    def finish(self) -> None:
        """Close the files written (before they are read)."""
        for p in list(self._writers):
            self._writers.pop(p).close()
            self._sinks.pop(p).close()

    def readers(self) -> Iterator[Callable[[], pa.Table] | None]:
        """For each partition in turn, a function that reads it and deletes its file (None
        when no row went to it): pass 2 reads a partition on the thread that reduces it."""
        for p in range(self.parts):
            yield functools.partial(self._read, p) if self._path(p).exists() else None

    def _read(self, part: int) -> pa.Table:
        path = self._path(part)
        with pa.memory_map(os.fspath(path)) as src:
            table = pa.ipc.open_file(src).read_all().combine_chunks()
        path.unlink()
        return table

    def close(self) -> None:
        """Close what is still open (only after an error) and delete the folder."""
        for w in self._writers.values():
            with contextlib.suppress(Exception):
                w.close()
        for s in self._sinks.values():
            with contextlib.suppress(Exception):
                s.close()
        shutil.rmtree(self.folder, ignore_errors=True)
