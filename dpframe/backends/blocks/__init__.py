"""The engine-neutral block engine: exact aggregates over blocks of whole privacy units.

Every distributed or out-of-core backend computes a release the same way: split the rows
into blocks that each hold whole units, give each block its own generator, compute each
block's exact aggregates alone, and add them. :func:`exact_over_blocks` is that loop, written
once; an engine only says how it yields its blocks (the scan's spilled partitions, a Dask
partition or bucket, a Spark partition after the exchange by unit).
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
