"""Building blocks of the end-to-end scenarios: releases through the public pandas API, one
fresh seeded session per release, on frames of worst-case groups."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

import dpframe as dpf
from dpframe.testing import FloatArray

from .scenario import Built, Run

#: One release on one frame (or Arrow table) in a session: the statistic audited.
Release = Callable[[Any, dpf.Session], npt.ArrayLike]
#: The neighbouring pair ``D, D'``.
Frames = Callable[[], tuple[Any, Any]]

#: Public keys of a grouped scenario: one draw per key.
NKEYS = 5000
#: Bounds of the summed column.
B = (-10.0, 10.0)


def session(seed: int, neighbouring: str) -> dpf.Session:
    """A seeded session with a budget no audit exhausts."""
    return dpf.Session(1e12, 0.5, neighbouring=neighbouring, seed=seed)


def runs(release: Release, df_d: Any, df_d2: Any, seed: int, neighbouring: str
         ) -> tuple[Run, Run]:
    """Runs of ``release`` on the two frames, one fresh session (its own seed) per release."""
    counter = itertools.count()

    def run(df: Any, side: int) -> Run:
        def go() -> FloatArray:
            s = session(seed * 10_000_000 + side * 5_000_000 + next(counter), neighbouring)
            return np.asarray(release(df, s), dtype=np.float64).reshape(-1)
        return go

    return run(df_d, 0), run(df_d2, 1)


def charged(release: Release, df: Any, seed: int, neighbouring: str
            ) -> tuple[Fraction, Fraction]:
    """The (epsilon, delta) a session is charged for one release of ``release`` on ``df``."""
    probe = session(seed, neighbouring)
    release(df, probe)
    return probe.spent_exact


def api(frames: Frames, release: Release, neighbouring: str = "add_remove"
        ) -> Callable[[int], Built]:
    """Runs of ``release`` on the two frames, one fresh seeded session per release.

    The claimed (epsilon, delta) is what the session charged for one release (read from its
    ledger), so an under-charge is caught as well as too little noise.
    """

    def build(seed: int) -> Built:
        df_d, df_d2 = frames()
        run_d, run_d2 = runs(release, df_d, df_d2, seed, neighbouring)
        eps, delta = charged(release, df_d, seed * 10_000_000 + 9_999_999, neighbouring)
        return run_d, run_d2, float(eps), float(delta)

    return build


def dp(df: pd.DataFrame, s: dpf.Session, **options: Any) -> Any:
    """``df.dp(s, **options)``: the public pandas front."""
    return df.dp(s, **options)  # type: ignore[operator]


def frame(**cols: Any) -> pd.DataFrame:
    """A DataFrame of ``cols``."""
    return pd.DataFrame(cols)


def groups(per_group: Sequence[float], n_keys: int, *, unit_offset: int = 0) -> pd.DataFrame:
    """``n_keys`` groups 0..n-1, each holding the values ``per_group`` (one unit per row)."""
    k = len(per_group)
    g = np.repeat(np.arange(n_keys), k)
    x = np.tile(np.asarray(per_group, dtype=np.float64), n_keys)
    return frame(g=g, x=x, u=unit_offset + np.arange(g.size))


def concat(*frames: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``frames``, one after the other."""
    return pd.concat(frames, ignore_index=True)


def block_min(values: npt.ArrayLike, block: int, centre: Sequence[float],
              sign: Sequence[float]) -> FloatArray:
    """Per block of ``block`` consecutive groups: min over the block of sign * (y - centre).
    A unit that moves every coordinate of a block in the direction ``sign`` is best detected
    by "every coordinate moved": a threshold on this minimum."""
    v = np.asarray(values, dtype=np.float64).reshape(-1, block)
    return np.min((v - np.asarray(centre)) * np.asarray(sign), axis=1)


def public(n: int = NKEYS) -> dict[str, list[int]]:
    """Public keys 0..n-1 of the column ``g``."""
    return {"g": list(range(n))}
