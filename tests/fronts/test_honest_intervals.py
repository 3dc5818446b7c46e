"""Honest intervals (issue 32 f): no interval has zero width, and means from 20 rows and
var/std cover at least the level (core/intervals.py inverts exact pivots of the public noise).

Coverage is counted over ``RELEASES`` seeded releases of 25 groups (public keys, so 25 intervals
a release, independent noise): ``n`` intervals whose coverage has standard error
``sqrt(p (1 - p) / n)`` at the level ``p``; the check is coverage >= p - 3 SE (0.9408 at 5000
intervals: 0.1's 0.936 fails it). Each check has a companion that must fail it: the same
intervals computed from noise scales half the true ones.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core import intervals

from ._support import binomial_floor, repeat

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning",
                                        "ignore::dpframe.errors.NearZeroWarning")

LEVEL = 0.95
GROUPS = [f"g{i:02d}" for i in range(25)]
BOUNDS = (0.0, 10.0)


def frame(rows: int, seed: int = 1) -> pd.DataFrame:
    """25 groups of ``rows`` rows; values spread over the bounds and beyond (clamped)."""
    rng = np.random.default_rng(seed)
    g = np.repeat(GROUPS, rows)
    centre = np.repeat(rng.uniform(1, 9, len(GROUPS)), rows)
    return pd.DataFrame({"g": g, "x": rng.normal(centre, 2.5, g.size)})


def truth(df: pd.DataFrame, agg: str) -> np.ndarray:
    clamped = df.assign(x=df["x"].clip(*BOUNDS)).groupby("g")["x"]
    return getattr(clamped, agg)().reindex(GROUPS).to_numpy(dtype=np.float64)


def releases(df: pd.DataFrame, agg: str, n: int, seed: int) -> np.ndarray:
    def release(s: dpf.Session) -> np.ndarray:
        r = getattr(df.dp(s, bounds={"x": BOUNDS}, keys={"g": GROUPS}).groupby("g"), agg)(
            "x", epsilon=1.0, ci=LEVEL)
        return r[["lower", "upper"]].to_numpy(dtype=np.float64)

    return np.stack(repeat(n, release, seed=seed))


@contextlib.contextmanager
def wrong_scale() -> Iterator[None]:
    """Intervals computed as if every noise had half its scale (the companion)."""
    real, quantile = intervals.laplace_scale, intervals.pivot_quantile
    intervals.laplace_scale = lambda spec: real(spec) / 2  # type: ignore[assignment]
    intervals.pivot_quantile = lambda kind, tail: quantile(kind, tail) / 2  # type: ignore
    try:
        yield
    finally:
        intervals.laplace_scale, intervals.pivot_quantile = real, quantile  # type: ignore


def check_coverage(df: pd.DataFrame, agg: str, n: int, seed: int) -> None:
    out = releases(df, agg, n, seed)
    true = truth(df, agg)
    lower, upper = out[..., 0], out[..., 1]
    assert np.all(upper > lower), "an interval of zero width"
    cov = float(np.mean((lower <= true) & (true <= upper)))
    assert cov >= binomial_floor(LEVEL, lower.size, k=3.0), f"coverage {cov:.4f}"


@pytest.mark.slow
@pytest.mark.parametrize(("agg", "rows"), [("mean", 20), ("mean", 21), ("mean", 100),
                                           ("var", 20), ("std", 20), ("var", 100)])
def test_coverage_is_at_least_the_level(agg: str, rows: int) -> None:
    check_coverage(frame(rows), agg, 200, seed=rows)
    with wrong_scale(), pytest.raises(AssertionError, match="coverage"):
        check_coverage(frame(rows), agg, 200, seed=rows)


def test_no_mean_interval_has_zero_width() -> None:
    """0.1 released ``[0, 0]`` in about 0.8% of the mean intervals of 21 rows near the lower
    bound at epsilon 1 (the simulated plausible means all clipped to the bound), e.g. with
    ``Session(seed=98)``; the inverted pivot never does, and covers the clamped mean."""
    df = pd.DataFrame({"x": np.random.default_rng(0).uniform(0, 10, 21)})
    s = dpf.Session(epsilon=1e9, seed=98)
    out = np.array([[r.lower, r.upper] for r in (
        df.dp(s, bounds={"x": (0, 100)}).mean("x", epsilon=1, ci=LEVEL) for _ in range(600))])
    assert np.all(out[:, 1] > out[:, 0]), f"{np.sum(out[:, 1] <= out[:, 0])} of zero width"
    true = df["x"].mean()
    cov = float(np.mean((out[:, 0] <= true) & (true <= out[:, 1])))
    assert cov >= binomial_floor(LEVEL, len(out), k=3.0)


def test_no_variance_interval_has_zero_width() -> None:
    """0.1's simulated variance intervals were ``[0, 0]`` in about 2% of releases over 20 rows
    (every plausible variance clipped to 0)."""
    df = frame(20, seed=3)
    out = releases(df, "var", 24, seed=5)
    assert np.all(out[..., 1] > out[..., 0])
