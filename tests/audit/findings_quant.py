"""Finding 60: the quantile's exponential mechanism over fine cells, and its rank interval.

An exact audit: for every small dataset (up to four rows on four cells) and every neighbour
(one more row anywhere; under change_one also a row moved; with ``max_rows_per_unit=2`` two
rows), the release's output law is computed exactly from the plan dpframe makes (its
acceptance rates, its utility function :func:`rank_utilities`): permute-and-flip outputs
candidate ``i`` with probability ``p_i E[1 / (1 + X_i)]``, ``p_j = exp(-rate gap_j)`` and
``X_i`` the accepted others (a Poisson binomial). The value released is a uniform point of the
chosen cell (or its integer), so the ratio of output densities is the ratio of cell
probabilities; with ``ci=`` the estimate and the two endpoints are independent given the
data, so the joint's worst ratio is the product of the three worst ratios. The audit's epsilon
is the largest log ratio over all of it: it must not exceed the epsilon charged.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from fractions import Fraction

import numpy as np
import pandas as pd

import dpframe as dpf
from dpframe.core.aggregates import quantile as quantile_module
from dpframe.core.aggregates.quantile import rank_utilities
from dpframe.core.noise.mechanisms import ExponentialSpec
from dpframe.core.plan import plan_query

from ._controls import halved_integer_result

CELLS = 4
MAX_ROWS = 4
LEVELS = ("median", "quantile", "max", "min")


def pf_probabilities(utilities: np.ndarray, em: ExponentialSpec) -> np.ndarray:
    """The exact output law of permute-and-flip (as :meth:`ExponentialSpec.choose` samples
    it: gaps capped where ``exp(-rate gap) <= e**-64``)."""
    a, d = em.acceptance_rate()
    gap = np.minimum(utilities.max() - utilities, -(-64 * d // a))
    p = np.exp(-float(Fraction(a, d)) * gap.astype(np.float64))
    out = np.empty(p.size)
    for i in range(p.size):
        poly = np.array([1.0])  # law of the number of accepted others
        for j in range(p.size):
            if j != i:
                poly = np.convolve(poly, [1 - p[j], p[j]])
        out[i] = p[i] * float(np.sum(poly / np.arange(1, poly.size + 1)))
    return out


def _plan(level: str, relation: str, ci: bool, unit: bool) -> object:
    frame = pd.DataFrame({"x": [0.0], "u": [0]})
    opts: dict[str, object] = dict(bounds={"x": (0.0, 4.0)})
    if unit:
        opts.update(privacy_unit="u", max_rows_per_unit=2)
    priv = frame.dp(dpf.Session(100, neighbouring=relation, seed=1), **opts)
    kw: dict[str, object] = dict(epsilon=1, resolution=CELLS)
    if ci:
        kw["ci"] = 0.9
    query = (priv.query("quantile", "x", 0.25, **kw) if level == "quantile"
             else priv.query(level, "x", **kw))
    return plan_query(query, relation, {"x": "float", "u": "int"})


def histograms(cells: int, max_rows: int) -> Iterator[tuple[int, ...]]:
    """Every dataset of up to ``max_rows`` rows over ``cells`` cells, as its cell counts."""
    for n in range(max_rows + 1):
        for picked in itertools.combinations_with_replacement(range(cells), n):
            yield tuple(np.bincount(np.asarray(picked, dtype=np.int64), minlength=cells))


def neighbouring_histograms(c: tuple[int, ...], relation: str, rows: int
                            ) -> Iterator[tuple[int, ...]]:
    """Datasets one unit away: ``rows`` rows added anywhere (removal is the same pair read
    backwards), and under change_one up to ``rows`` rows moved."""
    base = np.asarray(c)
    cells = len(c)
    for added in itertools.combinations_with_replacement(range(cells), rows):
        yield tuple(base + np.bincount(np.asarray(added), minlength=cells))
    if relation == "change_one":
        for i, j in itertools.permutations(range(cells), 2):
            if base[i] >= 1:
                moved = base.copy()
                moved[i] -= 1
                moved[j] += 1
                yield tuple(moved)


def _laws(plan: object, cells: tuple[int, ...]) -> list[np.ndarray]:
    mp = plan.measures[0]  # type: ignore[attr-defined]
    q = mp.measure.params.q
    c = np.asarray([cells], dtype=np.int64)
    laws = [pf_probabilities(rank_utilities(c, q)[0], mp.exponential("choice"))]
    t = mp.params.t
    if t is not None:
        laws.append(pf_probabilities(rank_utilities(c, q, t, -t)[0], mp.exponential("ci_lower")))
        laws.append(pf_probabilities(rank_utilities(c, q, t, t)[0], mp.exponential("ci_upper")))
    return laws


def _worst(plan: object, relation: str, rows: int) -> float:
    worst = 0.0
    seen: dict[tuple[int, ...], list[np.ndarray]] = {}

    def laws(c: tuple[int, ...]) -> list[np.ndarray]:
        if c not in seen:
            seen[c] = _laws(plan, c)
        return seen[c]

    for d in histograms(CELLS, MAX_ROWS):
        law_d = laws(d)
        for d2 in neighbouring_histograms(d, relation, rows):
            law_d2 = laws(d2)
            eps = sum(float(np.max(np.abs(np.log(a) - np.log(b))))
                      for a, b in zip(law_d, law_d2, strict=True))
            worst = max(worst, eps)
    return worst


def finding_quantile_cells(seed: int) -> tuple[float, float, float, str]:
    """60. Quantile, median, max and min over cells, with and without ``ci=``, under both
    relations, at row level and with two rows per unit: the worst exact log ratio."""
    worst, where = 0.0, ""
    for level, relation, ci, unit in itertools.product(
            LEVELS, ("add_remove", "change_one"), (False, True), (False, True)):
        eps = _worst(_plan(level, relation, ci, unit), relation, 2 if unit else 1)
        if eps > worst:
            worst, where = eps, f"{level}, {relation}, ci={ci}, unit={unit}"
    return worst, 1.0, 0.0, (f"exact permute-and-flip laws over {CELLS} cells, datasets of up "
                             f"to {MAX_ROWS} rows; worst: {where}")


def halved_quantile_sensitivity() -> contextlib.AbstractContextManager[None]:
    """BROKEN on purpose: the quantile's utility sensitivity halved (at least 1)."""
    return halved_integer_result(quantile_module, "quantile_utility_sensitivity")


__all__ = ["finding_quantile_cells", "halved_quantile_sensitivity", "histograms",
           "neighbouring_histograms", "pf_probabilities"]
