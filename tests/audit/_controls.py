"""Positive controls: releases broken on purpose, which the audit must catch (for the audit
only, never in the library).

Broken parts are injected where the library looks its parts up: an aggregate into the
registry (:data:`dpframe.core.aggregates.AGGREGATES`), the key-selection planner into
:data:`dpframe.core.plan.PLANNERS`, with ``monkeypatch.setitem``. No module variable is patched
by name: when a module moves, nothing here changes. The plan cache keys plans by the planners
that made them, so a broken part never meets an honest plan, nor leaves its plans behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import pytest

from dpframe.core.aggregates import AGGREGATES
from dpframe.core.aggregates.sum import Sum
from dpframe.core.exact.compute import AggregateRequest
from dpframe.core.measure import MeasurePlan, PlanContext
from dpframe.core.noise.mechanisms import NoiseSpec
from dpframe.core.plan import PLANNERS, KeySelection
from dpframe.core.selection import SelectionPlan
from dpframe.core.sensitivity import Sensitivity

from .mechanisms import geometric_spec

if TYPE_CHECKING:
    from dpframe.core.query import Measure

Patch = Callable[[pytest.MonkeyPatch], None]


@dataclasses.dataclass(frozen=True)
class _HalvedSums(PlanContext):
    """BROKEN on purpose: a planning context whose sums have half their true sensitivity."""

    def sum_sensitivity(self, req: AggregateRequest) -> Sensitivity:
        s = super().sum_sensitivity(req)
        return Sensitivity(s.l1 / 2, s.l2 / 2, s.linf / 2, s.changed)


class HalvedSum(Sum):
    """BROKEN on purpose: the sum aggregate, planned with half its sensitivity."""

    def plan(self, ctx: PlanContext, m: Measure, eps: Fraction, delta: Fraction,
             rho: Fraction | None) -> MeasurePlan:
        halved = _HalvedSums(ctx.query, ctx.relation, ctx.contribution, ctx.column_kinds)
        return super().plan(halved, m, eps, delta, rho)


class LowThreshold(KeySelection):
    """BROKEN on purpose: private keys released at one below the calibrated threshold."""

    def plan(self, *args: Any, **kwargs: Any) -> SelectionPlan:
        sp = super().plan(*args, **kwargs)
        return dataclasses.replace(sp, threshold=sp.threshold - 1)


def halve_sum_sensitivity(monkeypatch: pytest.MonkeyPatch) -> None:
    """BROKEN on purpose: plan sums with half their true sensitivity (through the registry)."""
    monkeypatch.setitem(AGGREGATES, "sum", HalvedSum())


def lower_selection_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """BROKEN on purpose: release private keys at one below the calibrated threshold."""
    monkeypatch.setitem(PLANNERS, "key_selection", LowThreshold())


def patched(patch: Patch) -> Callable[[], contextlib.AbstractContextManager[None]]:
    """A context in which ``patch`` holds, undone on exit (a ``Scenario.patch``)."""

    @contextlib.contextmanager
    def context() -> Iterator[None]:
        with pytest.MonkeyPatch.context() as monkeypatch:
            patch(monkeypatch)
            yield

    return context


halved_sum_sensitivity = patched(halve_sum_sensitivity)
low_selection_threshold = patched(lower_selection_threshold)


def half_noise_spec() -> NoiseSpec:
    """BROKEN on purpose: claims epsilon but adds the noise of 2 epsilon (half the scale)."""
    spec = geometric_spec()
    return dataclasses.replace(spec, int_scale=spec.int_scale / 2)


#: A DP bound choice's histogram sensitivity (finding 59).
BOUND_CHOICE_SENSITIVITY = "dpframe.core.choose_bounds.BoundsRequest.sensitivity"


@contextlib.contextmanager
def understated_sensitivity() -> Iterator[None]:
    """The DP bound choice calibrated to sensitivity 1 whatever the relation (under
    ``change_one`` a unit leaves one bin and joins another: 2)."""
    module, cls, attr = BOUND_CHOICE_SENSITIVITY.rsplit(".", 2)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(getattr(importlib.import_module(module), cls), attr, property(lambda _: 1))
        yield


@contextlib.contextmanager
def halved_integer_result(module: object, name: str) -> Iterator[None]:
    """BROKEN on purpose: ``module.name`` (an integer sensitivity) returns half its value, at
    least 1 (the quantile and joint-quantile controls)."""
    real = getattr(module, name)

    def broken(*args: object) -> int:
        return max(1, real(*args) // 2)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(module, name, broken)
        yield
