"""Finding 80: the joint K-norm release of a centred sum and its count (issue 47, item 3).

A mean's (centred sum, count) pair, and an agg's counts and sums, are released at once by the
K-norm mechanism with a box K (dpframe.core.knorm). The scenario releases
``agg({"x": ["count", "sum"]})`` (the coordinates ``sum:x`` and ``count:x``, exactly a mean's)
over 5,000 public keys, each group holding 3 rows of 0 in D and one more row at the upper bound
10 in D' (the box's corner: the worst neighbour). The statistic per group is the likelihood
ratio's own: ``||y - x||_K - ||y - x'||_K`` with ``y`` the released (sum, count), ``x`` and
``x'`` the exact pairs of D and D', and ``K`` the box the release states. It is 1 on the
quadrant beyond the corner, whose probability differs by exactly e^epsilon' between D and D':
the audit's bound comes close to the claim, and a K half as wide (the broken control: the
noise of epsilon 2) is caught.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.testing import FloatArray

from .scenario import Built
from .support import NKEYS, api, concat, dp, groups, public

#: The bounds of x and the worst row (at the corner of the box).
BOUNDS = (-10.0, 10.0)
TOP = 10.0
#: Rows of 0 in every group of D.
BASE = 3


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    d = groups([0.0] * BASE, NKEYS)
    return d, concat(d, groups([TOP], NKEYS, unit_offset=10**8))


def _release(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
    out = dp(df, s, bounds={"x": BOUNDS}, keys=public()).groupby("g").agg(
        {"x": ["count", "sum"]}, epsilon=1.0)
    joint = out.attrs["dp"]["measures"][0]["joint"]["coordinates"]
    ds, dc = joint["sum:x"]["sensitivity"], joint["count:x"]["sensitivity"]
    mid = (BOUNDS[0] + BOUNDS[1]) / 2
    c = out[("x", "count")].to_numpy(dtype=np.float64)
    s_ = out[("x", "sum")].to_numpy(dtype=np.float64) - mid * c  # the centred sum released

    def norm(a: FloatArray, b: FloatArray) -> FloatArray:
        return np.maximum(np.abs(a) / ds, np.abs(b) / dc)

    x = (BASE * (0.0 - mid), float(BASE))
    x2 = (x[0] + TOP - mid, x[1] + 1)
    return norm(s_ - x[0], c - x[1]) - norm(s_ - x2[0], c - x2[1])


def finding_joint_k_norm() -> Callable[[int], Built]:
    """80. The joint K-norm release of (centred sum, count), by its likelihood statistic."""
    return api(_frames, _release)


@contextlib.contextmanager
def half_box() -> Iterator[None]:
    """BROKEN on purpose: every joint release's box K half as wide (the noise of 2 epsilon)."""
    from dpframe.core import joint as joint_module
    from dpframe.core import plan as plan_module
    from dpframe.core.exact.memo import RecentCache
    from dpframe.core.knorm import coordinate

    def halved(name: str, sensitivity: Fraction, integer: bool,
               unit: Fraction = Fraction(1)) -> object:
        c = coordinate(name, sensitivity, integer, unit)
        return type(c)(name, c.sensitivity / 2, c.granularity, c.integer)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(joint_module, "coordinate", halved)
        mp.setattr(plan_module, "_PLANS", RecentCache(plan_module.PLAN_CACHE_SIZE))
        yield


__all__ = ["finding_joint_k_norm", "half_box"]
