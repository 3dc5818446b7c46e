"""Plots of releases and budgets (optional: ``pip install "dpframe[plot]"``).

Everything here is post-processing of released values and public provenance: plotting reads
only what a release already published (noisy values, interval bounds, ``.attrs["dp"]``) or the
ledger, so it costs no privacy budget.

* :func:`plot_histogram`: a histogram release as bars over its bins, with error bars.
* :func:`plot_grouped`: a grouped release (count, sum, mean, ...) as bars with error bars.
* :func:`plot_budget`: cumulative epsilon spent by a session, against its total budget.

matplotlib is imported when one of these functions is called, never by ``import dpframe``.
Each function draws on ``ax`` (a new figure when omitted) and returns the axes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from .core.aggregates import released_as

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from .engine.session import Session

__all__ = ["plot_budget", "plot_grouped", "plot_histogram"]

def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "dpframe.plot needs matplotlib: pip install \"dpframe[plot]\"") from exc
    return plt


def _axes(ax: Axes | None) -> Axes:
    if ax is not None:
        return ax
    _, new = _pyplot().subplots()
    return new


def _provenance(result: Any) -> dict[str, Any]:
    attrs = getattr(result, "attrs", None)
    dp = attrs.get("dp") if isinstance(attrs, Mapping) else None
    return dict(dp) if isinstance(dp, Mapping) else {}


def _measures(result: Any) -> list[dict[str, Any]]:
    ms = _provenance(result).get("measures")
    return [dict(m) for m in ms if isinstance(m, Mapping)] if isinstance(ms, list) else []


def _half_width(measure: dict[str, Any] | None) -> float | None:
    """The interval half-width published for an additive-noise measure (its aggregate's
    ``additive``: for a mean it describes the noisy sum, not the ratio, so a mean needs
    ``ci=``), else None."""
    agg = released_as(measure.get("aggregate")) if measure else None
    if measure is None or agg is None or not agg.additive:
        return None
    hw = measure.get("ci_half_width")
    if hw is None or not np.isfinite(float(hw)):
        return None
    return float(hw)


def _epsilon_text(result: Any) -> str:
    prov = _provenance(result)
    eps = prov.get("epsilon")
    if eps is None:
        return ""
    text = f"ε = {float(eps):g}"
    delta = prov.get("delta")
    if delta:
        text += f", δ = {float(delta):g}"
    return text


def _level_label(level: float | None) -> str:
    return f"{level:.0%} interval" if level is not None else "interval"


def _yerr(values: np.ndarray, lower: np.ndarray | None, upper: np.ndarray | None,
          hw: float | None) -> np.ndarray | None:
    if lower is not None and upper is not None:
        lo = np.clip(values - lower, 0.0, None)
        hi = np.clip(upper - values, 0.0, None)
        if np.all(np.isnan(lo)) and np.all(np.isnan(hi)):
            return None
        return np.vstack([np.nan_to_num(lo), np.nan_to_num(hi)])
    if hw is not None:
        return np.full((2, values.size), hw)
    return None


def _interval(df: pd.DataFrame, lo_key: Any, up_key: Any
              ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The interval columns ``lo_key`` and ``up_key`` when the frame has both."""
    if lo_key in df.columns and up_key in df.columns:
        return df[lo_key].to_numpy(np.float64), df[up_key].to_numpy(np.float64)
    return None, None


def _errorbars(ax: Axes, x: np.ndarray, values: np.ndarray, yerr: np.ndarray | None,
               level: float | None, capsize: int) -> None:
    if yerr is not None:
        ax.errorbar(x, values, yerr=yerr, fmt="none", ecolor="black", capsize=capsize,
                    linewidth=1.2, label=_level_label(level))


def _with_epsilon(head: str, result: Any) -> str:
    """A default title: ``head`` and the release's privacy parameters."""
    eps = _epsilon_text(result)
    return head + (f" ({eps})" if eps else "")


def _histogram_columns(result: Any
                       ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Counts and, when the release has them, interval bounds."""
    if isinstance(result, pd.DataFrame):
        if "count" not in result.columns:
            raise ValueError("a histogram DataFrame needs a 'count' column")
        return (result["count"].to_numpy(dtype=np.float64),
                *_interval(result, "lower", "upper"))
    if isinstance(result, pd.Series):
        return result.to_numpy(dtype=np.float64), None, None
    raise TypeError("plot_histogram takes the Series or DataFrame of a histogram release")


#: Most tick labels an axis shows: more are thinned to every k-th, so that they stay readable.
MAX_TICK_LABELS = 15


def _thinned(labels: list[str], limit: int = MAX_TICK_LABELS) -> list[str]:
    """Every k-th label kept (the first and last always), the others blank: at most about
    ``limit`` labels shown."""
    step = -(-len(labels) // limit) if len(labels) > limit else 1
    last = len(labels) - 1
    return [lab if i % step == 0 or i == last else "" for i, lab in enumerate(labels)]


def _set_ticks(ax: Axes, positions: np.ndarray, labels: list[str]) -> None:
    """Tick labels that stay readable: thinned past MAX_TICK_LABELS, turned when long."""
    shown = _thinned(labels)
    longest = max((len(lab) for lab in shown), default=0)
    ax.set_xticks(positions)
    ax.set_xticklabels(shown, rotation=90 if longest * sum(map(bool, shown)) > 45 else 0)


def _open_bins(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bins whose outer edge is infinite drawn as wide as the median finite bin (they are
    labelled by their finite edge and an arrow-like -inf / inf tick)."""
    finite = np.isfinite(left) & np.isfinite(right)
    width = float(np.median(right[finite] - left[finite])) if finite.any() else 1.0
    left, right = left.copy(), right.copy()
    if left.size and not np.isfinite(left[0]):
        left[0] = right[0] - width
    if right.size and not np.isfinite(right[-1]):
        right[-1] = left[-1] + width
    return left, right


def _bin_bars(ax: Axes, index: pd.IntervalIndex, values: np.ndarray, yerr: np.ndarray | None,
              level: float | None, color: str | None) -> np.ndarray:
    """Bars spanning their bins, ticks at the bin edges; returns the bins' centres."""
    raw_left = index.left.to_numpy(dtype=np.float64)
    raw_right = index.right.to_numpy(dtype=np.float64)
    left, right = _open_bins(raw_left, raw_right)
    width = right - left
    ax.bar(left, values, width=width, align="edge", color=color, edgecolor="white",
           linewidth=0.8, label="noisy count")
    _errorbars(ax, left + width / 2, values, yerr, level, capsize=4)
    edges, where = np.unique(np.concatenate([left, right]), return_index=True)
    raw = np.concatenate([raw_left, raw_right])[where]
    _set_ticks(ax, edges, [f"{e:g}" for e in raw])
    return left + width / 2


def _reference(reference: Any, index: pd.Index, n: int) -> np.ndarray:
    """Known values to overlay, one per bar: a Series aligned on the result's index (by label;
    by position when its labels differ but its length matches), a mapping by label, or a
    sequence of ``n`` values. Missing labels are not drawn (NaN)."""
    if isinstance(reference, pd.Series):
        if reference.index.equals(index) or len(reference.index.intersection(index)):
            return reference.reindex(index).to_numpy(dtype=np.float64)
        reference = reference.to_numpy()
    if isinstance(reference, Mapping):
        return np.array([reference.get(k, np.nan) for k in index], dtype=np.float64)
    values = np.asarray(reference, dtype=np.float64).reshape(-1)
    if values.size != n:
        raise ValueError(f"reference has {values.size} values for {n} bars: pass a Series "
                         "or mapping by label, or one value per bar")
    return values


def _overlay(ax: Axes, x: np.ndarray, reference: Any, index: pd.Index, label: str) -> None:
    """Known values (validation data) as markers over the bars."""
    ref = _reference(reference, index, x.size)
    ax.scatter(x, ref, marker="D", s=28, color="crimson", zorder=3, label=label)


def plot_histogram(result: pd.Series | pd.DataFrame, ax: Axes | None = None, *,
                   color: str | None = None, title: str | None = None,
                   reference: Any = None, reference_label: str = "reference") -> Axes:
    """Draw a histogram release as bars over its bins, with error bars.

    ``result`` is what ``priv.histogram(column, bins, epsilon=...)`` returns: a Series of noisy
    counts indexed by a ``pd.IntervalIndex``, or, with ``ci=``, a DataFrame with ``count``,
    ``lower`` and ``upper`` columns. Error bars come from ``lower`` / ``upper`` when present,
    otherwise from the ``ci_half_width`` in the release's provenance (``.attrs["dp"]``, at its
    ``ci_level``, 95% by default). Without either, bars are drawn without error bars.
    Open outer bins (-inf, inf edges) are drawn as wide as the median bin; tick labels are
    thinned past 15 edges. ``reference=`` overlays known values (validation data, e.g.
    ``pd.cut(df.x, bins).value_counts(sort=False)``) as markers.
    """
    values, lower, upper = _histogram_columns(result)
    measures = _measures(result)
    hw = _half_width(measures[0] if measures else None)
    level = _provenance_level(measures)
    yerr = _yerr(values, lower, upper, hw)

    ax = _axes(ax)
    index = result.index
    if isinstance(index, pd.IntervalIndex):
        centres = _bin_bars(ax, index, values, yerr, level, color)
    else:
        centres = np.arange(values.size, dtype=np.float64)
        ax.bar(centres, values, color=color, label="noisy count")
        _errorbars(ax, centres, values, yerr, level, capsize=4)
        _set_ticks(ax, centres, _labels(index))
    if reference is not None:
        _overlay(ax, centres, reference, index, reference_label)
    ax.set_xlabel(str(index.name) if index.name is not None else "")
    ax.set_ylabel("count (noisy)")
    ax.set_title(title if title is not None else _with_epsilon(
        "DP histogram" + (f" of {index.name}" if index.name is not None else ""), result))
    _finish(ax, values, yerr)
    return ax


def _measure_name(measure: dict[str, Any] | None, fallback: Any) -> str:
    """``mean(income)``, ``count``, ... from provenance; else the pandas name."""
    if measure and measure.get("aggregate"):
        agg = str(measure["aggregate"])
        return f"{agg}({measure['column']})" if measure.get("column") else agg
    return str(fallback) if fallback is not None else "value"


def _provenance_level(measures: list[dict[str, Any]]) -> float | None:
    for m in measures:
        if m.get("ci_level") is not None:
            return float(m["ci_level"])
    return None


def _finish(ax: Axes, values: np.ndarray, yerr: np.ndarray | None) -> None:
    """Headroom above the tallest bar for a legend that covers nothing."""
    top = values + (yerr[1] if yerr is not None else 0.0)
    finite = top[np.isfinite(top)]
    if finite.size and finite.max() > 0:
        lo, _ = ax.get_ylim()
        ax.set_ylim(min(lo, 0.0), float(finite.max()) * 1.2)
    ax.legend(loc="upper right", ncol=2, frameon=False)


def _labels(index: pd.Index) -> list[str]:
    if isinstance(index, pd.MultiIndex):
        return [", ".join(str(v) for v in key) for key in index]
    return [str(v) for v in index]


@dataclass
class _Selection:
    """The values a grouped plot draws, their interval, measure and name."""

    values: np.ndarray
    lower: np.ndarray | None
    upper: np.ndarray | None
    measure: dict[str, Any] | None
    name: str


def _agg_selection(result: pd.DataFrame, column: Any,
                   measures: list[dict[str, Any]]) -> _Selection:
    """One ``(column, aggregate)`` of an ``agg`` result (default: the first)."""
    plain = [c for c in result.columns if not str(c[-1]).endswith(("_lower", "_upper"))]
    if not plain:
        raise ValueError("no aggregate column to plot")
    col = tuple(column) if column is not None else plain[0]
    if col not in result.columns:
        raise ValueError("column must be one of the result's (column, aggregate) pairs")
    src, op = str(col[0]), str(col[-1])
    measure = next((m for m in measures if m.get("column") == src
                    and m.get("aggregate") == op), None)
    return _Selection(result[col].to_numpy(dtype=np.float64),
                      *_interval(result, (src, f"{op}_lower"), (src, f"{op}_upper")),
                      measure, f"{op}({src})")


def _frame_selection(result: pd.DataFrame, column: Any,
                     measure: dict[str, Any] | None) -> _Selection:
    """The value column of a one-aggregate result (with ``lower`` / ``upper``)."""
    rest = [c for c in result.columns if c not in ("lower", "upper")]
    if column is None:
        if len(rest) != 1:
            raise ValueError("pass column= to choose the value column")
        column = rest[0]
    if column not in result.columns:
        raise ValueError("column is not in the result")
    return _Selection(result[column].to_numpy(dtype=np.float64),
                      *_interval(result, "lower", "upper"), measure,
                      _measure_name(measure, column))


def _grouped_selection(result: Any, column: Any, measures: list[dict[str, Any]]) -> _Selection:
    first = measures[0] if measures else None
    if isinstance(result, pd.Series):
        return _Selection(result.to_numpy(dtype=np.float64), None, None, first,
                          _measure_name(first, result.name))
    if isinstance(result, pd.DataFrame) and isinstance(result.columns, pd.MultiIndex):
        return _agg_selection(result, column, measures)
    if isinstance(result, pd.DataFrame):
        return _frame_selection(result, column, first)
    raise TypeError("plot_grouped takes the Series or DataFrame of a grouped release")


def plot_grouped(result: pd.Series | pd.DataFrame, ax: Axes | None = None, *,
                 column: Any = None, color: str | None = None,
                 title: str | None = None, reference: Any = None,
                 reference_label: str = "reference") -> Axes:
    """Draw a grouped release as one bar per group, with error bars.

    ``result`` is a grouped result: a Series (``groupby(...).count(epsilon=...)``), a DataFrame
    with ``lower`` / ``upper`` (the same with ``ci=0.95``), or an ``agg`` DataFrame, whose
    aggregate is chosen with ``column=("income", "mean")`` (default: the first). Error bars come
    from the interval columns; without them, counts and sums use the ``ci_half_width`` in
    ``.attrs["dp"]``. A mean, max, min or quantile without ``ci=`` (no interval then) is
    drawn without error bars. Tick labels stay readable: two-key groups read
    ``"a, u"``, long or many labels turn, and past 15 bars only every k-th is labelled.
    ``reference=`` overlays known values (a Series or mapping by group label, or one value
    per bar) as markers, to validate a release against data you may look at.
    """
    measures = _measures(result)
    sel = _grouped_selection(result, column, measures)
    hw = _half_width(sel.measure)
    level = _provenance_level([sel.measure] if sel.measure else measures)
    yerr = _yerr(sel.values, sel.lower, sel.upper, hw)

    ax = _axes(ax)
    pos = np.arange(sel.values.size, dtype=np.float64)
    ax.bar(pos, sel.values, color=color, label=f"noisy {sel.name}")
    _errorbars(ax, pos, sel.values, yerr, level, capsize=3)
    _set_ticks(ax, pos, _labels(result.index))
    if reference is not None:
        _overlay(ax, pos, reference, result.index, reference_label)
    names = [str(n) for n in result.index.names if n is not None]
    ax.set_xlabel(", ".join(names))
    ax.set_ylabel(sel.name)
    ax.set_title(title if title is not None else _with_epsilon(
        f"DP {sel.name}" + (f" by {', '.join(names)}" if names else ""), result))
    _finish(ax, sel.values, yerr)
    return ax


def _use_time(x: str, times: pd.DatetimeIndex) -> bool:
    """Whether releases go at their ledger time (``x="auto"``: when they span an hour)."""
    if x not in ("auto", "time", "release"):
        raise ValueError("x must be 'auto', 'time' or 'release'")
    return x == "time" or (
        x == "auto" and len(times) > 1 and (times.max() - times.min()) >= pd.Timedelta(hours=1))


def _release_positions(ax: Axes, times: pd.DatetimeIndex, releases: int, use_time: bool) -> Any:
    """x positions of the start and of each release (times, or 0, 1, 2, ...); labels the axis."""
    if use_time and len(times):
        pts = times.tz_convert(None).to_pydatetime() if times.tz is not None else \
            times.to_pydatetime()
        ax.set_xlabel("time (UTC)")
        ax.tick_params(axis="x", labelrotation=30)
        return [pts[0], *pts]
    xs = np.arange(releases + 1)
    ax.set_xlabel("release")
    if releases <= 30:
        ax.set_xticks(xs)
    return xs


def _mark_releases(ax: Axes, ledger: pd.DataFrame, xs: Any, spent: np.ndarray, use_time: bool,
                   annotate: bool) -> None:
    """A dot per release, a cross per failed (charged) one, and the queries if asked."""
    failed = ledger["status"].to_numpy() == "failed"
    pts_x = np.asarray(xs[1:], dtype=object) if use_time else np.asarray(xs[1:])
    ax.plot(pts_x[~failed], spent[~failed], "o", color="C0", markersize=4)
    if failed.any():
        ax.plot(pts_x[failed], spent[failed], "x", color="C3", markersize=7,
                label="failed (charged)")
    if annotate:
        for xv, yv, q in zip(pts_x, spent, ledger["query"], strict=True):
            ax.annotate(str(q), (xv, yv), textcoords="offset points", xytext=(4, -10),
                        fontsize=7, rotation=0)


def plot_budget(session: Session, ax: Axes | None = None, *,
                x: Literal["auto", "time", "release"] = "auto",
                annotate: bool = False, title: str | None = None) -> Axes:
    """Draw the epsilon a session has spent, release after release, against its budget.

    Reads ``session.ledger`` (columns ``time``, ``spent_epsilon``, ``status``, ``query``): a
    step line of cumulative spent epsilon (every charge counts, failed releases too, marked
    with a cross) and a horizontal line at the total budget ``session.epsilon``. ``x="time"``
    puts releases at their ledger time, ``x="release"`` at their order (1, 2, ...);
    ``"auto"`` uses time when the releases span at least an hour (a nightly job), order
    otherwise (a notebook). ``annotate=True`` labels each step with its query.
    """
    ledger = session.ledger
    ax = _axes(ax)
    spent = ledger["spent_epsilon"].to_numpy(dtype=np.float64)
    times = pd.DatetimeIndex(ledger["time"])
    use_time = _use_time(x, times)
    ys = np.concatenate([[0.0], spent])
    xs = _release_positions(ax, times, len(spent), use_time)
    ax.step(xs, ys, where="post", linewidth=2, label="spent ε")
    if len(spent):
        _mark_releases(ax, ledger, xs, spent, use_time, annotate)
    total = session.epsilon
    ax.axhline(total, color="C3", linestyle="--", linewidth=1.5, label=f"budget ε = {total:g}")
    ax.set_ylim(0, max(total, float(ys.max())) * 1.08)
    ax.set_ylabel("cumulative ε")
    spent_eps, spent_delta = session.spent
    subtitle = f"spent ε = {spent_eps:g}" + (f", δ = {spent_delta:g}" if spent_delta else "")
    ax.set_title(title if title is not None else f"Privacy budget ({subtitle})")
    ax.legend(loc="lower right", frameon=False)
    return ax
