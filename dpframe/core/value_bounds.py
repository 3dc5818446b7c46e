"""A DP estimate of a column's range, ``bounds()``: a noisy histogram over signed powers of two
on one row per privacy unit, its small bins zeroed, read at two quantile levels.

**Mechanism.** Each unit contributes one row chosen uniformly at random (the release's
contribution bounding with ``max_rows_per_unit=1``; at the row level every row is its own
unit). The rows are counted in the bins of :func:`signed_octave_edges`, ``[-inf, -max_abs)``,
``[-2**(e+1), -2**e)``, ..., ``[0, 2**m)``, ..., ``[2**e, 2**(e+1))``, ..., ``[max_abs, inf)``,
and every bin, empty or not, gets two-sided geometric noise of scale ``sensitivity / epsilon``.
Everything after that is post-processing of the noisy counts and public parameters
(:func:`bounds_from_counts`): a bin whose noisy count is below :func:`noise_threshold` is read
as empty (with the tail probability :data:`TAIL_PROBABILITY`, no empty bin anywhere passes it),
and ``lo`` is the left edge of the first bin where the cumulative count reaches
``q_lo * total``, ``hi`` the right edge of the first where it reaches ``q_hi * total``.

**Privacy proof.** After the bounding, a unit owns at most one row, and the bins partition the
values, so adding or removing a unit moves one bin's count by one (``add_remove``: L1
sensitivity 1) and replacing it moves two by one each (``change_one``: 2). The discrete Laplace
mechanism at scale ``sensitivity / epsilon`` on the histogram is ``(epsilon, 0)``-DP
(Ghosh, Roughgarden and Sundararajan 2009; the exact sampler of Canonne, Kamath and Steinke
2020); the uniform choice of the row is part of the bounding, whose stability is what the
sensitivity counts; the threshold and the reading are post-processing. Tumult Analytics'
``get_bounds`` is the anchor for power-of-two bins (its bounds are symmetric; these are not).

**Why not the exponential mechanism over log-spaced candidates** (0.2's ``bounds()``): its rank
utility moves by ``T`` when a unit holds ``T`` rows, so at the unit level its rank error is
``T ln(candidates) / epsilon``, most of a table; and even at the row level the thousands of
candidates beyond the data outweigh a 1% point among a few thousand values. A histogram's bins
beyond the data are zeroed by the threshold instead, and one unit moves one count by one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

#: The probability that some empty bin's noisy count passes the threshold (all bins together).
TAIL_PROBABILITY = 0.005
#: Octaves of magnitude below ``max_abs`` that get bins of their own (2**-52 of it: a double's
#: resolution); values of smaller magnitude share the bins ``[-2**m, 0)`` and ``[0, 2**m)``.
OCTAVES = 52
#: A total below this many thresholds reads only the bulk of the values: the estimate warns.
TRUSTED_THRESHOLDS = 10


def signed_octave_edges(max_abs: float) -> tuple[float, ...]:
    """The histogram's edges, increasing: ``-inf``, ``-max_abs``, the negative powers of two
    below ``max_abs`` in magnitude (:data:`OCTAVES` of them), ``0``, the positive ones, then
    ``max_abs`` and ``inf``. Bins are closed on the left (``right=False``), so ``0`` falls in
    ``[0, 2**m)`` and a range of non-negative values gets ``lo = 0``. Public: ``max_abs`` only."""
    top = math.ceil(math.log2(max_abs))
    if 2.0 ** (top - 1) >= max_abs:  # log2's rounding: the largest power strictly below
        top -= 1
    powers = [2.0 ** e for e in range(top - OCTAVES, top) if 2.0 ** e < max_abs]
    return (-math.inf, -float(max_abs), *(-p for p in reversed(powers)), 0.0, *powers,
            float(max_abs), math.inf)


def noise_threshold(scale: float, bins: int, tail: float = TAIL_PROBABILITY) -> int:
    """The smallest integer ``t`` with ``bins * P(Z >= t) <= tail`` for two-sided geometric
    noise ``Z`` of scale ``scale`` (``P(Z >= t) = a**t / (1 + a)``, ``a = exp(-1 / scale)``):
    with probability at least ``1 - tail`` no empty bin's noisy count reaches it."""
    a = math.exp(-1.0 / float(scale))
    t = math.ceil(float(scale) * math.log(bins / (tail * (1.0 + a))))
    return max(t, 1)


@dataclass(frozen=True)
class ValueBounds:
    """The estimate and what it read (public: post-processing of released counts)."""

    lower: float
    upper: float
    #: The noisy counts' total after zeroing (about the number of units with a value).
    units: int
    #: Counts below it were read as empty.
    threshold: int
    #: Whether the total holds at least :data:`TRUSTED_THRESHOLDS` thresholds.
    trusted: bool

    def describe(self) -> dict[str, object]:
        """What the provenance states about the reading."""
        return {"method": "noisy histogram over signed powers of two, one row per unit",
                "threshold": self.threshold, "noisy_units": self.units,
                "trusted": self.trusted}


def bounds_from_counts(counts: npt.ArrayLike, edges: tuple[float, ...],
                       quantiles: tuple[float, float], threshold: int,
                       max_abs: float) -> ValueBounds:
    """Read ``(lo, hi)`` off noisy bin counts (bins ``[edges[i], edges[i+1])``): counts below
    ``threshold`` are zeroed, ``lo`` is the left edge of the first bin whose cumulative count
    reaches ``q_lo`` of the total, ``hi`` the right edge of the first that reaches ``q_hi``
    (the outer bins' infinite edges read as ``-max_abs`` and ``max_abs``). With no bin left,
    ``(-max_abs, max_abs)``, untrusted. Post-processing only.

    Example:
        >>> edges = (-math.inf, -8.0, -4.0, 0.0, 4.0, 8.0, math.inf)
        >>> b = bounds_from_counts([0, 3, 40, 200, 90, 2], edges, (0.01, 0.99), 5, 8.0)
        >>> b.lower, b.upper, b.units
        (-4.0, 8.0, 330)
    """
    c = np.asarray(counts, dtype=np.int64).reshape(-1)
    kept = np.where(c >= threshold, c, 0)
    total = int(kept.sum())
    if total == 0:
        return ValueBounds(-float(max_abs), float(max_abs), 0, threshold, False)
    cum = np.cumsum(kept)
    q_lo, q_hi = quantiles
    i = int(np.searchsorted(cum, q_lo * total, side="left"))
    j = int(np.searchsorted(cum, q_hi * total, side="left"))
    i = min(max(i, int(np.flatnonzero(kept)[0])), len(kept) - 1)
    j = min(j, len(kept) - 1)
    lo = max(edges[i], -float(max_abs))
    hi = min(edges[j + 1], float(max_abs))
    return ValueBounds(lo, hi, total, threshold, total >= TRUSTED_THRESHOLDS * threshold)
