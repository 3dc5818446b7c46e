"""Local differential privacy: randomizers run on each respondent's value, and their estimators.

In the local model every respondent's value is randomized *before* it is collected, so the
guarantee holds per respondent and against the collector itself: for any two values ``x, x'``
and any report ``y``, ``P(report = y | x) <= e^eps * P(report = y | x')``. Nothing here is
charged to a :class:`~dpframe.Session`: the budget belongs to each respondent, and the
estimators are post-processing of the reports. Randomizing the same respondent's value twice
spends ``eps`` twice for that respondent; this module cannot see that, the caller must.

Mechanisms (``q = e^-eps``, ``k`` declared categories):

* randomized response (k = 2) and k-ary randomized response (k-RR): report the true value with
  probability ``p = e^eps / (e^eps + k - 1) = 1 / (1 + (k - 1) q)``, each other category with
  probability ``p' = 1 / (e^eps + k - 1)``; ``p / p' = e^eps`` exactly.
* the two-coin survey design (``preset="two_coin"``): ``p = 3/4``, i.e. eps = ln 3.
* basic one-time RAPPOR: one-hot bit vector, every bit flipped to a fresh fair coin with
  probability ``f = 2 / (1 + e^(eps/2))``, i.e. each bit is binary RR with eps/2.

Exact sampling. ``epsilon`` is read as an exact rational by the one number rule (0.1 is 1/10). The
randomizer draws a data-independent offset ``D`` in ``{0..k-1}`` with ``P(D = 0) = p`` and
``P(D = j) = p'`` and reports category ``(x + D) mod k`` (for k = 2: ``x XOR D``). ``D`` is the
bin of a uniform real ``U`` in [0, 1) among the cut points ``c_j = (1 + (j-1) q) / (1 + (k-1) q)``
(j = 1..k-1), so ``c_1 = p`` and consecutive cut points are ``p'`` apart. ``U`` is read lazily
from uniform random bits: after ``m`` bits, ``U`` is known to lie in a dyadic cell
``[A / 2^m, (A + 1) / 2^m)``; if no cut point lies strictly inside it, the bin is decided,
otherwise 64 more bits are read. Whether a cut point lies inside a cell is decided with integer
arithmetic from rigorous interval bounds on ``q`` (alternating Taylor series of ``e^-y`` on
``y <= 1/2`` plus repeated squaring, with directed rounding), refined until the answer is certain.
That always happens because, for rational eps > 0, ``e^eps`` is transcendental
(Lindemann-Weierstrass), so every ``c_j`` is irrational and never an endpoint. Hence ``D`` has
exactly the stated distribution: no floating-point probability is ever used to sample. The
first round reads 8 bits per value (16 when k > 32), enough except with probability
(k - 1) / 256 (resp. / 65536). The offset, and the time to draw it, do not depend on the data.
"""

from __future__ import annotations

import bisect
import math
import numbers
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from .core.accounting import to_fraction
from .core.rng import RandomSource
from .errors import ValidationError

__all__ = [
    "TWO_COIN_EPSILON",
    "LocalAccessor",
    "estimate_frequencies",
    "krr_probabilities",
    "project_simplex",
    "randomized_response",
    "rappor",
    "rappor_f",
    "rappor_probabilities",
    "rr_probabilities",
]

#: Privacy level of the two-coin survey design: truthful with probability 3/4, eps = ln 3.
TWO_COIN_EPSILON = math.log(3.0)

Method = Literal["auto", "rr", "krr", "rappor"]
_MAX_PREC = 1 << 20


# --------------------------------------------------------------------------------------------
# Exact arithmetic: rigorous bounds on q = exp(-x) and the cut points of the offset distribution
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=512)
def _exp_neg_bounds(x: Fraction, prec: int) -> tuple[int, int, int]:
    """``(lo, hi, w)`` with ``lo / 2**w <= exp(-x) <= hi / 2**w`` for a rational ``x >= 0``.

    Range reduction ``exp(-x) = exp(-y) ** (2**s)`` with ``y = x / 2**s <= 1/2``. The Taylor
    series of ``exp(-y)`` alternates with decreasing terms, so a partial sum ending on a
    subtracted term is a lower bound and one ending on an added term an upper bound. Terms and
    squarings are computed in fixed point with ``w`` fractional bits, rounding down for the
    lower bound and up for the upper bound, so both bounds stay rigorous; ``hi - lo`` is a few
    times ``2**(s + log2 terms)`` units, i.e. about ``2**-prec`` in absolute terms.
    """
    s = max(0, (x.numerator // x.denominator).bit_length() + 1)
    w = prec + s + 16
    a, b = x.numerator, x.denominator << s  # y = a / b <= 1/2
    one = 1 << w
    tl = th = one  # bounds on t_n * 2**w, t_n = y**n / n!
    s_lo = s_hi = one  # running bounds on the partial sum S_n (lower / upper)
    n = 0
    lo_bound = hi_bound = None
    while True:
        n += 1
        tl = (tl * a) // (n * b)
        th = -((-th * a) // (n * b))
        if n % 2:  # subtracted term: S_n (n odd) <= exp(-y)
            s_lo, s_hi = s_lo - th, s_hi - tl
            lo_bound = s_lo
            if th <= 1 and hi_bound is not None:
                break
        else:  # added term: exp(-y) <= S_n (n even)
            s_lo, s_hi = s_lo + tl, s_hi + th
            hi_bound = s_hi
    assert lo_bound is not None and hi_bound is not None
    lo, hi = max(lo_bound, 0), min(hi_bound, one)
    for _ in range(s):
        lo = (lo * lo) >> w
        hi = min(-((-hi * hi) >> w), one)
    return lo, hi, w


@dataclass(frozen=True)
class _Design:
    """The offset distribution of k-RR: ``P(D=0) = 1/(1+(k-1)q)``, ``P(D=j) = q/(1+(k-1)q)``.

    ``q`` is either ``exp(-x)`` for an exact rational ``x > 0`` or an exact rational in (0, 1).
    """

    k: int
    x: Fraction | None = None
    q: Fraction | None = None

    def cut_floor(self, j: int, m: int) -> tuple[int, bool]:
        """``(floor(c_j * 2**m), inside)``; ``inside`` is False when ``c_j * 2**m`` is an integer.

        ``c_j = (1 + (j-1) q) / (1 + (k-1) q)`` decreases in ``q`` (j < k), so bounds on ``q``
        bound ``c_j``; ``c_j < 1`` always, so the floor is at most ``2**m - 1``.
        """
        k = self.k
        if self.q is not None:
            t = (1 + (j - 1) * self.q) / (1 + (k - 1) * self.q) * (1 << m)
            f = t.numerator // t.denominator
            return f, t.denominator != 1
        assert self.x is not None
        prec = m + 64 + k.bit_length()
        top = (1 << m) - 1
        while True:
            ql, qh, w = _exp_neg_bounds(self.x, prec)
            one = 1 << w
            flo = ((one + (j - 1) * qh) << m) // (one + (k - 1) * qh)
            fhi = min(((one + (j - 1) * ql) << m) // (one + (k - 1) * ql), top)
            if flo == fhi:
                return flo, True  # c_j is irrational: never a cell endpoint
            if prec > _MAX_PREC:  # pragma: no cover - would need c_j rational
                raise RuntimeError("could not separate a cut point from the dyadic grid")
            prec *= 2

    def probabilities(self) -> tuple[float, float]:
        """``(p_keep, p_other)`` as floats (within 2**-100 of the exact values, then rounded)."""
        if self.q is not None:
            q = self.q
            return float(1 / (1 + (self.k - 1) * q)), float(q / (1 + (self.k - 1) * q))
        assert self.x is not None
        # q may be tiny: enough bits for a relative accuracy of 2**-100 down to float underflow.
        prec = 160 + min(math.ceil(1.5 * float(self.x)), 1200) + self.k.bit_length()
        ql, _, w = _exp_neg_bounds(self.x, prec)
        den = (1 << w) + (self.k - 1) * ql
        return float(Fraction(1 << w, den)), float(Fraction(ql, den))


@lru_cache(maxsize=256)
def _edges(design: _Design, m: int) -> tuple[tuple[int, ...], frozenset[int]]:
    """``(below, inside)`` at resolution ``m``: cell ``A`` (``U`` in ``[A, A+1) / 2**m``) lies
    wholly above cut point ``c_j`` iff ``A > below[j-1]``; ``inside`` holds the cells with a cut
    point in their interior, where the bin is not yet decided."""
    below: list[int] = []
    inside: set[int] = set()
    for j in range(1, design.k):
        f, strict = design.cut_floor(j, m)
        if strict:
            below.append(f)
            inside.add(f)
        else:  # c_j = f / 2**m exactly: cell f is already above it
            below.append(f - 1)
    return tuple(below), frozenset(inside)


def _code_dtype(k: int) -> type[np.signedinteger[Any]]:
    if k <= 127:
        return np.int8
    if k <= 32767:
        return np.int16
    return np.int32 if k <= 2**31 - 1 else np.int64


@lru_cache(maxsize=64)
def _lut(design: _Design, m: int) -> npt.NDArray[np.signedinteger[Any]]:
    """Offset for each ``m``-bit cell, or -1 when the cell straddles a cut point."""
    below, inside = _edges(design, m)
    cells = np.arange(1 << m, dtype=np.int64)
    d = np.searchsorted(np.asarray(below, dtype=np.int64), cells, side="left")
    if inside:
        d[np.isin(cells, np.fromiter(inside, dtype=np.int64))] = -1
    out = d.astype(_code_dtype(design.k))
    out.flags.writeable = False
    return out


@lru_cache(maxsize=64)
def _pair_lut(design: _Design) -> npt.NDArray[np.uint16]:
    """The 8-bit table applied to two cells at once: entry ``a | b << 8`` holds the offsets of
    cells ``a`` (low byte) and ``b`` (high byte), -1 stored as 0xFF. Read through a uint16 view
    of the random bytes and written back as bytes, byte order cancels out."""
    u = _lut(design, 8).view(np.uint8).astype(np.uint16)
    out = (u[None, :] | (u[:, None] << np.uint16(8))).reshape(-1)
    out.flags.writeable = False
    return out


def _resolve(design: _Design, prefix: int, m: int, rng: RandomSource) -> int:
    """Finish one undecided draw: read 64 more bits at a time until the cell is decided."""
    while True:
        prefix = (prefix << 64) | int(rng.words(1)[0])
        m += 64
        below, inside = _edges(design, m)
        if prefix not in inside:
            return bisect.bisect_left(below, prefix)


def _draw_offsets(design: _Design, n: int, rng: RandomSource) -> npt.NDArray[np.signedinteger[Any]]:
    """``n`` exact independent draws of the offset ``D`` (see the module docstring).

    Rounds read 8 bits (16 when k > 32), then 8 more for the few undecided draws (k <= 32), then
    48 more (64 in all), then 64 at a time in Python; each round decides every draw whose cell
    holds no cut point, so the result is the bin of one uniform real ``U`` per draw.
    """
    k = design.k
    m = 8 if k <= 32 else 16
    pairs = rng.words((n * (m // 8) + 7) // 8).view(np.uint16)
    if m == 8:  # one lookup per two 8-bit cells (k <= 32 keeps offsets within a byte)
        cells: npt.NDArray[Any] = pairs.view(np.uint8)[:n]
        d = np.take(_pair_lut(design), pairs).view(np.int8)[:n]
    else:
        cells = pairs[:n]
        d = np.take(_lut(design, m), cells)
    pending = np.flatnonzero(d < 0)
    cells = cells[pending]
    if pending.size and m == 8:  # second round: 16-bit cells
        extra = rng.words((pending.size + 7) // 8).view(np.uint8)[: pending.size]
        cells = (cells.astype(np.uint16) << np.uint16(8)) | extra
        m = 16
        d2 = np.take(_lut(design, m), cells)
        d[pending] = d2
        undecided = np.flatnonzero(d2 < 0)
        pending, cells = pending[undecided], cells[undecided]
    if pending.size:  # third round: 64-bit cells
        below, inside = _edges(design, 64)
        a = (cells.astype(np.uint64) << np.uint64(64 - m)) | (
            rng.words(pending.size) >> np.uint64(m))
        d[pending] = np.searchsorted(np.asarray(below, dtype=np.uint64), a, side="left")
        if inside:
            hit = np.isin(a, np.fromiter(inside, dtype=np.uint64, count=len(inside)))
            for i in np.flatnonzero(hit):
                d[pending[i]] = _resolve(design, int(a[i]), 64, rng)
    return d


def _apply_offsets(codes: npt.NDArray[np.integer[Any]], offsets: npt.NDArray[np.integer[Any]],
                   k: int) -> npt.NDArray[np.signedinteger[Any]]:
    """``(codes + offsets) mod k`` for codes and offsets in [0, k), in the smallest signed type
    holding ``2k - 2`` (small types keep this pass memory-bound and fast)."""
    small = _code_dtype(2 * k - 2)
    out = codes.astype(small)
    out += offsets.astype(small, copy=False)
    wrap = out >= k
    out -= wrap.view(np.int8).astype(small, copy=False) * small(k)
    return out


# --------------------------------------------------------------------------------------------
# Argument validation
# --------------------------------------------------------------------------------------------


def _exact_epsilon(epsilon: object, name: str = "epsilon") -> Fraction:
    """An epsilon > 0 by the one number rule (:func:`dpframe.core.accounting.to_fraction`)."""
    return to_fraction(epsilon, name, positive=True)


def _is_missing(v: object) -> bool:
    if v is None:
        return True
    try:
        return bool(v != v)
    except (TypeError, ValueError):  # pd.NA and friends refuse to be truth-tested
        return True


def _check_categories(categories: object, name: str = "categories") -> list[Any]:
    if isinstance(categories, str | bytes) or not isinstance(categories, Iterable):
        raise ValidationError(f"{name} must be a sequence of at least 2 distinct values")
    cats = list(categories)
    if len(cats) < 2:
        raise ValidationError(f"{name} needs at least 2 categories")
    try:
        distinct = len(set(cats))
    except TypeError:
        raise ValidationError(f"{name} must be hashable") from None
    if any(_is_missing(c) for c in cats):
        raise ValidationError(f"{name} must not contain missing values")
    if distinct != len(cats):
        raise ValidationError(f"{name} must not contain duplicates")
    return cats


def _check_rng(seed: int | None, rng: RandomSource | None) -> RandomSource:
    if seed is not None and rng is not None:
        raise ValidationError("pass either seed= or rng=, not both")
    if rng is not None:
        if not isinstance(rng, RandomSource):
            raise ValidationError("rng must be a dpframe RandomSource")
        return rng
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)):
        raise ValidationError("seed must be an integer")
    return RandomSource(None if seed is None else int(seed))


def _design_for(epsilon: object, k: int, preset: str | None) -> tuple[_Design, float]:
    """The offset design and the float epsilon it realizes."""
    if preset is None:
        if epsilon is None:
            raise ValidationError("epsilon is required (or preset='two_coin')")
        x = _exact_epsilon(epsilon)
        return _Design(k=k, x=x), float(x)
    if preset != "two_coin":
        raise ValidationError("preset must be 'two_coin' or None")
    if k != 2:
        raise ValidationError("preset='two_coin' needs exactly 2 categories")
    if epsilon is not None:
        e = float(_exact_epsilon(epsilon))
        if not math.isclose(e, TWO_COIN_EPSILON, rel_tol=1e-9):
            raise ValidationError("preset='two_coin' fixes epsilon = ln 3; omit epsilon")
    return _Design(k=2, q=Fraction(1, 3)), TWO_COIN_EPSILON


# --------------------------------------------------------------------------------------------
# Values <-> category codes (numpy only)
# --------------------------------------------------------------------------------------------


def _outside(name: str) -> ValidationError:
    return ValidationError(f"{name} contains values outside the declared categories")


def _missing(name: str) -> ValidationError:
    return ValidationError(f"{name} contains missing values")


def _is_int_like(c: object) -> bool:
    return isinstance(c, numbers.Integral)


def _encode(arr: npt.NDArray[Any], cats: list[Any], name: str) -> tuple[npt.NDArray[Any], bool]:
    """Category codes of ``arr`` and whether they are ``arr`` itself (categories 0..k-1).

    Raises ValidationError (naming ``name`` only) for missing or undeclared values.
    """
    k = len(cats)
    n = arr.size
    kind = arr.dtype.kind
    if n == 0:
        return np.zeros(0, dtype=np.int64), False
    if kind == "b":
        lookup = {c: i for i, c in enumerate(cats)}
        cf, ct = lookup.get(False, -1), lookup.get(True, -1)
        if (ct < 0 and bool(arr.any())) or (cf < 0 and not bool(arr.all())):
            raise _outside(name)
        return np.where(arr, ct, cf).astype(np.int64), False
    if kind in "iu" and all(_is_int_like(c) for c in cats):
        ints = [int(c) for c in cats]
        lo, hi = min(ints), max(ints)
        amin, amax = int(arr.min()), int(arr.max())
        if amin < lo or amax > hi:
            raise _outside(name)
        if ints == list(range(k)):
            return arr, True
        if hi - lo <= max(1 << 16, 4 * k):
            table = np.full(hi - lo + 1, -1, dtype=np.int64)
            table[np.asarray(ints, dtype=np.int64) - lo] = np.arange(k)
            codes = table[arr.astype(np.int64) - lo]
            if bool((codes < 0).any()):
                raise _outside(name)
            return codes, False
    if kind in "iuf" and all(
        isinstance(c, numbers.Real) and not isinstance(c, bool) and abs(float(c)) < 2.0**53
        for c in cats
    ):
        if kind == "f" and bool(np.isnan(arr).any()):
            raise _missing(name)
        vals = np.asarray([float(c) for c in cats])
        order = np.argsort(vals, kind="stable")
        svals = vals[order]
        pos = np.clip(np.searchsorted(svals, arr), 0, k - 1)
        if not bool((svals[pos] == arr).all()):
            raise _outside(name)
        return order[pos].astype(np.int64), False
    # General path: Python equality and hashing, one value at a time.
    lookup = {c: i for i, c in enumerate(cats)}
    obj = arr.astype(object, copy=False).reshape(-1)
    try:
        codes = np.fromiter((lookup.get(v, -1) for v in obj), dtype=np.int64, count=n)
    except TypeError:
        raise ValidationError(f"{name} contains unhashable values") from None
    bad = np.flatnonzero(codes < 0)
    if bad.size:
        if any(_is_missing(obj[i]) for i in bad):
            raise _missing(name)
        raise _outside(name)
    return codes, False


def _default_binary_categories(arr: npt.NDArray[Any], name: str) -> list[Any]:
    """Categories for binary RR when none are declared: (False, True) or (0, 1)."""
    if arr.dtype.kind == "b":
        return [False, True]
    if arr.dtype.kind in "iuf":
        return [0, 1]
    if arr.size and all(isinstance(v, bool | np.bool_) for v in arr.reshape(-1)):
        return [False, True]
    if arr.dtype.kind == "O" and all(
        isinstance(v, numbers.Real) or _is_missing(v) for v in arr.reshape(-1)
    ):
        return [0, 1]
    raise ValidationError(f"{name} is not binary (bool or 0/1): declare categories=")


def _implied_categories(inp: _Input, name: str) -> list[Any]:
    """Categories when none are declared: a categorical dtype's levels (dtype metadata, public),
    else binary (False, True) or (0, 1)."""
    if inp.cat_levels is not None:
        return _check_categories(inp.cat_levels, "categories of the categorical dtype")
    assert inp.arr is not None
    return _default_binary_categories(inp.arr, name)


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


# --------------------------------------------------------------------------------------------
# pandas / list / numpy front: same kind out as in
# --------------------------------------------------------------------------------------------


@dataclass
class _Input:
    arr: npt.NDArray[Any] | None  # values as a 1-D numpy array (None for categorical)
    series: pd.Series | None
    is_list: bool
    cat_codes: npt.NDArray[Any] | None = None  # pandas categorical codes
    cat_levels: list[Any] | None = None


def _read_values(values: object, name: str) -> _Input:
    if isinstance(values, pd.DataFrame):
        raise ValidationError(f"{name} must be one column (a Series), not a DataFrame")
    if isinstance(values, pd.Series):
        dt = values.dtype
        if isinstance(dt, pd.CategoricalDtype):
            codes = values.cat.codes.to_numpy()
            if bool((codes < 0).any()):
                raise _missing(name)
            return _Input(None, values, False, codes, list(dt.categories))
        if bool(values.isna().any()):
            raise _missing(name)
        if isinstance(dt, np.dtype):
            arr = values.to_numpy()
        else:
            npdt = getattr(dt, "numpy_dtype", None)
            if isinstance(npdt, np.dtype) and npdt.kind in "biuf":
                arr = values.to_numpy(dtype=npdt)
            else:
                arr = values.to_numpy(dtype=object)
        return _Input(arr, values, False)
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ValidationError(f"{name} must be one-dimensional")
        return _Input(values, None, False)
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise ValidationError(f"{name} must be a pandas Series, a numpy array or a list")
    seq = list(values)
    if seq and all(isinstance(v, bool) for v in seq):
        arr = np.asarray(seq, dtype=bool)
    else:
        arr = np.fromiter(seq, dtype=object, count=len(seq))  # no coercion, no broadcasting
    return _Input(arr, None, True)


def _codes_of(inp: _Input, cats: list[Any], name: str) -> tuple[npt.NDArray[Any], bool]:
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


def _values_out(inp: _Input, out_codes: npt.NDArray[Any], identity: bool,
                cats: list[Any]) -> Any:
    """Randomized codes back to the caller's kind: Series (same index), ndarray or list."""
    if inp.is_list:
        return [cats[i] for i in out_codes.tolist()]
    s = inp.series
    if s is not None and isinstance(s.dtype, pd.CategoricalDtype):
        cat = pd.Categorical.from_codes(out_codes, categories=pd.Index(cats, tupleize_cols=False),
                                        ordered=bool(s.dtype.ordered))
        return pd.Series(cat, index=s.index, name=s.name)
    if s is not None and not isinstance(s.dtype, np.dtype):
        try:
            ext = pd.array(cats, dtype=s.dtype)  # type: ignore[call-overload]
            if list(ext) == cats:
                return pd.Series(ext.take(out_codes), index=s.index, name=s.name)
        except (TypeError, ValueError):
            pass
        return pd.Series(_category_array(cats, np.dtype(object))[out_codes].tolist(),
                         index=s.index, name=s.name)
    assert inp.arr is not None
    if identity:
        arr_out = out_codes.astype(inp.arr.dtype, copy=False)
    else:
        arr_out = _category_array(cats, inp.arr.dtype)[out_codes]
    if s is not None:
        return pd.Series(arr_out, index=s.index, name=s.name, copy=False)
    return arr_out


# --------------------------------------------------------------------------------------------
# Public randomizers
# --------------------------------------------------------------------------------------------


def rr_probabilities(epsilon: float | None = None, *,
                     preset: str | None = None) -> tuple[float, float]:
    """``(p_keep, p_flip)`` of binary randomized response: ``e^eps / (e^eps + 1)`` and its
    complement (3/4 and 1/4 for the two-coin preset). These are the exact probabilities the
    sampler realizes, rounded to floats for analysis."""
    design, _ = _design_for(epsilon, 2, preset)
    return design.probabilities()


def krr_probabilities(epsilon: float, k: int) -> tuple[float, float]:
    """``(p_keep, p_other)`` of k-ary RR: ``e^eps / (e^eps + k - 1)`` and ``1 / (e^eps + k - 1)``.

    The sampler realizes these exactly (see the module docstring); the floats are for analysis
    and the estimators. ``p_keep / p_other = e^eps``, so k-RR is eps-LDP.
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 2:
        raise ValidationError("k must be an integer >= 2")
    design, _ = _design_for(epsilon, int(k), None)
    return design.probabilities()


def rappor_f(epsilon: float) -> float:
    """RAPPOR's flip probability ``f = 2 / (1 + e^(eps/2))``."""
    _, q1 = rappor_probabilities(epsilon)
    return 2 * q1


def rappor_probabilities(epsilon: float) -> tuple[float, float]:
    """``(P(bit = 1 | it is the true category), P(bit = 1 | it is not))`` = ``(1 - f/2, f/2)``.

    Each bit is binary RR with eps/2: ``1 - f/2 = e^(eps/2) / (1 + e^(eps/2))``.
    """
    x = _exact_epsilon(epsilon) / 2
    return _Design(k=2, x=x).probabilities()


def randomized_response(values: Any, epsilon: float | None = None,
                        categories: Sequence[Hashable] | None = None, *,
                        preset: str | None = None, seed: int | None = None,
                        rng: RandomSource | None = None, name: str = "values") -> Any:
    """Randomized response: binary RR, the two-coin design, or k-ary RR over ``categories``.

    Each value is reported truthfully with probability ``p = e^eps / (e^eps + k - 1)`` and as
    each other declared category with probability ``p' = 1 / (e^eps + k - 1)`` (k = 2: binary
    RR, ``p = e^eps / (e^eps + 1)``; ``preset="two_coin"``: ``p = 3/4``, eps = ln 3). Without
    ``categories`` the values must be bool or 0/1.

    Privacy (eps-LDP per respondent): for inputs ``x != x'`` and any report ``y``,
    ``P(y | x) / P(y | x')`` is ``p / p'``, ``p' / p`` or 1, and ``p / p' = e^eps`` exactly
    because the sampler realizes these probabilities exactly (module docstring). Respondents are
    randomized independently, so releasing all reports is eps-DP for changing one respondent.
    No session budget is charged.

    Returns the same kind as ``values``: a Series (same index and name), an array or a list.
    ``seed=`` is deterministic and insecure (tests and docs only); the default reads the OS CSPRNG.
    """
    inp = _read_values(values, name)
    cats = _implied_categories(inp, name) if categories is None else _check_categories(
        categories)
    k = len(cats)
    design, _ = _design_for(epsilon, k, preset)
    source = _check_rng(seed, rng)
    codes, identity = _codes_of(inp, cats, name)
    offsets = _draw_offsets(design, codes.size, source)
    out = _apply_offsets(codes, offsets, k)
    return _values_out(inp, out, identity, cats)


def rappor(values: Any, epsilon: float, categories: Sequence[Hashable], *,
           seed: int | None = None, rng: RandomSource | None = None,
           name: str = "values") -> Any:
    """Basic one-time RAPPOR: one-hot bit vectors with every bit randomized.

    Each bit ``b`` of the one-hot encoding is reported as ``b`` with probability ``1 - f/2`` and
    as ``1 - b`` with probability ``f/2``, with ``f = 2 / (1 + e^(eps/2))`` (the permanent
    randomized response of Erlingsson et al. 2014 with one hash and no Bloom filter collisions).

    Privacy (eps-LDP per respondent): bits are independent given the value; two values'
    encodings differ in exactly two bits and each bit's likelihood ratio is at most
    ``(1 - f/2) / (f/2) = e^(eps/2)``, exactly realized by the sampler (each bit is binary RR
    at eps/2), so every report's likelihood ratio is at most ``e^eps``. No budget is charged.

    Returns a 2-D bool array (one column per category), or for a Series a DataFrame with the
    same index and one bool column per category.
    """
    inp = _read_values(values, name)
    cats = _check_categories(categories)
    k = len(cats)
    x = _exact_epsilon(epsilon) / 2
    source = _check_rng(seed, rng)
    codes, _ = _codes_of(inp, cats, name)
    n = codes.size
    flips = _draw_offsets(_Design(k=2, x=x), n * k, source)
    bits = flips.view(np.bool_).reshape(n, k)  # offsets are 0/1 bytes
    bits[np.arange(n), codes] ^= True
    if inp.series is not None:
        return pd.DataFrame(bits, index=inp.series.index,
                            columns=pd.Index(cats, tupleize_cols=False))
    return bits


# --------------------------------------------------------------------------------------------
# Estimators
# --------------------------------------------------------------------------------------------


def project_simplex(v: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Euclidean projection onto the probability simplex {p >= 0, sum p = 1}.

    Post-processing of already private estimates: it costs no privacy, but it trades the
    estimator's unbiasedness for a valid distribution. Sort descending, find the largest ``r``
    with ``u_r > (sum_{i<=r} u_i - 1) / r``, shift by that threshold and clip at zero.
    """
    x = np.asarray(v, dtype=np.float64).reshape(-1)
    if x.size == 0 or not bool(np.isfinite(x).all()):
        raise ValidationError("project_simplex needs a non-empty finite vector")
    u = np.sort(x)[::-1]
    css = np.cumsum(u) - 1.0
    r = np.arange(1, x.size + 1)
    rho = int(np.flatnonzero(u - css / r > 0)[-1]) + 1
    theta = css[rho - 1] / rho
    return np.maximum(x - theta, 0.0)


def _ci_z(ci: object) -> float:
    if isinstance(ci, bool) or not isinstance(ci, numbers.Real):
        raise ValidationError("ci must be a number in (0, 1)")
    c = float(ci)
    if not 0 < c < 1:
        raise ValidationError("ci must be a number in (0, 1)")
    return NormalDist().inv_cdf((1 + c) / 2)


def _read_bits(reports: Any, cats: list[Any] | None,
               name: str) -> tuple[npt.NDArray[np.int64], int, list[Any]]:
    """Column sums of RAPPOR reports (2-D bool/0-1), in category order."""
    if isinstance(reports, pd.DataFrame):
        cols = list(reports.columns)
        if cats is None:
            cats = _check_categories(cols, "the report columns")
        if any(c not in cols for c in cats) or len(cols) != len(cats):
            raise ValidationError(f"{name} must have exactly one column per category")
        if bool(reports.isna().any().any()):
            raise _missing(name)
        mat = np.column_stack([reports[c].to_numpy() for c in cats]) if len(reports) else \
            np.zeros((0, len(cats)))
    else:
        mat = np.asarray(reports)
        if cats is None:
            raise ValidationError("categories is required for RAPPOR reports given as an array")
    if mat.ndim != 2 or mat.shape[1] != len(cats):
        raise ValidationError(f"{name} must be 2-D with one column per category")
    if mat.dtype.kind == "b":
        sums = mat.sum(axis=0, dtype=np.int64)
    elif mat.dtype.kind in "iuf" or mat.dtype.kind == "O":
        try:
            ok = bool(np.isin(mat, [0, 1]).all())
        except TypeError:
            ok = False
        if not ok:
            raise ValidationError(f"{name} must contain only bits (bool or 0/1)")
        sums = mat.astype(np.int64).sum(axis=0)
    else:
        raise ValidationError(f"{name} must contain only bits (bool or 0/1)")
    return sums, int(mat.shape[0]), cats


def estimate_frequencies(reports: Any, epsilon: float | None = None,
                         categories: Sequence[Hashable] | None = None, *,
                         method: Method = "auto", ci: float = 0.95, project: bool = False,
                         preset: str | None = None, name: str = "reports") -> pd.DataFrame:
    """Unbiased category frequencies from randomized reports, with standard errors and CIs.

    ``method``: ``"rr"`` (binary), ``"krr"`` or ``"rappor"``; ``"auto"`` picks RAPPOR for 2-D
    reports, else RR for 2 categories and k-RR otherwise. With ``n`` reports and ``c_j`` of
    them equal to (RR/k-RR) or with a 1 bit for (RAPPOR) category ``j``:

    * RR / k-RR: ``f_j = (c_j / n - p') / (p - p')``, variance
      ``(f_j p (1 - p) + (1 - f_j) p' (1 - p')) / (n (p - p')^2)``;
    * RAPPOR: ``f_j = (c_j / n - f/2) / (1 - f)``, variance ``(f/2)(1 - f/2) / (n (1 - f)^2)``.

    The estimand is the frequency among the ``n`` respondents (the variance is over the
    randomization only; for a random sample from a larger population add ``f_j (1 - f_j) / n``).
    Standard errors plug in the estimate clipped to [0, 1]; intervals are normal,
    ``estimate +- z * std_error``. ``project=True`` replaces the estimates by their Euclidean
    projection onto the probability simplex (post-processing: no privacy cost, but biased) and
    clips the intervals to [0, 1]; the unprojected estimates stay in column ``unbiased``.
    Estimation is post-processing of the reports: nothing is charged.

    Returns a DataFrame indexed by category with columns ``estimate``, ``std_error``,
    ``lower``, ``upper``; ``.attrs["dp"]`` describes the mechanism.
    """
    if method not in ("auto", "rr", "krr", "rappor"):
        raise ValidationError("method must be 'auto', 'rr', 'krr' or 'rappor'")
    z = _ci_z(ci)
    cats = None if categories is None else _check_categories(categories)
    two_d = isinstance(reports, pd.DataFrame) or (
        isinstance(reports, np.ndarray) and reports.ndim == 2)
    if method == "auto":
        method = "rappor" if two_d else ("rr" if cats is None or len(cats) == 2 else "krr")
    if method == "rappor":
        if preset is not None:
            raise ValidationError("preset applies to randomized response, not RAPPOR")
        eps_exact = _exact_epsilon(epsilon)
        counts, n, cats = _read_bits(reports, cats, name)
        k = len(cats)
        p1, q1 = _Design(k=2, x=eps_exact / 2).probabilities()
        p_hi, p_lo = p1, q1
        eps_f = float(eps_exact)
        mech: dict[str, Any] = {"mechanism": "rappor", "f": 2 * q1}
    else:
        if two_d:
            raise ValidationError(f"{name} must be one-dimensional for method '{method}'")
        inp = _read_values(reports, name)
        if cats is None:
            cats = _implied_categories(inp, name)
        k = len(cats)
        if method == "rr" and k != 2:
            raise ValidationError("method 'rr' needs exactly 2 categories; use 'krr'")
        design, eps_f = _design_for(epsilon, k, preset)
        codes, _ = _codes_of(inp, cats, name)
        n = int(codes.size)
        counts = np.bincount(codes.astype(np.int64, copy=False), minlength=k)
        p_hi, p_lo = design.probabilities()
        mech = {"mechanism": "randomized_response" if k == 2 else "k_rr",
                "p_keep": p_hi, "p_other": p_lo}
        if preset is not None:
            mech["preset"] = preset
    if n < 2:
        raise ValidationError(f"{name} needs at least 2 reports")
    gap = p_hi - p_lo
    share = counts.astype(np.float64) / n
    est = (share - p_lo) / gap
    fc = np.clip(est, 0.0, 1.0)
    var = (fc * p_hi * (1 - p_hi) + (1 - fc) * p_lo * (1 - p_lo)) / (n * gap * gap)
    se = np.sqrt(var)
    lower, upper = est - z * se, est + z * se
    index = pd.Index(cats, tupleize_cols=False)
    data: dict[str, Any] = {"estimate": est, "std_error": se, "lower": lower, "upper": upper}
    if project:
        data["estimate"] = project_simplex(est)
        data["lower"] = np.clip(lower, 0.0, 1.0)
        data["upper"] = np.clip(upper, 0.0, 1.0)
        data["unbiased"] = est
    out = pd.DataFrame(data, index=index)
    out.attrs["dp"] = {
        "model": "local",
        **mech,
        "epsilon": eps_f,
        "categories": k,
        "n_reports": n,
        "ci": float(ci),
        "z": z,
        "projected": bool(project),
        "estimand": "share of the respondents in each category",
        "charged": False,
    }
    return out


# --------------------------------------------------------------------------------------------
# DataFrame accessor (attached by the lead as ``df.dp.local``)
# --------------------------------------------------------------------------------------------


class LocalAccessor:
    """Local-model randomizers on a DataFrame's columns: ``df.dp.local``.

    Nothing is charged to a session: each respondent's report is eps-LDP on its own.
    """

    def __init__(self, df: pd.DataFrame) -> None:
        if not isinstance(df, pd.DataFrame):
            raise ValidationError("LocalAccessor needs a pandas DataFrame")
        self._df = df

    def _column(self, column: Hashable) -> pd.Series:
        if column not in self._df.columns:
            raise ValidationError(f"unknown column {column!r}")
        col = self._df[column]
        if isinstance(col, pd.DataFrame):
            raise ValidationError(f"column {column!r} is not unique")
        return col

    def randomized_response(self, column: Hashable, epsilon: float | None = None,
                            categories: Sequence[Hashable] | None = None, *,
                            preset: str | None = None, seed: int | None = None,
                            rng: RandomSource | None = None) -> pd.Series:
        """The column randomized by RR / k-RR (see :func:`randomized_response`)."""
        return randomized_response(self._column(column), epsilon, categories, preset=preset,
                                   seed=seed, rng=rng, name=f"column {column!r}")

    def rappor(self, column: Hashable, epsilon: float, categories: Sequence[Hashable], *,
               seed: int | None = None, rng: RandomSource | None = None) -> pd.DataFrame:
        """RAPPOR bit vectors of the column, one bool column per category (see :func:`rappor`)."""
        return rappor(self._column(column), epsilon, categories, seed=seed, rng=rng,
                      name=f"column {column!r}")

    def estimate_frequencies(self, column: Hashable, epsilon: float | None = None,
                             categories: Sequence[Hashable] | None = None, *,
                             method: Method = "auto", ci: float = 0.95, project: bool = False,
                             preset: str | None = None) -> pd.DataFrame:
        """Frequencies from a column of RR / k-RR reports (see :func:`estimate_frequencies`)."""
        return estimate_frequencies(self._column(column), epsilon, categories, method=method,
                                    ci=ci, project=project, preset=preset,
                                    name=f"column {column!r}")
