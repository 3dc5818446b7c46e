"""Finding 59: the DP choice of contribution bounds (``priv.contribution_bounds(epsilon=)``) is
``epsilon``-DP.

The mechanism is three noisy histograms of per-unit counts (rows, groups, largest group) over
the candidate ladder (dpframe/core/choose_bounds.py); the choice is post-processing of them.
Each release here is the mechanism as the release path runs it: the backend's exact half (the
pandas backend, computed once per dataset: it draws nothing) and its histograms, then
:func:`~dpframe.core.choose_bounds.add_histogram_noise` (what ``noisy_histograms`` runs),
2,000 releases per call stacked (each bin's noise is independent). The statistic
sums, over the three histograms, the noisy counts of the bins the neighbour moves (added /
removed unit: its bins; changed unit: its old bins minus its new ones), so it sees the whole
release's privacy loss, not one histogram's share. The claim is what the public API charges
for the same request (read from a session's ledger).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from fractions import Fraction

import numpy as np
import pandas as pd

import dpframe as dpf
from dpframe.core.choose_bounds import BoundsRequest, add_histogram_noise, exact_histograms
from dpframe.core.noise.rng import RandomSource
from dpframe.testing import FloatArray

from .scenario import Built
from .support import session

#: Releases per call of a run (each gives one draw).
BATCH = 2000
CAP = 100


def _base() -> pd.DataFrame:
    """Five units with 1-4 rows over two groups."""
    return pd.DataFrame({"u": [1, 2, 2, 3, 3, 3, 4, 5, 5, 5, 5],
                         "g": [0, 0, 1, 0, 1, 1, 1, 0, 0, 1, 1]})


def _victim(u: int, rows: int, groups: int) -> pd.DataFrame:
    return pd.DataFrame({"u": [u] * rows, "g": [i % groups for i in range(rows)]})


def _exact(df: pd.DataFrame, request: BoundsRequest) -> object:
    backend = df.dp(session(0, request.relation))._backend  # type: ignore[operator]
    return backend.bind(request.columns).exact(request.compute_request(), None)


def _signs(request: BoundsRequest, d: pd.DataFrame, d2: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per histogram, +1 on the bins D' holds more units in, -1 on those it holds fewer."""
    a = exact_histograms(request, _exact(d, request))  # type: ignore[arg-type]
    b = exact_histograms(request, _exact(d2, request))  # type: ignore[arg-type]
    return {k: np.sign(b[k] - a[k]).astype(np.float64) for k in a}


def finding_bound_choice(relation: str, grouped: bool = True) -> Callable[[int], Built]:
    """add_remove: D' has one more unit (1 row, 1 group). change_one: one unit's single row
    becomes 40 rows over 2 groups (each histogram's unit moves from one bin to another).
    ``grouped``: the choice for ``groupby("g")`` (three histograms at epsilon / 3 each), else
    ungrouped (the rows histogram alone, at the whole epsilon)."""
    by = ("g",) if grouped else ()

    def build(seed: int) -> Built:
        d = _base()
        if relation == "add_remove":
            d2 = pd.concat([d, _victim(99, 1, 1)], ignore_index=True)
        else:
            d2 = pd.concat([d[d["u"] != 4], _victim(4, 40, 2)], ignore_index=True)
        with _probe() as s:
            d.dp(s, privacy_unit="u").contribution_bounds(epsilon=1.0, cap=CAP, by=by)
            claimed = float(s.spent_exact[0])
        request = BoundsRequest(Fraction(1), "u", by, {}, CAP, Fraction(1),
                                relation)  # type: ignore[arg-type]
        signs = _signs(request, d, d2)
        counter = itertools.count()

        def run(df: pd.DataFrame, side: int) -> Callable[[], FloatArray]:
            hist = exact_histograms(request, _exact(df, request))  # type: ignore[arg-type]
            stacked = {k: np.tile(v, (BATCH, 1)) for k, v in hist.items()}

            def go() -> FloatArray:
                rng = RandomSource(seed * 10_000_000 + side * 5_000_000 + next(counter),
                                   warn=False)
                # BATCH independent releases at once: the noise is independent per bin
                h = add_histogram_noise(request, stacked, rng)
                return sum((h[k] @ signs[k] for k in h), np.zeros(BATCH))
            return go

        return run(d, 0), run(d2, 1), claimed, 0.0

    return build


@contextlib.contextmanager
def _probe() -> Iterator[dpf.Session]:
    s = dpf.Session(10.0, neighbouring="add_remove", seed=1)
    yield s
