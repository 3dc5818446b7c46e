"""The attacker's second review of the Dask backend: one scenario per finding.

Each release runs on a Dask frame of pandas partitions as they are (one person's row may give
its partition another dtype than the frame's meta); its statistic is what that row could change
besides the noise (REFUSED when the release raised, after the charge). Each one fails on
2e7d55e and passes on the code that fixes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dpf

from .findings import _dask_frame, finding
from .scenario import Built

Parts = list[pd.DataFrame]


def _object_meta_frame(parts: Parts, meta: pd.DataFrame) -> Any:
    """A Dask frame of ``parts`` as they are, with the meta ``meta`` (object columns kept
    object: call inside ``dask.config.set({"dataframe.convert-string": False})``)."""
    import dask
    import dask.dataframe as dd

    return dd.from_delayed([dask.delayed(p) for p in parts], meta=meta, verify_meta=False)


def finding_dask_time_unit_words() -> Callable[[int], Built]:
    """A unit-level Dask count whose unit column is datetime64 in one partition and object in
    the other, because of one person's text id: typed date-times got their nanoseconds as hash
    words and the same values in the object partition the word 0, so the rows of each of the
    40 units (one per partition) met in two buckets (one per partition here) and were bounded
    twice: about 80 rows at ``max_rows_per_unit=1`` where 41 were due. Statistic: the
    count."""
    import dask

    units = pd.Series(pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(40), "s"))

    def frames() -> tuple[Parts, Parts]:
        typed = pd.DataFrame({"u": units})
        odd = pd.DataFrame({"u": pd.Series([*units, "zzz"], dtype=object)})
        return [typed] * 2, [typed, odd]

    def rel(parts: Parts, s: dpf.Session) -> list[float]:
        from unittest import mock

        # one bucket per partition: two partitions make two buckets (the default, one per
        # five partitions, needs ten partitions for the same, at five times the cost)
        with dask.config.set(scheduler="sync"), mock.patch(
                "dpframe.backends.dask.backend.PARTITIONS_PER_BUCKET", 1):
            f = _dask_frame(parts).dp(s, privacy_unit="u", max_rows_per_unit=1)
            return [float(f.count(epsilon=1.0))]

    return finding(frames, rel)


def _sum_with_one_odd_value(values: pd.Series, odd: object) -> Callable[[int], Built]:
    """A Dask sum (bounds [0, 10]) of a column ``x`` whose two partitions hold ``values``, vs
    the same with one person's ``odd`` value appended to the second, typing it object."""
    import dask

    def frames() -> tuple[Parts, Parts]:
        p0 = pd.DataFrame({"x": values})
        odd_part = pd.DataFrame({"x": pd.Series([*values, odd], dtype=object)})
        return [p0, p0], [p0, odd_part]

    def rel(parts: Parts, s: dpf.Session) -> list[float]:
        with dask.config.set(scheduler="sync"):
            f = _dask_frame(parts).dp(s, bounds={"x": (0, 10)})
            return [float(f.sum("x", epsilon=1.0))]

    return finding(frames, rel)


def finding_dask_big_ints_in_object() -> Callable[[int], Built]:
    """A Dask sum of an int64 column (the meta's) holding values past 2**53, bounds [0, 10]:
    one person's text made their partition object, whose integers float64 cannot hold were
    made missing instead of clamped, so the sum fell from 400 to 200. Statistic: the sum."""
    big = pd.Series([2**53 + 2 * i + 1 for i in range(20)], dtype=np.int64)
    return _sum_with_one_odd_value(big, "abc")


def finding_dask_distinct_conformed() -> Callable[[int], Built]:
    """A row-level Dask ``count_distinct`` of an int64 column (the meta's) of values
    2**53 + k: one person's text made their partition object, and the counted column was
    replaced there by its float64 numbers, so half of that partition's 20 values merged
    (30 counted of 40, not 41). Statistic: the distinct count."""
    import dask

    v = [2**53 + i for i in range(40)]

    def frames() -> tuple[Parts, Parts]:
        p0 = pd.DataFrame({"v": pd.Series(v[:20], dtype=np.int64)})
        p1 = pd.DataFrame({"v": pd.Series(v[20:], dtype=np.int64)})
        odd = pd.DataFrame({"v": pd.Series([*v[20:], "abc"], dtype=object)})
        return [p0, p1], [p0, odd]

    def rel(parts: Parts, s: dpf.Session) -> list[float]:
        with dask.config.set(scheduler="sync"):
            return [float(_dask_frame(parts).dp(s).count_distinct("v", epsilon=1.0))]

    return finding(frames, rel)


def finding_dask_key_spelling() -> Callable[[int], Built]:
    """A Dask private-key count of an object key column (the meta's) of True and False:
    the first partition was typed bool, and labelled its keys False and True; one person's
    text key made it object, labelling them 0 and 1 (as pandas does), and the merge kept the
    first partition's labels. Statistic: how many released keys are bools."""
    import dask

    def frames() -> tuple[Parts, Parts]:
        a = pd.DataFrame({"k": [True, False] * 30})
        odd = pd.DataFrame({"k": pd.Series([True, False] * 30 + ["x"], dtype=object)})
        b = pd.DataFrame({"k": pd.Series([True, False] * 30 + ["y"], dtype=object)})
        return [a, b], [odd, b]

    def rel(parts: Parts, s: dpf.Session) -> list[float]:
        meta = pd.DataFrame({"k": pd.Series([], dtype=object)})
        with dask.config.set({"scheduler": "sync", "dataframe.convert-string": False}):
            f = _object_meta_frame(parts, meta).dp(s)
            out = f.groupby("k", keys="private").count(epsilon=1.0, delta=1e-6)
        return [float(sum(isinstance(k, bool | np.bool_) for k in out.index))]

    return finding(frames, rel)


def finding_dask_span_after_charge() -> Callable[[int], Built]:
    """A Dask sum of an int64 column (the meta's): one person's ``np.timedelta64`` made their
    partition object, and reading its numbers took the span for an integer (numpy's spans
    are) whose float() raised TypeError, after the charge. Statistic: the sum (REFUSED when
    it raised)."""
    return _sum_with_one_odd_value(pd.Series(np.arange(20, dtype=np.int64)),
                                   np.timedelta64(3, "s"))


def finding_dask_bool_ones_in_object() -> Callable[[int], Built]:
    """48. A Dask sum of a column the schema types bool, whose first partition holds 1s as
    int64: one person's text made that partition object, where only ``True`` and ``False``
    were read as booleans, so every 1 of it vanished (60 fell to 10). Statistic: the sum."""
    import dask

    meta = pd.DataFrame({"b": pd.Series([], dtype=bool)})
    ones = pd.DataFrame({"b": pd.Series([1] * 50, dtype="int64")})
    trues = pd.DataFrame({"b": pd.Series([True] * 10)})

    def frames() -> tuple[Parts, Parts]:
        odd = pd.DataFrame({"b": pd.Series([*[1] * 50, "x"], dtype=object)})
        return [ones, trues], [odd, trues]

    def rel(parts: Parts, s: dpf.Session) -> list[float]:
        with dask.config.set({"scheduler": "sync", "dataframe.convert-string": False}):
            f = _object_meta_frame(parts, meta).dp(s, bounds={"b": (0, 1)})
            return [float(f.sum("b", epsilon=1.0))]

    return finding(frames, rel)
