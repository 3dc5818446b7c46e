"""The parameter, return and error texts every query method shares, written once and appended
to each method's docstring by :func:`documented` (so the API reference cannot drift)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])


#: The parameters every query method shares, documented once (appended by :func:`documented`).
COMMON_PARAMS = {
    "column": "the column to aggregate (its bounds must be declared, except for counts)",
    "epsilon": "the privacy budget this release spends; charged to the session before "
               "anything is computed (``BudgetExceededError`` and nothing spent if it does not "
               "fit)",
    "accuracy": "instead of ``epsilon``: the target half-width of the ``ci`` interval (95% "
                "by default) in the result's units; the smallest epsilon meeting it is charged",
    "delta": "the delta this release spends: needed by ``mechanism='gaussian'`` and by "
             "``keys='private'`` (0 otherwise)",
    "mechanism": "``'laplace'`` (default; geometric for integer results) or ``'gaussian'`` "
                 "(discrete Gaussian, needs ``delta > 0``)",
    "ci": "a level in (0, 1), e.g. 0.95: adds the interval (``.lower`` / ``.upper`` on a "
          "number, ``lower`` / ``upper`` columns on a grouped result); free (post-processing). "
          "It covers the value clamped to the bounds, not the raw one",
    "diagnostics": "an epsilon spent on top: noisy counts of the rows clamping and "
                   "contribution bounding changed, ``.attrs['dp']['diagnostics']`` = "
                   "``{'rows_clamped': DPInt, 'rows_dropped': DPInt}`` (each unit's dropped rows "
                   "counted up to min(T, k R))",
    "ddof": "0 (population) or 1 (sample, pandas' default)",
    "min_rows": "with ``accuracy``: a lower bound you know on the number of rows a mean is "
                "over (the number itself is private)",
    "resolution": "the number of candidates of the exponential mechanism, evenly spaced "
                  "over the column's bounds",
    "selection_share": "with ``keys='private'``: the share of epsilon spent on a separate key "
                       "selection (default 0.5); unused where the released count of units is "
                       "itself thresholded (one count, the whole budget)",
    "dry_run": "plan only: return the mechanisms, noise scales, intervals and cost as a dict; "
               "nothing is computed or charged",
    "bins": "the histogram's edges (at least 2, increasing): public, declared like keys",
    "right": "bins closed on the right, ``(a, b]`` (default), or on the left, ``[a, b)``, as "
             "``pd.cut``",
    "include_lowest": "with ``right``: the first bin also holds its left edge, as ``pd.cut``",
    "q": "the quantile's level in [0, 1] (a fraction with denominator up to 1000)",
    "quantiles": "the (lower, upper) levels to estimate, default (0.01, 0.99)",
    "max_abs": "the largest magnitude among the candidates (default 1e12)",
    "spec": "``{column: aggregate or [aggregates]}``; or use named aggregation instead",
    "weights": "how epsilon is split between the aggregates: a list, or a mapping keyed "
               "``'column.aggregate'`` or by output name (equal by default)",
    "named": "named aggregation, ``name=(column, aggregate)``, as in pandas",
}
RETURNS_COUNT = (
    "an int (``DPInt``) with ``.attrs['dp']`` (and ``.lower`` / ``.upper`` with ``ci``), or "
    'the plan with ``dry_run``'
)
RETURNS_SUM = (
    'a number (``DPInt`` for integer columns, else ``DPFloat``) with its provenance and '
    'interval, or the plan'
)
RETURNS_FLOAT = (
    'a ``DPFloat`` with its provenance (and interval with ``ci``), or the plan'
)
RETURNS_BOUNDS = (
    "``(lo, hi)``, two ``DPFloat`` with the release's provenance, or the plan"
)
RETURNS_HIST = (
    "a ``pd.Series`` of counts indexed by the bins' intervals (a ``DataFrame`` with ``lower``"
    " / ``upper`` with ``ci``), ``.attrs['dp']`` holding the provenance; or the plan"
)
RETURNS_SERIES = (
    'a ``pd.Series``, one row per key (a ``DataFrame`` with ``lower`` / ``upper`` with '
    "``ci``), ``.attrs['dp']`` holding the provenance; or the plan"
)
RETURNS_AGG = (
    'a ``pd.DataFrame``, one row per key, (column, aggregate) columns or the names of a named'
    " aggregation, with ``.attrs['dp']``; or the plan"
)
RAISES = (
    ":raises BoundsError: a column has no declared bounds (nothing spent)\n"
    ":raises ValidationError: any invalid argument, checked before the charge (nothing spent)\n"
    ":raises BudgetExceededError: the release does not fit the remaining budget (nothing "
    "spent)"
)


def documented(returns: str) -> Callable[[_F], _F]:
    """Append the shared ``:param:`` lines of the parameters ``fn`` takes, ``:returns:`` and
    ``:raises:`` to its docstring (one text for every query method, so none drifts)."""

    def deco(fn: _F) -> _F:
        params = inspect.signature(fn).parameters
        fields = [f":param {name}: {text}" for name, text in COMMON_PARAMS.items()
                  if name in params and f":param {name}:" not in (fn.__doc__ or "")]
        block = "\n".join([*fields, f":returns: {returns}", RAISES])
        doc = inspect.cleandoc(fn.__doc__ or "")
        fn.__doc__ = doc + "\n\n" + block
        return fn

    return deco
