"""Hints read from released (noisy) values alone: post-processing, so they cost no privacy.

:func:`near_zero_hint` warns when every value of a grouped release over public keys is within
its noise of zero: the typical sign of declared keys spelled otherwise than in the data
(``"Northeast"`` against ``"northeast"``), which spends a budget on counts of nothing. The
test reads only the noisy values and public plan parameters (noise specs, the number of keys),
so whether it fires is a function of the release, like any post-processing (Dwork and Roth
2014, Proposition 2.1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .aggregates import aggregate
from .measure import MeasurePlan, MeasureRelease
from .selection import SelectionPlan, half_count

#: Chance that the hint stays silent when every true value is zero (Bonferroni over the keys).
MISS_RATE = 0.05


def near_zero_hint(plans: Sequence[MeasurePlan], released: Sequence[MeasureRelease],
                   keys: int, by: Sequence[str]) -> str | None:
    """A warning text when every released value of every count, sum and distinct count of a
    grouped release over ``keys`` public keys lies within the noise's two-sided
    ``1 - MISS_RATE / keys`` half-width of zero (so with all true values zero it fires with
    probability >= 95%, whatever the number of keys); None otherwise."""
    if keys == 0 or not by:
        return None
    level = 1.0 - MISS_RATE / keys
    checked = 0
    for mp, m in zip(plans, released, strict=True):
        noises = mp.noises()
        if not aggregate(mp.measure.op).zero_when_empty or len(noises) != 1:
            continue
        values = np.asarray(m.values, dtype=np.float64)
        if values.size and np.max(np.abs(values)) > noises[0].half_width(level):
            return None
        checked += 1
    if not checked:
        return None
    names = ", ".join(repr(b) for b in by)
    return (f"every released value of this grouped result is within its noise of zero: are "
            f"the declared keys of {names} spelled as in the data (case, spaces, types)? This "
            "check reads only the noisy values; it costs no privacy")


#: How the hint of an empty private-key release begins (warned as
#: :class:`~dpframe.errors.NoKeysReleasedWarning`).
NO_KEYS = "no key was released"


def _lowered_by(selection: SelectionPlan, groups: int) -> str:
    """What would lower a selection's threshold (public parameters)."""
    more = ["More epsilon"]
    if not selection.released_count:
        more.append("a larger selection_share")
    more.append("a larger delta")
    if groups > 1:
        more.append("a smaller max_groups_per_unit")
    return ", ".join(more)


def no_keys_hint(selection: SelectionPlan, by: Sequence[str], groups: int,
                 unit: bool, rows: bool = False) -> str:
    """The hint of a ``keys="private"`` release that released no key: the threshold (public,
    from the plan) and what would lower it. Whether it fires is the number of released keys,
    itself released: post-processing. ``rows``: the threshold is on rows although there is a
    unit (a thresholded count of rows, several per unit and key)."""
    names = ", ".join(repr(b) for b in by)
    what = "distinct units" if unit and not rows else "rows"
    per = "" if not unit else (f", each unit counted in at most {groups:,} keys"
                               if groups > 1 else ", each unit counted in one key")
    return (f"{NO_KEYS}: keys='private' releases a key of {names} only when its noisy count of "
            f"{what} clears the threshold {selection.threshold:,} (a key with about "
            f"{half_count(selection):,} {what} is released with probability 1/2; selection at "
            f"epsilon {float(selection.epsilon):g}, delta {float(selection.delta):g}{per}). "
            f"{_lowered_by(selection, groups if unit else 1)} would lower it; if the keys are "
            "public, declare them (keys=[...]). This reads only the released keys; it costs no "
            "privacy")


__all__ = ["MISS_RATE", "NO_KEYS", "near_zero_hint", "no_keys_hint"]
