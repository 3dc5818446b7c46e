"""One block engine: seed a generator per block, compute each block's exact aggregates, merge.

Privacy: nothing here draws noise or reads a sensitivity. Merging is exact because the
blocks hold disjoint privacy units: a unit's rows are all in one block, so contribution
bounding inside a block is bounding over all rows, and the per-group sums, counts and
distinct-value sets of disjoint blocks add up (the core's
:meth:`~dpframe.core.exact.compute.ExactAggregates.merge`, which widens sums near the int64
limit to Python integers). Each block's generator is seeded from entropy the engine draws
from the release's generator in block order, so the selection does not depend on the number
of threads or their schedule, and blocks may run in any order or place.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt

from ...core.exact.compute import ExactAggregates
from ...core.exact.parallel import in_order, one_thread

B = TypeVar("B")
P = TypeVar("P")

#: A block generator's seed, as ``np.random.default_rng`` takes it (an int, or a sequence
#: of ints); None: no generator of its own (the request draws nothing at random, or, as a
#: row-level scan's sampling, draws from the release's generator, one block at a time in order).
Entropy: TypeAlias = int | Sequence[int] | npt.NDArray[np.int64] | None


def block_generator(entropy: Entropy) -> np.random.Generator | None:
    """The block's own generator (None when the request draws nothing at random)."""
    return None if entropy is None else np.random.default_rng(entropy)


def block_substream(gen: np.random.Generator, tag: int) -> np.random.Generator:
    """A second generator of the block whose own generator is ``gen``, independent of it:
    seeded with the block's entropy followed by ``tag`` (``np.random.default_rng([*entropy,
    tag])``), for a block that draws two streams (a Dask bucket: row priorities from its own
    generator, then the pandas backend's bounding and sampling from this one)."""
    seq = gen.bit_generator.seed_seq
    if not isinstance(seq, np.random.SeedSequence):
        raise ValueError("a block's generator is seeded from its entropy (block_generator)")
    entropy = seq.entropy
    words = [int(e) for e in entropy] if isinstance(entropy, (Sequence, np.ndarray)) else \
        [int(entropy)] if entropy is not None else []
    return np.random.default_rng([*words, tag])


@dataclass(frozen=True)
class UnitBlock(Generic[B]):
    """One block of whole units: ``read`` gives its rows (called on the thread that computes
    it, so an engine holds at most as many blocks in memory as it computes at once), and
    ``entropy`` seeds its generator."""

    read: Callable[[], B]
    entropy: Entropy = None


def exact_of_block(block: UnitBlock[B],
                   compute: Callable[[B, np.random.Generator | None], P]) -> P:
    """One block's step of :func:`exact_over_blocks`: its rows read and computed with its own
    generator. A distributed engine runs this on its workers (one task per block) and
    :func:`merge_exact` on the driver: the same engine, split where the data crosses the
    wire."""
    return compute(block.read(), block_generator(block.entropy))


def exact_over_blocks(blocks: Iterable[UnitBlock[B] | None],
                      compute: Callable[[B, np.random.Generator | None], P],
                      add: Callable[[P], None], *, workers: int = 1,
                      tick: Callable[[], None] | None = None, ahead: int | None = None) -> None:
    """Compute each block's exact aggregates with its own generator and ``add`` them in block
    order. ``None`` is an empty block (nothing added, ``tick`` still called). With
    ``workers`` > 1 the blocks are computed on that many threads (each one thread of numpy
    work: :func:`~dpframe.core.exact.parallel.one_thread`), at most ``ahead`` (default
    ``2 * workers``) queued, the results still added in block order, so the totals are the
    same bits either way.

    ``blocks`` is consumed in order on the calling thread: an engine that draws each block's
    entropy from the release's generator as it yields the block draws the same seeds however
    many threads compute them."""
    def own(block: UnitBlock[B] | None) -> P | None:
        if block is None:
            return None
        if workers == 1:  # one block at a time: its rows may use the row threads
            return exact_of_block(block, compute)
        with one_thread():  # one block per worker already: more threads only contend
            return exact_of_block(block, compute)

    def done(partial: P | None) -> None:
        if partial is not None:
            add(partial)
        if tick is not None:
            tick()

    if workers == 1:
        for block in blocks:  # one block in memory at a time
            done(own(block))
        return
    # a block is read when its task starts, not when it is queued: 2 * workers tasks may
    # wait, at most ``workers`` hold rows (no worker idles while an earlier one finishes);
    # blocks already in memory (a scan's batches) bound what they hold by a smaller ``ahead``
    with ThreadPoolExecutor(workers, thread_name_prefix="dpframe-block") as pool, \
            contextlib.closing(in_order(pool, blocks, own, ahead or 2 * workers)) as results:
        for partial in results:
            done(partial)


def merge_exact(parts: Sequence[ExactAggregates]) -> ExactAggregates | None:
    """The sum of blocks' aggregates, folded left to right (None: no block). The blocks must
    hold disjoint units; keys are aligned by the core's merge."""
    if not parts:
        return None
    total = parts[0]
    for p in parts[1:]:
        total = total.merge(p)
    return total
