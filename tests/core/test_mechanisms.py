"""Mechanisms: the floating-point attack, accuracy both ways, calibration."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpframe.core.noise.mechanisms import epsilon_for_half_width, noise_spec
from dpframe.core.noise.rng import RandomSource
from dpframe.testing import clopper_pearson

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")

N = 100_000
ALPHA = 1e-6


def _epsilon_lower_bound(hits0: int, hits1: int, n: int) -> float:
    """Lower bound on the privacy loss from the event's frequencies under two inputs."""
    lo0, _ = clopper_pearson(hits0, n, ALPHA)
    _, hi1 = clopper_pearson(hits1, n, ALPHA)
    return math.log(lo0 / hi1) if lo0 > 0 else 0.0


def _off_lattice(y: np.ndarray) -> np.ndarray:
    """Mironov's distinguishing event: the output has bits below 2**-53. From input 1, a float
    ``1 + eta`` never does (its exact sum is a multiple of 2**-53); from input 0 the output is
    ``eta`` itself, which usually does when |eta| < 1/2."""
    scaled = y * 2.0**53
    return scaled != np.floor(scaled)


def naive_laplace(x: float, n: int, scale: float, seed: int) -> np.ndarray:
    """The textbook floating-point mechanism x + Laplace(b): kept here to prove the test works."""
    return x + np.random.default_rng(seed).laplace(0.0, scale, n)


def test_floating_point_attack_catches_naive_laplace() -> None:
    y0 = naive_laplace(0.0, N, 1.0, seed=1)
    y1 = naive_laplace(1.0, N, 1.0, seed=2)
    h0, h1 = int(_off_lattice(y0).sum()), int(_off_lattice(y1).sum())
    assert h1 == 0 and h0 > N // 4
    assert _epsilon_lower_bound(h0, h1, N) > 5.0  # claimed epsilon is 1: broken


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_floating_point_attack_finds_nothing_in_granular_mechanism(kind: str) -> None:
    spec = noise_spec(kind, Fraction(1), Fraction(1), Fraction(1, 10**6))  # type: ignore[arg-type]
    rng = RandomSource(seed=3)
    y0 = spec.release_real(np.zeros(N), rng)
    y1 = spec.release_real(np.ones(N), rng)
    g = float(spec.granularity)
    for y in (y0, y1):  # every output on the same lattice g Z, whatever the input
        assert np.all(y / g == np.rint(y / g))
    h0, h1 = int(_off_lattice(y0).sum()), int(_off_lattice(y1).sum())
    assert h0 == h1 == 0
    assert _epsilon_lower_bound(h0, h1, N) <= 1.0
    # and the granular release is as accurate as asked: spread matches the planned scale
    assert abs(np.std(y1 - 1.0) / spec.std - 1) < 0.05


def test_granularity_is_reported_and_rounding_is_negligible() -> None:
    spec = noise_spec("laplace", Fraction(1), Fraction(1, 2))
    assert spec.granularity == Fraction(1, 2**20)
    assert spec.scale == pytest.approx(2.0, rel=2 * 2.0**-20)
    assert spec.scale >= 2.0


@pytest.mark.parametrize("integer", [True, False])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_epsilon_for_half_width_inverts_the_half_width(integer: bool, level: float) -> None:
    sens = Fraction(3) if integer else Fraction(250)
    target = 40.0 if integer else 5000.0
    eps = epsilon_for_half_width(target, sens, level, integer=integer)
    spec = noise_spec("laplace", sens, Fraction(repr(eps)), integer=integer)
    assert spec.half_width(level) <= target
    tighter = noise_spec("laplace", sens, Fraction(repr(eps * 0.99)), integer=integer)
    assert tighter.half_width(level) > target  # the smallest such epsilon, within 1%


def test_laplace_half_width_is_exact_quantile() -> None:
    """P(|Z| <= A) >= level at the reported A, and < level one lattice step below."""
    spec = noise_spec("laplace", Fraction(1), Fraction(1, 5), integer=True)
    t = float(spec.int_scale)
    p = math.exp(-1 / t)

    def coverage(a: int) -> float:
        return 1 - 2 * p ** (a + 1) / (1 + p)

    a = int(spec.half_width(0.95))
    assert coverage(a) >= 0.95 > coverage(a - 1)


def test_gaussian_calibration_meets_epsilon_delta() -> None:
    from dpframe.core.noise.gaussian import satisfies
    from dpframe.core.noise.mechanisms import gaussian_parts, rho_for

    spec = noise_spec("gaussian", Fraction(1), Fraction(1, 2), Fraction(1, 10**6))
    assert spec.rho is not None
    # proven (1/2, 1e-6)-DP for the discrete Gaussian drawn (core/noise/gaussian.py, Theorem C)
    assert satisfies(Fraction(1, 2), Fraction(1, 10**6), gaussian_parts([spec]))
    # the rho recorded is the noise's own (rounded up): the session's zCDP sum stays sound
    achieved = spec.int_sensitivity**2 / (2 * spec.int_sigma2)
    assert achieved <= spec.rho
    # and less noise than the zCDP route's
    assert spec.rho > rho_for(Fraction(1, 2), Fraction(1, 10**6))


def test_exponential_mechanism_error_bound_and_inverse() -> None:
    from dpframe.core.noise.mechanisms import ExponentialSpec

    eps = ExponentialSpec.epsilon_for(20.0, 1, 1001, 0.95)
    spec = ExponentialSpec(Fraction(repr(eps)), 1, 1001)
    assert spec.utility_error(0.95) == pytest.approx(20.0, rel=1e-9)
    # the bound holds empirically: utility shortfall <= 20 in >= 95% of draws
    rng = RandomSource(seed=5)
    util = -np.abs(np.arange(1001) - 500)[None, :].repeat(2000, axis=0)
    picks = spec.choose(util, rng)
    shortfall = np.abs(picks - 500)
    assert (shortfall <= 20).mean() >= 0.95
    # and a mechanism run at a quarter of that epsilon violates it (the check can fail)
    weak = ExponentialSpec(Fraction(repr(eps / 4)), 1, 1001)
    assert (np.abs(weak.choose(util, rng) - 500) <= 20).mean() < 0.95


def test_integer_releases_past_int64_saturate() -> None:
    """An exact integer past int64 (a sum beyond 2**63) is released as int64's limit, whatever
    its noise: post-processing of the exact noisy value, and the result dtype stays int64."""
    spec = noise_spec("laplace", Fraction(1), Fraction(1), integer=True)
    exact = np.array([(1 << 63) + (1 << 50), -(1 << 63) - (1 << 50), 5], dtype=object)
    out = spec.add_noise(exact, Fraction(1), RandomSource(seed=1, warn=False))
    assert out.dtype == np.int64
    assert out[0] == np.iinfo(np.int64).max and out[1] == np.iinfo(np.int64).min
    assert abs(int(out[2]) - 5) < 60  # noise of scale 1: the rest is released as before
