"""Histograms and grouped counts projected onto non-negative counts with their noisy total
kept (issue 47, item 5; core/projection.py): an end-to-end audit.

The projection reads only the noisy counts, so it is post-processing: the released vector
costs what the raw one costs, and nothing but the noisy values may depend on the data. The
scenario releases a sparse 8-bin histogram at epsilon 1 (its default, projected form) on D (3
rows in the first bin) and D' (one more row, in the sixth bin). The statistic is the released
total (the sum of the projected counts, which is the raw noisy total cut at 0), or a sentinel
when the result's structure (its index, dtype, name and the columns of ``ci=``) differs from
that of the same release on an empty frame: a structure that depended on the data would show
as an event of probability 0 on one side.

The broken control projects onto the true total (the exact number of rows in the bins, not
the noisy one): the released total then tells D from D' every time, and the audit finds it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core.aggregates import AGGREGATES
from dpframe.core.aggregates.histogram import Histogram
from dpframe.core.measure import BinLayout, MeasurePlan, MeasureRelease, Rows
from dpframe.core.noise.rng import RandomSource
from dpframe.core.projection import project_counts

from .findings import finding
from .scenario import Built
from .support import dp, frame

EDGES = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
#: The statistic of a release whose structure is not the public one.
OTHER_STRUCTURE = -1e9


def _structure(out: pd.DataFrame) -> tuple[Any, ...]:
    return (tuple(out.index), tuple(out.columns), tuple(str(t) for t in out.dtypes),
            out.index.dtype.name, out.attrs["dp"]["covers"])


def _release(df: pd.DataFrame, s: dpf.Session) -> pd.DataFrame:
    out: pd.DataFrame = dp(df, s, bounds={"x": (0.0, 8.0)}).histogram("x", EDGES, epsilon=1.0,
                                                                      ci=0.9)
    return out


def finding_projected_histogram() -> Callable[[int], Built]:
    """84. The projected histogram's released total and structure."""
    public: list[tuple[Any, ...]] = []

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        return frame(x=[0.5] * 3), frame(x=[0.5] * 3 + [5.5])

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        if not public:  # the structure of the same release on an empty frame
            empty = _release(frame(x=np.array([], dtype=np.float64)), dpf.Session(1e9, seed=0))
            public.append(_structure(empty))
        out = _release(df, s)
        if _structure(out) != public[0]:
            return [OTHER_STRUCTURE]
        assert (out["count"] >= 0).all() and (out["lower"] >= 0).all()
        return [float(out["count"].sum())]

    return finding(frames, rel)


class TrueTotal(Histogram):
    """BROKEN on purpose: the histogram projected onto its true total (the exact number of
    rows in its bins) instead of the noisy one."""

    def release(self, mp: MeasurePlan[BinLayout], rows: Rows, rng: RandomSource, level: float,
                want_ci: bool) -> MeasureRelease:
        r = super().release(mp, rows, rng, level, want_ci)
        exact = int(np.asarray(self.exact_counts(mp, rows)).sum())
        r.values = project_counts(r.values, total=exact)  # the core's projection then keeps it
        return r


@contextlib.contextmanager
def true_total() -> Iterator[None]:
    """BROKEN on purpose: histograms projected onto the true total (through the registry)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setitem(AGGREGATES, "histogram", TrueTotal())
        yield

