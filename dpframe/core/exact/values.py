"""The canonical value model for group keys and privacy units
(docs/privacy.md#one-canonical-value-model-keys-and-units). Every backend maps the values it
observes through this module, so that two rows naming the same key or unit are the same key or unit
everywhere, whatever their spelling or row order.

* **Equality.** Values equal under Python ``==`` are one value: ``0.0`` and ``-0.0``;
  ``True``, ``1`` and ``1.0`` in an object column.
* **Missing.** ``None``, NaN, ``pd.NA``, ``NaT`` and every value that does not conform to a key
  or unit column (a list, a dict, a tuple, a complex number, an arbitrary object) are missing:
  their rows are dropped, never raised on (a refusal would depend on one person's data).
* **Labels.** A class of equal values has one canonical label, chosen from the value and the
  column's public kind, never from the first row that held it: a float column gives floats
  (``-0.0`` -> ``0.0``), an int column ints, a bool column bools; in an object column numbers
  are ints when integral (``True`` -> ``1``, ``1.0`` -> ``1``) and floats otherwise, strings
  ``str``, bytes ``bytes``, dates and times stay as they are.
* **Order.** A total order on canonical labels (type rank: numbers < str < bytes < others by
  type family, then value), used to sort the *released* private keys only: which keys were
  observed but not released can never move the ones that were.

Why this is enough: the released structure of a private-key query is then a function of the
set of released canonical keys alone (labels are canonical, order is the total order on the
set), and that set is the output of DP key selection. Public keys never pass through here as
labels: they are released as declared.

This module knows nothing of pandas or Arrow: backends hand it the distinct values they found.
"""

from __future__ import annotations

import datetime
import decimal
import numbers
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Literal

import numpy as np
import numpy.typing as npt

#: Public kind of a column, from its dtype only: numbers, text (a string dtype: every value is
#: a str or missing), or other (object columns, dates, ...).
ColumnKind = Literal["int", "float", "bool", "str", "other"]
NUMERIC_KINDS: tuple[ColumnKind, ...] = ("int", "float", "bool")

I64 = npt.NDArray[np.int64]

_NUMBER, _STR, _BYTES, _OTHER = 0, 1, 2, 3
_FAMILIES: tuple[tuple[type, str], ...] = (
    (datetime.datetime, "datetime"),
    (datetime.date, "date"),
    (datetime.time, "time"),
    (datetime.timedelta, "timedelta"),
    (np.datetime64, "datetime64"),
    (np.timedelta64, "timedelta64"),
)


def _nan_like(v: object) -> bool:
    """True for values unequal to themselves (NaN, NaT) or with no truth value (pd.NA)."""
    try:
        return bool(v != v)
    except Exception:  # no truth value (pd.NA), or a comparison that raises (a signalling NaN)
        return True


def _canonical_number(v: object) -> object | None:
    """The canonical label of a number in an object column: int when integral, else float
    (or the exact Decimal / Fraction when no float equals it); None for NaN and complex."""
    if isinstance(v, bool | np.bool_):
        return int(v)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, float | np.floating):
        f = float(v)
        if f != f:
            return None
        return int(f) if f.is_integer() else f
    if isinstance(v, decimal.Decimal | Fraction):
        if isinstance(v, decimal.Decimal):
            if v.is_nan():
                return None
            if v.is_infinite():
                return float(v)
        if v == int(v):
            return int(v)
        f = float(v)
        if f == v:
            return f
        return _decimal_label(v) if isinstance(v, decimal.Decimal) else _fraction_label(v)
    return None  # complex and other exotic numbers do not conform


def _decimal_label(v: decimal.Decimal) -> decimal.Decimal:
    """A decimal no float equals, without trailing zeros (``0.10`` and ``0.1`` are one value,
    spelled ``0.1``): built from its digits, exactly (no context rounding)."""
    sign, digits, exponent = v.as_tuple()
    assert isinstance(exponent, int)  # finite: NaN and infinities are handled before
    kept = list(digits)
    while len(kept) > 1 and kept[-1] == 0:
        kept.pop()
        exponent += 1
    return decimal.Decimal((sign, tuple(kept), exponent))


def _fraction_label(q: Fraction) -> object:
    """A fraction no float equals: the equal decimal when it has one (a denominator of only 2s
    and 5s: ``Fraction(1, 10)`` is ``Decimal("0.1")``, one value), else the fraction."""
    d, twos, fives = q.denominator, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    if d != 1:
        return q
    places = max(twos, fives)
    scaled = q.numerator * (10**places // q.denominator)  # exact: the denominator divides it
    sign = 1 if scaled < 0 else 0
    return _decimal_label(decimal.Decimal((sign, tuple(map(int, str(abs(scaled)))), -places)))


def canonical(value: object, kind: ColumnKind) -> object | None:
    """The canonical label of ``value`` in a column of public kind ``kind``; None when missing
    or non-conforming (the row is then dropped)."""
    if value is None:
        return None
    try:
        if kind == "float":
            f = float(value)  # type: ignore[arg-type]
            return None if f != f else f + 0.0  # -0.0 + 0.0 is +0.0
        if kind == "int":
            return None if _nan_like(value) else int(value)  # type: ignore[call-overload]
        if kind == "bool":
            return None if _nan_like(value) else bool(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if isinstance(value, str):  # a subclass's own text, not its __str__ (a str Enum's
        return str.__str__(value)  # str() is its name: 'C.RED' for a 'red' equal to "red")
    if isinstance(value, bytes):
        return bytes(value)
    try:  # never raising on a value: what cannot be read does not conform (missing)
        # dates and times first: numpy's timedelta64 is also a numpy integer
        if isinstance(value, tuple(t for t, _ in _FAMILIES)):
            return None if _nan_like(value) else value
        if isinstance(value, numbers.Number | np.bool_):
            return _canonical_number(value)
    except Exception:
        return None
    return None


def label_preference(v: object) -> tuple[str, str]:
    """Which of two equal labels of different spellings is kept: the smaller by (type name,
    repr), a function of the values alone, never of which came first."""
    return (type(v).__name__, repr(v))


def canonicalize(uniques: Sequence[object], kind: ColumnKind,
                 labeller: Callable[[object], object | None] | None = None
                 ) -> tuple[I64, list[object]]:
    """Merge observed distinct values into canonical classes.

    Returns ``remap`` (position of each observed value's class in ``labels``, -1 when missing)
    and ``labels`` (one canonical label per class). Two observed values that are equal (a
    repeated Arrow dictionary entry, ``0.0`` and ``-0.0``, ``True`` and ``1``) map to one class,
    so their rows aggregate together. When equal values of different types remain (a
    ``datetime`` and an equal ``Timestamp``), the label is the smallest by (type name, repr):
    never the first seen. ``labeller``: the canonical label of a value, when not
    :func:`canonical` under ``kind`` (a backend relabelling labels by the public schema).
    """
    remap = np.full(len(uniques), -1, dtype=np.int64)
    pos: dict[object, int] = {}
    labels: list[object] = []
    for i, u in enumerate(uniques):
        c = canonical(u, kind) if labeller is None else labeller(u)
        if c is None:
            continue
        try:
            j = pos.get(c)
        except TypeError:  # pragma: no cover - canonical labels are hashable
            continue
        if j is None:
            j = pos[c] = len(labels)
            labels.append(c)
        elif label_preference(c) < label_preference(labels[j]):
            labels[j] = c
        remap[i] = j
    return remap, labels


def is_canonical(uniques: Sequence[object], kind: ColumnKind) -> bool:
    """Cheap test that ``uniques`` need no merging or relabelling (e.g. all ``str``)."""
    if kind in ("str", "other"):
        return all(type(u) is str for u in uniques)
    if kind == "int":
        return all(type(u) is int for u in uniques)
    return False


def order_key(value: object) -> tuple[object, ...]:
    """Sort key of a canonical label: (type rank, family, value)."""
    if isinstance(value, bool | numbers.Number):
        return (_NUMBER, "", value)
    if isinstance(value, str):
        return (_STR, "", value)
    if isinstance(value, bytes):
        return (_BYTES, "", value)
    for t, family in _FAMILIES:
        if isinstance(value, t):
            return (_OTHER, family, value)
    return (_OTHER, type(value).__name__, value)


def sorted_order(keys: Sequence[tuple[object, ...]]) -> list[int]:
    """Positions of ``keys`` (tuples of canonical labels) in the total order: rank, then value,
    column by column. Values of one family that still do not compare fall back to their repr,
    which depends on the value alone."""
    try:
        return sorted(range(len(keys)), key=lambda i: tuple(order_key(v) for v in keys[i]))
    except TypeError:
        def safe(i: int) -> tuple[object, ...]:
            return tuple((k[0], k[1], repr(k[2])) for k in map(order_key, keys[i]))

        return sorted(range(len(keys)), key=safe)


__all__ = ["NUMERIC_KINDS", "ColumnKind", "canonical", "canonicalize", "is_canonical",
           "label_preference", "order_key", "sorted_order"]
