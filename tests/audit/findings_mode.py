"""Finding 81: ``mode`` by permute-and-flip over public candidates (core/aggregates/mode.py).

Exact: the plan dpframe makes (through the registry, so a broken part injected there is the
one audited) gives each group's exponential mechanism; the law of its output is computed
exactly (:func:`~.findings_quant.pf_probabilities`) with the candidates' counts as utilities,
for every dataset of up to four rows on three candidates and every neighbour (rows added;
under change_one also a row moved). Ungrouped, the audit's epsilon is the largest log ratio
over the neighbours (row level, and two rows per unit). Grouped (``T = 2``, ``k = 2``,
``R = 1``), a unit's rows land in several groups, whose outputs are independent: the log
ratios add up, so the worst is the worst sum over the groups one unit can change: 2 groups
with one row added (add_remove), or, under change_one, 4 groups with one row added or removed,
2 groups with a row moved inside each, or 2 of the first and 1 of the second. It must not
exceed the epsilon charged (1). The BROKEN control plans every group at the whole epsilon
(the group share ignored), which the grouped case catches.
"""

from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core.aggregates import AGGREGATES
from dpframe.core.aggregates.mode import Candidates, Mode
from dpframe.core.measure import MeasurePlan, PlanContext
from dpframe.core.noise.mechanisms import ExponentialSpec
from dpframe.core.plan import plan_query

from ._controls import patched
from .findings_quant import histograms, neighbouring_histograms, pf_probabilities

if TYPE_CHECKING:
    from dpframe.core.query import Measure

CANDIDATES = 3
MAX_ROWS = 4


def _spec(relation: str, unit: bool, grouped: bool) -> ExponentialSpec:
    """The exponential mechanism dpframe plans for one group of a mode over ``(0, 1, 2)``."""
    frame = pd.DataFrame({"x": [0], "u": [0], "g": ["a"]})
    opts: dict[str, object] = {"bounds": {"x": (0, CANDIDATES - 1)}}
    if grouped:
        opts.update(keys={"g": ["a", "b"]}, privacy_unit="u", max_rows_per_unit=2,
                    max_groups_per_unit=2, max_rows_per_group=1)
    elif unit:
        opts.update(privacy_unit="u", max_rows_per_unit=2)
    priv = frame.dp(dpf.Session(100, neighbouring=relation, seed=1), **opts)
    query = priv.query("mode", "x", by="g" if grouped else None, epsilon=1)
    plan = plan_query(query, relation, {"x": "int", "u": "int", "g": "str"})
    spec = plan.measures[0].mechanisms["choice"]
    assert isinstance(spec, ExponentialSpec)
    return spec


def _worst(spec: ExponentialSpec, relation: str, rows: int, moves: bool) -> float:
    """The largest exact log ratio of one group's output law over neighbouring datasets:
    ``rows`` rows added (``moves``: only a row moved instead)."""
    worst = 0.0
    for d in histograms(CANDIDATES, MAX_ROWS):
        law_d = pf_probabilities(np.asarray(d, dtype=np.int64), spec)
        for d2 in neighbouring_histograms(d, relation, rows):
            moved = sum(d2) == sum(d)
            if moved != moves:
                continue
            law_d2 = pf_probabilities(np.asarray(d2, dtype=np.int64), spec)
            worst = max(worst, float(np.max(np.abs(np.log(law_d) - np.log(law_d2)))))
    return worst


def finding_mode(seed: int) -> tuple[float, float, float, str]:
    """81. Mode, ungrouped (row level, two rows per unit) and grouped (T=2, k=2, R=1), under
    both relations: the worst exact log ratio (module docstring)."""
    worst, where = 0.0, ""
    for relation, unit in itertools.product(("add_remove", "change_one"), (False, True)):
        spec = _spec(relation, unit, False)
        eps = max(_worst(spec, relation, 2 if unit else 1, False),
                  _worst(spec, relation, 1, True) if relation == "change_one" else 0.0)
        if eps > worst:
            worst, where = eps, f"ungrouped, {relation}, unit={unit}"
    for relation in ("add_remove", "change_one"):
        spec = _spec(relation, True, True)
        added = _worst(spec, "add_remove", 1, False)
        if relation == "add_remove":
            eps = 2 * added
        else:
            move = _worst(spec, "change_one", 1, True)
            eps = max(4 * added, 2 * move, 2 * added + move)
        if eps > worst:
            worst, where = eps, f"grouped, {relation}"
    return worst, 1.0, 0.0, (f"exact permute-and-flip laws over {CANDIDATES} candidates, "
                             f"datasets of up to {MAX_ROWS} rows; worst: {where}")


class WholeEpsilonPerGroup(Mode):
    """BROKEN on purpose: every group's mechanism at the query's whole epsilon."""

    def plan(self, ctx: PlanContext, m: Measure, eps: Fraction, delta: Fraction,
             rho: Fraction | None) -> MeasurePlan[Candidates]:
        mp = super().plan(ctx, m, eps, delta, rho)
        em = mp.exponential()
        return dataclasses.replace(
            mp, mechanisms={"choice": ExponentialSpec(eps, em.utility_sensitivity,
                                                      em.n_candidates)})


def _whole_epsilon(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(AGGREGATES, "mode", WholeEpsilonPerGroup())


#: BROKEN on purpose: the mode's groups each planned at the whole epsilon.
mode_whole_epsilon_per_group = patched(_whole_epsilon)

__all__ = ["WholeEpsilonPerGroup", "finding_mode", "mode_whole_epsilon_per_group"]
