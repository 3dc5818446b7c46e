"""Non-negative counts with their total kept: the Euclidean projection of a noisy count vector
onto the scaled simplex ``{x >= 0, sum x = s}``.

A histogram or a grouped count is released as one noisy vector over disjoint cells. Its raw
values are unbiased but can be negative, and most of the error of a sparse vector is the noise
of its empty cells. :func:`project_counts` returns the point of ``{x >= 0, sum x = s}`` closest
to the noisy vector (Euclidean distance), ``s`` the noisy total: the sum of the raw noisy values
(cut at 0), so the total stays unbiased wherever it is positive. The projection is
``max(x_i - tau, 0)`` for the one ``tau`` that makes the sum ``s`` (Duchi, Shalev-Shwartz,
Singer and Chandra 2008; Wang and Carreira-Perpinan 2013): found by sorting, O(n log n), in
exact integer arithmetic, deterministic. Integer counts stay integers: every kept cell is
shifted by the same ``tau``, so they share one fractional part; they are floored and the
``s - sum(floor)`` units left go to the kept cells with the largest noisy values (ties: the
first cell), which is the integer point of the same simplex closest to the real projection.

Privacy: the projection reads only the released noisy values (never the exact ones), so it is
post-processing of a DP release and costs nothing (Dwork and Roth 2014, Proposition 2.1). Its
shape and dtype are those of its input: nothing about the data but the noisy values changes.
The projected values are biased toward 0 where the true counts are small; ``postprocess=None``
keeps the raw, unbiased ones. An interval of a projected count is the raw interval cut at 0:
the true count is never negative, so it lies in the cut interval exactly when it lies in the
raw one, and the coverage is the raw coverage (docs/privacy.md#noise).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

import numpy as np
import numpy.typing as npt

from .measure import MeasureRelease

#: The value of ``postprocess=`` that projects (the default of histograms and grouped counts).
NONNEGATIVE = "nonnegative"
#: What ``postprocess=`` takes: the projection, or None for the raw noisy values.
Postprocess = Literal["nonnegative"] | None
POSTPROCESS_OPTIONS: tuple[str | None, ...] = (NONNEGATIVE, None)


def project_counts(noisy: npt.NDArray[np.int64], total: int | None = None
                   ) -> npt.NDArray[np.int64]:
    """The integer point of ``{x >= 0, sum x = s}`` closest to ``noisy``, ``s`` the given
    ``total`` (a better noisy total released in the same call) or the sum of ``noisy``, cut at
    0 (see the module docstring). Same shape, int64; exact."""
    x = np.asarray(noisy, dtype=np.int64).reshape(-1)
    out = np.zeros_like(x)
    if total is None:
        total = int(x.sum()) if x.size else 0
    if total <= 0 or x.size == 0:
        return out.reshape(np.shape(noisy))
    order = np.argsort(-x, kind="stable")  # largest first, ties by position
    u = x[order]
    css = np.cumsum(u)
    j = np.arange(1, x.size + 1, dtype=np.int64)
    # u_j > (css_j - s) / j, exactly in integers: u_j > floor((css_j - s) / j)
    k = int(np.flatnonzero(u > (css - total) // j)[-1]) + 1
    q, r = divmod(int(css[k - 1]) - total, k)  # tau = q + r / k
    kept = order[:k]
    out[kept] = x[kept] - q - (1 if r else 0)  # floor(x_i - tau) for the kept cells
    if r:  # the k - r units the floors left: to the largest noisy values
        out[kept[:k - r]] += 1
    return out.reshape(np.shape(noisy))


def project_reals(noisy: npt.ArrayLike, total: float | None = None) -> np.ndarray:
    """The Euclidean projection of ``noisy`` onto ``{x >= 0, sum x = s}`` in floats, ``s`` the
    given ``total`` or the sum of ``noisy``, cut at 0 (for comparisons: releases use the exact
    :func:`project_counts`)."""
    x = np.asarray(noisy, dtype=np.float64).reshape(-1)
    s = max(float(x.sum()) if total is None else float(total), 0.0)
    if s == 0.0 or x.size == 0:
        return np.zeros(np.shape(noisy))
    u = np.sort(x)[::-1]
    css = np.cumsum(u)
    j = np.arange(1, x.size + 1)
    k = int(np.flatnonzero(u - (css - s) / j > 0)[-1]) + 1
    tau = (css[k - 1] - s) / k
    return np.maximum(x - tau, 0.0).reshape(np.shape(noisy))


def postprocessed(release: MeasureRelease, form: str | None) -> MeasureRelease:
    """``release`` in the form ``form`` (its plan's, public): projected when it is
    :data:`NONNEGATIVE` (the values by :func:`project_counts`, the lower ends cut at 0), as it
    is otherwise. Post-processing of the noisy values alone."""
    if form != NONNEGATIVE:
        return release
    lower = None if release.lower is None else np.maximum(release.lower, 0.0)
    return replace(release, values=project_counts(release.values), lower=lower)
