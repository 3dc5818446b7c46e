"""dpframe.plot: histogram, grouped and budget plots (matplotlib, Agg backend)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.container import BarContainer, ErrorbarContainer  # noqa: E402

import dpframe as dpf  # noqa: E402
from dpframe.core.accounting import PrivacyCost  # noqa: E402
from dpframe.plot import plot_budget, plot_grouped, plot_histogram  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")

BINS = [0, 18, 30, 50, 70, 100]
KEYS = ["a", "b", "c"]


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")


@pytest.fixture
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 3000
    return pd.DataFrame({
        "age": rng.integers(1, 100, n),
        "income": rng.uniform(0, 1000, n),
        "group": rng.choice(KEYS, n),
    })


def _priv(frame: pd.DataFrame, session: dpf.Session) -> Any:
    return frame.dp(session, bounds={"age": (0, 100), "income": (0, 1000)},
                    keys={"group": KEYS})


def _bars(ax: Any) -> BarContainer:
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert len(bars) == 1
    return bars[0]


def _errorbar_segments(ax: Any) -> list[np.ndarray]:
    errs = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    if not errs:
        return []
    assert len(errs) == 1
    lines = errs[0].lines[2]
    assert len(lines) == 1 and isinstance(lines[0], LineCollection)
    return [np.asarray(seg) for seg in lines[0].get_segments()]


def test_histogram_with_ci_draws_bins_and_interval_bars(frame: pd.DataFrame) -> None:
    s = dpf.Session(1.0, seed=1)
    h = _priv(frame, s).histogram("age", bins=BINS, epsilon=0.5, ci=0.95)
    ax = plot_histogram(h)
    bars = _bars(ax)
    assert len(bars) == len(BINS) - 1
    for rect, left, right, count in zip(bars, BINS[:-1], BINS[1:], h["count"], strict=True):
        assert rect.get_x() == pytest.approx(left)
        assert rect.get_width() == pytest.approx(right - left)
        assert rect.get_height() == pytest.approx(count)
    segs = _errorbar_segments(ax)
    assert len(segs) == len(BINS) - 1
    for seg, lo, hi, left, right in zip(segs, h["lower"], h["upper"], BINS[:-1], BINS[1:],
                                        strict=True):
        assert seg[:, 0] == pytest.approx([(left + right) / 2] * 2)
        assert sorted(seg[:, 1]) == pytest.approx([lo, hi])
    assert "95% interval" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_histogram_without_ci_uses_the_published_half_width(frame: pd.DataFrame) -> None:
    s = dpf.Session(1.0, seed=2)
    h = _priv(frame, s).histogram("age", bins=BINS, epsilon=0.5)
    assert isinstance(h, pd.Series)
    hw = h.attrs["dp"]["measures"][0]["ci_half_width"]
    assert hw > 0
    _fig, ax = plt.subplots()
    out = plot_histogram(h, ax=ax)
    assert out is ax
    assert [r.get_height() for r in _bars(ax)] == pytest.approx(h.to_list())
    segs = _errorbar_segments(ax)
    assert len(segs) == len(BINS) - 1
    for seg, count in zip(segs, h, strict=True):
        assert sorted(seg[:, 1]) == pytest.approx([count - hw, count + hw])


def test_histogram_without_provenance_has_no_error_bars() -> None:
    idx = pd.IntervalIndex.from_breaks([0.0, 1.0, 3.0], name="x")
    ax = plot_histogram(pd.Series([5, 7], index=idx, name="count"))
    assert len(_bars(ax)) == 2
    assert _errorbar_segments(ax) == []


def test_grouped_count_with_ci(frame: pd.DataFrame) -> None:
    s = dpf.Session(1.0, seed=3)
    g = _priv(frame, s).groupby("group").count(epsilon=0.3, ci=0.9)
    ax = plot_grouped(g)
    assert [r.get_height() for r in _bars(ax)] == pytest.approx(g["count"].to_list())
    assert [t.get_text() for t in ax.get_xticklabels()] == KEYS
    segs = _errorbar_segments(ax)
    for seg, lo, hi in zip(segs, g["lower"], g["upper"], strict=True):
        assert sorted(seg[:, 1]) == pytest.approx([lo, hi])
    assert len(segs) == len(KEYS)
    assert "90% interval" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_grouped_sum_series_uses_half_width_mean_series_has_none(frame: pd.DataFrame) -> None:
    s = dpf.Session(2.0, seed=4)
    priv = _priv(frame, s)
    total = priv.groupby("group").sum("income", epsilon=0.3)
    hw = total.attrs["dp"]["measures"][0]["ci_half_width"]
    segs = _errorbar_segments(plot_grouped(total))
    assert len(segs) == len(KEYS)
    for seg, v in zip(segs, total, strict=True):
        assert sorted(seg[:, 1]) == pytest.approx([v - hw, v + hw])
    # a mean's published half-width is the noisy sum's, not the mean's: no error bars
    mean = priv.groupby("group").mean("income", epsilon=0.3)
    assert _errorbar_segments(plot_grouped(mean)) == []
    mean_ci = priv.groupby("group").mean("income", epsilon=0.3, ci=0.95)
    assert len(_errorbar_segments(plot_grouped(mean_ci))) == len(KEYS)


def test_grouped_agg_picks_a_column(frame: pd.DataFrame) -> None:
    s = dpf.Session(2.0, seed=5)
    res = _priv(frame, s).groupby("group").agg({"income": ["sum", "mean"]}, epsilon=0.4,
                                               ci=0.95)
    ax = plot_grouped(res, column=("income", "mean"))
    assert [r.get_height() for r in _bars(ax)] == pytest.approx(
        res[("income", "mean")].to_list())
    segs = _errorbar_segments(ax)
    for seg, lo, hi in zip(segs, res[("income", "mean_lower")], res[("income", "mean_upper")],
                           strict=True):
        assert sorted(seg[:, 1]) == pytest.approx([lo, hi])
    first = plot_grouped(res)  # default: the first aggregate
    assert [r.get_height() for r in _bars(first)] == pytest.approx(
        res[("income", "sum")].to_list())
    with pytest.raises(ValueError):
        plot_grouped(res, column=("income", "max"))


def test_budget_line_reaches_session_spent(frame: pd.DataFrame) -> None:
    s = dpf.Session(1.5, seed=6)
    priv = _priv(frame, s)
    priv.count(epsilon=0.1)
    priv.histogram("age", bins=BINS, epsilon=0.2)
    priv.groupby("group").sum("income", epsilon=0.3)
    priv.mean("income", epsilon=0.25)
    ax = plot_budget(s)
    step = ax.get_lines()[0]
    y = np.asarray(step.get_ydata(), dtype=float)
    assert y[0] == 0.0
    assert y[-1] == pytest.approx(s.spent[0])
    assert y[1:] == pytest.approx(np.cumsum([0.1, 0.2, 0.3, 0.25]))
    assert list(step.get_xdata()) == [0, 1, 2, 3, 4]  # releases seconds apart: by order
    budget = [ln for ln in ax.get_lines() if ln.get_label().startswith("budget")]
    assert len(budget) == 1
    assert set(np.asarray(budget[0].get_ydata(), dtype=float)) == {1.5}
    assert ax.get_ylim()[1] >= 1.5


def test_budget_on_time_axis_and_empty_session() -> None:
    s = dpf.Session(1.0, seed=7)
    ax = plot_budget(s)  # nothing spent yet: the budget line and a zero start
    assert np.asarray(ax.get_lines()[0].get_ydata(), dtype=float).tolist() == [0.0]
    pd.DataFrame({"x": [1.0, 2.0]}).dp(s, bounds={"x": (0, 5)}).sum("x", epsilon=0.5)
    ax = plot_budget(s, x="time")
    assert ax.get_xlabel() == "time (UTC)"
    assert float(ax.get_lines()[0].get_ydata()[-1]) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        plot_budget(s, x="when")  # type: ignore[arg-type]


def test_failed_releases_are_marked() -> None:
    s = dpf.Session(1.0, seed=8)
    entry = s.charge(PrivacyCost(0.2), query="q", columns=["x"],
                     mechanism="geometric")
    s.record(entry, status="failed", details={})
    ax = plot_budget(s)
    labels = [ln.get_label() for ln in ax.get_lines()]
    assert "failed (charged)" in labels


def test_import_dpframe_does_not_import_matplotlib() -> None:
    code = "import sys, dpframe, dpframe.plot; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_missing_matplotlib_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    idx = pd.IntervalIndex.from_breaks([0.0, 1.0], name="x")
    with pytest.raises(ImportError, match=r"dpframe\[plot\]"):
        plot_histogram(pd.Series([1], index=idx))


def _shown_labels(ax: Any) -> list[str]:
    return [t.get_text() for t in ax.get_xticklabels() if t.get_text()]


def test_many_bins_keep_readable_ticks(frame: pd.DataFrame) -> None:
    s = dpf.Session(100, seed=1)
    hist = _priv(frame, s).histogram("age", 50, epsilon=1.0)
    ax = plot_histogram(hist)
    shown = _shown_labels(ax)
    assert 10 <= len(shown) <= 16  # 51 edges, thinned
    assert shown[0] == "-0.001" and shown[-1] == "100"  # pd.cut lowers the lowest edge
    # without thinning every edge would be labelled
    assert len(ax.get_xticks()) == 51


def test_open_bins_are_drawn_finite(frame: pd.DataFrame) -> None:
    s = dpf.Session(100, seed=1)
    hist = _priv(frame, s).histogram("age", [-np.inf, 30, 60, np.inf], epsilon=1.0)
    ax = plot_histogram(hist)
    widths = [p.get_width() for p in _bars(ax).patches]
    assert widths == [30.0, 30.0, 30.0]
    assert _shown_labels(ax) == ["-inf", "30", "60", "inf"]


def test_two_key_groups_turn_their_labels(frame: pd.DataFrame) -> None:
    s = dpf.Session(100, seed=1)
    frame = frame.assign(kind=np.where(frame.age > 50, "senior", "junior"))
    out = frame.dp(s, keys={"group": KEYS, "kind": ["junior", "senior"]}).groupby(
        ["group", "kind"]).count(epsilon=1.0)
    ax = plot_grouped(out)
    labels = ax.get_xticklabels()
    assert [t.get_text() for t in labels][:2] == ["a, junior", "a, senior"]
    assert all(t.get_rotation() == 90 for t in labels)
    short = plot_grouped(_priv(frame, s).groupby("group").count(epsilon=1.0))
    assert all(t.get_rotation() == 0 for t in short.get_xticklabels())


def test_reference_overlays_known_values(frame: pd.DataFrame) -> None:
    s = dpf.Session(100, seed=1)
    out = _priv(frame, s).groupby("group").count(epsilon=1.0)
    truth = frame.groupby("group").size()
    ax = plot_grouped(out, reference=truth.iloc[::-1])  # aligned by label, not position
    marks = [c for c in ax.collections if c.get_label() == "reference"]
    assert len(marks) == 1
    assert marks[0].get_offsets()[:, 1].tolist() == truth.loc[KEYS].tolist()

    hist = _priv(frame, s).histogram("age", BINS, epsilon=1.0)
    known = pd.cut(frame.age, BINS).value_counts(sort=False)
    ax = plot_histogram(hist, reference=known, reference_label="census")
    marks = [c for c in ax.collections if c.get_label() == "census"]
    offsets = marks[0].get_offsets()
    assert offsets[:, 1].tolist() == known.tolist()
    assert offsets[:, 0].tolist() == [9.0, 24.0, 40.0, 60.0, 85.0]  # the bins' centres
    with pytest.raises(ValueError, match="one value per bar"):
        plot_grouped(out, reference=[1, 2])
