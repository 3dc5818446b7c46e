"""Partitions typed apart from the public schema: the Dask backend reads every block by the
frame's meta, never by the dtype one person's odd value gave a partition.

A measured column a partition typed otherwise has its numbers read by value
(:func:`numbers_only`: a value that does not conform counts as missing); columns that tell rows
apart (keys, the unit, a distinct count's values) keep their values, read exactly by the value
model, and gather exactly across partitions (:func:`exchange.concat_exact`).
:class:`BlockBackend` is the pandas backend on such a block, labelling private keys by their
public kind.

Privacy: whether a value counts, and the label a released key gets, are functions of the value
and the public schema alone, never of the partition that held it
(docs/privacy.md#behaviour-that-does-not-depend-on-the-data).
"""

from __future__ import annotations

import contextlib
import math
import numbers
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from ...core.exact.compute import ComputeRequest
from ...core.exact.values import NUMERIC_KINDS, ColumnKind, canonical, canonicalize
from ..base import (
    observed_key_codes,
    remap_codes,
)
from ..blocks.frames import (
    PandasBackend,
    column_kind,
    factorize,
)
from .words import TEMPORAL

#: Prefix of the columns holding the numbers of a column that also tells rows apart (a key, the
#: unit, a distinct count's values) where a block typed it apart from the public schema
#: (:func:`conformed`): the numbers are read from there, the identities from the column itself.
NUMBERS_PREFIX = "__dpframe_numbers_"
#: The integers some typed int partition holds (int64 and uint64): a column of the int kind
#: reads these, exactly up to float64's rounding (bounds lie well inside 2**53, so they clamp
#: alike), and no other number.
_INT_LOW, _INT_END = -(2**63), 2**64


def numbers_only(s: pd.Series, kind: ColumnKind) -> pd.Series:
    """A column the public schema (the frame's meta) says holds ``kind`` numbers that one partition
    typed otherwise (an object column, because of one person's text): its values of that kind as
    float64, every other value missing (a value that does not conform counts as missing, never as
    another number: docs/privacy.md#behaviour-that-does-not-depend-on-the-data). Read as it was,
    such a column would not be numeric at all, and every other value of the partition would vanish
    with it. One Python step per value: only non-conforming partitions take it.

    A value reads as the number a typed partition of the kind reads it as: an integer of the
    int kind by the float nearest it, however large, if an int64 or uint64 partition could hold
    it; dates, times and spans (``np.timedelta64`` is a numpy integer too) are no numbers,
    and a value whose conversion raises is missing: never an error, which would come after
    the charge."""
    if column_kind(s.dtype) in NUMERIC_KINDS:  # numbers of another kind: vectorized
        x = s.to_numpy(dtype=np.float64, na_value=np.nan)
        ok = ((x == 0) | (x == 1) if kind == "bool" else
              np.isfinite(x) & (x == np.floor(x)) & (x >= _INT_LOW) & (x < _INT_END)
              if kind == "int" else ~np.isnan(x))
        return pd.Series(np.where(ok, x, np.nan), index=s.index, name=s.name)
    out = np.full(len(s), np.nan)
    for i, v in enumerate(s.to_numpy(dtype=object)):
        with contextlib.suppress(Exception):  # a value that will not convert is missing
            out[i] = _number_of_kind(v, kind)
    return pd.Series(out, index=s.index, name=s.name)


def _number_of_kind(v: object, kind: ColumnKind) -> float:
    """One value of an object column as a number of ``kind`` (:func:`numbers_only`); NaN when
    it is none."""
    if isinstance(v, TEMPORAL):  # before the integers: np.timedelta64 is one
        return math.nan
    if isinstance(v, bool | np.bool_):
        return float(v)  # True is 1 in every numeric kind, as in the value model
    if kind == "bool":  # 0 and 1 of any number type, as a typed partition reads them
        return float(v) if isinstance(v, numbers.Real) and v in (0, 1) else math.nan
    if isinstance(v, numbers.Integral):  # Python's and numpy's integers, exactly
        i = int(v)
        return float(i) if _INT_LOW <= i < _INT_END else math.nan
    if isinstance(v, float | np.floating):
        f = float(v)
        if kind == "float" or (f.is_integer() and _INT_LOW <= f < _INT_END):
            return f
    return math.nan


def conformed(part: pd.DataFrame, numeric: dict[Any, ColumnKind],
              identities: Collection[str] = ()) -> tuple[pd.DataFrame, dict[str, str]]:
    """``part`` with each measured column the public schema says is numeric (``numeric``:
    label -> kind) read by value (:func:`numbers_only`) where this block typed it
    otherwise: not numeric at all, or a float column where the schema says int or bool (a
    fraction there is missing, as in scans, not rounded to another number). An int column
    where the schema says float needs nothing: its numbers are read as they are. The same
    frame when every such column conforms (the usual case).

    A measured column that also tells rows apart (``identities``, by name: a key, the unit, a
    distinct count's values) keeps its values, which the value model reads exactly; its
    numbers go to a column of their own (:data:`NUMBERS_PREFIX`; a copy when they conform),
    named in the map returned (query name -> column), which :class:`BlockBackend` reads them
    from. Replacing it would change the keys or units one person's odd value sees (a text key
    in a float column, ids merged in a float column). Every block gets that column, so blocks
    concatenate (:func:`exchange.concat_exact`): numbers by pandas' common dtype, identities
    exactly."""

    def conforms(have: ColumnKind, want: ColumnKind) -> bool:
        return have == want or (have in NUMERIC_KINDS and want == "float")

    apart = {str(c): f"{NUMBERS_PREFIX}{i}__" for i, c in enumerate(numeric)
             if str(c) in identities}
    odd = {c: k for c, k in numeric.items() if not conforms(column_kind(part[c].dtype), k)}
    if not odd and not apart:
        return part, {}
    out = part.copy(deep=False)
    for c, k in numeric.items():
        numbers = numbers_only(part[c], k) if c in odd else part[c]
        if str(c) in apart:
            out[apart[str(c)]] = numbers
        elif c in odd:
            out[c] = numbers
    return out, apart


class BlockBackend(PandasBackend):
    """The pandas backend on a partition's or a bucket's rows, reading the numbers of the
    columns ``apart`` names from the columns it maps them to (:func:`conformed`), and
    everything else (keys, units, value hashes) from the columns themselves. Private keys are
    labelled by the public kind of their column (``key_kinds``: the frame's meta), never by
    the block's own dtype (:func:`_schema_labels`)."""

    def __init__(self, df: pd.DataFrame, apart: dict[str, str],
                 key_kinds: dict[str, ColumnKind] | None = None,
                 dropped_before: npt.NDArray[np.int64] | None = None) -> None:
        super().__init__(df)
        self._apart = apart
        self._key_kinds = key_kinds or {}
        self.dropped_before = dropped_before

    def numbers(self, name: str) -> tuple[np.ndarray, npt.NDArray[np.bool_] | None]:
        return super().numbers(self._apart.get(name, name))

    def words(self, name: str) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
        """The value hashes of a distinct count's column, where the public schema says it is
        numeric (its numbers read apart): only of the values that are numbers of its kind, the
        rows :meth:`numbers` reads (a value that does not conform to the schema is missing, for
        every aggregate: docs/privacy.md#behaviour-that-does-not-depend-on-the-data).
        Text typing one partition object under a float64 meta
        was one more distinct value there, while ``count`` of the column, sums and the keys
        read it as missing (finding 55). Values keep their identity: only which rows count
        follows the numbers (ints past 2**53 stay apart, finding 45)."""
        hashes, present = super().words(name)
        if name not in self._apart:  # not numeric in the schema: every value it holds counts
            return hashes, present
        x, valid = self.numbers(name)
        conform = ~np.isnan(x) if valid is None else valid
        if bool(conform.all()):
            return hashes, present
        present = present & conform
        return np.where(present, hashes, np.uint64(0)), present

    def group_codes(self, request: ComputeRequest, dtype: npt.DTypeLike = np.int64
                    ) -> tuple[npt.NDArray[np.signedinteger[Any]], list[tuple[object, ...]]]:
        if not (request.by and request.private_keys and self._key_kinds):
            return super().group_codes(request, dtype)
        found = [self._schema_factorize(c) for c in request.by]
        return observed_key_codes([c for c, _ in found], [u for _, u in found])

    def _schema_factorize(self, name: str) -> tuple[npt.NDArray[np.int64], list[object]]:
        """Codes and labels of a private key column, labelled by its public kind."""
        s = self.column(name)
        codes, labels = factorize(s)
        kind, have = self._key_kinds.get(name), column_kind(s.dtype)
        if kind is None or have == kind or (kind not in NUMERIC_KINDS
                                            and have not in NUMERIC_KINDS):
            return codes, labels  # already the labels of that kind (text, objects alike)
        remap, relabelled = _schema_labels(labels, kind)
        return remap_codes(codes, remap), relabelled


def _schema_label(label: object, kind: ColumnKind) -> object:
    """The label of a key value (a canonical label of its block's dtype) in a column of the
    public kind ``kind``, a function of the value and the schema alone: numbers as in an
    object column (:func:`~dpframe.core.exact.values.canonical`: ``True`` is ``1``, ``1.0`` is
    ``1``),
    floats where the schema says float, ``True`` / ``False`` for 1 and 0 where it says bool;
    any other value (text in a numeric column) as it is."""
    c = canonical(label, "other")
    if c is None:
        return label
    if isinstance(c, numbers.Number):
        if kind == "float":
            with contextlib.suppress(ArithmeticError, TypeError, ValueError):
                return float(c) + 0.0  # type: ignore[arg-type]
        elif kind == "bool" and isinstance(c, int) and c in (0, 1):
            return bool(c)
    return c


def _schema_labels(labels: Sequence[object], kind: ColumnKind
                   ) -> tuple[npt.NDArray[np.int64], list[object]]:
    """Each label's position among the labels of the public kind ``kind``
    (:func:`_schema_label`; values one label there merge) and those labels."""
    return canonicalize(labels, kind, lambda label: _schema_label(label, kind))


def identity_columns(request: ComputeRequest) -> set[str]:
    """The columns whose values tell rows apart in a block: the keys, the unit and the values
    a distinct count counts (by their value model, exactly: never replaced by their numbers,
    which would make ints past 2**53 missing or one value in a partition one person typed
    otherwise)."""
    return {*request.by, *([request.privacy_unit] if request.privacy_unit else []),
            *(r.column for r in request.requests if r.kind == "distinct" and r.column)}

