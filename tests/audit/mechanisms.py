"""Scenarios of the raw core mechanisms: ``NoiseSpec.add_noise`` and ``ExponentialSpec.choose``
on inputs one sensitivity apart (``CHUNK`` draws per call)."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpframe.core.noise.mechanisms import ExponentialSpec, NoiseSpec, noise_spec
from dpframe.core.noise.rng import RandomSource

from .scenario import Built, Run

CHUNK = 50_000
EPS = Fraction(1)


def core_noise(spec_factory: Callable[[], NoiseSpec], integer: bool) -> Callable[[int], Built]:
    """0 vs one sensitivity through ``NoiseSpec.add_noise``, in units of the sensitivity."""

    def build(seed: int) -> Built:
        spec = spec_factory()
        unit = Fraction(1) if integer else Fraction(1, 1 << 32)
        one = int(spec.sensitivity / unit)
        rng = RandomSource(seed * 7919 + 1, warn=False)

        def run(v: int) -> Run:
            return lambda: spec.add_noise(np.full(CHUNK, v, dtype=np.int64), unit, rng) / float(
                spec.sensitivity)

        return run(0), run(one), float(spec.epsilon), float(spec.delta)

    return build


def geometric_spec() -> NoiseSpec:
    """Integer Laplace noise at epsilon 1, sensitivity 1."""
    return noise_spec("laplace", Fraction(1), EPS, integer=True)


def granular_spec() -> NoiseSpec:
    """Granular (real) Laplace noise at epsilon 1, sensitivity 2.5."""
    return noise_spec("laplace", Fraction(5, 2), EPS)


def gaussian_spec() -> NoiseSpec:
    """Discrete Gaussian noise at (1, 1e-5), L2 sensitivity 1."""
    return noise_spec("gaussian", Fraction(1), EPS, Fraction(1, 10**5))


def _pf_worst(m: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Utilities differing by the sensitivity (1) in opposite directions: candidate 0 is best
    by 1 in D and worst by 1 in D'. The ratio of P[choose 0] tends to e^epsilon as m grows."""
    u = np.full(m, -1, dtype=np.int64)
    u[0] = 0
    return u, -1 - u


def core_pf(doubled: bool) -> Callable[[int], Built]:
    """Permute-and-flip over 10 candidates on the worst utilities; ``doubled``: BROKEN on
    purpose, run at twice the epsilon it claims."""

    def build(seed: int) -> Built:
        m = 10
        spec = ExponentialSpec(2 * EPS if doubled else EPS, 1, m)
        ud, ud2 = _pf_worst(m)
        rng = RandomSource(seed * 7919 + 2, warn=False)

        def run(u: npt.NDArray[np.int64]) -> Run:
            rows = np.broadcast_to(u, (CHUNK // 2, m))
            return lambda: spec.choose(rows, rng).astype(np.float64)

        return run(ud), run(ud2), float(EPS), 0.0

    return build
