"""Privacy round 4 (issue 43), helper d: the audit scenario of finding 73.

73. ``contribution_bounds`` over ``dpf.scan`` of a CSV read the unit column, which no
declaration typed, as text, where every release refuses such a column: one person whose id is
spelled ``100``, ``0100`` and ``00100`` (one int64 unit) counted as three units in the
histograms of per-unit counts. The scenario is exact: it runs the public call on a CSV (D:
the person's three rows, so spelled; D': without them) with the exact half observed (the
histograms the release adds its noise to, taken where :func:`dpframe.engine.bounds.choose`
receives them), and computes the privacy loss those histograms give at the noise the release
states: each histogram is a geometric mechanism of sensitivity 1 at ``epsilon / 3``, so the
loss is the sum over histograms of their L1 shift times ``epsilon / 3``. Two scans: the unit
undeclared (the call of the finding: refused on both datasets after the fix, loss 0) and the
unit declared ``int64`` (one unit of 3 rows: loss exactly the epsilon charged). A refusal on
one side only is an infinite loss.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpframe as dpf
from dpframe.core.choose_bounds import exact_histograms

from .findings_scan import _csv_files

#: The choice's epsilon (charged once; each of the three histograms gets a third).
_EPSILON = Fraction(1)
#: Four units over groups a and b, then (D only) one person's three rows, the id spelled
#: three ways.
_BASE = b"uid,g\n7,a\n8,b\n8,b\n9,a\n10,b\n"
_PERSON = b"100,a\n0100,a\n00100,b\n"


def _histograms(glob: str, types: dict[str, str]) -> dict[str, np.ndarray] | None:
    """The exact histograms of ``groupby("g").contribution_bounds`` on the CSV ``glob`` read
    with ``types`` (None when the call is refused)."""
    from dpframe.engine import bounds

    seen: list[dict[str, np.ndarray]] = []
    choose = bounds.choose

    def observed(request: Any, exact: Any, rng: Any) -> Any:
        seen.append(exact_histograms(request, exact))
        return choose(request, exact, rng)

    s = dpf.Session(10, seed=0)
    priv = dpf.scan(glob, types=types).dp(s, privacy_unit="uid", keys={"g": ["a", "b"]})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bounds, "choose", observed)
        try:
            priv.groupby("g").contribution_bounds(epsilon=float(_EPSILON), cap=10)
        except dpf.DPError:
            assert s.spent_exact == (0, 0)  # refused before any charge
            return None
    (h,) = seen
    return h


def _loss(a: dict[str, np.ndarray] | None, b: dict[str, np.ndarray] | None) -> Fraction:
    if a is None or b is None:
        return Fraction(0) if a is b else Fraction(10**6)  # a refusal on one side only
    share = _EPSILON / len(a)
    return sum((share * int(np.abs(a[k] - b[k]).sum()) for k in a), Fraction(0))


def finding_bounds_choice_undeclared_csv_unit(seed: int) -> tuple[float, float, float, str]:
    """73. Privacy loss of (D, D' = D without the person whose id is spelled 3 ways) in the
    exact histograms of ``groupby("g").contribution_bounds(epsilon=1)`` on a CSV: the unit
    undeclared (refused after the fix) and declared int64; claim 1 (the charge)."""
    d, d2 = _csv_files({"a.csv": _BASE + _PERSON}), _csv_files({"a.csv": _BASE})
    undeclared = _loss(_histograms(d, {"g": "string"}), _histograms(d2, {"g": "string"}))
    typed = {"uid": "int64", "g": "string"}
    declared = _loss(_histograms(d, typed), _histograms(d2, typed))
    return (float(max(undeclared, declared)), float(_EPSILON), 0.0,
            f"exact histograms: loss {float(undeclared):g} with the unit undeclared, "
            f"{float(declared):g} with it declared int64")


@contextlib.contextmanager
def undeclared_unit_read() -> Iterator[None]:
    """BROKEN on purpose: the choice reads its columns without the release's check of their
    declaration (the code before finding 73): an undeclared unit column is text."""
    from dpframe.engine import bounds

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bounds, "check_columns", lambda request, backend: None)
        yield


__all__ = ["finding_bounds_choice_undeclared_csv_unit", "undeclared_unit_read"]
