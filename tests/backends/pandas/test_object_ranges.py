"""An object column's values are mapped to canonical form range by range, never all for one
value (issue 31, item 4; docs/privacy.md, "Timing").

One non-text value among the text keys of an object column sent every row through a Python
pass of the canonical value model (18.8x the time of the same column without it, at 1e6 rows):
whether one person's row held such a value could be read from a job's duration. Now only the
ranges that hold such a value are cut down to leaves mapped value by value.

* Structural (never timed): the per-value canonicalizer runs on at most one leaf per odd
  value, whatever the column's length, the odd value's type or its position; a column of text
  alone never runs it. Timings are in ``benchmarks/bench_timing.py``.
* Exactness: mapping by ranges gives every row the class and label that mapping every value
  gives (the canonical value model of findings 27-29, 40-41, 49 unchanged), on arrays mixing
  the values that pandas merges differently from the model.
* Objects repeated (issue 43, item 9; finding 67): a column of text alone is pandas' ``str``
  dtype, one person's number makes it ``object``, read by value at 2.7x to 4.8x the time. A
  column that repeats its objects is now read by their addresses, and only one row of each
  object by value (structural: the rows read by value are the distinct objects); exact as
  reading every row by value.
"""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import functools
import math
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any
from unittest import mock
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpframe.backends.blocks import frames as backend
from dpframe.core.exact.values import canonicalize


class Colour(str, enum.Enum):  # noqa: UP042 (a StrEnum's str() is its text already)
    RED = "red"


#: One person's odd value among text keys: every type the model maps (or makes missing).
ODD: dict[str, object] = {
    "int": 7,
    "float": 1.5,
    "bool": True,
    "numpy int": np.int64(3),
    "Decimal": decimal.Decimal("0.10"),
    "signalling Decimal": decimal.Decimal("sNaN"),
    "Fraction": Fraction(1, 3),
    "complex": complex(1, 0),
    "Timestamp": pd.Timestamp("2020-01-01"),
    "datetime64": np.datetime64("2020-01-01T00:00:00.000000001"),
    "aware datetime": dt.datetime(2020, 1, 1, tzinfo=ZoneInfo("Europe/Paris")),
    "time": dt.time(1, tzinfo=ZoneInfo("Europe/Paris")),
    "timedelta64": np.timedelta64(3, "s"),
    "None": None,
    "NaN": math.nan,
    "NaT": pd.NaT,
    "list": [1, 2],
    "tuple": ("a",),
    "dict": {"a": 1},
    "bytes": b"k01",
    "str Enum": Colour.RED,
    "object": object(),
}


@contextmanager
def counted() -> Iterator[list[int]]:
    """The number of values the per-value passes read while the context is open: the
    canonicalizer (:func:`~dpframe.backends.blocks.frames._canonical_object`) and the hashability
    test of the fallback after a hash that raised."""
    calls = [0]

    def counter(inner: Any) -> Any:
        def counting(v: object) -> object:
            calls[0] += 1
            return inner(v)
        return counting

    with mock.patch.object(backend, "_canonical_object", counter(backend._canonical_object)), \
            mock.patch.object(backend, "_hashable_or_none", counter(backend._hashable_or_none)):
        yield calls


def _text(n: int) -> np.ndarray:
    """``n`` distinct text ids in random order (a value met again would be mapped once)."""
    return _ids(n).copy()


@functools.lru_cache(maxsize=4)
def _ids(n: int) -> np.ndarray:
    ids = np.array([f"u{i}" for i in range(n)], dtype=object)
    return ids[np.random.default_rng(0).permutation(n)]


def test_text_alone_maps_no_value() -> None:
    with counted() as calls:
        backend.factorize(pd.Series(_text(100_000), dtype=object))
    assert calls[0] == 0


@pytest.mark.parametrize("name", list(ODD))
@pytest.mark.parametrize("n", [5_000, 50_000])
def test_one_odd_value_maps_one_leaf_at_most(name: str, n: int) -> None:
    """Wherever one odd value sits in a column of ``n`` text keys, the per-value pass maps at
    most one leaf of rows (it mapped all ``n`` before): the work one person's value adds does
    not grow with the column."""
    for at in (0, n // 3, n - 1):
        values = _text(n)
        values[at] = ODD[name]
        with counted() as calls:
            codes, labels = backend.factorize(pd.Series(values, dtype=object))
        assert calls[0] <= backend._LEAF, (name, at, calls[0])
        assert len(labels) >= n - 1 and int((codes >= 0).sum()) >= n - 1


def test_odd_values_each_cost_a_leaf() -> None:
    """k odd values spread over the column map at most k leaves."""
    values = _text(100_000)
    spots = [5, 30_000, 60_001, 99_999]
    for spot, odd in zip(spots, (1, [1], pd.Timestamp(0), complex(1, 0)), strict=True):
        values[spot] = odd
    with counted() as calls:
        backend.factorize(pd.Series(values, dtype=object))
    assert 0 < calls[0] <= len(spots) * backend._LEAF


def test_a_decimal_column_maps_only_the_leaf_of_a_signalling_nan() -> None:
    """A column of Decimals is merged by pandas as the model does; one signalling NaN (whose
    hash raises) costs its leaf, not a pass over every row, and is missing."""
    values = np.array([decimal.Decimal(i % 7) / 10 for i in range(50_000)], dtype=object)
    values[123] = decimal.Decimal("sNaN")
    with counted() as calls:
        codes, labels = backend.factorize(pd.Series(values, dtype=object))
    assert calls[0] <= backend._LEAF
    assert codes[123] == -1 and int((codes >= 0).sum()) == 50_000 - 1
    assert sorted(labels, key=float) == [0, *(decimal.Decimal(i) / 10 for i in range(1, 7))]


# -- exactness: ranges give what mapping every value gives ---------------------------------------

_POOL: list[object] = ["a", "b", "k01", np.str_("a"), Colour.RED, "red", 1, 1.0, True, False, 0,
                       -0.0, 0.0, np.int64(1), np.float32(0.5), 0.5, np.bool_(True),
                       decimal.Decimal("0.10"), decimal.Decimal("0.1"), decimal.Decimal("1"),
                       decimal.Decimal("sNaN"), decimal.Decimal("NaN"), Fraction(1, 10),
                       Fraction(1, 2), complex(1, 0), None, math.nan, pd.NaT, pd.NA,
                       pd.Timestamp("2020-01-01"), np.datetime64("2020-01-01"),
                       dt.datetime(2020, 1, 1), dt.date(2020, 1, 1), dt.timedelta(seconds=3),
                       pd.Timedelta(3, "s"), np.timedelta64(3, "s"), [1], ("a",), b"a", b"k01",
                       dt.time(1), dt.time(1, tzinfo=ZoneInfo("Europe/Paris")), 2**70, 2.0**70]


def _rows(values: list[object], segment: int, leaf: int) -> list[Any]:
    """Each row's canonical label (with its type) after factorizing with these range sizes."""
    with mock.patch.object(backend, "_SEGMENT", segment), \
            mock.patch.object(backend, "_LEAF", leaf):
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        codes, labels = backend.factorize(pd.Series(arr, dtype=object))
    return [None if c < 0 else (type(labels[c]), repr(labels[c])) for c in codes]


def _every_value(values: list[object]) -> list[Any]:
    """The model's label of each row, by its definition: every value mapped to canonical form
    (None: missing), then classes of equal canonical values, each labelled canonically."""
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    codes, uniques = pd.factorize(backend._canonical_values(arr), use_na_sentinel=True)
    remap, labels = canonicalize(list(uniques), "other")
    rows = [-1 if c < 0 else int(remap[c]) for c in codes]
    return [None if c < 0 else (type(labels[c]), repr(labels[c])) for c in rows]


SIZES = st.sampled_from([(4, 1), (8, 2), (16, 4), (3, 3), (10**9, 10**9)])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_POOL), min_size=1, max_size=40), SIZES)
def test_ranges_map_as_every_value_would(values: list[object], sizes: tuple[int, int]) -> None:
    """Every row gets the label (type and value) mapping every value gives (what the code did
    for a mixed column before), whatever pandas would merge across ranges (``complex(1, 0)``
    and 1, ``Decimal('0.10')`` and ``Decimal('0.1')``, a Timestamp and an equal datetime64, a
    str Enum and its text)."""
    assert _rows(values, *sizes) == _every_value(values)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "red", "k01", "1"]), min_size=4, max_size=60),
       st.lists(st.tuples(st.integers(0, 59), st.sampled_from(_POOL)), max_size=5), SIZES)
def test_text_hashed_apart_from_other_values(text: list[object],
                                             odd: list[tuple[int, object]],
                                             sizes: tuple[int, int]) -> None:
    """Mostly text with a few other values: the text is factorized alone (pandas' string
    table) and the other values apart; every row still gets the model's label (a str Enum or
    ``np.str_`` equal to a text key is that key; ``"1"`` is never the number 1)."""
    values = list(text)
    for at, v in odd:
        values.insert(at % (len(values) + 1), v)
    assert _rows(values, *sizes) == _every_value(values)


def test_first_spelling_never_labels_across_ranges() -> None:
    """Findings 27 and 40 across ranges: ``complex(1, 0)`` in one range before the 1s of a
    range pandas takes as they are never makes them missing; ``Decimal('0.10')`` first labels
    the key ``Decimal('0.1')``."""
    values: list[object] = [complex(1, 0), "x", *[1] * 8, decimal.Decimal("0.10"),
                            *[decimal.Decimal("0.1")] * 7]
    rows = _rows(values, 8, 2)
    assert rows[0] is None and rows[2:10] == [(int, "1")] * 8
    assert set(rows[10:]) == {(decimal.Decimal, "Decimal('0.1')")}


# -- objects repeated: one row of each object read by value (finding 67) ------------------------

@contextmanager
def rows_by_value() -> Iterator[list[int]]:
    """The number of rows the by-value factorization reads while the context is open."""
    rows = [0]
    inner = backend._factorize_objects

    def counting(values: np.ndarray) -> Any:
        rows[0] += values.size
        return inner(values)

    with mock.patch.object(backend, "_factorize_objects", counting):
        yield rows


@pytest.mark.parametrize("odd", [7, 1.5, None, b"k01", pd.Timestamp(0), [1]])
def test_repeated_text_objects_with_one_odd_value_read_one_row_each(odd: object) -> None:
    """A million rows of 50 text keys, each key one object repeated (a list of constants,
    ``np.repeat``, a mapping), with one person's value among them: only the distinct objects
    are read by value (51 rows), never the million (the path 2.7x to 4.8x slower than the
    same column of text alone, which pandas types ``str``)."""
    keys = np.array([f"key_{i:02d}" for i in range(50)], dtype=object)
    values = keys[np.random.default_rng(0).integers(0, 50, 1_000_000)]
    values[123_457] = odd
    with rows_by_value() as rows:
        codes, labels = backend.factorize(pd.Series(values, dtype=object))
    assert rows[0] <= 51
    assert sorted(map(str, labels)) == sorted([*keys, *([] if odd in (None, [1]) else
                                                        [str(backend.canonical(odd, "other"))])])
    assert (codes >= 0).sum() == 1_000_000 - (odd is None or isinstance(odd, list))


def test_text_parsed_row_by_row_is_read_by_value() -> None:
    """Distinct objects in every row (text as ``json.loads`` makes it): addresses would save
    nothing, and the sample of the first rows says so (one pass by value, as before)."""
    values = np.array([f"key_{i % 50:02d}" for i in range(100_000)], dtype=object)
    values[5] = 7
    with rows_by_value() as rows:
        backend.factorize(pd.Series(values, dtype=object))
    assert rows[0] == 100_000


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_POOL), min_size=1, max_size=60), SIZES)
def test_objects_repeated_map_as_every_value_would(values: list[object],
                                                   sizes: tuple[int, int]) -> None:
    """Read by addresses (the threshold at 0: every array takes that path), every row gets
    the label mapping every value gives: one object is one value, and equal objects at
    different addresses (``1`` and ``1.0``, ``Decimal('0.10')`` and ``Decimal('0.1')``, a
    Timestamp and an equal datetime64) are still merged by value."""
    with mock.patch.object(backend, "_BY_OBJECT_ROWS", 0):
        assert _rows(values, *sizes) == _every_value(values)
