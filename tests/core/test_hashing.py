"""The one hash rule (dpframe.core.exact.hashing): equal values get equal words in every engine."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpframe.backends.blocks.arrow_words import column_words
from dpframe.backends.blocks.arrow_words import value_hashes as arrow_value_hashes
from dpframe.backends.blocks.frames import value_hashes as pandas_value_hashes
from dpframe.core.exact.hashing import keyed, keyed_priority, number_words, value_words

TEXTS = ["", "a", "b", "ab", "ba", "abcdefgh", "abcdefghi", "hgfedcba", "é", "日本語", "x" * 100,
         "x" * 99 + "y", "\x00", "\x00\x00", "user-00000001", "user-00000010"]


def test_numbers_equal_as_values_share_a_word() -> None:
    one = value_words([1, 1.0, True, np.int64(1), np.float32(1), Decimal(1), Fraction(1)])
    assert set(one.tolist()) == {1}
    assert value_words([0.0, -0.0, 0]).tolist() == [0, 0, 0]
    big = number_words(np.array([2**63], dtype=np.uint64))
    assert big[0] == number_words(np.array([2.0**63]))[0] == value_words([2**63])[0]
    assert (number_words(np.array([5, -7])) == number_words(np.array([5.0, -7.0]))).all()
    halves = value_words([0.5, Fraction(1, 2), Decimal("0.5")])
    assert len(set(halves.tolist())) == 1


def test_unequal_values_get_distinct_words() -> None:
    values = [*TEXTS, 0, 1, -1, 0.5, 2**64 + 1, 10**400, Fraction(1, 3), b"a", b"ab"]
    words = value_words(values)
    assert len(set(words.tolist())) == len(values)
    assert value_words(["1"])[0] != value_words([1])[0]
    assert value_words(["a"])[0] != value_words([b"a"])[0]


def test_raw_values_that_are_not_numbers_or_text_share_one_bucket() -> None:
    raw = value_words([10**400, None, (1, 2), object(), float("nan")], exact=False)
    assert raw[:3].tolist() == [0, 0, 0] and raw[3] == 0
    assert value_words([complex(3, 0), Decimal(3)], exact=False).tolist() == [3, 3]


@pytest.mark.parametrize("arrow_type", [pa.string(), pa.large_string(), pa.string_view()])
def test_arrow_text_has_the_python_text_words(arrow_type: pa.DataType) -> None:
    want = value_words(TEXTS)
    arr = pa.array(TEXTS, type=arrow_type)
    assert (column_words(arr) == want).all()
    assert (column_words(pa.array(TEXTS).dictionary_encode()) == want).all()
    assert (column_words(pa.array(["pad", *TEXTS]).slice(1)) == want).all()
    assert (column_words(pa.chunked_array([TEXTS[:5], TEXTS[5:]])) == want).all()


def test_arrow_numbers_and_times_follow_the_rule() -> None:
    ints = column_words(pa.array([1, 2, None, 3], pa.int32()))
    floats = column_words(pa.array([1.0, 2.0, None, 3.0]))
    assert (ints[[0, 1, 3]] == floats[[0, 1, 3]]).all()
    assert column_words(pa.array([-0.0]))[0] == column_words(pa.array([0], pa.int8()))[0]
    assert (column_words(pa.array([2**63], pa.uint64())) == number_words(np.array([2.0**63]))).all()
    seconds = column_words(pa.array([86_400], pa.timestamp("s")))
    assert seconds[0] == column_words(pa.array([86_400_000], pa.timestamp("ms")))[0]
    assert seconds[0] == column_words(pa.array([1], pa.date32()))[0]


def test_distinct_hashes_agree_between_pandas_and_arrow() -> None:
    values = ["b", None, "a", "é", "b"]
    h_pd, ok_pd = pandas_value_hashes(pd.Series(values, dtype=object))
    h_pa, ok_pa = arrow_value_hashes(pa.array(values))
    assert (ok_pd == ok_pa).all() and (h_pd[ok_pd] == h_pa[ok_pa]).all()
    h_pd, ok_pd = pandas_value_hashes(pd.Series([1.0, -0.0, np.nan, 2.5]))
    h_pa, ok_pa = arrow_value_hashes(pa.array([1, 0, None, None], pa.int64()))
    assert (h_pd[:2] == h_pa[:2]).all() and ok_pd.tolist() == [True, True, False, True]


def test_dask_unit_words_agree_with_arrow_and_across_dtypes() -> None:
    pytest.importorskip("dask.dataframe")
    from dpframe.backends.dask.words import unit_words

    want = column_words(pa.array(TEXTS))
    for dtype in (object, "str", "string[python]", "category"):
        assert (unit_words(pd.Series(TEXTS, dtype=dtype)) == want).all()
    mixed = unit_words(pd.Series([*TEXTS, 1], dtype=object))
    assert (mixed[:-1] == want).all() and mixed[-1] == 1
    days = pd.Series(pd.to_datetime(["2024-01-01", "2024-01-02"]))
    assert (unit_words(days.astype("datetime64[s]")) == unit_words(days)).all()
    nullable = pd.Series([2**62 + 1, None], dtype="Int64")
    assert unit_words(nullable)[0] == unit_words(pd.Series([2**62 + 1]))[0]


def test_a_units_pairs_never_share_a_priority() -> None:
    units = np.zeros(10_000, dtype=np.int64)
    groups = np.arange(10_000, dtype=np.int64)
    for salt in (0, 1, 2**63 - 1):
        assert np.unique(keyed_priority(units, groups, salt)).size == groups.size


def test_the_key_moves_every_hash_and_keeps_equality() -> None:
    words = value_words(["u1", "u2", "u1"])
    a, b = keyed(words, (1, 2)), keyed(words, (3, 4))
    assert a[0] == a[2] != a[1] and (a != b).all()


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_large_arrays_hash_block_by_block_to_the_same_bits(
        threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past one cache block, keyed hashes and priorities are computed block by block on
    several threads: the bits are the formula's, and the input words are not written."""
    from dpframe.core.exact import parallel
    from dpframe.core.exact.hashing import _GOLDEN, keyed, keyed_priority, mix

    monkeypatch.setattr(parallel, "THREADS", threads)
    monkeypatch.setattr(parallel, "MIN_ROWS_PER_THREAD", parallel.BLOCK_ROWS)
    rng = np.random.default_rng(threads)
    n = 3 * parallel.BLOCK_ROWS + 11
    words = rng.integers(0, 2**63, n).astype(np.uint64)
    before = words.copy()
    key = (12345, 2**63 + 7)
    want = mix(mix(words ^ np.uint64(key[0])) ^ np.uint64(key[1]))
    assert np.array_equal(keyed(words, key), want)
    assert np.array_equal(words, before)
    a, b = rng.integers(-(2**40), 2**40, n), rng.integers(-1, 300, n)
    with np.errstate(over="ignore"):
        ref = mix((a.view(np.uint64) * _GOLDEN + b.view(np.uint64)) ^ np.uint64(99))
    assert np.array_equal(keyed_priority(a, b, 99), ref)
    assert np.array_equal(keyed_priority(a, np.zeros_like(a), 5), keyed_priority(a, 0, 5))


def test_partitions_by_multiply_shift_spread_even_aimed_ids() -> None:
    """Equal words share a partition; ids built to share low or high bits (multiples of 2**40,
    consecutive ids) still spread over the partitions, and the multiplier is odd and full
    width even for a small key."""
    from dpframe.core.exact.hashing import partition_of

    for words in (np.arange(40_000, dtype=np.uint64),
                  np.arange(40_000, dtype=np.uint64) << np.uint64(40)):
        for key in (0, 1, 123, 2**63 + 5):
            p = partition_of(words, key, 16)
            counts = np.bincount(p, minlength=16)
            assert counts.min() > 40_000 / 16 * 0.8, (key, counts)
    w = np.array([7, 7, 2**63, 2**63], dtype=np.uint64)
    p = partition_of(w, 9, 1000)
    assert p.dtype == np.uint16 and p[0] == p[1] and p[2] == p[3] and int(p.max()) < 1000


def test_a_float_s_word_is_not_the_integer_of_its_bits() -> None:
    """Words of non-integral floats are their bits tagged and mixed: 5e-324 (bits 1) and the
    integer 1, or 1.5 and the integer of its bits, are distinct values (distinct counts merged
    them)."""
    pairs = [(5e-324, 1), (1.5, int(np.float64(1.5).view(np.int64)))]
    for f, i in pairs:
        assert number_words(np.array([f]))[0] != number_words(np.array([i]))[0]
        assert value_words([f])[0] != value_words([i])[0]
        assert value_words([f])[0] == number_words(np.array([f]))[0]
    df = pd.DataFrame({"x": [1.0, 5e-324]})
    assert pandas_value_hashes(df["x"])[0].tolist() != [0, 0]
    words = pandas_value_hashes(df["x"])[0]
    assert words[0] != words[1]


_INT64 = st.integers(-(2**63), 2**63 - 1)
_UINT64 = st.integers(0, 2**64 - 1)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), parts=st.sampled_from([2, 3, 7, 8, 25, 32, 300, 4096]),
       key=st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1)))
def test_block_partition_tells_ids_apart_inside_each_partition(data: st.DataObject, parts: int,
                                                               key: tuple[int, int]) -> None:
    """Within one partition the block identifies the id (so a scan's pass 2 may keep the block
    in place of the id), equal ids share one partition, and every partition is in range: for
    signed and unsigned ids up to the dtype's limits, near and far, in narrow dtypes too."""
    from dpframe.core.exact.hashing import block_partition

    dtype, values = data.draw(st.sampled_from([
        (np.int64, _INT64), (np.uint64, _UINT64), (np.int8, st.integers(-128, 127)),
        (np.uint32, st.integers(0, 2**32 - 1)), (np.int64, st.integers(-50, 50))]))
    ids = np.array(data.draw(st.lists(values, min_size=1, max_size=200)), dtype=dtype)
    block, part = block_partition(ids, key, parts)
    assert block.dtype == np.int64 and len(block) == len(part) == len(ids)
    assert int(part.max()) < parts and part.dtype.kind == "u"
    assert block.tolist() == [int(i) // parts for i in ids]  # floor division, exactly
    seen: dict[tuple[int, int], int] = {}
    for i, b, p in zip(ids.tolist(), block.tolist(), part.tolist(), strict=True):
        assert seen.setdefault((p, b), i) == i  # one id per (partition, block)
    by_id = {}
    for i, p in zip(ids.tolist(), part.tolist(), strict=True):
        assert by_id.setdefault(i, p) == p  # an id has one partition


def test_block_partition_spreads_blocks_and_consecutive_ids() -> None:
    """Consecutive ids fill every partition once per block; blocks are shifted by a keyed hash
    (another key, another layout), so ids sharing a stride still spread, and dense ids give each
    partition dense blocks (the point of the layout: pass 2 needs no renumbering table)."""
    from dpframe.core.exact.hashing import block_partition

    ids = np.arange(64_000, dtype=np.int64)
    for parts in (25, 32):
        block, part = block_partition(ids, (11, 12), parts)
        for b in range(0, 64_000 // parts, 97):  # a block's ids: every partition once
            assert sorted(part[block == b].tolist()) == list(range(parts))
        for p in range(parts):  # each partition: every block, so its blocks are dense
            mine = np.unique(block[part == p])
            assert mine.size >= 64_000 // parts - 1 and mine[-1] - mine[0] < mine.size + 1
        strided = ids[::parts]  # one place in every block: the shifts spread them
        counts = np.bincount(block_partition(strided, (11, 12), parts)[1], minlength=parts)
        assert counts.min() > strided.size / parts * 0.7, counts
    one = block_partition(ids, (1, 2), 32)[1]
    assert not np.array_equal(one, block_partition(ids, (3, 4), 32)[1])
    assert np.array_equal(one, block_partition(ids, (1, 2), 32)[1])


def test_integers_past_int64_have_words_of_their_own() -> None:
    """uint64 values past int64 are exact (they were the floats they round to: 2**64 - 1 and
    2**64 - 2 shared a word), the same whether they come as a uint64 array, Python ints,
    numpy scalars, fractions, decimals or the equal floats; none is an int64's word."""
    big = [2**64 - 1, 2**64 - 2, 2**63 + 1, 2**63, 2**64 - 2048]
    words = number_words(np.array(big, dtype=np.uint64))
    assert len(set(words.tolist())) == len(big)
    for spelled in ([int(v) for v in big], [np.uint64(v) for v in big],
                    [Fraction(v) for v in big], [Decimal(v) for v in big]):
        assert value_words(spelled).tolist() == words.tolist()
    floats = np.array([2.0**63, 2.0**64 - 2048])  # exactly the integers 2**63, 2**64 - 2048
    assert number_words(floats).tolist() == [words[3], words[4]]
    small = number_words(np.arange(-1000, 1000, dtype=np.int64))
    assert not set(words.tolist()) & set(small.tolist())
    assert value_words([2**64])[0] not in set(words.tolist())  # past uint64: a digest


@pytest.mark.parametrize("parts", [2, 7, 32, 300])
def test_block_shifts_shared_by_batches_change_no_partition(parts: int) -> None:
    """A release's batches share one table of block shifts (hashed once, grown as batches
    need): every batch gets the layout it gets alone, whatever came before (dense, sparse,
    negative and huge ids, and uint64), and the table grows only as far as a batch would hash
    itself."""
    from dpframe.core.exact.hashing import BlockShifts, block_partition

    rng = np.random.default_rng(parts)
    key = (11, 12)
    shifts = BlockShifts(key, parts)
    batches = [rng.integers(0, 1000, 3000), rng.integers(0, 100_000, 3000),
               rng.integers(0, 200, 50), rng.integers(-500, 500, 3000),
               rng.integers(0, 2**62, 3000), rng.integers(2**63, 2**64 - 1, 100, dtype=np.uint64),
               rng.integers(0, 50_000, 3000)]
    for ids in batches:
        alone = block_partition(ids, key, parts)
        shared = block_partition(ids, key, parts, shifts)
        for a, b in zip(alone, shared, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b)
        assert shifts.covering(0, 1) is not None
    assert shifts.covering(10**9, 10) is None  # no batch of 10 rows hashes a billion blocks
    assert len(shifts.covering(0, 1)) <= 2 * 100_000 // parts + 2
