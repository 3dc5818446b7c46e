"""``BatchSource``: a scan source made of Arrow record batches from a factory.

The extension point of engines that stream Arrow themselves (the Polars front, the DuckDB
backend): they say how to yield record batches of the columns a release reads, and every rule
of the scan (conformance to the public schema, canonical values, bounding, spill,
pre-selection) is the Arrow backend's, not a copy.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Sequence

import pyarrow as pa

from ...errors import ValidationError
from ..blocks.arrow_conform import conform_batch, public_schema
from .source import DatasetSource

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


__all__ = ["BatchFactory", "BatchSource"]
