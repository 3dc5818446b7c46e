"""The one block engine (dpframe/backends/blocks): a generator per block, blocks added in order.

Bounding is random, so a release's bits depend on which generator each block gets: it must be
the one its entropy seeds, whatever the number of threads, and the partials must be added in
block order (the scan's totals and the private-key index follow that order)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from dpframe.backends.blocks import (
    UnitBlock,
    block_generator,
    block_substream,
    exact_of_block,
    exact_over_blocks,
    merge_exact,
)
from dpframe.core.exact.compute import ExactAggregates


def _draw(block: int, gen: np.random.Generator | None) -> tuple[int, int]:
    assert gen is not None
    time.sleep(0.002 * (5 - block % 5))  # later blocks finish first on threads
    return block, int(gen.integers(0, 1 << 62))


def _reader(i: int) -> Callable[[], int]:
    return lambda: i


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_each_block_draws_from_its_own_seed_and_is_added_in_block_order(workers: int) -> None:
    seeds = np.random.default_rng(11).integers(0, 1 << 63, size=(12, 4))
    blocks = [None if i % 4 == 3 else UnitBlock(_reader(i), seeds[i]) for i in range(12)]
    added: list[tuple[int, int]] = []
    ticks = []
    exact_over_blocks(iter(blocks), _draw, added.append, workers=workers,
                      tick=lambda: ticks.append(1))
    want = [(i, int(np.random.default_rng(seeds[i]).integers(0, 1 << 62)))
            for i in range(12) if i % 4 != 3]
    assert added == want  # same bits, same order, with or without threads
    assert len(ticks) == 12  # an empty block (None) still counts as done


def test_blocks_are_read_on_the_computing_thread_and_entropy_none_means_no_generator() -> None:
    readers: list[str] = []

    def read() -> int:
        readers.append(threading.current_thread().name)
        return 1

    out: list[object] = []
    exact_over_blocks([UnitBlock(read)], lambda b, g: (b, g), out.append, workers=2)
    assert out == [(1, None)] and readers[0].startswith("dpframe-block")
    assert block_generator(None) is None
    assert exact_of_block(UnitBlock(lambda: 5, 7), _draw)[1] == \
        int(np.random.default_rng(7).integers(0, 1 << 62))


def _agg(keys: list[tuple[object, ...]], counts: list[int]) -> ExactAggregates:
    return ExactAggregates(keys, {("count",): np.array(counts, dtype=np.int64)}, {})


def test_merge_exact_adds_disjoint_blocks_aligning_their_keys() -> None:
    assert merge_exact([]) is None
    total = merge_exact([_agg([("a",), ("b",)], [1, 2]), _agg([("b",), ("c",)], [10, 20]),
                         _agg([("a",)], [100])])
    assert total is not None
    assert total.keys == [("a",), ("b",), ("c",)]
    assert total.values[("count",)].tolist() == [101, 12, 20]


def test_a_blocks_second_stream_is_seeded_by_its_entropy_and_a_tag() -> None:
    """A Dask bucket draws row priorities from its generator and the pandas backend's from a
    second stream: ``default_rng([*entropy, tag])``, the seeds the buckets always used."""
    for entropy in (5, [5, 7], np.array([1, 2, 3, 4], dtype=np.int64)):
        gen = block_generator(entropy)
        assert gen is not None
        words = [entropy] if isinstance(entropy, int) else list(entropy)
        want = np.random.default_rng([*words, 1]).integers(0, 1 << 62, 4)
        assert block_substream(gen, 1).integers(0, 1 << 62, 4).tolist() == want.tolist()
        first = gen.integers(0, 1 << 62, 4)
        assert first.tolist() != want.tolist()  # not the block's own stream
    with pytest.raises(ValueError, match="seeded"):  # no entropy to extend
        block_substream(np.random.Generator(np.random.PCG64(_Fixed())), 1)


class _Fixed(np.random.bit_generator.ISeedSequence):
    """A seed sequence without entropy (a generator not made by block_generator)."""

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> Any:
        return np.arange(1, n_words + 1, dtype=dtype)


def test_blocks_already_in_memory_are_queued_at_most_ahead() -> None:
    """The scan's streamed batches are read before they are queued: ``ahead`` bounds how many
    the engine holds (the reader's next batch is pulled only when one is added)."""
    pulled: list[int] = []
    added: list[int] = []
    most = [0]

    def blocks() -> Iterator[UnitBlock[int]]:
        for i in range(10):
            pulled.append(i)
            most[0] = max(most[0], len(pulled) - len(added))
            yield UnitBlock(_reader(i))

    exact_over_blocks(blocks(), lambda b, g: b, added.append, workers=2, ahead=3)
    assert added == list(range(10)) and most[0] <= 3
