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

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from .engine.session import Session

__all__ = ["plot_budget", "plot_grouped", "plot_histogram"]

#: Aggregates whose provenance ``ci_half_width`` is the half-width of the released value itself
#: (for a mean it describes the noisy sum, not the ratio, so a mean needs ``ci=``).
_ADDITIVE = ("count", "sum", "histogram")


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
    """The interval half-width published for an additive-noise measure, else None."""
    if not measure or measure.get("aggregate") not in _ADDITIVE:
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


def _bin_bars(ax: Axes, index: pd.IntervalIndex, values: np.ndarray, yerr: np.ndarray | None,
              level: float | None, color: str | None) -> None:
    """Bars spanning their bins, ticks at the bin edges."""
    left = index.left.to_numpy(dtype=np.float64)
    width = index.right.to_numpy(dtype=np.float64) - left
    ax.bar(left, values, width=width, align="edge", color=color, edgecolor="white",
           linewidth=0.8, label="noisy count")
    _errorbars(ax, left + width / 2, values, yerr, level, capsize=4)
    edges = np.unique(np.concatenate([left, left + width]))
    ax.set_xticks(edges)
    ax.set_xticklabels([f"{e:g}" for e in edges])


def plot_histogram(result: pd.Series | pd.DataFrame, ax: Axes | None = None, *,
                   color: str | None = None, title: str | None = None) -> Axes:
    """Draw a histogram release as bars over its bins, with error bars.

    ``result`` is what ``priv.histogram(column, bins, epsilon=...)`` returns: a Series of noisy
    counts indexed by a ``pd.IntervalIndex``, or, with ``ci=``, a DataFrame with ``count``,
    ``lower`` and ``upper`` columns. Error bars come from ``lower`` / ``upper`` when present,
    otherwise from the ``ci_half_width`` in the release's provenance (``.attrs["dp"]``, at its
    ``ci_level``, 95% by default). Without either, bars are drawn without error bars.
    """
    values, lower, upper = _histogram_columns(result)
    measures = _measures(result)
    hw = _half_width(measures[0] if measures else None)
    level = _provenance_level(measures)
    yerr = _yerr(values, lower, upper, hw)

    ax = _axes(ax)
    index = result.index
    if isinstance(index, pd.IntervalIndex):
        _bin_bars(ax, index, values, yerr, level, color)
    else:
        pos = np.arange(values.size, dtype=np.float64)
        ax.bar(pos, values, color=color, label="noisy count")
        _errorbars(ax, pos, values, yerr, level, capsize=4)
        ax.set_xticks(pos)
        ax.set_xticklabels([str(v) for v in index])
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
                 title: str | None = None) -> Axes:
    """Draw a grouped release as one bar per group, with error bars.

    ``result`` is a grouped result: a Series (``groupby(...).count(epsilon=...)``), a DataFrame
    with ``lower`` / ``upper`` (the same with ``ci=0.95``), or an ``agg`` DataFrame, whose
    aggregate is chosen with ``column=("income", "mean")`` (default: the first). Error bars come
    from the interval columns; without them, counts and sums use the ``ci_half_width`` in
    ``.attrs["dp"]``. A mean without ``ci=``, and max / min / quantiles (which have no
    interval), are drawn without error bars.
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
    labels = _labels(result.index)
    ax.set_xticks(pos)
    ax.set_xticklabels(labels, rotation=90 if len(labels) > 12 else 0)
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
