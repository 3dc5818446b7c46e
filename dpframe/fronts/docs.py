"""The options every release takes (:class:`ReleaseOptions`, documented once), the texts the
query methods share, and :func:`releases`, which gives each method its options: a signature
(``help()``, IDEs, the API reference), their documentation, a typed refusal of a misspelled
one before any charge, and the deprecated ``dry_run=``."""

from __future__ import annotations

import functools
import inspect
import re
import warnings
from collections.abc import Callable
from typing import Any, TypedDict, TypeVar

from ..errors import ValidationError
from .arguments import option_error

_F = TypeVar("_F", bound=Callable[..., Any])


class ReleaseOptions(TypedDict, total=False):
    """The options of a release, as keywords of every query method
    (``priv.mean("x", epsilon=0.5, ci=0.95)``) and of ``priv.explain(...)`` /
    ``priv.query(...)``. A method takes those that apply to it (its signature lists them);
    any other name is refused with an :class:`~dpframe.errors.OptionError` (a
    ``ValidationError``) naming the closest option, before anything is charged.

    :ivar epsilon: the privacy budget this release spends; charged to the session before
        anything is computed (``BudgetExceededError`` and nothing spent if it does not fit)
    :ivar accuracy: instead of ``epsilon``: the target half-width of the ``ci`` interval
        (95% by default) in the result's units; the smallest epsilon meeting it is charged
    :ivar delta: the delta this release spends: needed by ``mechanism='gaussian'`` and by
        ``keys='private'`` (0 otherwise)
    :ivar mechanism: ``'laplace'`` (default; geometric for integer results) or
        ``'gaussian'`` (discrete Gaussian, needs ``delta > 0``)
    :ivar ci: a level in (0, 1), e.g. 0.95: adds the interval (``.lower`` / ``.upper`` on a
        number, ``lower`` / ``upper`` columns on a grouped result); free (post-processing). It
        covers the value clamped to the bounds, not the raw one
    :ivar diagnostics: an epsilon spent on top: noisy counts of the rows clamping and
        contribution bounding changed, ``.attrs['dp']['diagnostics']`` =
        ``{'rows_clamped': DPInt, 'rows_dropped': DPInt}`` (each unit's dropped rows counted
        up to min(T, k R))
    :ivar selection_share: with ``keys='private'``: the share of epsilon spent on a separate
        key selection (default 0.5); unused where the released count of units is itself
        thresholded (one count, the whole budget)
    :ivar min_rows: with ``accuracy``: a lower bound you know on the number of rows a mean
        is over (the number itself is private)
    :ivar postprocess: the form of released counts: ``"nonnegative"`` (default), the closest
        non-negative integers summing to the noisy total (post-processing; biased toward 0
        near 0), or None, the raw unbiased counts (docs/privacy.md#non-negative-counts)
    :ivar dry_run: deprecated, use ``priv.explain(...)``: ``True`` returns the plan
        (mechanisms, noise scales, intervals and cost) as a dict; nothing is computed or
        charged
    """

    epsilon: float | None
    accuracy: float | None
    delta: float
    mechanism: str | None
    ci: float | None
    diagnostics: float | None
    selection_share: float | None
    min_rows: int | None
    postprocess: str | None
    dry_run: bool


#: Each option's default when a call leaves it out.
DEFAULTS: dict[str, object] = {
    "epsilon": None, "accuracy": None, "delta": 0.0, "mechanism": None, "ci": None,
    "diagnostics": None, "selection_share": None, "min_rows": None,
    "postprocess": "nonnegative", "dry_run": False,
}
#: The options of an ungrouped aggregate (a group-by's add ``selection_share``).
BASIC = ("epsilon", "accuracy", "delta", "mechanism", "ci", "diagnostics")


def _option_texts() -> dict[str, str]:
    """``{option: text}`` read from :class:`ReleaseOptions`' docstring, where each is
    documented once."""
    doc = inspect.cleandoc(ReleaseOptions.__doc__ or "")
    found = re.findall(r"^:ivar (\w+): (.*?)(?=^:ivar |\Z)", doc, re.M | re.S)
    return {name: " ".join(text.split()) for name, text in found}


#: The options' texts (from :class:`ReleaseOptions`), then the arguments of particular
#: aggregates; :func:`releases` appends those a method takes to its docstring.
COMMON_PARAMS = {
    "column": "the column to aggregate (its bounds must be declared, except for counts)",
    **_option_texts(),
    "ddof": "0 (population) or 1 (sample, pandas' default)",
    "resolution": "the number of candidates of the exponential mechanism, evenly spaced "
                  "over the column's bounds",
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
RETURNS_COUNT = "an int (``DPInt``) with ``.attrs['dp']`` (and ``.lower`` / ``.upper`` with ``ci``)"
RETURNS_SUM = (
    'a number (``DPInt`` for integer columns, else ``DPFloat``) with its provenance and '
    'interval'
)
RETURNS_FLOAT = "a ``DPFloat`` with its provenance (and interval with ``ci``)"
RETURNS_BOUNDS = "``(lo, hi)``, two ``DPFloat`` with the release's provenance"
RETURNS_HIST = (
    "a ``pd.Series`` of counts indexed by the bins' intervals (a ``DataFrame`` with ``lower``"
    " / ``upper`` with ``ci``), ``.attrs['dp']`` holding the provenance"
)
RETURNS_SERIES = (
    'a ``pd.Series``, one row per key (a ``DataFrame`` with ``lower`` / ``upper`` with '
    "``ci``), ``.attrs['dp']`` holding the provenance"
)
RETURNS_AGG = (
    'a ``pd.DataFrame``, one row per key, (column, aggregate) columns or the names of a named'
    " aggregation, with ``.attrs['dp']``"
)
RETURNS_TABLE = "a ``pd.DataFrame``, one column per column, one row per statistic"
RAISES = (
    ":raises BoundsError: a column has no declared bounds (nothing spent)\n"
    ":raises ValidationError: any invalid argument or option, checked before the charge "
    "(nothing spent)\n"
    ":raises BudgetExceededError: the release does not fit the remaining budget (nothing "
    "spent)"
)
_KW = inspect.Parameter.KEYWORD_ONLY


def _signature(fn: Callable[..., Any], options: tuple[str, ...]) -> inspect.Signature:
    """``fn``'s signature with ``**options`` replaced by the ``options`` it takes, keyword
    only, with their defaults and types (what ``help()`` and the option check see)."""
    sig = inspect.signature(fn)
    own = [p for p in sig.parameters.values() if p.name != "options"]
    hints = {n: getattr(t, "__forward_arg__", t) for n, t in
             ReleaseOptions.__annotations__.items()}
    added = [inspect.Parameter(n, _KW, default=DEFAULTS[n], annotation=hints[n])
             for n in (*options, "dry_run") if n not in sig.parameters]
    variadic = [p for p in own if p.kind is inspect.Parameter.VAR_KEYWORD]
    fixed = [p for p in own if p.kind is not inspect.Parameter.VAR_KEYWORD]
    return sig.replace(parameters=[*fixed, *added, *variadic])


def releases(returns: str, *options: str) -> Callable[[_F], _F]:
    """A query method taking ``**options: Unpack[ReleaseOptions]``: it takes ``options`` (and
    the deprecated ``dry_run``), any other keyword is refused with an OptionError naming the
    closest one before anything runs (argument names are public), and its docstring gets the
    ``:param:`` lines of every argument it takes, ``:returns:`` and ``:raises:`` (one text for
    every method, so none drifts). ``dry_run=True`` warns and returns
    ``self.explain``'s plan (the holder's ``_preview``)."""

    def deco(fn: _F) -> _F:
        sig = _signature(fn, options)
        name = f"{fn.__name__}()"

        @functools.wraps(fn)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            error = option_error(sig, name, (self, *args), kwargs)
            if error is not None:
                raise error
            dry = kwargs.pop("dry_run", False)
            if dry is not True and dry is not False:
                raise ValidationError("dry_run must be True or False")
            if dry:
                warnings.warn(f"{name[:-2]}(dry_run=True) is deprecated and will be removed "
                              f"in the next release: use priv.explain({fn.__name__!r}, ...), "
                              "which returns the same plan", DeprecationWarning, stacklevel=2)
                return self._preview("explain", lambda t: fn(t, *args, **kwargs))
            return fn(self, *args, **kwargs)

        call.__signature__ = sig  # type: ignore[attr-defined]
        params = sig.parameters
        doc = inspect.cleandoc(fn.__doc__ or "")
        fields = [f":param {n}: {text}" for n, text in COMMON_PARAMS.items()
                  if n in params and f":param {n}:" not in doc]
        call.__doc__ = doc + "\n\n" + "\n".join([*fields, f":returns: {returns}", RAISES])
        return call  # type: ignore[return-value]

    return deco
