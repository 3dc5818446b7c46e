"""DP bounds estimation: priv.bounds(column, epsilon=...) releases two DP quantiles on a
log-spaced grid (for a column whose range the analyst does not know), charged like any
release; the result is public and can be declared as bounds afterwards."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf

from ._support import session

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.rng.InsecureSeedWarning")


@pytest.mark.parametrize(("values", "quantiles"), [
    (np.random.default_rng(0).lognormal(10, 1, 5000), (0.01, 0.99)),
    (np.random.default_rng(1).normal(5, 20, 5000), (0.05, 0.95)),       # negative lower bound
    (np.random.default_rng(2).integers(-3_000_000, -2_000_000, 5000), (0.1, 0.9)),
    (np.random.default_rng(3).uniform(0.001, 0.002, 5000), (0.01, 0.99)),  # tiny magnitudes
])
def test_the_estimate_is_the_quantiles_at_the_grids_resolution(values, quantiles) -> None:
    df = pd.DataFrame({"x": values})
    s = session()
    lo, hi = df.dp(s).bounds("x", epsilon=1e6, quantiles=quantiles)
    true_lo, true_hi = np.quantile(values, quantiles)
    # at a huge epsilon the best candidate is chosen: within two grid steps (neighbours are a
    # ratio of about 1.035 apart with the default resolution) of numpy's interpolated quantile
    step = lo.attrs["dp"]["measures"][0]["grid_relative_step"]
    for got, want in ((lo, true_lo), (hi, true_hi)):
        assert abs(got - want) <= 2 * step * max(abs(got), abs(want)) + 1e-9, (got, want)
    assert lo <= hi and s.spent[0] == pytest.approx(1e6)
    assert lo.attrs["dp"]["query"] == "bounds(x)"
    # post-processing: declaring the estimate costs nothing more
    spent = s.spent
    priv = df.dp(s, bounds={"x": (lo, hi)})
    priv.sum("x", epsilon=1.0, dry_run=True)
    assert s.spent == spent


def test_dry_run_shows_the_log_grid_and_charges_nothing() -> None:
    df = pd.DataFrame({"x": [1.0, 2.0]})
    s = session()
    plan = df.dp(s).bounds("x", epsilon=0.5, dry_run=True)
    assert plan["epsilon"] == pytest.approx(0.5) and s.spent == (0.0, 0.0)
    measures = plan["measures"]
    assert [m["grid"] for m in measures] == ["log", "log"]
    assert [m["epsilon"] for m in measures] == [0.25, 0.25]
    assert 0 < measures[0]["grid_relative_step"] < 0.05


@pytest.mark.parametrize("kw", [
    {"quantiles": (0.99, 0.01)}, {"quantiles": (0.5,)}, {"quantiles": (-0.1, 0.5)},
    {"max_abs": 0}, {"max_abs": 2.0**60}, {"max_abs": "big"}, {"resolution": 3},
])
def test_bad_arguments_are_refused_before_the_charge(kw) -> None:
    df = pd.DataFrame({"x": [1.0, 2.0], "s": ["a", "b"]})
    s = session()
    with pytest.raises(dpf.ValidationError):
        df.dp(s).bounds("x", epsilon=1.0, **kw)
    with pytest.raises(dpf.ValidationError):
        df.dp(s).bounds("s", epsilon=1.0)  # not numeric
    assert s.spent == (0.0, 0.0)
