"""JSON-safe conversion of provenance and ledger details (public parameters only)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from fractions import Fraction
from typing import Any


def jsonable(x: Any) -> Any:
    """``x`` made JSON-safe: Fractions to floats, numpy scalars to Python numbers, non-finite
    floats and unknown objects to strings."""
    kind = type(x)  # the common exact types first: no abstract-class checks for them
    if kind is str or kind is int or kind is bool or x is None:
        return x
    if kind is float:
        return x if math.isfinite(x) else str(x)
    if kind is Fraction:
        return float(x)
    if kind is dict:
        return {str(k): jsonable(v) for k, v in x.items()}
    if kind is list or kind is tuple:
        return [jsonable(v) for v in x]
    if isinstance(x, Mapping):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    return _scalar(x)


def _scalar(x: Any) -> Any:
    if isinstance(x, Fraction):
        return float(x)
    if isinstance(x, bool | int | str) or x is None:
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    item = getattr(x, "item", None)
    if callable(item):
        return jsonable(item())
    if isinstance(x, os.PathLike):
        return os.fspath(x)
    return str(x)
