"""The one block engine (dpframe/backends/blocks): a generator per block, blocks added in order.

Bounding is random, so a release's bits depend on which generator each block gets: it must be
the one its entropy seeds, whatever the number of threads, and the partials must be added in
block order (the scan's totals and the private-key index follow that order)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

from dpframe.backends.blocks import (
    UnitBlock,
    block_generator,
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
