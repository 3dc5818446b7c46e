"""Positive controls: releases broken on purpose, which the audit must catch (for the audit
only, never in the library).

Every patch target (a module global of the planner, an attribute of a plan or of a noise
spec) is named in this module and nowhere else: when the planner moves, update the targets
here. A target that no longer exists makes the patch raise (``MonkeyPatch.setattr``); one that
exists but is no longer called makes the broken control pass the audit, which the audit tests
report as "the audit missed a broken mechanism".
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dpframe.core.mechanisms import NoiseSpec
from dpframe.core.memo import RecentCache
from dpframe.core.plan import PLAN_CACHE_SIZE
from dpframe.core.sensitivity import Sensitivity

from .mechanisms import geometric_spec

#: The sum aggregate's sensitivity (its result: a ``Sensitivity``), looked up in the module
#: that calls it.
SUM_SENSITIVITY = "dpframe.core.measure.sum_sensitivity"
#: The planner of private-key selection (its result has a ``threshold``).
KEY_SELECTION = "dpframe.core.plan._plan_selection"
#: The planner's cache of finished plans (``plan_release``): a patched planner starts from an
#: empty one, and the plans it made are dropped with the patch.
PLAN_CACHE = "dpframe.core.plan._PLANS"

Patch = Callable[[pytest.MonkeyPatch], None]


def _real(target: str) -> Callable[..., Any]:
    module, name = target.rsplit(".", 1)
    fn: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return fn


def _forget_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plans made before the patch were made by the real planner: hide them while it holds."""
    monkeypatch.setattr(PLAN_CACHE, RecentCache(PLAN_CACHE_SIZE))


def halve_sum_sensitivity(monkeypatch: pytest.MonkeyPatch) -> None:
    """BROKEN on purpose: plan sums with half their true sensitivity."""
    real = _real(SUM_SENSITIVITY)

    def halved(*args: Any, **kwargs: Any) -> Sensitivity:
        s = real(*args, **kwargs)
        return Sensitivity(s.l1 / 2, s.l2 / 2, s.linf / 2, s.changed)

    monkeypatch.setattr(SUM_SENSITIVITY, halved)
    _forget_plans(monkeypatch)


def lower_selection_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """BROKEN on purpose: release private keys at one below the calibrated threshold."""
    real = _real(KEY_SELECTION)

    def lowered(*args: Any, **kwargs: Any) -> Any:
        sp = real(*args, **kwargs)
        return dataclasses.replace(sp, threshold=sp.threshold - 1)

    monkeypatch.setattr(KEY_SELECTION, lowered)
    _forget_plans(monkeypatch)


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
