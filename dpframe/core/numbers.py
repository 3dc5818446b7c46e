"""The one number rule: user numbers as exact fractions, and exact powers of two.

Every user-supplied number that matters to privacy (epsilon, delta, bounds, weights, rates,
levels) goes through :func:`to_fraction`, so a value means the same everywhere:
``np.float32(0.1)`` is 1/10 in the budget, in the bounds and in the ledger (docs/privacy.md#budget).
This module does not know pandas.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any, Literal

from ..errors import ValidationError


def to_fraction(
    x: Any,
    name: str,
    *,
    positive: bool = False,
    below_one: bool = False,
    signed: bool = False,
) -> Fraction:
    """Validate a user-supplied number and convert it to an exact :class:`Fraction`.

    Accepts ints, floats, Fractions, Decimals and numpy numbers. Floats convert through their
    shortest decimal representation (``0.01 -> 1/100``), so what the user typed is what is
    charged. Rejects bools, strings, None, complex numbers, NaN, infinities and negative values
    with :class:`~dpframe.errors.ValidationError`; with ``positive=True`` also zero, with
    ``below_one=True`` also values ``>= 1``; ``signed=True`` accepts negative values (bounds).
    Messages name the argument, never data. This is the one number rule of docs/privacy.md#budget
    (epsilon, delta, bounds, weights, rates, levels): ``np.float32(0.1)`` is 1/10 everywhere.
    """
    f = x if type(x) is Fraction else _exact(_real(x, name), name)
    if f < 0 and not signed:
        raise ValidationError(f"{name} must be non-negative, got {format_number(f)}")
    if positive and f == 0:
        raise ValidationError(f"{name} must be positive, got 0")
    if below_one and f >= 1:
        raise ValidationError(f"{name} must be below 1, got {format_number(f)}")
    return f


def _real(x: Any, name: str) -> numbers.Real | Decimal:
    """``x`` if it is a real number (not a bool, a string or None), else ValidationError."""
    if isinstance(x, bool) or type(x).__name__ in {"bool_", "bool"}:
        raise ValidationError(f"{name} must be a number, not a bool")
    if isinstance(x, str | bytes) or x is None:
        raise ValidationError(f"{name} must be a number, not {type(x).__name__}")
    if not isinstance(x, numbers.Real | Decimal):
        raise ValidationError(f"{name} must be a real number, not {type(x).__name__}")
    return x


def _exact(x: numbers.Real | Decimal, name: str) -> Fraction:
    """The exact value of a real number: rationals as they are, Decimals exactly, binary
    floats through their shortest decimal form."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, numbers.Integral):
        return Fraction(int(x))
    if isinstance(x, Decimal):
        if not x.is_finite():
            raise ValidationError(f"{name} must be finite, got {x}")
        return Fraction(x)
    if isinstance(x, numbers.Rational):
        return Fraction(int(x.numerator), int(x.denominator))
    return _shortest_decimal(x, name)


def _shortest_decimal(x: numbers.Real, name: str) -> Fraction:
    """A binary float as the fraction of its shortest decimal representation: Python floats
    (and float64 subclasses) through their shortest repr, other binary floats (numpy
    float32/16) through their own shortest str, so ``np.float32(0.1)`` is 1/10."""
    v = float(x)
    if math.isnan(v):
        raise ValidationError(f"{name} must be a number, got NaN")
    if math.isinf(v):
        raise ValidationError(f"{name} must be finite, got {v}")
    text = float.__repr__(x) if isinstance(x, float) else str(x)
    return _decimal_fraction(text, v)


@lru_cache(maxsize=4096)
def _decimal_fraction(text: str, value: float) -> Fraction:
    """The fraction a float's shortest decimal text denotes (cached: releases read the same
    budgets and bounds again and again; keyed by the text, so float32 and float64 differ)."""
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return Fraction(float.__repr__(value))


def validate_epsilon(x: Any, name: str = "epsilon") -> Fraction:
    """An epsilon: a finite number > 0, as an exact Fraction (else ``ValidationError``)."""
    return to_fraction(x, name, positive=True)


def validate_delta(x: Any, name: str = "delta") -> Fraction:
    """A delta: a number in [0, 1), as an exact Fraction (else ``ValidationError``)."""
    return to_fraction(x, name, below_one=True)


#: How :func:`format_number` renders: ``message`` (error messages: 6 significant digits),
#: ``display`` (notebook/terminal text: also "" for None, other values as text) and ``table``
#: (CLI tables: thousands grouped, 4 significant digits, "—" for None or nan).
NumberStyle = Literal["message", "display", "table"]
_DIGITS: dict[str, int] = {"message": 6, "display": 6, "table": 4}


def format_number(x: Any, digits: int | None = None, *, style: NumberStyle = "message") -> str:
    """The one human rendering of a number (public values only: budgets, scales, released
    values); ``digits`` significant digits (default by ``style``, see :data:`NumberStyle`)."""
    d = _DIGITS[style] if digits is None else digits
    if style == "message":
        return format(float(x), f".{d}g")
    if x is None:
        return "" if style == "display" else "—"
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    if style == "display":
        return format(f, f".{d}g")
    return _table_number(x, f, d)


def _table_number(x: Any, f: float, digits: int) -> str:
    if f != f:
        return "—"
    if isinstance(x, int) or (f.is_integer() and abs(f) < 1e15):
        return f"{int(f):,}"
    if abs(f) >= 1000:
        return f"{f:,.0f}"
    return f"{f:.{digits}g}"


def power_of_two_at_most(x: Fraction) -> Fraction:
    """The largest power of two ``<= x`` (x > 0), as an exact fraction."""
    if x <= 0:
        raise ValueError("x must be positive")
    e = x.numerator.bit_length() - x.denominator.bit_length()
    p = Fraction(2) ** e
    while p > x:
        p /= 2
    while p * 2 <= x:
        p *= 2
    return p


def bisect_floats(below: Callable[[float], bool], lo: float, hi: float, steps: int
                  ) -> tuple[float, float]:
    """``[lo, hi]`` narrowed ``steps`` times around the point where the monotone predicate
    ``below`` turns from true (at ``lo``) to false (at ``hi``): the calibration searches of
    noise parameters, whose float guesses are then checked exactly."""
    for _ in range(steps):
        mid = (lo + hi) / 2
        if below(mid):
            lo = mid
        else:
            hi = mid
    return lo, hi
