"""The Dask backend's value model for distinct counts (issue 31, item 5): one scenario.

A value that does not conform to the public schema is missing for every aggregate (docs/privacy.md,
"Behaviour that does not depend on the data"). Under that rule the two datasets below are one
dataset plus a row that every aggregate must read as missing: the release may not depend on it
at all, so the claim audited for this pair is epsilon 0, as the non-interference tests claim
(a distinct count's own sensitivity, 1, would hide a shift of one value). It fails on 48a43c2
and passes on the code that fixes it.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

import dpframe as dpf

from .findings import _dask_frame, finding
from .scenario import Built

Parts = list[pd.DataFrame]


def finding_dask_distinct_nonconforming() -> Callable[[int], Built]:
    """55. A Dask ``count_distinct`` of a column the meta types float64: two partitions of
    three distinct floats, vs one more person's ``"zzz"`` typing the second partition object.
    The text was one more distinct value (3 -> 4), while ``count`` of the column, sums and
    the keys read it as missing. Statistic: the distinct count (epsilon 2); claim: epsilon 0
    for this pair (the row is missing under the schema)."""
    import dask

    def frames() -> tuple[Parts, Parts]:
        p0 = pd.DataFrame({"v": [1.0, 2.0, 3.0]})
        p1 = pd.DataFrame({"v": [3.0, 1.0]})
        odd = pd.DataFrame({"v": pd.Series([3.0, 1.0, "zzz"], dtype=object)})
        return [p0, p1], [p0, odd]

    def rel(parts: Parts, s: dpf.Session) -> list[float]:
        with dask.config.set(scheduler="sync"):
            return [float(_dask_frame(parts).dp(s).count_distinct("v", epsilon=2.0))]

    charged = finding(frames, rel)

    def build(seed: int) -> Built:
        run_d, run_d2, _eps, _delta = charged(seed)
        return run_d, run_d2, 0.0, 0.0

    return build
