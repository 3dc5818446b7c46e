"""Histograms and grouped counts projected onto non-negative counts with their noisy total
kept (core/projection.py): the projection itself, its intervals' coverage (seeded Monte
Carlo, binomial tolerance, shown able to fail), and its place in the release path."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpframe as dpf
from dpframe.core.measure import MeasureRelease
from dpframe.core.noise.mechanisms import noise_spec
from dpframe.core.noise.rng import RandomSource
from dpframe.core.projection import postprocessed, project_counts, project_reals

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")


def _session(seed: int = 1, epsilon: float = 1e9) -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(epsilon, 0.5, seed=seed)


def _bisected(x: np.ndarray, s: float) -> np.ndarray:
    """The projection onto {y >= 0, sum y = s} by bisection on tau (an independent oracle)."""
    lo, hi = float(x.min()) - s - 1, float(x.max())
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.maximum(x - mid, 0).sum() > s else (lo, mid)
    return np.maximum(x - (lo + hi) / 2, 0)


def _compositions(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    """Every vector of ``parts`` non-negative integers summing to ``total``."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)


# -- the projection --------------------------------------------------------------------------

@given(st.lists(st.integers(-50, 50), min_size=1, max_size=40))
def test_projected_counts_are_nonnegative_integers_with_the_noisy_total(xs: list[int]) -> None:
    x = np.array(xs, dtype=np.int64)
    z = project_counts(x)
    assert z.dtype == np.int64 and z.shape == x.shape
    assert (z >= 0).all()
    assert int(z.sum()) == max(int(x.sum()), 0)
    y = _bisected(x.astype(np.float64), max(float(x.sum()), 0.0))
    assert np.allclose(project_reals(x), y, atol=1e-9)
    assert (np.abs(z - y) < 1 + 1e-9).all()  # a rounding of the real projection


@given(st.lists(st.integers(-6, 6), min_size=1, max_size=5))
def test_projected_counts_are_the_closest_integer_point(xs: list[int]) -> None:
    """No non-negative integer vector with the same total is closer to the noisy one."""
    x = np.array(xs, dtype=np.int64)
    z = project_counts(x)
    s = max(int(x.sum()), 0)
    best = min(sum((c - v) ** 2 for c, v in zip(cand, xs, strict=True))
               for cand in _compositions(s, len(xs)))
    assert int(((z - x) ** 2).sum()) == best


def test_nonnegative_vectors_are_left_as_they_are() -> None:
    x = np.array([[0, 3, 7], [1, 0, 12]], dtype=np.int64)
    assert (project_counts(x) == x).all()
    assert project_counts(np.array([-3, -1], dtype=np.int64)).tolist() == [0, 0]
    assert project_counts(np.array([], dtype=np.int64)).shape == (0,)


def test_the_units_left_by_the_floors_go_to_the_largest_values() -> None:
    # s = 11, tau = (5 + 4 + 4 - 11) / 3 = 2/3: 4.33, 3.33, 3.33, one unit left to the 5
    assert project_counts(np.array([5, 4, 4, -2, 0], dtype=np.int64)).tolist() == [5, 3, 3, 0, 0]
    # s = 7, tau = (4 + 4 - 7) / 2 = 1/2: 3.5, 3.5 (0 and -1 cut); one unit left, to the first
    assert project_counts(np.array([0, 4, -1, 4], dtype=np.int64)).tolist() == [0, 4, 0, 3]
    # s = 7, tau = (4 + 4 + 1 - 7) / 3 = 2/3
    z = project_counts(np.array([1, 4, -2, 4], dtype=np.int64))
    assert z.tolist() == [0, 4, 0, 3] and z.sum() == 7  # 3.33 and 3.33 and 0.33: the first 4 up


# -- intervals: the raw coverage, shown by a seeded Monte Carlo --------------------------------

LEVEL, TRIALS = 0.9, 4000
#: A sparse vector with a dominant cell: 30 empty cells, small ones, and 200 in one cell.
TRUTH = np.array([0] * 30 + [1, 2, 5, 200], dtype=np.int64)


def _interval_releases(scale_factor: float = 1.0, capped: bool = False
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``TRIALS`` releases of ``TRUTH`` (geometric noise at epsilon 1, the interval's stated
    half-width times ``scale_factor``) through :func:`postprocessed`; ``capped``: the upper
    ends also cut at the noisy total (not valid: the truth can exceed it)."""
    spec = noise_spec("laplace", Fraction(1), Fraction(1), integer=True)
    rng = RandomSource(seed=12345)
    noisy = spec.add_noise(np.tile(TRUTH, (TRIALS, 1)), Fraction(1), rng)
    hw = spec.half_width(LEVEL) * scale_factor
    values, lower, upper = [], [], []
    for row in noisy:
        r = postprocessed(MeasureRelease("count", None, row, row - hw, row + hw, {}),
                          "nonnegative")
        assert r.lower is not None and r.upper is not None
        values.append(r.values)
        lower.append(r.lower)
        upper.append(np.minimum(r.upper, row.sum()) if capped else r.upper)
    return np.array(values), np.array(lower), np.array(upper)


def _coverage_holds(lower: np.ndarray, upper: np.ndarray) -> bool:
    """Every cell's coverage over the trials is at least LEVEL less a binomial tolerance of
    4 standard deviations (a chance below 1e-4 per cell of a false failure)."""
    covered = ((lower <= TRUTH) & (upper >= TRUTH)).mean(axis=0)
    return bool((covered >= LEVEL - 4 * math.sqrt(LEVEL * (1 - LEVEL) / TRIALS)).all())


def test_projected_intervals_keep_their_stated_coverage() -> None:
    values, lower, upper = _interval_releases()
    assert (values >= 0).all() and (lower >= 0).all()
    assert _coverage_holds(lower, upper)
    # the estimate is biased toward 0 on the empty cells (the point of projecting) ...
    assert values[:, :30].mean() < 0.5
    # ... and the projection makes the sparse vector far more accurate than the raw one
    assert np.sqrt(((values - TRUTH) ** 2).mean()) < 0.8 * 1.357


def test_the_coverage_check_fails_a_wrong_interval() -> None:
    """The same Monte Carlo fails a half-width from half the scale, and an upper end cut at
    the noisy total (the dominant cell's truth exceeds the noisy total half the time)."""
    assert not _coverage_holds(*_interval_releases(0.5)[1:])
    assert not _coverage_holds(*_interval_releases(capped=True)[1:])


# -- in the release path ---------------------------------------------------------------------

def _sparse_frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({"x": rng.integers(0, 5, 40) + 0.5,
                         "g": rng.choice(["a", "b"], 40)})


def test_histogram_is_the_projection_of_the_raw_release() -> None:
    """Today's histogram is raw (negative counts); by default the same noise is projected:
    non-negative integer counts whose sum is the raw noisy sum, the raw interval cut at 0."""
    df, edges = _sparse_frame(), list(range(0, 41))
    raw = df.dp(_session(7)).histogram("x", edges, epsilon=0.5, ci=0.9, postprocess=None)
    out = df.dp(_session(7)).histogram("x", edges, epsilon=0.5, ci=0.9)
    assert (raw["count"] < 0).any()
    assert out["count"].dtype == raw["count"].dtype == np.int64
    assert list(out.index) == list(raw.index)
    assert out["count"].tolist() == project_counts(raw["count"].to_numpy()).tolist()
    assert (out["count"] >= 0).all() and out["count"].sum() == raw["count"].sum()
    assert out["lower"].tolist() == np.maximum(raw["lower"], 0).tolist()
    assert out["upper"].tolist() == raw["upper"].tolist()
    dp = out.attrs["dp"]
    assert dp["measures"][0]["postprocess"] == "nonnegative"
    assert "projected onto non-negative" in dp["covers"]
    assert raw.attrs["dp"]["measures"][0]["postprocess"] is None
    assert raw.attrs["dp"]["covers"].startswith("raw noisy counts")


def test_grouped_count_and_grouped_histogram_are_projected() -> None:
    df = _sparse_frame()
    keys = {"g": ["a", "b", *[f"z{i}" for i in range(30)]]}
    raw = df.dp(_session(8), keys=keys).groupby("g").count(epsilon=0.5, postprocess=None)
    out = df.dp(_session(8), keys=keys).groupby("g").count(epsilon=0.5)
    assert (raw < 0).any() and out.dtype == raw.dtype == np.int64
    assert out.tolist() == project_counts(raw.to_numpy()).tolist()
    edges = [0, 1, 2, 3, 4, 5]
    raw_h = df.dp(_session(9), keys=keys).groupby("g").histogram("x", edges, epsilon=0.5,
                                                                  postprocess=None)
    out_h = df.dp(_session(9), keys=keys).groupby("g").histogram("x", edges, epsilon=0.5)
    assert list(out_h.index) == list(raw_h.index)
    # one vector over every (group, bin) cell, one total
    assert out_h.tolist() == project_counts(raw_h.to_numpy()).tolist()
    agg = df.dp(_session(8), keys=keys).groupby("g").agg({"x": "count"}, epsilon=0.5)
    assert (agg[("x", "count")] >= 0).all()


def test_an_ungrouped_count_is_not_projected() -> None:
    """A single count is its own total: it stays raw (and states no form)."""
    out = pd.DataFrame({"x": []}).dp(_session(2)).count(epsilon=0.05)
    assert "postprocess" not in out.attrs["dp"]["measures"][0]


def test_private_keys_are_projected_over_the_released_keys() -> None:
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"g": rng.choice(list("abcdefgh"), 3000), "u": np.arange(3000)})
    opts = {"privacy_unit": "u", "max_rows_per_unit": 1}
    raw = df.dp(_session(5), **opts).groupby("g", keys="private").count(
        epsilon=1.0, delta=1e-6, postprocess=None)
    out = df.dp(_session(5), **opts).groupby("g", keys="private").count(epsilon=1.0,
                                                                          delta=1e-6)
    assert list(out.index) == list(raw.index)
    assert out.tolist() == project_counts(raw.to_numpy()).tolist()


def test_a_bad_postprocess_is_refused_before_the_charge() -> None:
    s = _session(1, epsilon=1.0)
    priv = _sparse_frame().dp(s, keys={"g": ["a", "b"]})
    for bad in ("clip", "none", 0, ["nonnegative"]):
        with pytest.raises(dpf.ValidationError, match="postprocess must be"):
            priv.groupby("g").count(epsilon=0.5, postprocess=bad)  # type: ignore[arg-type]
    assert s.spent == (0, 0)
