"""The engine-neutral block engine: exact aggregates over blocks of whole privacy units.

Every distributed or out-of-core backend computes a release the same way: split the rows
into blocks that each hold whole units, give each block its own generator, compute each
block's exact aggregates alone, and add them. :func:`exact_over_blocks` is that loop, written
once; an engine only says how it yields its blocks (the scan's batches and spilled
partitions, a Dask partition or bucket, a Spark partition after the exchange by unit).

Modules: ``engine`` (the loop and its two halves), ``frames`` (the pandas-frame view: a
block held in a DataFrame, its values under the canonical model, its exact aggregates),
``arrow_columns`` (Arrow column kinds, numbers, factorization, key and unit codes),
``arrow_conform`` (Arrow data conformed to the public schema) and ``arrow_words`` (Arrow
columns as words of the core's one hash, :mod:`dpframe.core.exact.hashing`). The views
import no engine; every engine imports them.
"""

from __future__ import annotations

from .engine import (
                     Entropy,
                     UnitBlock,
                     block_generator,
                     block_substream,
                     exact_of_block,
                     exact_over_blocks,
                     merge_exact,
)

__all__ = ["Entropy", "UnitBlock", "block_generator", "block_substream",
           "exact_of_block", "exact_over_blocks",
           "merge_exact"]
