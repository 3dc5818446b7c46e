"""Respondents' values to category codes and back, with the same kind out as in.

Values come as a pandas Series (any dtype, categorical included), a 1-D numpy array or a list;
randomized codes go back as the same kind (Series with the same index and name and, where it
can hold the categories, the same dtype). Errors name the argument only, never a value.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

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


def _outside(name: str) -> ValidationError:
    return ValidationError(f"{name} contains values outside the declared categories")


def check_categories(categories: object, name: str = "categories") -> list[Any]:
    """The declared categories as a list: at least 2, hashable, distinct, none missing."""
    if isinstance(categories, str | bytes) or not isinstance(categories, Iterable):
        raise ValidationError(f"{name} must be a sequence of at least 2 distinct values")
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


def read_values(values: object, name: str) -> Input:
    """A Series, 1-D array or list of values; missing values are refused."""
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
    if seq and all(isinstance(v, bool) for v in seq):
        arr = np.asarray(seq, dtype=bool)
    else:
        arr = np.fromiter(seq, dtype=object, count=len(seq))  # no coercion, no broadcasting
    return Input(arr, None, True)


def _read_series(values: pd.Series, name: str) -> Input:
    dt = values.dtype
    if isinstance(dt, pd.CategoricalDtype):
        codes = values.cat.codes.to_numpy()
        if bool((codes < 0).any()):
            raise missing_error(name)
        return Input(None, values, False, codes, list(dt.categories))
    if bool(values.isna().any()):
        raise missing_error(name)
    if isinstance(dt, np.dtype):
        return Input(values.to_numpy(), values, False)
    npdt = getattr(dt, "numpy_dtype", None)
    if isinstance(npdt, np.dtype) and npdt.kind in "biuf":
        return Input(values.to_numpy(dtype=npdt), values, False)
    return Input(values.to_numpy(dtype=object), values, False)


def _default_binary_categories(arr: npt.NDArray[Any], name: str) -> list[Any]:
    """Categories for binary RR when none are declared: (False, True) or (0, 1)."""
    if arr.dtype.kind == "b":
        return [False, True]
    if arr.dtype.kind in "iuf":
        return [0, 1]
    if arr.size and all(isinstance(v, bool | np.bool_) for v in arr.reshape(-1)):
        return [False, True]
    if arr.dtype.kind == "O" and all(
        isinstance(v, numbers.Real) or is_missing(v) for v in arr.reshape(-1)
    ):
        return [0, 1]
    raise ValidationError(f"{name} is not binary (bool or 0/1): declare categories=")


def implied_categories(inp: Input, name: str) -> list[Any]:
    """Categories when none are declared: a categorical dtype's levels (dtype metadata, public),
    else binary (False, True) or (0, 1)."""
    if inp.cat_levels is not None:
        return check_categories(inp.cat_levels, "categories of the categorical dtype")
    assert inp.arr is not None
    return _default_binary_categories(inp.arr, name)


# --------------------------------------------------------------------------------------------
# Values -> codes (numpy only)
# --------------------------------------------------------------------------------------------


def codes_of(inp: Input, cats: list[Any], name: str) -> tuple[Codes, bool]:
    """Category codes of the values and whether they are the values themselves (categories
    ``0..k-1`` in order). Raises ValidationError (naming ``name`` only) for missing or
    undeclared values."""
    if inp.cat_codes is not None:
        assert inp.cat_levels is not None
        lookup = {c: i for i, c in enumerate(cats)}
        level_codes = np.asarray([lookup.get(c, -1) for c in inp.cat_levels], dtype=np.int64)
        codes = level_codes[inp.cat_codes] if level_codes.size else np.zeros(0, dtype=np.int64)
        if bool((codes < 0).any()):
            raise _outside(name)
        return codes, False
    assert inp.arr is not None
    return _encode(inp.arr, cats, name)


def _encode(arr: npt.NDArray[Any], cats: list[Any], name: str) -> tuple[Codes, bool]:
    """Codes by the fastest path the dtype and the categories allow."""
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64), False
    kind = arr.dtype.kind
    if kind == "b":
        return _encode_bools(arr, cats, name), False
    if kind in "iu" and all(isinstance(c, numbers.Integral) for c in cats):
        found = _encode_ints(arr, cats, name)
        if found is not None:
            return found
    if kind in "iuf" and all(_exact_float(c) for c in cats):
        return _encode_reals(arr, cats, name), False
    return _encode_objects(arr, cats, name), False


def _encode_bools(arr: npt.NDArray[Any], cats: list[Any], name: str) -> Codes:
    lookup = {c: i for i, c in enumerate(cats)}
    cf, ct = lookup.get(False, -1), lookup.get(True, -1)
    if (ct < 0 and bool(arr.any())) or (cf < 0 and not bool(arr.all())):
        raise _outside(name)
    return np.where(arr, ct, cf).astype(np.int64)


def _encode_ints(arr: npt.NDArray[Any], cats: list[Any],
                 name: str) -> tuple[Codes, bool] | None:
    """Integer values and categories: the values themselves, or a table look-up; None when
    the categories are too sparse for a table."""
    k = len(cats)
    ints = [int(c) for c in cats]
    lo, hi = min(ints), max(ints)
    if int(arr.min()) < lo or int(arr.max()) > hi:
        raise _outside(name)
    if ints == list(range(k)):
        return arr, True
    if hi - lo > max(1 << 16, 4 * k):
        return None
    table = np.full(hi - lo + 1, -1, dtype=np.int64)
    table[np.asarray(ints, dtype=np.int64) - lo] = np.arange(k)
    codes = table[arr.astype(np.int64) - lo]
    if bool((codes < 0).any()):
        raise _outside(name)
    return codes, False


def _exact_float(c: object) -> bool:
    """A real number (not a bool) that a float64 holds exactly when it is an integer."""
    return isinstance(c, numbers.Real) and not isinstance(c, bool) and abs(float(c)) < 2.0**53


def _encode_reals(arr: npt.NDArray[Any], cats: list[Any], name: str) -> Codes:
    """Numeric values against numeric categories: binary search among the sorted categories."""
    if arr.dtype.kind == "f" and bool(np.isnan(arr).any()):
        raise missing_error(name)
    k = len(cats)
    vals = np.asarray([float(c) for c in cats])
    order = np.argsort(vals, kind="stable")
    svals = vals[order]
    pos = np.clip(np.searchsorted(svals, arr), 0, k - 1)
    if not bool((svals[pos] == arr).all()):
        raise _outside(name)
    return order[pos].astype(np.int64)


def _encode_objects(arr: npt.NDArray[Any], cats: list[Any], name: str) -> Codes:
    """The general path: Python equality and hashing, one value at a time."""
    lookup = {c: i for i, c in enumerate(cats)}
    obj = arr.astype(object, copy=False).reshape(-1)
    try:
        codes = np.fromiter((lookup.get(v, -1) for v in obj), dtype=np.int64, count=arr.size)
    except TypeError:
        raise ValidationError(f"{name} contains unhashable values") from None
    bad = np.flatnonzero(codes < 0)
    if bad.size:
        if any(is_missing(obj[i]) for i in bad):
            raise missing_error(name)
        raise _outside(name)
    return codes


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
