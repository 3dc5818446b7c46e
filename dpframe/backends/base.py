"""The backend contract: exact aggregates only, never noise.

A backend turns a :class:`~dpframe.core.exact.compute.ComputeRequest` into
:class:`~dpframe.core.exact.compute.ExactAggregates` using the shared transformations of
:mod:`dpframe.core.exact.transform`. Group codes are computed by :func:`group_codes_from_uniques` so
every backend maps declared keys the same way.
"""

from __future__ import annotations

import datetime
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..core.exact.bounding import narrowest_signed
from ..core.exact.compute import ComputeRequest, ExactAggregates

# the column views every engine gives the exact primitives (numbers, words, codes): pandas,
# Arrow scans and Polars, Dask, Spark
from ..core.exact.primitives import Columns as Columns
from ..core.exact.values import ColumnKind


def only_columns(kinds: dict[str, ColumnKind], columns: Sequence[object]
                 ) -> dict[str, ColumnKind]:
    """The kinds of those ``columns`` that are columns (other names, or names that are not
    strings, are left out: validation reports them)."""
    return {c: kinds[c] for c in columns if isinstance(c, str) and c in kinds}


class Backend(Protocol):
    """What a front needs from an engine."""

    def schema(self, columns: Sequence[str] | None = None) -> dict[str, ColumnKind]:
        """Column name -> kind, from dtypes only (public): of every column, or of those among
        ``columns`` that exist (a release reads only its own)."""
        ...

    def bind(self, columns: Sequence[str]) -> Backend:
        """The backend a release uses: reading ``columns`` as they are now (a backend with
        nothing to take in advance returns itself)."""
        ...

    def categories(self, column: str) -> tuple[object, ...] | None:
        """Declared categories of a categorical column (dtype metadata, public), else None."""
        ...

    def exact(self, request: ComputeRequest, gen: np.random.Generator | None) -> ExactAggregates:
        """Exact aggregates per group, after contribution bounding. ``gen`` samples units and
        bounds their contributions; it is None when ``request.draws_at_random`` is false."""
        ...


def declared_positions(uniques: Sequence[object], declared: Sequence[object]) -> npt.NDArray[
        np.int64]:
    """Position of each observed unique value in the declared keys, -1 when undeclared or
    missing. Matching is Python ``==`` (``-0.0`` matches a declared ``0.0``, ``True`` a declared
    ``1``); NaN never matches (declared keys cannot be missing)."""
    pos: dict[object, int] = {}
    for i, k in enumerate(declared):
        pos.setdefault(k, i)
    out = np.empty(len(uniques), dtype=np.int64)
    for i, u in enumerate(uniques):
        try:
            out[i] = pos.get(u, -1)
        except TypeError:  # unhashable
            out[i] = -1
    return out


def group_code_dtype(request: ComputeRequest) -> np.dtype[np.signedinteger[Any]]:
    """The narrowest signed integer type holding every public group code of ``request`` and -1
    (:func:`~dpframe.core.exact.transform.narrowest_signed`). Code columns that travel with each row
    (scan spill files, the Dask exchange) use it."""
    return narrowest_signed(math.prod(len(request.keys[c]) for c in request.by))


def partition_order(partition: npt.NDArray[np.integer[Any]], parts: int
                    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """The rows ordered by ``partition`` (values below ``parts``; stable) and where each
    partition starts: partition ``p`` is ``order[bounds[p]:bounds[p + 1]]``. Arrow's stable
    sort counts small integer ranges (a counting sort, about twice as fast as numpy's radix
    sort on uint8)."""
    # uint64 indices below 2**63: the same words as intp (a view, not a copy)
    order = pc.array_sort_indices(pa.array(partition)).to_numpy().view(np.intp)
    # where each partition starts in the sorted values (a bincount would cast every value to
    # intp first: eight times the bytes of a uint8 partition)
    bounds = np.empty(parts + 1, dtype=np.intp)
    bounds[0], bounds[parts] = 0, partition.size
    # partitions 1 .. parts - 1 are values of the partition's own type: no cast
    bounds[1:parts] = np.searchsorted(partition[order],
                                      np.arange(1, parts, dtype=partition.dtype))
    return order, bounds


#: Errors of making a Python object of a value Python cannot hold (a date past the year 9999,
#: a time of day at the int64 limit, a timestamp its time zone cannot convert).
OUT_OF_PYTHON_RANGE: tuple[type[BaseException], ...] = (OverflowError, ValueError,
                                                        ArithmeticError)


def python_objects(n: int, listed: Callable[[], list[Any]], one: Callable[[int], object],
                   errors: tuple[type[BaseException], ...] = OUT_OF_PYTHON_RANGE
                   ) -> list[object]:
    """The ``n`` values as Python objects: ``listed()`` (one call), or, when some value is one
    Python cannot hold, ``one(i)`` value by value with None (missing) for those. Never an
    error, which could quote the value (docs/privacy.md#what-never-leaks)."""
    try:
        return list(listed())
    except errors:
        pass
    out: list[object] = []
    for i in range(n):  # only when some value is out of Python's range
        try:
            out.append(one(i))
        except errors:
            out.append(None)
    return out


def one_time_spelling(v: object) -> object:
    """The one spelling of a date-time or a time span among the equal values an object column
    or an Arrow column may hold: ``pd.Timestamp`` for ``datetime`` and ``np.datetime64`` (an
    aware one in UTC), ``pd.Timedelta`` for ``timedelta`` and ``np.timedelta64``; any other
    value as it is, and one that pandas cannot hold (out of its range) None: missing.

    Python compares an aware ``datetime`` with another of the same zone by wall time, ignoring
    ``fold``: the two instants of a DST fall-back's repeated hour would be one key. Equal values
    spelled differently (a ``Timestamp`` and an equal ``np.datetime64``; one instant in two
    zones) would be one key whose label, order rank and hash word came from whichever row came
    first, and some pairs hash differently though equal (``np.datetime64`` with nanoseconds).
    One spelling per equality class makes the label, the order and the words a function of
    the class alone (docs/privacy.md#one-canonical-value-model-keys-and-units)."""
    try:
        if isinstance(v, datetime.datetime | np.datetime64):
            t = pd.Timestamp(v)
            if t is pd.NaT:
                return None
            return _finest_unit(t.tz_convert("UTC") if t.tzinfo is not None else t)
        if isinstance(v, datetime.timedelta | np.timedelta64):
            d = pd.Timedelta(v)
            return None if d is pd.NaT else _finest_unit(d)
        if isinstance(v, datetime.time):
            return _time_of_day(v)
    except Exception:  # out of pandas' range, or a time zone whose offset raises or is None
        return None
    return v


#: The resolutions a date-time or span is spelled in: the finest that holds its value.
_UNITS = ("ns", "us", "ms", "s")


def _finest_unit(t: Any) -> Any:
    """``t`` (a ``Timestamp`` or ``Timedelta``) in the finest unit holding it, a function of
    its value alone (a ``datetime`` is read in microseconds, an ``np.datetime64`` in its own
    unit: the unit, which users see, must not come from the first row's spelling)."""
    for unit in _UNITS:
        try:
            return t.as_unit(unit, round_ok=False)
        except (OverflowError, ValueError):  # out of that unit's range, or finer than it
            continue
    return t


def _time_of_day(v: datetime.time) -> datetime.time:
    """A time of day in one spelling: ``fold`` cleared (equality ignores it), an aware one in
    UTC (aware times compare by their UTC time: ``01:00+01:00 == 00:00+00:00``), and one whose
    zone gives no offset (a ``ZoneInfo`` time) naive, as Python compares it."""
    offset = v.utcoffset()
    if offset is None:  # a zone that gives no offset: Python compares it as a naive time
        return v.replace(tzinfo=None, fold=0) if v.tzinfo is not None or v.fold else v
    moment = datetime.datetime.combine(datetime.date(2000, 1, 2), v.replace(tzinfo=None))
    return (moment - offset).time().replace(tzinfo=datetime.UTC)


def one_time_spellings(values: list[object]) -> list[object]:
    """:func:`one_time_spelling` of each value (a list of only other values is returned as
    it is)."""
    if not any(isinstance(v, _TIME_TYPES) for v in values):
        return values
    return [one_time_spelling(v) for v in values]


_TIME_TYPES = (datetime.datetime, np.datetime64, datetime.timedelta, np.timedelta64,
               datetime.time)


#: Spans of integer unit ids from which :func:`offset_codes` checks how many ids are present
#: (per-unit tables past this size leave the CPU caches), and how much wider than the ids
#: present the span must be for the codes to be renumbered densely.
SPARSE_MIN_SPAN, SPARSE_RATIO = 1 << 20, 8


def offset_codes(values: np.ndarray) -> npt.NDArray[np.int64] | None:
    """Codes of integer unit ids (no missing values) as offsets from the smallest, when they
    span a range no wider than twice their number: equal ids get equal codes with no hashing.
    None otherwise (and for other dtypes): the caller factorizes.

    Ids that start at 0 in int64 are their own codes: a read-only view, no copy (a write would
    raise, never reach the caller's data). Ids spread thin over a wide span (one scan
    partition holds about 1/P of the ids of the whole range) are renumbered densely by rank
    among the ids present (a flag per id of the span, ranks written at the present ids, one
    gather), so the per-unit tables of contribution bounding stay small."""
    n = values.size
    if values.dtype.kind not in "iu" or not n:
        return None
    lo, hi = int(values.min()), int(values.max())
    if hi - lo > 2 * n:
        return None
    if lo == 0 and values.dtype == np.int64:
        offsets = values.view()
        offsets.flags.writeable = False
    else:  # within the range, the difference cannot overflow the dtype (unsigned stays >= 0)
        offsets = (values - values.dtype.type(lo)).astype(np.int64, copy=False)
    span = hi - lo + 1
    if span < SPARSE_MIN_SPAN:
        return offsets
    seen = np.zeros(span, dtype=bool)
    seen[offsets] = True
    present = int(np.count_nonzero(seen))
    if span <= SPARSE_RATIO * present:
        return offsets
    # each present id's rank, written at the present ids only (no running count over the
    # span): the table is read back at present ids alone; present <= n < 2**31: int32 ranks
    rank = np.empty(span, dtype=np.int32)
    rank[np.flatnonzero(seen)] = np.arange(present, dtype=np.int32)
    return rank[offsets].astype(np.int64)


def remap_codes(codes: npt.NDArray[np.int64], table: npt.NDArray[np.int64]
                ) -> npt.NDArray[np.int64]:
    """``table[code]`` for each code, -1 where the code is -1 (also when ``table`` is empty:
    a column whose every value is missing)."""
    return np.append(np.asarray(table, dtype=np.int64), -1)[codes]


def combine_codes(codes: list[npt.NDArray[np.int64]], sizes: list[int]) -> npt.NDArray[np.int64]:
    """Mixed-radix combination of per-column codes; -1 if any column is -1."""
    out = np.zeros(codes[0].size, dtype=np.int64)
    bad = np.zeros(codes[0].size, dtype=bool)
    for c, k in zip(codes, sizes, strict=True):
        out = out * k + c
        bad |= c < 0
    out[bad] = -1
    return out


def public_key_codes(positions: Callable[[int, npt.DTypeLike], npt.NDArray[Any]],
                     declared: Sequence[Sequence[object]], dtype: npt.DTypeLike = np.int64
                     ) -> npt.NDArray[np.signedinteger[Any]]:
    """Group codes of public keys, in the order of :func:`public_key_list` and in ``dtype`` (a
    signed type holding every code and -1), from each key column's positions among its
    declared keys: ``positions(i, t)`` gives column ``i``'s in type ``t`` (-1: missing or
    undeclared). One column's positions are the codes, asked for in ``dtype`` directly (no
    int64 array to cast); several are combined in int64."""
    if len(declared) == 1:
        return positions(0, dtype)
    return combine_codes([positions(i, np.int64) for i in range(len(declared))],
                         [len(d) for d in declared]).astype(dtype, copy=False)


def observed_key_codes(per_col: list[npt.NDArray[np.int64]], observed: list[list[object]]
                       ) -> tuple[npt.NDArray[np.int64], list[tuple[object, ...]]]:
    """Group codes and key list of private keys, from each key column's codes (-1: missing)
    and observed labels: one column's as they are; for several, the combinations present, in
    order of first appearance (a row missing any key gets -1)."""
    if len(per_col) == 1:
        return per_col[0], [(u,) for u in observed[0]]
    sizes = [max(len(o), 1) for o in observed]
    combined = combine_codes(per_col, sizes)
    ok = combined >= 0
    codes = np.full(combined.size, -1, dtype=np.int64)
    if not ok.any():
        return codes, []
    sub, uniq = pd.factorize(combined[ok])
    codes[ok] = sub
    return codes, [_key_of(int(c), sizes, observed) for c in np.asarray(uniq)]


def _key_of(code: int, sizes: list[int], observed: list[list[object]]) -> tuple[object, ...]:
    """The key tuple of a combined code (:func:`combine_codes` read backwards)."""
    labels: list[object] = []
    for size, obs in zip(reversed(sizes), reversed(observed), strict=True):
        labels.append(obs[code % size])
        code //= size
    return tuple(reversed(labels))


def public_key_list(declared: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """All combinations of declared keys, in declared order (the output index)."""
    return [tuple(t) for t in itertools.product(*declared)]
