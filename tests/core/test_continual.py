"""The binary-tree mechanism and Honaker's estimate (dpframe/core/continual.py)."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

from dpframe.core.continual import (
    TreeSpec,
    TreeState,
    add_node_noise,
    bottom_up,
    completed_at,
    honaker_factor,
    levels_for,
    plain_variance_factor,
    prefix_blocks,
    prefix_estimate,
    prefix_half_width,
    prefix_variance_factor,
    top_down,
)
from dpframe.core.noise.rng import RandomSource
from dpframe.errors import ValidationError

KEYS = 4000  # independent trees (one per key) give independent samples of the estimate


def _rng(seed: int) -> RandomSource:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RandomSource(seed)


def _noisy_tree(spec: TreeSpec, nights: int, seed: int) -> dict[tuple[int, int], np.ndarray]:
    """Every node released by ``nights`` nights of zero leaves, over KEYS keys."""
    state, rng, nodes = TreeState(spec.levels, KEYS), _rng(seed), {}
    for _ in range(nights):
        done = state.add([0] * KEYS, spec.horizon)
        nodes.update({n: np.asarray(v, float) for n, v in add_node_noise(spec, done, rng).items()})
    return nodes


def test_levels_count_the_released_nodes_holding_a_night() -> None:
    assert levels_for(365) == 9 and levels_for(256) == 9 and levels_for(1) == 1
    for horizon in (1, 2, 7, 8, 365):
        holding = {n: 0 for n in range(1, horizon + 1)}
        for t in range(1, horizon + 1):
            for j, k in completed_at(t, horizon):
                assert (k + 1) << j == t
                for n in range(k * (1 << j) + 1, t + 1):
                    holding[n] += 1
        assert max(holding.values()) == levels_for(horizon)


def test_prefix_blocks_cover_the_prefix() -> None:
    for t in range(1, 400):
        blocks = prefix_blocks(t)
        assert sum(1 << j for j, _ in blocks) == t and len(blocks) == plain_variance_factor(t)
        start = 0
        for j, k in blocks:
            assert k << j == start
            start += 1 << j


def test_honaker_factor_is_the_bottom_up_recursion() -> None:
    v = Fraction(1)
    for j in range(12):
        assert honaker_factor(j) == v
        v = 1 / (1 + 1 / (2 * v))


def test_estimate_is_exact_without_noise_and_consistent_top_down() -> None:
    leaves = np.arange(1, 17, dtype=float)
    state = TreeState(levels_for(16), 1)
    nodes = {}
    for x in leaves:
        nodes.update({n: np.asarray(v, float) for n, v in state.add([int(x)], 16).items()})
    for t in range(1, 17):
        assert prefix_estimate(nodes, t)[0] == pytest.approx(leaves[:t].sum())
    noisy = {n: v + np.random.default_rng(1).normal(size=1) for n, v in nodes.items()}
    tree = top_down(noisy, (4, 0))
    for (j, k), z in tree.items():
        if j:
            assert z == pytest.approx(tree[(j - 1, 2 * k)] + tree[(j - 1, 2 * k + 1)])
    assert tree[(4, 0)] == pytest.approx(bottom_up(noisy, (4, 0)))


@pytest.mark.parametrize("night", [1, 6, 31])
def test_variance_matches_the_closed_form_below_the_plain_tree(night: int) -> None:
    spec = TreeSpec(64, Fraction(1), Fraction(1))
    nodes = _noisy_tree(spec, night, seed=night)
    est = prefix_estimate(nodes, night)
    plain = sum(nodes[b] for b in prefix_blocks(night))
    # the sample variance of KEYS draws (mean 0 known): relative sd sqrt((kurtosis - 1) / n),
    # kurtosis at most the Laplace's 6: 5 sd
    tol = 5 * math.sqrt(5 / KEYS)
    assert np.mean(est**2) == pytest.approx(spec.variance(night), rel=tol)
    want_plain = spec.node_variance * plain_variance_factor(night)
    assert np.mean(plain**2) == pytest.approx(want_plain, rel=tol)
    if night > 1:
        assert prefix_variance_factor(night) < plain_variance_factor(night)


def _coverage(spec: TreeSpec, night: int, scale: float, seed: int) -> float:
    est = prefix_estimate(_noisy_tree(spec, night, seed), night)
    return float(np.mean(np.abs(est) <= prefix_half_width(night, scale, 0.95)))


@pytest.mark.parametrize("night", [1, 3, 13, 32])
def test_interval_has_its_stated_coverage(night: int) -> None:
    spec = TreeSpec(64, Fraction(1), Fraction(1))
    tol = 4 * math.sqrt(0.95 * 0.05 / KEYS)  # binomial: 4 sd
    got = _coverage(spec, night, float(spec.noise.int_scale), seed=100 + night)
    assert abs(got - 0.95) <= tol


def test_coverage_test_fails_on_a_wrong_scale() -> None:
    """The same test catches an interval computed for half the noise scale."""
    spec = TreeSpec(64, Fraction(1), Fraction(1))
    tol = 4 * math.sqrt(0.95 * 0.05 / KEYS)
    got = _coverage(spec, 13, float(spec.noise.int_scale) / 2, seed=113)
    assert abs(got - 0.95) > tol


def test_node_scale_has_the_levels_factor() -> None:
    spec = TreeSpec(365, Fraction(1), Fraction(1))
    assert spec.levels == 9 and spec.noise.int_scale == 9
    real = TreeSpec(365, Fraction(1, 2), Fraction(3), changed=1, integer=False,
                    unit=Fraction(1, 1 << 30))
    g = real.noise.granularity
    assert real.noise.int_sensitivity == math.floor(9 * 3 / g) + 9
    assert real.lattice([int(g / real.unit) * 5 + 1]) == [5]


def test_horizon_is_checked() -> None:
    for bad in (0, -1, 1.5, True, 1 << 21):
        with pytest.raises(ValidationError):
            TreeSpec(bad, Fraction(1), Fraction(1))  # type: ignore[arg-type]
