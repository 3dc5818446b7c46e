"""Consistent hierarchies: generalized least squares over a tree of noisy totals.

A rollup releases one noisy value per node of a tree (the grand total, each subtotal, each
leaf), each level with its own independent noise of known variance. Hay, Rastogi, Miklau and
Suciu (2010, "Boosting the accuracy of differentially private histograms through
consistency") make such a release consistent by least squares; with unequal noise per level
the estimate is the generalized least squares (GLS) one, weighted by the inverse variances,
computed in two passes over the tree (exact for a tree, linear time):

* upward: ``z_v`` the best estimate of node ``v`` from its own subtree's noisy values,
  ``z_v = (y_v / s_v + S / V) / (1 / s_v + 1 / V)`` with ``S``, ``V`` the sum of its
  children's ``z`` and of their variances, and ``var z_v = 1 / (1 / s_v + 1 / V)``;
* downward: ``x_root = z_root`` and ``x_u = z_u + var z_u / V (x_v - S)`` for each child ``u``
  of ``v``: the children then add up to their parent exactly (in real arithmetic; in float to
  rounding).

The estimate is post-processing of the noisy values (it reads nothing else), so it costs no
privacy. It is unbiased, and its error is ``sum_i c_i e_i`` over the nodes' noises ``e_i``
with public coefficients ``c`` (the GLS operator's row): its variance is known in closed form
(:func:`gls_variances`, the Rauch-Tung-Striebel recursion on the tree) and its tails are
bounded by a Chernoff bound on the noises' moment generating functions
(:func:`half_widths`). Everything here but :func:`gls` reads public information only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Above this many nodes the intervals use Chebyshev's bound from the closed-form variance
#: (valid, wider) instead of the Chernoff bound, whose coefficients cost O(nodes**2).
MAX_CHERNOFF_NODES = 1000


@dataclass(frozen=True)
class Tree:
    """A tree in levels: level 0 is the root (one node); ``parents[l - 1][i]`` is the index
    (in level ``l - 1``) of node ``i`` of level ``l``. Every internal node has a child."""

    parents: tuple[np.ndarray, ...]

    @property
    def sizes(self) -> list[int]:
        return [1, *(len(p) for p in self.parents)]

    @property
    def depth(self) -> int:
        return len(self.parents)


def _children_sums(tree: Tree, level: int, values: np.ndarray) -> np.ndarray:
    """Sum of ``values`` (of level ``level``) into their parents (level ``level - 1``)."""
    return np.bincount(tree.parents[level - 1], weights=values,
                       minlength=tree.sizes[level - 1])


def _upward(tree: Tree, noisy: Sequence[np.ndarray], var: Sequence[float]
            ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The upward pass: each node's subtree estimate ``z`` and its variance."""
    depth = tree.depth
    z: list[np.ndarray] = [np.empty(0)] * (depth + 1)
    v: list[np.ndarray] = [np.empty(0)] * (depth + 1)
    z[depth] = np.asarray(noisy[depth], dtype=np.float64)
    v[depth] = np.full(tree.sizes[depth], float(var[depth]))
    for lvl in range(depth - 1, -1, -1):
        s = _children_sums(tree, lvl + 1, z[lvl + 1])
        vs = _children_sums(tree, lvl + 1, v[lvl + 1])
        own = float(var[lvl])
        # weights relative to the level's own variance: no overflow for tiny variances
        w_children = own / vs
        z[lvl] = (np.asarray(noisy[lvl], dtype=np.float64) + s * w_children) / (1 + w_children)
        v[lvl] = own / (1 + w_children)
    return z, v


def gls(tree: Tree, noisy: Sequence[np.ndarray], var: Sequence[float]) -> list[np.ndarray]:
    """The GLS estimate of every node (per level, root first) from the noisy values ``noisy``
    (per level) whose noises are independent with variance ``var[level]`` (> 0)."""
    z, v = _upward(tree, noisy, var)
    x = [z[0]]
    for lvl in range(1, tree.depth + 1):
        p = tree.parents[lvl - 1]
        s = _children_sums(tree, lvl, z[lvl])
        vs = _children_sums(tree, lvl, v[lvl])
        x.append(z[lvl] + v[lvl] / vs[p] * (x[lvl - 1][p] - s[p]))
    return x


def gls_variances(tree: Tree, var: Sequence[float]) -> list[np.ndarray]:
    """The variance of each node's GLS estimate (per level, root first), in closed form:
    ``P_root = var z_root`` and ``P_u = var z_u + (var z_u / V)**2 (P_v - V)`` for a child ``u``
    of ``v`` (``V`` the sum of the children's ``var z``)."""
    zero = [np.zeros(n) for n in tree.sizes]
    _, v = _upward(tree, zero, var)
    out = [v[0]]
    for lvl in range(1, tree.depth + 1):
        p = tree.parents[lvl - 1]
        vs = _children_sums(tree, lvl, v[lvl])
        w = v[lvl] / vs[p]
        out.append(v[lvl] + w * w * (out[lvl - 1][p] - vs[p]))
    return out


def coefficient_row(tree: Tree, var: Sequence[float], level: int, index: int) -> np.ndarray:
    """The coefficients ``c`` (over every node, levels concatenated root first) of node
    ``(level, index)``'s GLS estimate: its error is ``sum_i c_i e_i``.

    The GLS operator is ``P = A (A' W A)^-1 A' W`` with ``W`` the inverse variances, so
    ``P' = W P W^-1`` and row ``u`` of ``P`` is ``(w / w_u) * (P e_u)``: one GLS of a unit
    vector."""
    unit = [np.zeros(n) for n in tree.sizes]
    unit[level][index] = 1.0
    col = np.concatenate(gls(tree, unit, var))
    w = np.concatenate([np.full(n, 1.0 / float(var[lvl])) for lvl, n in enumerate(tree.sizes)])
    return w / w[_flat(tree, level, index)] * col


def _per_node(tree: Tree, per_level: Sequence[float]) -> np.ndarray:
    """A value per level, repeated for each node (levels concatenated, root first)."""
    return np.repeat(np.asarray(per_level, dtype=np.float64), tree.sizes)


def _flat(tree: Tree, level: int, index: int) -> int:
    return sum(tree.sizes[:level]) + index


def _log_mgf(s: float, c: np.ndarray, g: np.ndarray, p: np.ndarray) -> float:
    """log E[exp(s sum_i c_i g_i Z_i)] for independent discrete Laplace ``Z_i`` of parameter
    ``p_i`` (P[Z = z] proportional to p**|z|), at ``|s c_i g_i| < -ln p_i``."""
    a = s * c * g
    return float(np.sum(2 * np.log1p(-p) - np.log1p(-p * np.exp(a)) - np.log1p(-p * np.exp(-a))))


def chernoff_half_width(c: np.ndarray, g: np.ndarray, p: np.ndarray, alpha: float) -> float:
    """A ``t`` with ``P[|sum_i c_i g_i Z_i| > t] <= alpha`` (``Z_i`` independent discrete
    Laplace of parameter ``p_i``): ``min_s (K(s) + ln(2 / alpha)) / s`` over the MGF's domain,
    ``K`` the log-MGF (Chernoff, both tails by symmetry). Any ``s`` gives a valid bound; the
    minimization only makes it tight."""
    keep = (c != 0) & (p > 0)
    c, g, p = np.abs(c[keep]), g[keep], p[keep]
    if c.size == 0:
        return 0.0
    s_max = float(np.min(-np.log(p) / (c * g)))
    log2a = math.log(2.0 / alpha)

    def bound(s: float) -> float:
        return (_log_mgf(s, c, g, p) + log2a) / s

    from scipy.optimize import minimize_scalar  # here: ``import dpframe`` stays without scipy

    res = minimize_scalar(bound, bounds=(s_max * 1e-6, s_max * (1 - 1e-9)), method="bounded",
                          options={"xatol": s_max * 1e-6})
    return float(min(bound(float(res.x)), bound(s_max / 2)))


def _laplace_tail(p: float, alpha: float) -> float:
    """The least integer ``a >= 0`` with ``P[|Z| > a] = 2 p**(a + 1) / (1 + p) <= alpha`` for
    a discrete Laplace ``Z`` of parameter ``p`` (exact)."""
    if p <= 0.0:
        return 0.0
    return float(max(math.ceil(math.log(alpha * (1 + p) / 2) / math.log(p) - 1 - 1e-12), 0))


#: The shares of alpha tried for the largest noise term alone in :func:`split_half_width`.
_SPLITS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.98)


def split_half_width(c: np.ndarray, g: np.ndarray, p: np.ndarray, alpha: float) -> float:
    """A ``t`` with ``P[|sum_i c_i g_i Z_i| > t] <= alpha``: the smaller of the Chernoff bound
    of the whole sum and, for each split ``alpha = a1 + a2`` of :data:`_SPLITS`, the exact
    tail of the largest term alone at ``a1`` plus the Chernoff bound of the rest at ``a2`` (a
    union bound: ``|x + y| > t1 + t2`` needs ``|x| > t1`` or ``|y| > t2``). The largest term
    (usually the node's own noise) is a discrete Laplace, whose exact tail is about half its
    Chernoff bound."""
    best = chernoff_half_width(c, g, p, alpha)
    weight = np.abs(c) * g * np.where(p > 0, -1.0 / np.log(np.where(p > 0, p, 0.5)), 0.0)
    top = int(np.argmax(weight))
    if weight[top] <= 0:
        return best
    rest = c.copy()
    rest[top] = 0.0
    for share in _SPLITS:
        own = abs(float(c[top])) * float(g[top]) * _laplace_tail(float(p[top]), alpha * share)
        best = min(best, own + chernoff_half_width(rest, g, p, alpha * (1 - share)))
    return best


def half_widths(tree: Tree, var: Sequence[float], granularity: Sequence[float],
                p: Sequence[float], rounding: Sequence[float], *,
                level: float) -> list[np.ndarray]:
    """Each node's interval half-width (per level, root first) at coverage >= ``level``.

    The error of a GLS estimate is ``sum_i c_i (e_i + r_i)``: ``e_i`` node ``i``'s noise, a
    granularity ``g`` times a discrete Laplace of parameter ``p`` (per level), and ``r_i`` its
    rounding to the lattice (``|r_i| <= rounding[level]``, 0 for counts). The half-width is
    the smaller of Chebyshev's ``sqrt(Var / alpha)`` (closed-form variance) and the Chernoff
    bounds of :func:`split_half_width` (trees of at most :data:`MAX_CHERNOFF_NODES` nodes),
    plus ``sum_i |c_i| rounding_i``: both are valid, so their minimum is. Public: depends on
    the tree and the noise parameters only."""
    alpha = 1.0 - level
    variances = gls_variances(tree, var)
    cheb = [np.sqrt(v / alpha) for v in variances]
    n = sum(tree.sizes)
    if n > MAX_CHERNOFF_NODES:
        # sum |c_i| r_i <= r_max sqrt(n) |c|_2 and Var = sum c_i**2 var_i >= |c|_2**2 var_min
        r_max, v_min = max(rounding), min(var)
        return [c + r_max * np.sqrt(n * v / v_min) for c, v in zip(cheb, variances,
                                                                   strict=True)]
    g_all, p_all, r_all = (_per_node(tree, x) for x in (granularity, p, rounding))
    out = []
    known: dict[bytes, float] = {}  # nodes of one shape share their coefficients' multiset
    for lvl, k in enumerate(tree.sizes):
        hw = np.empty(k)
        for i in range(k):
            c = coefficient_row(tree, var, lvl, i)
            terms = np.stack([np.abs(c), g_all, p_all])
            key = terms[:, np.lexsort(terms)].tobytes()  # the bound is a function of it
            if key not in known:
                known[key] = split_half_width(c, g_all, p_all, alpha)
            hw[i] = min(float(cheb[lvl][i]), known[key]) + float(np.abs(c) @ r_all)
        out.append(hw)
    return out
