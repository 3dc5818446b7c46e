"""The Polars backend: a ``pl.DataFrame`` or ``pl.LazyFrame`` fed to the Arrow batch backend.

* A ``pl.DataFrame`` is handed to Arrow batch by batch (``DataFrame.to_arrow`` on slices of
  the columns a query reads: numbers are not copied, strings are).
* A ``pl.LazyFrame`` is streamed: each release runs ``lazy.select(columns).collect_batches()``
  on Polars' streaming engine and feeds the batches to the backend, so memory is a few batches
  plus the per-group totals (privacy-unit queries spill their partitions to disk like a scan).

Either way a background thread converts the next batch while the backend aggregates one.
Privacy: the backend computes exact aggregates only (no noise); a Polars error message is never
shown (it may quote a value), and a ``pl.Enum``'s categories are dtype metadata, not data.
The ``.dp`` namespace is :mod:`dpframe.fronts.polars`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

try:
    import polars as pl
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("dpframe.backends.polars needs polars: pip install 'dpframe[polars]'") \
        from exc

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ValidationError
from .arrow import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_PARTITION_ROWS,
    PREFETCH,
    ArrowBackend,
    BatchFactory,
    BatchSource,
    prefetch,
)

__all__ = ["PolarsBackend"]

_FAILED = "(its message is not shown: it may quote a value of the data)"


def _unreadable(name: str, dtype: Any) -> ValidationError:
    return ValidationError(f"column {name!r} has the Polars type {dtype}, which dpframe cannot "
                           "read: select or cast the columns to query first")


def _arrow_schema(schema: pl.Schema) -> pa.Schema:
    """The Arrow schema Polars gives these dtypes (an empty frame is converted: no data).

    ``pl.Object`` columns are refused (Polars hands Arrow their pointers), as are dtypes Arrow
    cannot hold: the message names the column, so it can be dropped before ``.dp(...)``."""
    for name, dtype in schema.items():
        if dtype == pl.Object:
            raise _unreadable(name, dtype)
    try:
        return pl.DataFrame(schema=schema).to_arrow().schema
    except Exception:
        pass
    for name, dtype in schema.items():  # find the column Arrow cannot hold
        try:
            pl.DataFrame(schema={name: dtype}).to_arrow()
        except Exception:
            raise _unreadable(name, dtype) from None
    raise ValidationError("cannot convert the frame's schema to Arrow")  # pragma: no cover


def _enum_categories(schema: pl.Schema) -> dict[str, tuple[object, ...]]:
    """The declared categories of ``pl.Enum`` columns (dtype metadata, never data).

    A ``pl.Categorical`` has none: its categories are whatever strings were seen, so like a
    Dask categorical with unknown categories it cannot supply public keys (cast it to
    ``pl.Enum([...])`` or declare the key list)."""
    return {name: tuple(dtype.categories.to_list()) for name, dtype in schema.items()
            if isinstance(dtype, pl.Enum)}


class PolarsBackend(ArrowBackend):
    """The Arrow batch backend over a Polars frame; a ``pl.Enum``'s categories are declared
    categories (public on the analyst's opt-in, ``keys={"col": "categories"}``)."""

    def __init__(self, frame: pl.DataFrame | pl.LazyFrame, *,
                 batch_size: int = DEFAULT_BATCH_SIZE, progress: bool | None = None,
                 partition_rows: int = DEFAULT_PARTITION_ROWS, partitions: int | None = None,
                 spill_dir: str | os.PathLike[str] | None = None) -> None:
        if isinstance(frame, pl.LazyFrame):
            if not hasattr(frame, "collect_batches"):  # Polars before late 2025
                raise ValidationError("streaming a LazyFrame needs a Polars release with "
                                      "LazyFrame.collect_batches: upgrade Polars, or query "
                                      "lazy.collect().dp(...)")
            try:
                schema = frame.collect_schema()
            except Exception as exc:  # a Polars message may quote a value (e.g. CSV inference)
                raise ValidationError(f"cannot resolve the LazyFrame's schema "
                                      f"({type(exc).__name__}) {_FAILED}") from None
            source = BatchSource(_arrow_schema(schema), _lazy_batches(frame))
        elif isinstance(frame, pl.DataFrame):
            schema = frame.schema
            source = BatchSource(_arrow_schema(schema), _frame_batches(frame), rows=frame.height)
        else:
            raise ValidationError("expected a polars DataFrame or LazyFrame")
        self._categories = _enum_categories(schema)
        super().__init__(source, batch_size=batch_size, progress=progress,
                         partition_rows=partition_rows, partitions=partitions,
                         spill_dir=spill_dir)

    def categories(self, column: str) -> tuple[object, ...] | None:
        return self._categories.get(column)


def _to_arrow(frames: Iterable[pl.DataFrame], dictionary: Sequence[str]
              ) -> Iterator[pa.RecordBatch]:
    """Polars frames as Arrow record batches (numbers, booleans and dictionary indices shared
    with Polars; strings copied to ``large_string``), the ``dictionary`` columns (string
    keys, the backend's hint) dictionary-encoded: the same values, hashed once here."""
    for frame in frames:
        for batch in frame.to_arrow().to_batches():
            if dictionary:
                names = batch.schema.names
                batch = pa.RecordBatch.from_arrays(
                    [pc.dictionary_encode(col) if name in dictionary
                     and not pa.types.is_dictionary(col.type) else col
                     for name, col in zip(names, batch.columns, strict=True)], names=names)
            yield batch


def _frame_batches(df: pl.DataFrame) -> BatchFactory:
    def batches(columns: Sequence[str], batch_size: int,
                dictionary: Sequence[str]) -> Iterator[pa.RecordBatch]:
        frame = df.select(list(columns))
        slices = (frame.slice(i, batch_size) for i in range(0, frame.height, batch_size))
        # converted one or two batches ahead by a thread (pyarrow releases the GIL), while
        # the backend aggregates the previous one
        yield from prefetch(lambda: _to_arrow(slices, dictionary), PREFETCH)

    return batches


def _lazy_batches(lf: pl.LazyFrame) -> BatchFactory:
    def stream(columns: Sequence[str], batch_size: int,
               dictionary: Sequence[str]) -> Iterator[pa.RecordBatch]:
        frames: Any = None
        try:
            frames = lf.select(list(columns)).collect_batches(chunk_size=batch_size)
            yield from _to_arrow(frames, dictionary)
        except (Exception, pl.exceptions.PanicException) as exc:
            # any failure of the user's query (a Python function it maps raising on a value,
            # a panic, which is no Exception): its message may quote a value
            raise ValidationError(f"the LazyFrame failed while it was collected "
                                  f"({type(exc).__name__}) {_FAILED}") from None
        finally:
            # stop the query when the release ends early (an error, Ctrl-C): dropping the
            # stream does it in current Polars; earlier ones have an explicit stop()
            stop = getattr(frames, "stop", None)
            if stop is not None:
                with contextlib.suppress(Exception):
                    stop()

    def batches(columns: Sequence[str], batch_size: int,
                dictionary: Sequence[str]) -> Iterator[pa.RecordBatch]:
        yield from prefetch(lambda: stream(columns, batch_size, dictionary), PREFETCH)

    return batches
