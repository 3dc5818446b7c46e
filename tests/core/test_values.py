"""The canonical value model (dpframe.core.exact.values): equality, labels, missing values,
order."""

from __future__ import annotations

import datetime
import decimal
import math
from fractions import Fraction

import numpy as np
import pytest

from dpframe.core.exact.values import canonical, canonicalize, is_canonical, order_key, sorted_order


def test_equal_values_get_one_canonical_label_whatever_their_spelling():
    assert canonical(-0.0, "float") == 0.0 and math.copysign(1, canonical(-0.0, "float")) == 1
    assert canonical(np.float32(-0.0), "float") == 0.0
    for v in (True, 1, 1.0, np.int8(1), np.float64(1.0), np.bool_(True), decimal.Decimal(1),
              Fraction(2, 2)):
        c = canonical(v, "other")
        assert c == 1 and type(c) is int, v
    for v in (0.0, -0.0, False, 0, np.float16(-0.0)):
        c = canonical(v, "other")
        assert c == 0 and type(c) is int, v
    assert canonical(2.5, "other") == 2.5 and type(canonical(2.5, "other")) is float
    assert canonical(decimal.Decimal("2.5"), "other") == 2.5
    assert canonical(Fraction(1, 3), "other") == Fraction(1, 3)  # no float equals it
    assert canonical(np.str_("a"), "other") == "a" and type(canonical(np.str_("a"), "other")) \
        is str
    assert canonical(b"a", "other") == b"a"
    assert canonical(float("inf"), "other") == float("inf")
    assert canonical(True, "bool") is True and canonical(np.int64(3), "int") == 3


@pytest.mark.parametrize("value", [None, float("nan"), np.nan, np.float32("nan"),
                                   decimal.Decimal("NaN"), [1], {"a": 1}, {1}, (1, 2), 1j,
                                   object(), np.datetime64("NaT")])
def test_missing_and_non_conforming_values_are_missing(value):
    assert canonical(value, "other") is None
    assert canonical(value, "float") is None


def test_pandas_missing_values_are_missing():
    pd = pytest.importorskip("pandas")
    assert canonical(pd.NA, "other") is None
    assert canonical(pd.NaT, "other") is None
    assert canonical(pd.NA, "int") is None


def test_canonicalize_merges_equal_values_and_drops_missing():
    remap, labels = canonicalize(["a", "a", "b", None, float("nan")], "other")
    assert list(remap) == [0, 0, 1, -1, -1] and labels == ["a", "b"]
    remap, labels = canonicalize([-0.0, 0.0, 1.5], "float")
    assert list(remap) == [0, 0, 1] and labels == [0.0, 1.5]
    assert math.copysign(1, labels[0]) == 1
    remap, labels = canonicalize([True, 1.0, 1, "1", [1]], "other")
    assert list(remap) == [0, 0, 0, 1, -1] and labels == [1, "1"]
    assert type(labels[0]) is int


def test_label_of_a_class_never_depends_on_which_member_came_first():
    a = datetime.datetime(2020, 1, 1)

    class Stamp(datetime.datetime):  # an equal value of another type (like pd.Timestamp)
        pass

    b = Stamp(2020, 1, 1)
    chosen = set()
    for order in ([a, b], [b, a]):
        _, labels = canonicalize(order, "other")
        assert len(labels) == 1
        chosen.add(type(labels[0]))
    assert len(chosen) == 1  # the same spelling whichever row came first


def test_is_canonical_fast_path_is_exact():
    assert is_canonical(["a", "b"], "other")
    assert not is_canonical(["a", 1], "other")
    assert not is_canonical([np.str_("a")], "other")
    assert is_canonical([1, 2], "int")


def test_total_order_ranks_types_then_values():
    keys = [("z",), (10,), (2.5,), (b"b",), (1,), ("a",), (datetime.date(2020, 1, 1),),
            (float("-inf"),)]
    out = [keys[i] for i in sorted_order(keys)]
    assert out == [(float("-inf"),), (1,), (2.5,), (10,), ("a",), ("z",), (b"b",),
                   (datetime.date(2020, 1, 1),)]
    # numbers sort by value, never as text: one string key cannot switch them to str order
    assert sorted((1, "z", 10, 2), key=order_key) == [1, 2, 10, "z"]


def test_order_is_a_function_of_the_set_alone():
    rng = np.random.default_rng(0)
    keys = [(1, "b"), (1, "a"), (0, "z"), (2.5, "a"), ("x", 1), (b"q", 0)]
    want = [keys[i] for i in sorted_order(keys)]
    for _ in range(20):
        perm = [keys[i] for i in rng.permutation(len(keys))]
        assert [perm[i] for i in sorted_order(perm)] == want


def test_incomparable_values_of_one_family_fall_back_to_repr():
    class Odd:
        def __repr__(self) -> str:
            return "odd"

    keys = [(datetime.datetime(2020, 1, 1),), (datetime.date(2019, 1, 1),)]
    out = [keys[i] for i in sorted_order(keys)]  # date and datetime: two families
    assert out[0] == (datetime.date(2019, 1, 1),)
    assert sorted_order([(Odd(),), (Odd(),)]) == [0, 1]
