"""Shared helpers for the accessor tests: repeated seeded releases and noise statistics.

The statistics compare the *mean square* of observed noise (release minus exact value, whose
mean is known to be 0) with the second moment of the noise the expected sensitivity implies.
For n independent draws, mean(Z**2) has variance (E[Z**4] - E[Z**2]**2) / n exactly, so

    z = (mean(Z**2) - E[Z**2]) / sqrt((E[Z**4] - E[Z**2]**2) / n)

is approximately standard normal under the hypothesis (central limit theorem; the moments are
finite). For the two-sided geometric (discrete Laplace) with p = exp(-1/t):

    E[Z**2] = 2p / (1-p)**2,     E[Z**4] = 2p (1 + 10p + p**2) / (1-p)**4

(from sum_k k**4 p**k = p (1 + 11p + 11p**2 + p**3) / (1-p)**5 and 1 + 11p + 11p**2 + p**3 =
(1+p)(1 + 10p + p**2)). For a continuous Laplace of scale b: E[Z**2] = 2b**2, E[Z**4] = 24b**4,
so the relative standard error of the sample variance is sqrt(5/n) (sqrt(5/4/n) for the std).
Granular Laplace noise (a lattice of step ~ 2**-20 of the scale) matches the continuous moments
to a relative 2**-40.

Tests accept |z| < Z_TOL and, as companions, require |z| > Z_TOL for a wrong sensitivity (the
other relation's value, or twice the right one): the check has power, not just tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import dpframe as dpf

#: Acceptance threshold in standard errors (two-sided P(|N(0,1)| > 5) ~ 6e-7).
Z_TOL = 5.0

BIG_BUDGET = 1e12


def session(seed: int = 7, neighbouring: str = "add_remove", epsilon: float = BIG_BUDGET,
            delta: float = 0.5) -> dpf.Session:
    """A seeded session with a budget large enough for any statistical test."""
    return dpf.Session(epsilon=epsilon, delta=delta, neighbouring=neighbouring, seed=seed)


def repeat(n: int, release: Callable[[dpf.Session], Any], *, seed: int = 0,
           neighbouring: str = "add_remove", chunk: int = 25) -> list[Any]:
    """``n`` releases, a fresh seeded session every ``chunk`` releases.

    Fresh sessions keep the in-memory ledger short (charging recomputes the spend over the whole
    ledger, so one session of thousands of releases is quadratic). Seeds differ per session, so
    the noise of different chunks is independent.
    """
    out: list[Any] = []
    for start in range(0, n, chunk):
        s = session(seed=seed * 1_000_003 + start, neighbouring=neighbouring)
        out.extend(release(s) for _ in range(min(chunk, n - start)))
    return out


def discrete_laplace_moments(t: float) -> tuple[float, float]:
    """(E[Z**2], E[Z**4]) of the two-sided geometric with scale t (p = exp(-1/t))."""
    p = math.exp(-1.0 / t)
    q = -math.expm1(-1.0 / t)  # 1 - p without cancellation
    m2 = 2 * p / q**2
    m4 = 2 * p * (1 + 10 * p + p * p) / q**4
    return m2, m4


def laplace_moments(b: float) -> tuple[float, float]:
    """(E[Z**2], E[Z**4]) of the continuous Laplace with scale b."""
    return 2 * b**2, 24 * b**4


def noise_z(noise: np.ndarray, scale: float, *, integer: bool) -> float:
    """z statistic of mean(noise**2) against Laplace noise of ``scale`` (see module doc)."""
    z = np.asarray(noise, dtype=np.float64).reshape(-1)
    m2, m4 = discrete_laplace_moments(scale) if integer else laplace_moments(scale)
    se = math.sqrt((m4 - m2 * m2) / z.size)
    return float((np.mean(z * z) - m2) / se)


def check_spread(noise: np.ndarray, epsilon: float, sensitivity: float, *, integer: bool,
                 wrong: list[float]) -> None:
    """Noise matches ``sensitivity / epsilon``; every ``wrong`` sensitivity is rejected."""
    ok = noise_z(noise, sensitivity / epsilon, integer=integer)
    assert abs(ok) < Z_TOL, (
        f"noise spread does not match sensitivity {sensitivity}: z = {ok:.2f} "
        f"(empirical std {np.std(noise):.4g}, n = {np.size(noise)})")
    for w in wrong:
        bad = noise_z(noise, w / epsilon, integer=integer)
        assert abs(bad) > Z_TOL, (
            f"the spread check cannot tell sensitivity {sensitivity} from {w}: z = {bad:.2f}")


def binomial_floor(p: float, n: int, k: float = 4.0) -> float:
    """``p - k`` standard errors of a proportion estimated from ``n`` trials."""
    return p - k * math.sqrt(p * (1 - p) / n)


def mean_cost_spec(folder: Path, name: str, people: int, extra: str = "") -> Path:
    """A seeded release spec over the generated visits: one grouped mean of ``cost`` by region
    (unit person_id, T = 3, bounds [0, 200]), with ``extra`` lines added to its query."""
    spec = folder / "spec.toml"
    spec.write_text(f"""
[release]
name = "{name}"
epsilon = 10.0
seed = 1
ledger = "{(folder / 'l.sqlite').as_posix()}"

[input]
generate = {{ dataset = "visits", people = {people}, seed = 1 }}

[privacy]
unit = "person_id"
max_rows_per_unit = 3

[bounds]
cost = [0, 200]

[keys]
region = ["Northeast", "Midwest", "South", "West"]

[output]
dir = "{(folder / 'out').as_posix()}"

[[query]]
name = "mean_cost"
aggregate = "mean"
column = "cost"
by = ["region"]
epsilon = 0.5
{extra}""")
    return spec
