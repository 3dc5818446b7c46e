"""Generalized least squares over a tree (core/consistency.py, issue 47 item 4): the two-pass
estimate equals the dense GLS solution, children add up to their parents, the closed-form
variances are the dense ones, and the intervals keep their stated coverage (a seeded Monte
Carlo with a binomial tolerance, which halved intervals fail)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpframe.core.consistency import (
    Tree,
    chernoff_half_width,
    coefficient_row,
    gls,
    gls_variances,
    half_widths,
)

#: root, 3 regions, 9 leaves (2, 3 and 4 per region)
PARENTS = (np.zeros(3, dtype=np.int64), np.array([0, 0, 1, 1, 1, 2, 2, 2, 2]))
TREE = Tree(PARENTS)
VAR = (2.0, 5.0, 1.5)


def _dense() -> tuple[np.ndarray, np.ndarray]:
    """A (nodes x leaves, root first) and W (inverse variances) of the dense problem."""
    leaves = len(PARENTS[1])
    regions = np.array([[1.0 if PARENTS[1][j] == r else 0.0 for j in range(leaves)]
                        for r in range(3)])
    a = np.vstack([np.ones((1, leaves)), regions, np.eye(leaves)])
    w = np.diag(np.repeat([1 / v for v in VAR], TREE.sizes))
    return a, w


def test_two_pass_is_the_dense_gls_solution() -> None:
    rng = np.random.default_rng(5)
    y = [rng.normal(size=n) * 10 for n in TREE.sizes]
    x = gls(TREE, y, VAR)
    a, w = _dense()
    cov = np.linalg.inv(a.T @ w @ a)
    dense = a @ cov @ a.T @ w @ np.concatenate(y)
    assert np.allclose(np.concatenate(x), dense)
    # consistent: each parent is the sum of its children
    assert np.allclose(x[0], x[1].sum())
    assert np.allclose(x[1], np.bincount(PARENTS[1], weights=x[2]))
    # the closed-form variances and the coefficient rows are the dense ones
    assert np.allclose(np.concatenate(gls_variances(TREE, VAR)), np.diag(a @ cov @ a.T))
    p = a @ cov @ a.T @ w
    for flat, (lvl, i) in enumerate([(0, 0)] + [(1, i) for i in range(3)]
                                    + [(2, i) for i in range(9)]):
        assert np.allclose(coefficient_row(TREE, VAR, lvl, i), p[flat])


def test_gls_of_consistent_values_is_the_identity() -> None:
    """Unbiased: noise-free, consistent values come back unchanged."""
    leaves = np.arange(9, dtype=float) * 3
    y = [np.array([leaves.sum()]), np.bincount(PARENTS[1], weights=leaves), leaves]
    for got, want in zip(gls(TREE, y, VAR), y, strict=True):
        assert np.allclose(got, want)


def test_chernoff_bound_is_valid_for_one_laplace() -> None:
    """For a single discrete Laplace the exact tail is known: the bound is at least the exact
    half-width, and within a factor 2 of it."""
    for b in (1.0, 3.0, 20.0):
        p = math.exp(-1 / b)
        exact = math.ceil(math.log(0.05 * (1 + p) / 2) / math.log(p) - 1)
        t = chernoff_half_width(np.array([1.0]), np.array([1.0]), np.array([p]), 0.05)
        assert exact <= t <= 2 * exact


def _discrete_laplace(rng: np.random.Generator, p: float, shape: tuple[int, ...]) -> np.ndarray:
    """P[Z = z] proportional to p**|z|: a difference of two geometric variables."""
    return (rng.geometric(1 - p, shape) - rng.geometric(1 - p, shape)).astype(float)


def _coverage(scale_widths: float, level: float, trials: int, seed: int) -> np.ndarray:
    """Per node, the share of seeded trials whose GLS estimate lies within its interval."""
    scales = (3.0, 2.0, 3.0)  # each level's Laplace scale
    ps = [math.exp(-1 / b) for b in scales]
    var = [2 * p / (1 - p) ** 2 for p in ps]
    hw = np.concatenate(half_widths(TREE, var, [1.0] * 3, ps, [0.0] * 3, level=level))
    rng = np.random.default_rng(seed)
    leaves = rng.integers(0, 50, 9).astype(float)
    truth = [np.array([leaves.sum()]), np.bincount(PARENTS[1], weights=leaves), leaves]
    noise = [_discrete_laplace(rng, p, (trials, n)) for p, n in zip(ps, TREE.sizes,
                                                                    strict=True)]
    y = [t + e for t, e in zip(truth, noise, strict=True)]
    # gls is linear and vectorized per level: one call per trial, on row slices
    inside = np.zeros(sum(TREE.sizes))
    flat_truth = np.concatenate(truth)
    for k in range(trials):
        est = np.concatenate(gls(TREE, [lvl[k] for lvl in y], var))
        inside += np.abs(est - flat_truth) <= hw * scale_widths
    return inside / trials


def _holds(coverage: np.ndarray, level: float, trials: int) -> bool:
    """Coverage at least ``level`` up to a binomial tolerance (4 standard errors per node:
    13 nodes, family-wise false alarm below 1e-3)."""
    return bool(np.all(coverage >= level - 4 * math.sqrt(level * (1 - level) / trials)))


@pytest.mark.parametrize("level", [0.8, 0.95])
def test_intervals_keep_their_coverage(level: float) -> None:
    trials = 3000
    assert _holds(_coverage(1.0, level, trials, seed=11), level, trials)


def test_coverage_test_can_fail() -> None:
    """Halved intervals fail the same test: it has the power to catch a wrong width."""
    trials = 3000
    assert not _holds(_coverage(0.5, 0.95, trials, seed=11), 0.95, trials)
