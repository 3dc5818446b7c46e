"""Findings 85 and 86: several quantiles in one JointExp release (core/joint_quantiles.py).

85 (exact): for every small dataset (up to four rows on three cells) and every neighbour (one
more row anywhere; under change_one also a row moved; with ``max_rows_per_unit=2`` two rows),
the law of the released cells is computed exactly from the plan dpframe makes (its rate, its
candidates and sub-candidates, :func:`joint_utility`): the exponential mechanism over every
nondecreasing candidate tuple, summed over the tuples that name the same cells (the values
are uniform points of the cells: post-processing). The audit's epsilon is the largest log
ratio of those laws over the neighbours: it must not exceed the epsilon charged. The BROKEN
control halves the utility's sensitivity.

86 (sampling): the sampler itself (the dynamic program in log space, then exact rejection
draws), run through a release on the neighbouring pair where the exact law's ratio is worst;
the event is "the release names the worst cell tuple". The BROKEN control runs the sampler
at four times the rate (epsilon doubled, sensitivity halved), which the audit must
catch.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
from collections.abc import Iterator
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core import joint_quantiles
from dpframe.core.aggregates import quantile as quantile_module
from dpframe.core.joint_quantiles import JointQuantileSpec, sub_candidates, targets
from dpframe.core.noise.rng import RandomSource
from dpframe.core.plan import plan_query

from ._controls import halved_integer_result
from .findings_quant import histograms, neighbouring_histograms
from .scenario import Built, Run

CELLS = 3
MAX_ROWS = 4
LEVELS = (0.25, 0.5, 0.75)
CHUNK = 512


def _plan(relation: str, unit: bool, levels: tuple[float, ...] = LEVELS) -> object:
    frame = pd.DataFrame({"x": [0.0], "u": [0]})
    opts: dict[str, object] = dict(bounds={"x": (0.0, 3.0)})
    if unit:
        opts.update(privacy_unit="u", max_rows_per_unit=2)
    priv = frame.dp(dpf.Session(100, neighbouring=relation, seed=1), **opts)
    query = priv.query("quantile", "x", list(levels), epsilon=1, resolution=CELLS)
    return plan_query(query, relation, {"x": "float", "u": "int"})


def _distinct(cells: np.ndarray, sub: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct candidates of the module docstring (cell, rank), with how many of the
    ``sub + 1`` candidates of their cell repeat them: a cell of ``N <= S`` values has the ranks
    ``B..B + N``, the top one ``S + 1 - N`` times; a larger tie its ``h + 1`` lowest and
    ``S - h`` highest ranks once each (written here independently of ``candidate_ranks``)."""
    cell, rank, mult = [], [], []
    below = 0
    for k, nk in enumerate(int(v) for v in cells):
        if nk <= sub:
            rs, ms = list(range(nk + 1)), [1] * nk + [sub + 1 - nk]
        else:
            h = sub // 2
            rs = list(range(h + 1)) + [nk - sub + r for r in range(h + 1, sub + 1)]
            ms = [1] * (sub + 1)
        cell += [k] * len(rs)
        rank += [below + r for r in rs]
        mult += ms
        below += nk
    return np.asarray(cell), np.asarray(rank, dtype=np.int64), np.asarray(mult)


def joint_law(spec: JointQuantileSpec, cells: tuple[int, ...]) -> dict[tuple[int, ...], float]:
    """The exact law of the released cell tuple: every nondecreasing candidate tuple weighted
    ``exp(rate U)``, summed by the cells they name. Candidates that repeat one rank in one cell
    are gathered: ``r`` levels on a candidate repeated ``M`` times stand for ``C(M + r - 1, r)``
    nondecreasing candidate tuples."""
    c = np.asarray(cells, dtype=np.int64)
    sub = sub_candidates(c.size)
    cell, rho, mult = _distinct(c, sub)
    m = len(spec.levels)
    d, gaps = targets(int(c.sum()), spec.levels, spec.shifts)
    a, den = spec.acceptance_rate()
    tuples = _tuples(rho.size, m)
    pts = np.concatenate([np.zeros((len(tuples), 1), dtype=np.int64), d * rho[tuples],
                          np.full((len(tuples), 1), d * int(c.sum()))], axis=1)
    u = -np.abs(np.diff(pts, axis=1) - gaps[None, :]).sum(axis=1)
    logm = np.zeros(len(tuples))
    for i, t in enumerate(tuples):
        vals, runs = np.unique(t, return_counts=True)
        for v, r in zip(vals, runs, strict=True):
            mv = int(mult[v])
            logm[i] += math.lgamma(mv + r) - math.lgamma(r + 1) - math.lgamma(mv)
    logw = float(Fraction(a, den)) * u + logm
    w = np.exp(logw - logw.max())
    tc = cell[tuples]
    code = (tc * (c.size ** np.arange(m))[None, :]).sum(axis=1)
    law = np.bincount(code, weights=w, minlength=c.size ** m) / w.sum()
    return {tuple(int(x) for x in np.unravel_index(k, (c.size,) * m, order="F")):
            float(p) for k, p in enumerate(law) if p > 0}


@functools.lru_cache(maxsize=8)
def _tuples(candidates: int, m: int) -> np.ndarray:
    return np.asarray(list(itertools.combinations_with_replacement(range(candidates), m)))


def _worst(spec: JointQuantileSpec, relation: str, rows: int
           ) -> tuple[float, tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """The largest log ratio, its pair of datasets and its cell tuple."""
    seen: dict[tuple[int, ...], dict[tuple[int, ...], float]] = {}

    def law(c: tuple[int, ...]) -> dict[tuple[int, ...], float]:
        if c not in seen:
            seen[c] = joint_law(spec, c)
        return seen[c]

    worst: tuple[float, tuple[int, ...], tuple[int, ...], tuple[int, ...]] = (0.0, (), (), ())
    for d in histograms(CELLS, MAX_ROWS):
        for d2 in neighbouring_histograms(d, relation, rows):
            a, b = law(d), law(d2)
            for t in a:
                r = abs(np.log(a[t]) - np.log(b[t]))
                if r > worst[0]:
                    worst = (float(r), d, d2, t)
    return worst


def finding_joint_exact(seed: int) -> tuple[float, float, float, str]:
    """85. JointExp of the quartiles over three cells, both relations, row level and two rows
    per unit: the worst exact log ratio of the released cells' law."""
    worst, where = 0.0, ""
    for relation, unit in itertools.product(("add_remove", "change_one"), (False, True)):
        spec = _plan(relation, unit).measures[0].mechanisms["choice"]  # type: ignore[attr-defined]
        eps = _worst(spec, relation, 2 if unit else 1)[0]
        if eps > worst:
            worst, where = eps, f"{relation}, unit={unit}"
    return worst, 1.0, 0.0, (f"exact JointExp laws over {CELLS} cells, datasets of up to "
                             f"{MAX_ROWS} rows; worst: {where}")


def finding_joint_sampling(seed: int) -> Built:
    """86. The sampler on the worst pair of finding 85 (add_remove, row level). The output is
    the exact log ratio ``log(P_d(t) / P_d2(t))`` of the cell tuple ``t`` it names (a
    likelihood-ratio statistic: its threshold events gather the tuples that favour ``d``)."""
    spec = _plan("add_remove", False).measures[0].mechanisms["choice"]  # type: ignore[attr-defined]
    _, d, d2, _t = _worst(spec, "add_remove", 1)
    law_d, law_d2 = joint_law(spec, d), joint_law(spec, d2)
    code = {t: np.log(law_d[t] / law_d2[t]) for t in law_d}
    table = np.zeros((CELLS,) * len(LEVELS))
    for t, v in code.items():
        table[t] = v
    rng = RandomSource(seed * 7919 + 5, warn=False)

    def run(c: tuple[int, ...]) -> Run:
        rows = np.broadcast_to(np.asarray(c, dtype=np.int64), (CHUNK, CELLS))
        return lambda: table[tuple(spec.choose_joint(rows, rng).T)]

    return run(d), run(d2), float(spec.epsilon), 0.0


def halved_joint_sensitivity() -> contextlib.AbstractContextManager[None]:
    """BROKEN on purpose: the joint utility's sensitivity halved (at least 1)."""
    return halved_integer_result(quantile_module, "joint_utility_sensitivity")


@contextlib.contextmanager
def quadrupled_joint_rate() -> Iterator[None]:
    """BROKEN on purpose: the sampler draws at four times the rate its plan states (epsilon
    doubled and the sensitivity halved)."""
    real = joint_quantiles.sample_joint

    def broken(cells: object, levels: object, shifts: object, rate: Fraction, sub: int,
               rng: RandomSource, bits: int = joint_quantiles.GAP_BITS) -> object:
        return real(cells, levels, shifts, 4 * rate, sub, rng, bits)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(joint_quantiles, "sample_joint", broken)
        yield


__all__ = [
    "finding_joint_exact",
    "finding_joint_sampling",
    "halved_joint_sensitivity",
    "joint_law",
    "quadrupled_joint_rate",
]
