"""Continual release: running totals over a horizon of nights for one charge of epsilon.

The binary-tree mechanism (Dwork, Naor, Pitassi, Rothblum 2010; Chan, Shi, Song 2011) with
Honaker's variance-optimal estimate from the tree's nodes (Honaker 2015, "Efficient use of
differentially private binary trees").

**The tree.** Night ``t`` (1-based, ``t <= H``, the horizon) adds one leaf per public key: the
night's exact count, or its clamped fixed-point sum rounded to the noise lattice ``g``. Node
``(j, k)`` (level ``j``, index ``k``) holds the sum of the leaves of nights
``k 2**j + 1 .. (k + 1) 2**j``; it is *complete* (and released, once) on night
``(k + 1) 2**j``. Only complete nodes are ever released, so a node of level ``j`` is released
only if ``2**j <= H``: one night's leaf lies in at most ``L = floor(log2 H) + 1`` released nodes
(``H.bit_length()``; 9 for H = 365, one fewer than the ``ceil(log2 H) + 1`` of a tree with
``2**ceil(log2 H)`` leaves, whose root never completes within the horizon).

**Privacy: epsilon-DP over the whole horizon.** Neighbouring streams differ by one privacy
unit's rows (add/remove), the unit holding at most ``T`` rows over the whole horizon (``T = 1``
for the row unit), each worth at most ``M`` (1 for a count; ``max(|lo|, |hi|)`` for a clamped
sum). The nodes of one level partition the nights (and the keys' trees are disjoint), so the
sum over one level's nodes of ``|node change|`` is at most the sum over leaves of ``|leaf
change|``: at most ``T M`` exactly, or ``T M / g + T`` on the lattice of ``g`` (each of the at
most ``T`` changed leaves moves by at most one step more when rounded). Under change-one the
unit's rows may also move to other nights and keys: twice that. Over the ``L`` levels, the
vector of all released nodes has L1 sensitivity ``Delta = L (T M / g + T)`` lattice steps
(``L T`` for a count), and two-sided geometric noise of scale ``Delta / epsilon`` on every
node, independently (exact samplers, :func:`~dpframe.core.noise.samplers.discrete_laplace`), is
epsilon-DP for the whole vector (Ghosh, Roughgarden and Sundararajan 2009). Every released
running total is post-processing of these nodes; a re-run of a night replays its stored nodes
and draws nothing, so the horizon costs epsilon once, charged up front.

**Honaker's estimate.** At night ``t`` the complete nodes form the complete subtrees of the
maximal dyadic blocks of ``1..t`` (one per set bit of ``t``). Bottom-up, a node's estimate
combines its own noisy value (variance ``v``) with the sum of its children's estimates
(variance ``2 V_{j-1}``) by inverse-variance weights: ``V_0 = v``,
``V_j = 1 / (1/v + 1/(2 V_{j-1})) = v 2**j / (2**(j+1) - 1)``. A block's root has no complete
parent, so the top-down pass of Honaker's method leaves it unchanged; the blocks' data are
independent, so the sum of their roots' estimates is the best linear unbiased estimate of the
prefix from the nodes released so far, with variance ``v * sum over set bits j of t of
2**j / (2**(j+1) - 1)`` (the plain binary mechanism's is ``v * popcount(t)``; the bound tends
to ``v / 2`` per block instead of ``v``).

Nothing here knows pandas or the ledger: the front (``dpframe.fronts.continual``) computes the
exact leaves, charges, and stores the nodes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from ..errors import ValidationError
from .noise.mechanisms import NoiseSpec, noise_spec
from .noise.rng import RandomSource
from .noise.samplers import discrete_laplace

#: A node of the tree: (level, index).
Node = tuple[int, int]

#: Largest horizon (nights): 2**20, more than 2,800 years of nights.
MAX_HORIZON = 1 << 20


def levels_for(horizon: int) -> int:
    """How many released nodes hold one night: ``floor(log2 horizon) + 1``."""
    return int(horizon).bit_length()


def completed_at(night: int, horizon: int) -> list[Node]:
    """The nodes completed (released) on ``night``, lowest level first."""
    out, j = [], 0
    while night % (1 << j) == 0 and (1 << j) <= horizon:
        out.append((j, night // (1 << j) - 1))
        j += 1
    return out


def prefix_blocks(night: int) -> list[Node]:
    """The roots of the maximal complete dyadic blocks of nights ``1..night``, oldest first."""
    out, start = [], 0
    for j in range(int(night).bit_length() - 1, -1, -1):
        if night >> j & 1:
            out.append((j, start >> j))
            start += 1 << j
    return out


def honaker_factor(level: int) -> Fraction:
    """``V_j / v``: the variance of the bottom-up estimate of a complete subtree's root of
    height ``level``, in units of one node's noise variance: ``2**j / (2**(j+1) - 1)``."""
    return Fraction(1 << level, (1 << (level + 1)) - 1)


def prefix_variance_factor(night: int) -> float:
    """The variance of Honaker's running total on ``night``, in node-noise variances."""
    return float(sum(honaker_factor(j) for j, _ in prefix_blocks(night)))


def plain_variance_factor(night: int) -> int:
    """The variance of the plain binary mechanism's running total (the sum of the blocks'
    noisy roots), in node-noise variances: the number of set bits of ``night``."""
    return bin(int(night)).count("1")


def bottom_up(nodes: Mapping[Node, npt.NDArray[np.float64]], root: Node
              ) -> npt.NDArray[np.float64]:
    """Honaker's bottom-up estimate of ``root`` from the noisy nodes of its complete subtree
    (arrays, one value per key): inverse-variance weighted, ``V_j`` as above."""
    j, k = root
    y = np.asarray(nodes[root], dtype=np.float64)
    if j == 0:
        return y
    below = bottom_up(nodes, (j - 1, 2 * k)) + bottom_up(nodes, (j - 1, 2 * k + 1))
    a = float(honaker_factor(j))  # the weight of the node's own value: V_j / v
    return a * y + (1 - a) * below


def top_down(nodes: Mapping[Node, npt.NDArray[np.float64]], root: Node
             ) -> dict[Node, npt.NDArray[np.float64]]:
    """Honaker's consistent estimates of every node of a complete subtree (bottom-up, then
    top-down: each pair of children is moved equally so that it adds up to its parent's final
    estimate). The root keeps its bottom-up estimate."""
    out = {root: bottom_up(nodes, root)}
    stack = [root]
    while stack:
        j, k = stack.pop()
        if j == 0:
            continue
        left, right = (j - 1, 2 * k), (j - 1, 2 * k + 1)
        zl, zr = bottom_up(nodes, left), bottom_up(nodes, right)
        gap = (out[(j, k)] - zl - zr) / 2
        out[left], out[right] = zl + gap, zr + gap
        stack += [left, right]
    return out


def prefix_estimate(nodes: Mapping[Node, npt.NDArray[np.float64]], night: int
                    ) -> npt.NDArray[np.float64]:
    """Honaker's running total of nights ``1..night`` (per key), from the complete nodes."""
    roots = prefix_blocks(night)
    if not roots:
        raise ValidationError("the running total needs at least one night")
    return sum((bottom_up(nodes, r) for r in roots[1:]), bottom_up(nodes, roots[0]))


def prefix_weights(night: int) -> list[tuple[float, int]]:
    """Honaker's running total as ``sum_i w_i Z_i`` of the nodes' noise: ``(w, n)`` pairs,
    ``n`` nodes with weight ``w`` (the depths of each block's subtree)."""
    out: list[tuple[float, int]] = []
    for h, _ in prefix_blocks(night):
        w = 1.0
        for d in range(h + 1):  # depth d below the block's root: level h - d, 2**d nodes
            level = h - d
            a = float(honaker_factor(level))
            out.append((w * a, 1 << d))
            w *= 1 - a
    return out


@functools.lru_cache(maxsize=4096)
def prefix_half_width(night: int, node_scale: float, level: float) -> float:
    """The half-width ``A`` with ``P(|estimate - total| <= A) = level`` for the running total
    of ``night``: each node's two-sided geometric noise is taken as the continuous Laplace of
    the same variance (scale ``sqrt(p) / (1 - p)``, ``p = exp(-1 / node_scale)``), and the law
    of the weighted sum is inverted exactly from its characteristic function (Gil-Pelaez). The
    coverage is checked by seeded Monte Carlo (tests/core/test_continual.py). Public inputs
    only (the night, the scale, the level)."""
    from scipy import integrate, optimize

    p = math.exp(-1.0 / node_scale)
    b = math.sqrt(p) / (1 - p)
    groups = [(w * b, n) for w, n in prefix_weights(night)]
    sd = math.sqrt(sum(2 * s * s * n for s, n in groups))
    if sd == 0.0:  # a scale so small that every node's noise is 0 but with p ~ 0
        return 0.0

    s2 = np.array([s * s for s, _ in groups])
    counts = np.array([float(n) for _, n in groups])

    def cf(u: float) -> float:  # the characteristic function: prod (1 + s^2 u^2)^-n
        return math.exp(-float(counts @ np.log1p(s2 * (u * u))))

    def inside(a: float) -> float:  # P(|S| <= a) = (2/pi) int_0^inf sin(a u) cf(u) / u du
        cut = 50.0 / sd
        head = integrate.quad(lambda u: math.sin(a * u) * cf(u) / u if u else a, 0, cut,
                              limit=400)[0]
        tail = integrate.quad(lambda u: cf(u) / u, cut, math.inf, weight="sin", wvar=a)[0]
        return 2 / math.pi * (head + tail)

    hi = sd
    while inside(hi) < level:
        hi *= 2
    return float(optimize.brentq(lambda a: inside(a) - level, 0.0, hi, xtol=1e-9 * sd))


@dataclass(frozen=True)
class TreeSpec:
    """A continual release's public parameters and its noise.

    ``level_sensitivity``: the most one unit moves the sum of one level's nodes, in output
    units (``T M``; ``2 T M`` under change-one); ``changed``: how many leaves it can change
    (``T``, or ``2 T``); ``integer``: counts and integer sums (no rounding, ``g = 1``);
    ``unit``: the accumulation unit the exact leaves count (1 for integers)."""

    horizon: int
    epsilon: Fraction
    level_sensitivity: Fraction
    changed: int = 1
    integer: bool = True
    unit: Fraction = Fraction(1)
    levels: int = field(init=False)

    def __post_init__(self) -> None:
        h = self.horizon
        if isinstance(h, bool) or not isinstance(h, int) or not 1 <= h <= MAX_HORIZON:
            raise ValidationError(f"horizon must be an integer from 1 to {MAX_HORIZON} nights")
        object.__setattr__(self, "levels", levels_for(h))

    @functools.cached_property
    def noise(self) -> NoiseSpec:
        """The noise of every node: L1 sensitivity ``levels * level_sensitivity`` (plus one
        lattice step per changed leaf and level, for rounding), at ``epsilon``."""
        return noise_spec("laplace", self.levels * self.level_sensitivity, self.epsilon,
                          changed=self.levels * self.changed, integer=self.integer,
                          min_granularity=None if self.integer else self.unit)

    @property
    def node_variance(self) -> float:
        """The variance of one node's noise, in output units squared."""
        return self.noise.std ** 2

    def variance(self, night: int) -> float:
        """The variance of Honaker's running total on ``night`` (output units squared)."""
        return self.node_variance * prefix_variance_factor(night)

    def half_width(self, night: int, level: float) -> float:
        """The ``level`` interval's half-width of the running total on ``night``."""
        g = float(self.noise.granularity)
        return g * prefix_half_width(night, float(self.noise.int_scale), float(level))

    def lattice(self, exact: Iterable[int]) -> list[int]:
        """Exact leaves (integers counting ``unit``) rounded half up to the lattice of ``g``,
        as integers counting ``g`` (exactly as :meth:`NoiseSpec.add_noise` rounds)."""
        ratio = self.noise.granularity / self.unit
        if ratio.denominator != 1:
            raise ValueError("granularity must be an integer multiple of the accumulation unit")
        m = ratio.numerator
        return [(int(x) * 2 + m) // (2 * m) if m > 1 else int(x) for x in exact]


@dataclass
class TreeState:
    """The exact (private) state of a continual release after ``night`` nights: the open
    partial sum of each level, per key, in lattice steps. Never released, never written to the
    ledger: the front keeps it in memory or in the caller's private state file."""

    levels: int
    keys: int
    night: int = 0
    open: list[list[int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.open:
            self.open = [[0] * self.keys for _ in range(self.levels)]

    def add(self, leaves: list[int], horizon: int) -> dict[Node, list[int]]:
        """Add the next night's lattice leaves (one per key); the exact values of the nodes it
        completes."""
        if len(leaves) != self.keys:
            raise ValueError("one leaf per key")
        self.night += 1
        for row in self.open:
            for i, x in enumerate(leaves):
                row[i] += int(x)
        done: dict[Node, list[int]] = {}
        for j, k in completed_at(self.night, horizon):
            done[(j, k)] = self.open[j]
            self.open[j] = [0] * self.keys
        return done


def add_node_noise(spec: TreeSpec, exact: Mapping[Node, list[int]], rng: RandomSource
                   ) -> dict[Node, list[int]]:
    """The noisy nodes: each exact node (lattice steps, per key) plus independent two-sided
    geometric noise of the spec's scale. Call only after the horizon's charge has committed."""
    out: dict[Node, list[int]] = {}
    for node in sorted(exact):
        vals = exact[node]
        z = discrete_laplace(spec.noise.int_scale, len(vals), rng)
        out[node] = [int(v) + int(e) for v, e in zip(vals, z.tolist(), strict=True)]
    return out


__all__ = [
    "MAX_HORIZON",
    "Node",
    "TreeSpec",
    "TreeState",
    "add_node_noise",
    "bottom_up",
    "completed_at",
    "honaker_factor",
    "levels_for",
    "plain_variance_factor",
    "prefix_blocks",
    "prefix_estimate",
    "prefix_half_width",
    "prefix_variance_factor",
    "prefix_weights",
    "top_down",
]
