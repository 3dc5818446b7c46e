"""Spill partitions: the rows of pass 1 of a privacy-unit scan, held until pass 2 reads them.

Partitions stay in memory while their rows fit ``memory_bytes``; past that, the largest one held
is written out, and from then on its rows go to its file. Each file is one Arrow IPC file in a
fresh temporary folder; the folder and every file in it are deleted when the spill is closed,
also on error or interrupt. Rows of a partition come back in the order they were written,
whether they were held or written out.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa


class SpillFiles:
    """``parts`` partitions, held in memory up to ``memory_bytes`` of rows, then in files in a
    temporary folder under ``where`` (None: the system's)."""

    def __init__(self, parts: int, where: str | None = None, memory_bytes: int = 0) -> None:
        self.parts = parts
        self.memory_bytes = memory_bytes
        self.folder = Path(tempfile.mkdtemp(prefix="dpframe-spill-", dir=where))
        self._writers: dict[int, pa.ipc.RecordBatchFileWriter] = {}
        self._sinks: dict[int, Any] = {}
        self._held: dict[int, list[pa.RecordBatch]] = {}
        self._held_bytes: dict[int, int] = {}

    def __enter__(self) -> SpillFiles:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _path(self, part: int) -> Path:
        return self.folder / f"part-{part:05d}.arrow"

    def write(self, batch: pa.RecordBatch, partition: npt.NDArray[np.integer[Any]]) -> None:
        """Append each row of ``batch`` to its ``partition`` (< 2**16): held in memory while
        the budget allows, else in the partition's file."""
        order = np.argsort(partition, kind="stable")  # a radix sort on 16 bits
        bounds = np.searchsorted(partition[order], np.arange(self.parts + 1))
        rows: pa.RecordBatch | None = None  # every row in partition order, for the files
        for p in range(self.parts):
            lo, hi = int(bounds[p]), int(bounds[p + 1])
            if hi <= lo:
                continue
            if p in self._writers or not self.memory_bytes:
                rows = batch.take(pa.array(order)) if rows is None else rows
                self._writer(p, batch.schema).write_batch(rows.slice(lo, hi - lo))
            else:  # its own copy of its rows (a slice would keep the whole batch alive)
                piece = batch.take(pa.array(order[lo:hi]))
                self._held.setdefault(p, []).append(piece)
                self._held_bytes[p] = self._held_bytes.get(p, 0) + piece.nbytes
        while self._held and sum(self._held_bytes.values()) > self.memory_bytes:
            self._write_out(max(self._held_bytes, key=self._held_bytes.__getitem__))

    def _write_out(self, part: int) -> None:
        """Move a held partition to its file; its later rows go there too."""
        pieces = self._held.pop(part)
        del self._held_bytes[part]
        writer = self._writer(part, pieces[0].schema)
        for piece in pieces:
            writer.write_batch(piece)

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

    def tables(self) -> Iterator[pa.Table | None]:
        """Each partition in turn (None when no row went to it), let go of once read (a held
        one) or its file deleted (a written one)."""
        for p in range(self.parts):
            held = self._held.pop(p, None)
            if held is not None:
                self._held_bytes.pop(p, None)
                yield pa.Table.from_batches(held).combine_chunks()
                del held
                continue
            path = self._path(p)
            if not path.exists():
                yield None
                continue
            with pa.memory_map(os.fspath(path)) as src:
                table = pa.ipc.open_file(src).read_all()
            yield table.combine_chunks()
            del table  # one partition in memory at a time
            path.unlink()

    def close(self) -> None:
        """Close what is still open (only after an error) and delete the folder."""
        for w in self._writers.values():
            with contextlib.suppress(Exception):
                w.close()
        for s in self._sinks.values():
            with contextlib.suppress(Exception):
                s.close()
        shutil.rmtree(self.folder, ignore_errors=True)
