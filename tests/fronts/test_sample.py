"""``priv.sample(rate)``: Poisson subsampling charged at the amplified cost."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core.accounting import poisson_subsampling

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")


def test_sample_charges_amplified_epsilon() -> None:
    df = pd.DataFrame({"x": np.ones(10_000)})
    s = dpf.Session(epsilon=5, seed=1)
    df.dp(s, bounds={"x": (0, 1)}).sample(0.25).count(epsilon=1.0)
    want = float(poisson_subsampling(1.0, 0, 0.25).epsilon)
    assert s.spent[0] == pytest.approx(want, rel=1e-12)
    assert want == pytest.approx(math.log(1 + 0.25 * (math.e - 1)), rel=1e-12)
    assert s.spent[0] < 1.0


def test_sample_keeps_units_whole_and_rate() -> None:
    df = pd.DataFrame({"x": np.ones(50_000), "uid": np.arange(50_000) // 10})
    s = dpf.Session(epsilon=1e9, seed=2)
    n = df.dp(s, bounds={"x": (0, 1)}, privacy_unit="uid", max_rows_per_unit=10).sample(
        0.5).count(epsilon=1e7)
    assert n % 10 == 0  # noise at this epsilon is 0: whole units are kept or dropped
    assert abs(n - 25_000) < 5 * 10 * math.sqrt(5_000 * 0.25)


def test_sample_refuses_change_one_before_charging() -> None:
    df = pd.DataFrame({"x": np.ones(100)})
    s = dpf.Session(epsilon=5, neighbouring="change_one", seed=3)
    with pytest.raises(dpf.ValidationError):
        df.dp(s, bounds={"x": (0, 1)}).sample(0.5).count(epsilon=1.0)
    assert s.spent == (0.0, 0.0)


@pytest.mark.parametrize("rate", [0, -0.1, 1.5, float("nan"), "0.5"])
def test_sample_rate_validation(rate: object) -> None:
    df = pd.DataFrame({"x": np.ones(10)})
    s = dpf.Session(epsilon=5, seed=4)
    with pytest.raises(dpf.ValidationError):
        df.dp(s, bounds={"x": (0, 1)}).sample(rate)  # type: ignore[arg-type]


def test_a_sample_of_a_sample_is_sampled_and_charged_at_the_product_rate() -> None:
    """``sample(0.5).sample(0.5)`` is one Poisson sample at 0.25 (the second call replaced the
    rate before), charged ln(1 + 0.25 (e^eps - 1))."""
    import warnings

    warnings.simplefilter("ignore")
    s = dpf.Session(10, seed=1)
    priv = pd.DataFrame({"x": [1.0] * 100}).dp(s)
    twice = priv.sample(0.5).sample(0.5)
    assert twice.declared()["sample_rate"] == 0.25
    twice.count(epsilon=1.0)
    assert s.spent[0] == pytest.approx(math.log(1 + 0.25 * (math.e - 1)), rel=1e-12)
