"""An object column read by its objects' addresses gives exactly what reading it by value gives
(issue 43, item 9; docs/privacy.md, "Timing").

The address path looks every row up among the objects of a sample of the first rows (Arrow's
``index_in``) and factorizes the rows of the other objects apart. Its codes must be those of
``pd.factorize`` of every address (order of first appearance), and every result built on them
(codes, labels, declared positions, distinct-count hashes) that of reading every row by value,
on adversarial columns: ints equal to the texts' hashes or to their objects' addresses,
``True`` / ``1`` / ``1.0``, ``-0.0``, NaN, None, bytes, a ``str`` subclass, an equal text at
another address and one object in many rows. Text with a few other values is factorized in
pieces (views of the column, no copy): the codes and uniques of the text joined. Grouped
counts of narrow codes (read as unsigned, no drop bucket) equal the drop-bucket count.
"""

from __future__ import annotations

import enum
import itertools
import math
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpframe.backends.blocks import frames as backend
from dpframe.backends.objects import _nulls, factorize_pieces, sample_positions
from dpframe.core.exact import transform


class Colour(str, enum.Enum):  # noqa: UP042 (a str subclass whose str() is not its text)
    RED = "red"


class Tagged(str):
    """A plain subclass of str."""


_RED = "".join(["r", "e", "d"])  # "red" at another address than the literal


def _pool() -> list[object]:
    """Adversarial values: each is one object, placed in many rows."""
    texts = ["red", "k01", "1", "True"]
    return [*texts, _RED, Tagged("red"), Colour.RED, np.str_("k01"),
            hash("red"), hash("k01"), id(texts[0]), id(_RED), 1, True, 1.0, np.int64(1),
            0.0, -0.0, 0, False, math.nan, float("nan"), None, pd.NA, b"red", b"k01",
            [1], 2**70, 2.0**70]


POOL = _pool()


def _column(picks: list[int]) -> np.ndarray:
    values = np.empty(len(picks), dtype=object)
    values[:] = [POOL[i] for i in picks]
    return values


def _by_value(call: Any, values: np.ndarray, *args: Any) -> Any:
    """``call`` on the column read by value (the address path off)."""
    with mock.patch.object(backend, "_BY_OBJECT_ROWS", values.size + 1):
        return call(pd.Series(values, dtype=object), *args)


def _labelled(codes: np.ndarray, labels: list[object]) -> list[Any]:
    return [None if c < 0 else (type(labels[c]), repr(labels[c])) for c in codes]


@st.composite
def _picks(draw: st.DrawFn) -> list[int]:
    """A few objects repeated over the first rows (what a sample finds), then any objects."""
    index = st.integers(0, len(POOL) - 1)
    head = draw(st.lists(index, min_size=1, max_size=3, unique=True))
    rows = draw(st.integers(0, 40))
    return [head[draw(st.integers(0, len(head) - 1))] for _ in range(rows)] + draw(
        st.lists(index, min_size=1, max_size=60))


PICKS = _picks()
SAMPLES = st.sampled_from([0, 4, 12])


@settings(max_examples=300, deadline=None)
@given(PICKS, SAMPLES)
def test_codes_are_those_of_every_address(picks: list[int], sample: int) -> None:
    """The sample's objects first, the others after, each row's code that of factorizing every
    address; the row given for each object holds that object."""
    values = _column(picks)
    with mock.patch.object(backend, "_BY_OBJECT_ROWS", sample):
        shared = backend._by_object(values)
    if values.size < 4 * sample or 4 * len(set(map(id, values[:sample]))) > sample:
        assert shared is None
        return
    assert shared is not None
    rows, one_row = shared
    want_rows, want_objects = pd.factorize(np.array([id(v) for v in values], dtype=np.uint64))
    assert rows.tolist() == want_rows.tolist()
    assert [id(values[r]) for r in one_row] == want_objects.tolist()


def _every_address(values: np.ndarray) -> Any:
    """The address path as it was (``pd.factorize`` of every row's address, the last row of
    each object), after the same sample test: the reference the lookup must equal."""
    if values.size == 0 or values.size < 4 * backend._BY_OBJECT_ROWS:
        return None
    addresses = np.array([id(v) for v in values], dtype=np.uint64)
    if 4 * len(pd.unique(addresses[:backend._BY_OBJECT_ROWS])) > backend._BY_OBJECT_ROWS:
        return None
    rows, objects = pd.factorize(addresses)
    one_row = np.empty(len(objects), dtype=np.intp)
    one_row[rows] = np.arange(values.size, dtype=np.intp)
    return np.asarray(rows, dtype=np.intp), one_row


def _results(values: np.ndarray, sample: int, by_object: Any = None) -> list[Any]:
    """Codes, labels (type and spelling), declared positions and distinct-count hashes."""
    declared = ("red", 1, 0.0, b"k01", "1", hash("red"), 2**70)
    with mock.patch.object(backend, "_BY_OBJECT_ROWS", sample), \
            mock.patch.object(backend, "_by_object", by_object or backend._by_object):
        s = pd.Series(values, dtype=object)
        codes, labels = backend.factorize(s)
        return [codes.tolist(), _labelled(codes, labels),
                *(backend.declared_codes(s, declared, t).tolist() for t in (np.int8, np.int64)),
                *(a.tolist() for a in backend.value_hashes(s))]


@settings(max_examples=300, deadline=None)
@given(PICKS, SAMPLES)
def test_adversarial_columns_give_what_they_gave(picks: list[int], sample: int) -> None:
    """Codes, labels, declared positions and distinct-count hashes are exactly those of the
    address path as it was, and each row's label, declared position and hash those of
    reading every row by value (codes may be numbered otherwise there: the distinct objects,
    not the rows, decide whether text is hashed apart)."""
    values = _column(picks)
    got = _results(values, sample)
    assert got == _results(values, sample, _every_address)
    by_value = _results(values, values.size + 1)
    assert got[1:] == by_value[1:]


@pytest.mark.parametrize("at", [0, 16_383, 16_384, 500_000, 999_999])
def test_a_million_rows_with_one_late_object(at: int) -> None:
    """The benchmark's column (50 text objects repeated, one int) with the int inside and past
    the sample: the codes, labels and declared positions of reading by value."""
    keys = np.array([f"key_{i:02d}" for i in range(50)], dtype=object)
    values = keys[np.random.default_rng(0).integers(0, 50, 1_000_000)]
    values[at] = 7
    rows, _ = backend._by_object(values)
    assert rows.tolist() == pd.factorize(np.array([id(v) for v in values]))[0].tolist()
    codes, labels = backend.factorize(pd.Series(values, dtype=object))
    want_codes, want_labels = _by_value(backend.factorize, values)
    assert np.array_equal(codes, want_codes) and labels == want_labels
    declared = tuple(keys.tolist())
    got = backend.declared_codes(pd.Series(values, dtype=object), declared, np.int8)
    assert np.array_equal(got, _by_value(backend.declared_codes, values, declared, np.int8))
    assert got[at] == -1 and int((got >= 0).sum()) == 999_999


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("ngroups", [2, 50, 126])
def test_narrow_codes_count_as_the_drop_bucket_does(dtype: Any, ngroups: int) -> None:
    """Narrow codes read as unsigned: every negative code (not only -1) and the drop bucket
    ``ngroups`` are dropped, as the drop-bucket count drops them."""
    rng = np.random.default_rng(ngroups)
    low = int(np.iinfo(dtype).min)
    codes = rng.integers(-1, ngroups + 1, 100_000).astype(dtype)
    codes[::997] = low  # the most negative code
    got = transform.grouped_count(codes, ngroups)
    want = np.bincount(np.where((codes < 0) | (codes >= ngroups), ngroups, codes).astype(np.intp),
                       minlength=ngroups + 1)[:ngroups]
    assert got.dtype == np.int64 and got.tolist() == want.tolist()
    mask = rng.random(codes.size) < 0.5
    assert transform.grouped_count(codes, ngroups, mask).tolist() == np.bincount(
        np.where((codes < 0) | (codes >= ngroups) | ~mask, ngroups, codes).astype(np.intp),
        minlength=ngroups + 1)[:ngroups].tolist()


# -- text in pieces: no copy of the column, the codes of the joined text ------------------------

def _joined(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~dpframe.backends.blocks.frames._factorize_objects` as it was: the mapped column
    copied, the other rows given a text value, the text factorized as one array."""
    mapped, rest = backend._mapped_objects(values)
    others = np.concatenate(rest) if rest else np.zeros(0, dtype=np.intp)
    if others.size == 0 or 2 * others.size > mapped.size:
        return pd.factorize(mapped, use_na_sentinel=True)
    other_values = mapped[others]
    text = mapped.copy() if mapped is values else mapped
    is_other = np.zeros(mapped.size, dtype=bool)
    is_other[others] = True
    text[others] = text[int(np.argmin(is_other))]
    codes, uniques = pd.factorize(text, use_na_sentinel=True)
    other_codes, other_uniques = pd.factorize(other_values, use_na_sentinel=True)
    codes[others] = np.where(other_codes >= 0, other_codes + len(uniques), -1)
    return codes, np.concatenate([np.asarray(uniques, dtype=object),
                                  np.asarray(other_uniques, dtype=object)])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["red", "k01", "1", "True", _RED, "x\ud800"]), min_size=2,
                max_size=120),
       st.lists(st.tuples(st.integers(0, 119), st.sampled_from(POOL)), max_size=40),
       st.sampled_from([(8, 2), (16, 4), (1 << 14, 1 << 8)]))
def test_text_in_pieces_gives_the_joined_text(text: list[object],
                                              odd: list[tuple[int, object]],
                                              sizes: tuple[int, int]) -> None:
    """A few other values or mapped leaves (pieces), or more than
    :data:`~dpframe.backends.objects.MAX_PIECES` (the text joined): codes, labels and their
    objects' types are those of the text factorized as one array."""
    values = list(text)
    for at, v in odd:
        values.insert(at % (len(values) + 1), v)
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    with mock.patch.object(backend, "_SEGMENT", sizes[0]), \
            mock.patch.object(backend, "_LEAF", sizes[1]):
        codes, uniques = backend._factorize_objects(arr)
        want_codes, want_uniques = _joined(arr)
    assert codes.tolist() == want_codes.tolist()
    assert [(type(u), repr(u)) for u in uniques] == [(type(u), repr(u)) for u in want_uniques]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", None, "d"]), min_size=1, max_size=60),
       st.lists(st.integers(0, 60), max_size=6))
def test_factorize_pieces_is_factorize_of_the_joined_values(values: list[object],
                                                            cuts: list[int]) -> None:
    """Pieces as slices and as positions, missing values included, some rows in no piece."""
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    bounds = sorted({0, len(values), *(c % (len(values) + 1) for c in cuts)})
    pieces: list[Any] = []
    for k, (a, b) in enumerate(itertools.pairwise(bounds)):
        if k % 3 == 2:
            continue  # rows in no piece: -1
        rows: Any = slice(a, b) if k % 2 else np.arange(a, b)
        pieces.append((rows, arr[a:b]))
    codes, uniques = factorize_pieces(arr.size, pieces)
    covered = np.zeros(arr.size, dtype=bool)
    for rows, _ in pieces:
        covered[rows] = True
    want_codes, want_uniques = pd.factorize(arr[covered], use_na_sentinel=True)
    assert codes[covered].tolist() == want_codes.tolist()
    assert (codes[~covered] == -1).all()
    assert uniques.tolist() == want_uniques.tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=70))
def test_nulls_read_from_the_bitmap_are_arrows(valid: list[bool]) -> None:
    """The nulls found from the validity bitmap (bytes not all valid unpacked) are Arrow's,
    whatever the length (the last byte's padding bits are no rows)."""
    import pyarrow as pa

    arr = pa.array([i if ok else None for i, ok in enumerate(valid)], type=pa.int32())
    want = [i for i, ok in enumerate(valid) if not ok]
    if arr.null_count:
        assert _nulls(arr.buffers()[0], len(arr)).tolist() == want
    else:
        assert not want


def test_sample_positions_through_arrows_general_answer() -> None:
    """An answer with an offset (not what ``index_in`` gives a new array) is read the long way,
    to the same positions."""
    import pyarrow as pa
    import pyarrow.compute as pc

    addresses = np.array([5, 7, 9, 5, 11, 7], dtype=np.uintp)
    sample = np.array([5, 7], dtype=np.uintp)
    want = sample_positions(addresses, sample)
    inner = pc.index_in

    def offset(*args: Any, **kwargs: Any) -> Any:
        found = inner(*args, **kwargs)
        return pa.concat_arrays([pa.array([0], type=found.type), found]).slice(1)

    with mock.patch.object(pc, "index_in", offset):
        got = sample_positions(addresses, sample)
    assert got[0].tolist() == want[0].tolist() == [0, 1, -1, 0, -1, 1]
    assert got[1].tolist() == want[1].tolist() == [2, 4]
