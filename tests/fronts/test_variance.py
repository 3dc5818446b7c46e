"""var and std: exact at a huge epsilon on every backend (pandas' ddof), the sensitivities of
their three releases from docs/privacy.md under both relations, calibrated intervals, and typed
errors before any charge."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core.intervals import noise_draws, variance_estimate, variance_interval
from dpframe.core.noise.mechanisms import noise_spec
from tests.backends.contract import Data, built, params

from ._support import session
from .test_plan_sensitivity import oracle

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")

HUGE = 1e6
BOUNDS = (0.0, 10.0)


@pytest.fixture
def df() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame({"g": rng.choice(["a", "b", "c"], 2000), "x": rng.normal(5, 3, 2000),
                         "n": rng.integers(-3, 14, 2000)})


@pytest.mark.parametrize("backend", params())
@pytest.mark.parametrize("ddof", [0, 1])
def test_var_and_std_are_pandas_at_a_huge_epsilon(df: pd.DataFrame, backend: str,
                                                  ddof: int) -> None:
    """Every backend of the registry (``tests/backends/contract.py``, Spark with its marker)."""
    with built(backend, Data.of(df)) as src:
        _var_and_std_are_pandas(df, src, ddof)


def _var_and_std_are_pandas(df: pd.DataFrame, src: Any, ddof: int) -> None:
    clamped = df.assign(x=df.x.clip(*BOUNDS), n=df.n.clip(*BOUNDS))
    priv = src.dp(session(), bounds={"x": BOUNDS, "n": BOUNDS}, keys={"g": ["a", "b", "c"]})
    assert float(priv.var("x", epsilon=HUGE, ddof=ddof)) == pytest.approx(
        clamped.x.var(ddof=ddof), rel=1e-6)
    assert float(priv.std("n", epsilon=HUGE, ddof=ddof)) == pytest.approx(
        clamped.n.std(ddof=ddof), rel=1e-6)
    got = priv.groupby("g").std("x", epsilon=HUGE, ddof=ddof)
    np.testing.assert_allclose(got.to_numpy(), clamped.groupby("g").x.std(ddof=ddof),
                               rtol=1e-6)
    both = priv.groupby("g")[["x", "n"]].var(epsilon=HUGE)
    np.testing.assert_allclose(both.to_numpy(), clamped.groupby("g")[["x", "n"]].var(),
                               rtol=1e-6)


@pytest.mark.parametrize("relation", ["add_remove", "change_one"])
@pytest.mark.parametrize("bounds", [(0.0, 10.0), (-4.0, 10.0), (5.0, 10.0)])
def test_the_three_releases_have_the_privacy_md_sensitivities(df: pd.DataFrame, relation: str,
                                                              bounds: tuple[float, float]
                                                              ) -> None:
    """Sum of x - mid (bounds [-h, h]), sum of (x - mid)^2 - h^2/2 (bounds [-h^2/2, h^2/2])
    and the count, released at once by the K-norm mechanism at the whole epsilon, the box's
    half-widths their privacy.md sensitivities (epsilon' = epsilon / (1 + c / D) - 2**-40)."""
    h = (bounds[1] - bounds[0]) / 2
    eps = 0.6
    plan = df.dp(session(neighbouring=relation), bounds={"x": bounds}).explain("var", "x",
                                                                               epsilon=eps)
    m = plan["measures"][0]
    assert m["sensitivity"] == pytest.approx(oracle("sum", relation, -h, h)[0])
    assert m["square_sensitivity"] == pytest.approx(oracle("sum", relation, -h * h / 2,
                                                           h * h / 2)[0])
    assert m["mechanism"] == "k-norm (box, joint)"
    assert m["noise_scale"] == pytest.approx(m["sensitivity"] / eps, rel=1e-4)
    assert m["square_noise_scale"] == pytest.approx(m["square_sensitivity"] / eps, rel=1e-4)
    assert m["count_noise_scale"] == pytest.approx(oracle("count", relation)[0] / eps,
                                                   rel=1e-4)
    assert plan["epsilon"] == pytest.approx(eps)


@pytest.mark.parametrize("n", [200, 5000])
def test_variance_intervals_are_calibrated(n: int) -> None:
    """Seeded simulation from the exact noise: a 95% interval covers the clamped true variance
    at least 95% of the time (within 4 SE; the pivot inversion of core/intervals.py is
    conservative: a union bound over the mean and the variance, so at most 0.99 here), never
    with zero width, and one half as wide does not."""
    eps = Fraction(1, 3)
    h = 5.0
    sn = noise_spec("laplace", Fraction(5), eps)
    cn = noise_spec("laplace", Fraction(1), eps, integer=True)
    qn = noise_spec("laplace", Fraction(25, 2), eps)
    rng = np.random.default_rng(n)
    x = np.clip(rng.normal(6, 2, n), 0, 10) - 5
    true = x.var(ddof=1)
    trials = 1500
    s = x.sum() + noise_draws(sn, trials, rng)
    c = n + noise_draws(cn, trials, rng)
    q = (x * x - h * h / 2).sum() + noise_draws(qn, trials, rng)
    lo, hi = variance_interval(s, c, q, sn, cn, qn, BOUNDS, 1, 0.95)
    est = variance_estimate(s, c, q, BOUNDS, 1)
    assert np.all((lo <= est) & (est <= hi))
    cov = np.mean((lo <= true) & (true <= hi))
    se = math.sqrt(0.95 * 0.05 / trials)
    assert 0.95 - 4 * se <= cov <= 0.99, cov
    assert np.all(hi > lo)
    narrow = np.mean((est - (est - lo) * 0.5 <= true) & (true <= est + (hi - est) * 0.5))
    assert narrow < 0.95 - 4 * se


@pytest.mark.parametrize("ddof", [2, -1, 0.5, True, "1"])
def test_bad_ddof_is_refused_before_the_charge(df: pd.DataFrame, ddof: object) -> None:
    s = session()
    with pytest.raises(dpf.ValidationError, match="ddof"):
        df.dp(s, bounds={"x": BOUNDS}).var("x", epsilon=1, ddof=ddof)
    with pytest.raises(dpf.BoundsError):
        df.dp(s).std("x", epsilon=1)
    assert s.spent == (0.0, 0.0)
