"""The Arrow batch backend: exact aggregates of a dataset read batch by batch, in bounded memory.

Nothing here adds noise or computes a sensitivity: every block of rows is factorized and handed
to :func:`dpframe.core.exact.primitives.compute_exact` (the one implementation of clamping,
fixed-point
accumulation, binning and contribution bounding); the blocks' exact aggregates are then added.
Adding is correct because blocks hold disjoint privacy units:

* **Row-level queries** (no ``privacy_unit``): each row is a unit, so any batches are disjoint.
  One streaming pass; memory is one record batch plus the per-group totals.
* **Privacy-unit queries**: a unit's rows may be spread over many batches, and contribution
  bounding must see all of them together. Two passes:

  1. every batch's needed columns are spilled into ``P`` temporary Arrow IPC files, the
     partition of a row being a keyed 64-bit hash of its unit id modulo ``P`` (the key is
     fresh randomness from the session, so nobody can aim many units at one partition); every
     row of a unit lands in the same partition. Rows that every query would drop anyway
     (missing unit, undeclared public key) are not spilled.
  2. each partition is loaded alone, its units factorized, and ``compute_exact`` bounds each
     unit's contributions exactly as the pandas backend does for the whole frame.

  A batch's slice for one partition past twice its expected rows is pre-selected in pass 1
  (``carried``: per unit, the rows that can survive bounding, with their priorities), so one
  unit's row count never sets pass 2's memory.

  Memory is one batch in pass 1 and one partition in pass 2 (``partition_rows`` rows by
  default); disk is the spilled columns, deleted as soon as the release is computed, also on
  error or interrupt. See docs/scan.md.

Modules: ``csv`` (CSV column types: declared, never inferred from the values),
``prefetch`` (a bounded read-ahead thread), ``source`` (``DatasetSource``: discovery, format
inference, metadata, batches), ``batches`` (``BatchSource``: record batches from an engine's
factory: Polars, DuckDB), ``totals`` (adding blocks' aggregates exactly), ``spill`` (the
partition files), ``carried`` (heavy units' pre-selection) and ``backend``
(``ArrowBackend``). The Arrow-column views it reads
blocks with (once ``columns``, ``conform`` and ``words`` here) are the block engine's:
:mod:`dpframe.backends.blocks.arrow_columns`, ``arrow_conform`` and ``arrow_words``.
"""

from __future__ import annotations

from ..blocks.arrow_columns import (
    arrow_kind,
    dictionary_codes,
    factorize,
    numeric_array,
    public_codes,
    unit_codes,
)
from ..blocks.arrow_conform import conform_array, conform_batch, public_schema, public_type
from ..blocks.arrow_words import unit_hash, value_hashes
from .backend import DEFAULT_BATCH_SIZE, DEFAULT_PARTITION_ROWS, MAX_PARTITIONS, ArrowBackend
from .batches import BatchFactory, BatchSource
from .prefetch import PREFETCH, prefetch
from .source import DatasetSource
from .totals import add_into

__all__ = ["DEFAULT_BATCH_SIZE", "DEFAULT_PARTITION_ROWS", "MAX_PARTITIONS", "PREFETCH",
           "ArrowBackend", "BatchFactory", "BatchSource", "DatasetSource", "add_into",
           "arrow_kind", "conform_array", "conform_batch", "dictionary_codes", "factorize",
           "numeric_array", "prefetch", "public_codes", "public_schema", "public_type",
           "unit_codes", "unit_hash", "value_hashes"]
