"""Respondents' values to category codes and back, with the same kind out as in.

Values come as a pandas Series (any dtype, categorical included), a 1-D numpy array or a list;
randomized codes go back as the same kind (Series with the same index and name and, where it
can hold the categories, the same dtype). Reading and encoding never raise because of a value:
a value that is missing or not one of the categories is marked *invalid* (one mask, whatever
the kind of value), and the caller decides what an invalid respondent reports. Errors name the
argument only, never a value.
"""

from __future__ import annotations

import numbers
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from pandas.api.extensions import ExtensionDtype

from ..errors import ValidationError

Codes = npt.NDArray[Any]


def is_missing(v: object) -> bool:
    """None, NaN, NaT, ``pd.NA`` and anything else that is not equal to itself."""
    if v is None:
        return True
    try:
        return bool(v != v)
    except (TypeError, ValueError):  # pd.NA and friends refuse to be truth-tested
        return True


def missing_error(name: str) -> ValidationError:
    """The refusal of missing values in ``name``."""
    return ValidationError(f"{name} contains missing values")


def invalid_error(name: str) -> ValidationError:
    """The one refusal of invalid values in ``name``: the same message whatever the value was
    (missing, undeclared, unhashable), never quoting it."""
    return ValidationError(
        f"{name} contains values that are missing or outside the declared categories")


#: The opt-in marker: ``categories="categories"`` reads a pandas Categorical's declared
#: categories (its dtype), as the central API's ``keys={"col": "categories"}`` does.
CATEGORIES = "categories"

#: What ``categories=`` accepts: the declared categories, or the opt-in marker.
CategoriesArg = Sequence[Hashable] | Literal["categories"]

#: How to declare categories, for every refusal of an input that has none.
DECLARE = ("declare categories=[...], or for a pandas Categorical opt in to its dtype's "
           "categories with categories='categories'")


def check_categories(categories: object, name: str = "categories") -> list[Any]:
    """The declared categories as a list: at least 2, hashable, distinct, none missing."""
    if isinstance(categories, str | bytes) or not isinstance(categories, Iterable):
        raise ValidationError(f"{name} must be a sequence of at least 2 distinct values "
                              "(or 'categories' for a Categorical's own)")
    cats = list(categories)
    if len(cats) < 2:
        raise ValidationError(f"{name} needs at least 2 categories")
    try:
        distinct = len(set(cats))
    except TypeError:
        raise ValidationError(f"{name} must be hashable") from None
    if any(is_missing(c) for c in cats):
        raise ValidationError(f"{name} must not contain missing values")
    if distinct != len(cats):
        raise ValidationError(f"{name} must not contain duplicates")
    return cats


# --------------------------------------------------------------------------------------------
# Reading values
# --------------------------------------------------------------------------------------------


@dataclass
class Input:
    """Values as read: a 1-D array, or a pandas categorical's codes and levels."""

    arr: npt.NDArray[Any] | None  # values as a 1-D numpy array (None for categorical)
    series: pd.Series | None
    is_list: bool
    cat_codes: npt.NDArray[Any] | None = None  # pandas categorical codes
    cat_levels: list[Any] | None = None
    missing: npt.NDArray[np.bool_] | None = None  # NA of a nullable dtype (arr holds 0 there)


def read_values(values: object, name: str) -> Input:
    """A Series, 1-D array or list of values (a list is read as objects: it has no dtype).
    Missing values are kept, to be marked invalid by :func:`codes_of`."""
    if isinstance(values, pd.DataFrame):
        raise ValidationError(f"{name} must be one column (a Series), not a DataFrame")
    if isinstance(values, pd.Series):
        return _read_series(values, name)
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ValidationError(f"{name} must be one-dimensional")
        return Input(values, None, False)
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise ValidationError(f"{name} must be a pandas Series, a numpy array or a list")
    seq = list(values)
    arr = np.fromiter(seq, dtype=object, count=len(seq))  # no coercion, no broadcasting
    return Input(arr, None, True)


def _read_series(values: pd.Series, name: str) -> Input:
    dt = values.dtype
    if isinstance(dt, pd.CategoricalDtype):
        return Input(None, values, False, values.cat.codes.to_numpy(), list(dt.categories))
    if isinstance(dt, np.dtype):
        return Input(values.to_numpy(), values, False)
    npdt = getattr(dt, "numpy_dtype", None)
    if isinstance(npdt, np.dtype) and npdt.kind in "biuf":  # nullable bool / int / float
        missing = np.asarray(values.isna(), dtype=bool)
        arr = values.to_numpy(dtype=npdt, na_value=npdt.type(0))
        return Input(arr, values, False, missing=missing if bool(missing.any()) else None)
    return Input(values.to_numpy(dtype=object), values, False)


def implied_categories(inp: Input, name: str) -> list[Any]:
    """Categories when none are declared, from the dtype alone (never from the values):
    ``[False, True]`` for a bool dtype (numpy or nullable), the two values the dtype itself
    fixes; ``[0, 1]`` for an integer or float dtype (0/1 indicators). Everything else is
    refused, by its dtype: a Categorical (``astype("category")`` takes its levels from the
    answers, so one answer would change the category set, k and everyone's report; its levels
    are used only on the opt-in ``categories="categories"``), lists, object and string columns
    (their values' types are data, so they would decide the categories' spelling)."""
    if inp.cat_levels is not None:
        raise ValidationError(f"{name} is a Categorical, whose categories may come from the "
                              "answers: declare categories=[...], or opt in to its dtype's "
                              "categories with categories='categories'")
    assert inp.arr is not None
    kind = "O" if inp.is_list else inp.arr.dtype.kind
    if kind == "b":
        return [False, True]
    if kind in "iuf":
        return [0, 1]
    raise ValidationError(f"{name} has no bool or numeric dtype (a list or an object column "
                          f"has none): {DECLARE}")


def resolve_categories(inp: Input, categories: object, name: str) -> list[Any]:
    """The category set from the arguments and the dtype alone, never from the values: the
    declared ``categories``; on the opt-in ``"categories"`` a Categorical's declared categories
    (refused for any other input); without them, :func:`implied_categories`."""
    if categories is None:
        return implied_categories(inp, name)
    if isinstance(categories, str) and categories == CATEGORIES:
        if inp.cat_levels is None:
            raise ValidationError(f"categories='categories' needs {name} to be a pandas "
                                  "Categorical; declare categories=[...] instead")
        return check_categories(inp.cat_levels, "categories of the categorical dtype")
    return check_categories(categories)


# --------------------------------------------------------------------------------------------
# Values -> codes (numpy only)
# --------------------------------------------------------------------------------------------


@dataclass
class Encoded:
    """Category codes of the values: ``codes`` in ``[0, k)`` (0 where invalid), whether they are
    the values themselves (categories ``0..k-1`` in order), and the invalid values' mask (None
    when every value is one of the categories)."""

    codes: Codes
    identity: bool
    invalid: npt.NDArray[np.bool_] | None


def _mask(bad: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_] | None:
    return bad if bool(bad.any()) else None


def codes_of(inp: Input, cats: list[Any]) -> Encoded:
    """Category codes of the values. Never raises because of a value: missing values, values
    outside ``cats`` and values that cannot be compared (unhashable) are all just invalid."""
    if inp.cat_codes is not None:
        assert inp.cat_levels is not None
        lookup = {c: i for i, c in enumerate(cats)}
        level_codes = np.fromiter((_code_of(lookup, c) for c in inp.cat_levels), dtype=np.int64,
                                  count=len(inp.cat_levels))
        codes = np.append(level_codes, -1)[inp.cat_codes]  # code -1 (missing) reads the -1
        bad = codes < 0
        return Encoded(np.where(bad, 0, codes), False, _mask(bad))
    assert inp.arr is not None
    enc = _encode(inp.arr, cats)
    if inp.missing is not None:
        bad = inp.missing if enc.invalid is None else inp.missing | enc.invalid
        return Encoded(np.where(bad, 0, enc.codes), enc.identity, bad)
    return enc


def _code_of(lookup: dict[Any, int], v: object) -> int:
    """The code of ``v`` under Python equality, -1 when it has none or cannot be looked up."""
    try:
        return lookup.get(v, -1)
    except Exception:  # unhashable, or an __eq__ / __hash__ that raises: not a category
        return -1


def _encode(arr: npt.NDArray[Any], cats: list[Any]) -> Encoded:
    """Codes by the fastest path the dtype and the categories allow (never the values)."""
    kind = arr.dtype.kind
    if kind == "b":
        return _encode_bools(arr, cats)
    if kind in "iu" and all(isinstance(c, numbers.Integral) for c in cats):
        found = _encode_ints(arr, cats)
        if found is not None:
            return found
    if kind in "iuf" and all(_exact_float(c) for c in cats):
        return _encode_reals(arr, cats)
    return _encode_objects(arr, cats)


def _encode_bools(arr: npt.NDArray[Any], cats: list[Any]) -> Encoded:
    lookup = {c: i for i, c in enumerate(cats)}
    cf, ct = lookup.get(False, -1), lookup.get(True, -1)
    codes = np.where(arr, max(ct, 0), max(cf, 0)).astype(np.int64)
    if ct >= 0 and cf >= 0:
        return Encoded(codes, False, None)
    bad = np.ones(arr.shape, dtype=bool) if ct < 0 and cf < 0 else (
        arr.astype(bool) if ct < 0 else ~arr)
    return Encoded(codes, False, _mask(bad))


def _encode_ints(arr: npt.NDArray[Any], cats: list[Any]) -> Encoded | None:
    """Integer values and categories: the values themselves, or a table look-up; None when
    the categories are too sparse for a table."""
    k = len(cats)
    ints = [int(c) for c in cats]
    lo, hi = min(ints), max(ints)
    outside: npt.NDArray[np.bool_] | None = None
    if arr.size and (int(arr.min()) < lo or int(arr.max()) > hi):
        outside = (arr < lo) | (arr > hi)
    if ints == list(range(k)):
        if outside is None:
            return Encoded(arr, True, None)
        return Encoded(np.where(outside, 0, arr), True, outside)
    if hi - lo > max(1 << 16, 4 * k):
        return None
    table = np.full(hi - lo + 1, -1, dtype=np.int64)
    table[np.asarray(ints, dtype=np.int64) - lo] = np.arange(k)
    offset = arr.astype(np.int64) - lo
    if outside is not None:
        offset = np.where(outside, 0, offset)
    codes = table[offset]
    bad = codes < 0 if outside is None else (codes < 0) | outside
    if not bool(bad.any()):
        return Encoded(codes, False, None)
    return Encoded(np.where(bad, 0, codes), False, bad)


def _exact_float(c: object) -> bool:
    """A real number (not a bool) that a float64 holds exactly when it is an integer."""
    return isinstance(c, numbers.Real) and not isinstance(c, bool) and abs(float(c)) < 2.0**53


def _encode_reals(arr: npt.NDArray[Any], cats: list[Any]) -> Encoded:
    """Numeric values against numeric categories: binary search among the sorted categories
    (NaN and values between categories are invalid)."""
    k = len(cats)
    vals = np.asarray([float(c) for c in cats])
    order = np.argsort(vals, kind="stable")
    svals = vals[order]
    pos = np.clip(np.searchsorted(svals, arr), 0, k - 1)
    codes = order[pos].astype(np.int64)
    bad = svals[pos] != arr  # NaN equals nothing
    if not bool(bad.any()):
        return Encoded(codes, False, None)
    return Encoded(np.where(bad, 0, codes), False, bad)


def _encode_objects(arr: npt.NDArray[Any], cats: list[Any]) -> Encoded:
    """The general path: Python equality and hashing, one value at a time (True, 1 and 1.0
    are one value)."""
    lookup = {c: i for i, c in enumerate(cats)}
    obj = arr.astype(object, copy=False).reshape(-1)
    try:
        codes = np.fromiter((lookup.get(v, -1) for v in obj), dtype=np.int64, count=obj.size)
    except Exception:  # some value cannot be looked up: the careful path, value by value
        codes = np.fromiter((_code_of(lookup, v) for v in obj), dtype=np.int64, count=obj.size)
    bad = codes < 0
    if not bool(bad.any()):
        return Encoded(codes, False, None)
    return Encoded(np.where(bad, 0, codes), False, bad)


# --------------------------------------------------------------------------------------------
# Codes -> values: same kind out as in
# --------------------------------------------------------------------------------------------


def _category_array(cats: list[Any], dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """The categories as an array of ``dtype`` when that is lossless, else as objects."""
    if dtype.kind != "O":
        try:
            arr = np.asarray(cats, dtype=dtype)
            if arr.ndim == 1 and arr.tolist() == cats:
                return arr
        except (TypeError, ValueError, OverflowError):
            pass
    return np.fromiter(cats, dtype=object, count=len(cats))


def values_out(inp: Input, out_codes: Codes, identity: bool, cats: list[Any]) -> Any:
    """Randomized codes back to the caller's kind: Series (same index), ndarray or list."""
    if inp.is_list:
        return [cats[i] for i in out_codes.tolist()]
    s = inp.series
    if s is not None and not isinstance(s.dtype, np.dtype):
        return _extension_series(s, s.dtype, out_codes, cats)
    assert inp.arr is not None
    if identity:  # codes are the categories 0..k-1: in the input's dtype when it holds k - 1
        dtype = inp.arr.dtype
        fits = dtype.kind not in "iu" or int(np.iinfo(dtype).max) >= len(cats) - 1
        arr_out = out_codes.astype(dtype if fits else np.int64, copy=False)
    else:
        arr_out = _category_array(cats, inp.arr.dtype)[out_codes]
    if s is not None:
        return pd.Series(arr_out, index=s.index, name=s.name, copy=False)
    return arr_out


def _extension_series(s: pd.Series, dtype: ExtensionDtype, out_codes: Codes,
                      cats: list[Any]) -> pd.Series:
    """Codes as a Series like ``s``, of extension ``dtype``: the same dtype when it holds the
    categories (a categorical keeps its order flag), else objects."""
    if isinstance(dtype, pd.CategoricalDtype):
        cat = pd.Categorical.from_codes(out_codes, categories=pd.Index(cats, tupleize_cols=False),
                                        ordered=bool(dtype.ordered))
        return pd.Series(cat, index=s.index, name=s.name)
    try:
        ext = pd.array(cats, dtype=dtype)  # type: ignore[call-overload]
        if list(ext) == cats:
            return pd.Series(ext.take(out_codes), index=s.index, name=s.name)
    except (TypeError, ValueError):
        pass
    return pd.Series(_category_array(cats, np.dtype(object))[out_codes].tolist(),
                     index=s.index, name=s.name)
