"""Finding 57: private keys at row level, where one count is both the selection and the
release (the stability histogram, :mod:`dpframe.core.selection`).

Before, ``keys="private"`` spent half of epsilon on a separate selection count and released a
second count; now the released count is the thresholded one, at the whole epsilon, with a coin
at the threshold's boundary spending the delta the integer threshold leaves. These scenarios
audit that joint release at row level (no privacy unit): a key one row holds against its
absence (the delta side: the coin and the threshold) and a count near the threshold (the
epsilon side, where the released value is the thresholded noisy count).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

import dpframe as dpf
from dpframe.testing import FloatArray

from .scenario import Built
from .support import NKEYS, api, concat, dp, frame, groups

#: The declared delta of the audited releases (large, so that the delta side is measurable).
DELTA = 1e-3


def finding_row_level_thresholded_count(rows_d: int, rows_d2: int
                                        ) -> Callable[[int], Built]:
    """57. ``groupby("g", keys="private").count(epsilon=1, delta=1e-3)`` at row level: each of
    ``NKEYS`` keys holds ``rows_d`` rows in D and ``rows_d2`` in D' (0: absent), with an anchor
    key of 500 rows. Statistic per key: its released count, -inf when not released."""
    anchor = -1

    def with_rows(rows: int) -> pd.DataFrame:
        a = frame(g=np.full(500, anchor), x=1.0, u=10**8 + np.arange(500))
        return a if not rows else concat(a, groups([1.0] * rows, NKEYS))

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        return with_rows(rows_d), with_rows(rows_d2)

    def rel(df: pd.DataFrame, s: dpf.Session) -> FloatArray:
        # raw (one draw per key: the projection's shared shift would couple the keys)
        y = dp(df, s).groupby("g", keys="private").count(epsilon=1.0, delta=DELTA,
                                                         postprocess=None)
        out = y.reindex(range(NKEYS)).to_numpy(dtype=np.float64, na_value=np.nan)
        return np.where(np.isnan(out), -np.inf, out)

    return api(frames, rel)
