"""Accuracy-first releases: the smallest epsilon whose interval meets a target half-width.

The half-width of a count's, a sum's or a histogram bin's interval depends only on public
parameters (sensitivity, epsilon, delta, level), never on the data, so choosing epsilon from
a target reveals nothing: the epsilon is a function of the arguments and the public schema.
A mean's interval depends on its (private) number of rows; an accuracy target for a mean is
met for every group holding at least ``min_rows`` rows, a bound the analyst declares (public
knowledge, like bounds): epsilon depends on that declaration only.

The search is over epsilon in ``[EPS_MIN, EPS_MAX]`` on a log scale, then rounded **up** to
three significant digits (a charge people can read) and checked again, so the target holds
for the epsilon actually charged.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from fractions import Fraction

from ..errors import ValidationError
from .aggregates import aggregate
from .measure import MeasurePlan

EPS_MIN = Fraction(1, 10**6)
EPS_MAX = Fraction(10**6)


def _three_digits_up(x: float) -> Fraction:
    """``x`` rounded up to three significant digits, exactly."""
    e = math.floor(math.log10(x)) - 2
    scale = Fraction(10) ** e
    return math.ceil(Fraction(x) / scale) * scale


def epsilon_for_accuracy(half_width: Callable[[Fraction], float], target: float) -> Fraction:
    """The smallest epsilon (three significant digits, rounded up) with
    ``half_width(epsilon) <= target``, for a ``half_width`` that does not grow with epsilon.

    Raises :class:`~dpframe.errors.ValidationError` for a target no epsilon up to ``EPS_MAX``
    meets (or a non-positive one)."""
    if not (isinstance(target, int | float | Fraction) and not isinstance(target, bool)
            and math.isfinite(float(target)) and target > 0):
        raise ValidationError("accuracy must be a positive number: the target half-width of "
                              "the interval, in the result's units")
    half_width(Fraction(1))  # a query that cannot be planned at all fails here, as itself

    def guarded(eps: Fraction) -> float:
        try:
            return half_width(eps)
        except ValidationError:  # noise beyond what the samplers support at this epsilon
            return math.inf

    if guarded(EPS_MAX) > target:
        raise ValidationError(f"accuracy {float(target):g} cannot be met by any epsilon up to "
                              f"{float(EPS_MAX):g}: the noise's resolution is coarser; ask "
                              "for a larger half-width")
    if guarded(EPS_MIN) <= target:
        return EPS_MIN
    lo, hi = math.log(float(EPS_MIN)), math.log(float(EPS_MAX))
    for _ in range(36):  # relative precision ~1e-9, far below the 3 digits kept
        mid = (lo + hi) / 2
        if guarded(Fraction(math.exp(mid))) <= target:
            hi = mid
        else:
            lo = mid
    eps = _three_digits_up(math.exp(hi))
    step = Fraction(10) ** (math.floor(math.log10(float(eps))) - 2)
    while guarded(eps) > target:  # the rounding can only help; guard a non-monotone step
        eps += step
    return eps


def validate_accuracy(epsilon: object, accuracy: object, n_measures: int,
                      min_rows: object) -> None:
    """The refusals of ``accuracy=`` (every front and :func:`dpframe.engine.release.epsilon_for`
    run them): ``epsilon=`` or ``accuracy=``, not both and not neither; one aggregate; a
    positive finite target; ``min_rows`` a positive integer when given. The aggregate's own
    support (its ``half_width``) is checked when the plan is made."""
    if epsilon is not None and accuracy is not None:
        raise ValidationError("pass epsilon= or accuracy=, not both")
    if accuracy is None:
        raise ValidationError("pass epsilon= (the budget to spend) or accuracy= (the "
                              "target half-width of the interval, in the result's units)")
    if n_measures != 1:
        raise ValidationError("accuracy= applies to one aggregate; use epsilon= for agg")
    if min_rows is not None and not _positive(min_rows, numbers.Integral):
        raise ValidationError("min_rows must be a positive integer")
    if not _positive(accuracy, numbers.Real):
        raise ValidationError("accuracy must be a positive number: the target half-width of "
                              "the interval, in the result's units")


def _positive(x: object, kind: type) -> bool:
    """A finite positive number of ``kind`` (``numbers.Integral`` or ``Real``), not a bool."""
    return not isinstance(x, bool) and isinstance(x, kind) and math.isfinite(
        float(x)) and float(x) > 0  # type: ignore[arg-type]


def measure_half_width(mp: MeasurePlan, level: float, min_rows: int | None) -> float:
    """The half-width of a planned measure's ``level`` interval in the result's units, when it
    does not depend on the data (its aggregate's :meth:`~dpframe.core.measure.Aggregate.half_width`:
    counts, sums and histogram bins; a mean's bound for groups of at least ``min_rows`` rows).
    ``ValidationError`` for the others."""
    return aggregate(mp.measure.op).half_width(mp, level, min_rows)


__all__ = ["EPS_MAX", "EPS_MIN", "epsilon_for_accuracy", "measure_half_width",
           "validate_accuracy"]
