"""Accuracy-first queries: ``accuracy=`` instead of ``epsilon=`` charges the smallest epsilon
(three significant digits) whose interval meets the target half-width, chosen from the
arguments and the public schema only; refused with a typed error before any charge where the
error depends on the data."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core.aggregates import NAMES

from ._support import session

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")


@pytest.fixture
def df() -> pd.DataFrame:
    rng = np.random.default_rng(2)
    return pd.DataFrame({"g": rng.choice(["a", "b"], 4000), "x": rng.uniform(0, 100, 4000),
                         "n": rng.integers(0, 50, 4000)})


def _priv(frame: pd.DataFrame, s: dpf.Session, **kw) -> object:
    return frame.dp(s, bounds={"x": (0, 100), "n": (0, 50)}, keys={"g": ["a", "b"]}, **kw)


def _one_step_less(eps: float) -> float:
    """``eps`` less one unit of its third significant digit."""
    return eps - 10.0 ** (math.floor(math.log10(eps)) - 2)


CALLS = {
    "count": (lambda p, **kw: p.count(**kw), 20.0),
    "sum": (lambda p, **kw: p.sum("x", **kw), 2000.0),
    "int sum": (lambda p, **kw: p.sum("n", **kw), 300.0),
    "histogram": (lambda p, **kw: p.histogram("x", [0, 50, 100], **kw), 15.0),
    "groupby count": (lambda p, **kw: p.groupby("g").count(**kw), 20.0),
    "groupby sum": (lambda p, **kw: p.groupby("g").sum("x", **kw), 2000.0),
    "private keys": (lambda p, **kw: p.groupby("g", keys="private").count(delta=1e-6, **kw),
                     20.0),
}


@pytest.mark.parametrize("name", list(CALLS))
@pytest.mark.parametrize("mech", [{}, {"mechanism": "gaussian", "delta": 1e-6}])
@pytest.mark.parametrize("ci", [None, 0.9])
def test_the_smallest_epsilon_that_meets_the_target(df: pd.DataFrame, name: str, mech: dict,
                                                    ci: float | None) -> None:
    call, target = CALLS[name]
    if name == "private keys" and mech:
        mech = {"mechanism": "gaussian"}
    plan = call(_priv(df, session()), accuracy=target, ci=ci, dry_run=True, **mech)
    eps = plan["epsilon"]
    assert plan["measures"][0]["ci_half_width"] <= target
    if ci is not None:
        assert plan["measures"][0]["ci_level"] == ci
    # minimal at three significant digits: one step less misses the target
    less = call(_priv(df, session()), epsilon=_one_step_less(eps), ci=ci, dry_run=True, **mech)
    assert less["measures"][0]["ci_half_width"] > target
    # the release charges exactly that epsilon
    s = session()
    call(_priv(df, s), accuracy=target, ci=ci, **mech)
    assert s.spent[0] == pytest.approx(eps, rel=1e-12)


def test_epsilon_does_not_depend_on_the_data(df: pd.DataFrame) -> None:
    a = _priv(df, session()).explain("sum", "x", by="g", accuracy=1000)["epsilon"]
    b = _priv(df.iloc[:0], session()).explain("sum", "x", by="g", accuracy=1000)
    assert a == b["epsilon"]


def test_a_mean_meets_the_target_for_groups_of_at_least_min_rows() -> None:
    """Worst case for the bound: min_rows rows per group, all at one end of the bounds."""
    rows = 2000
    frame = pd.DataFrame({"g": ["a", "b"] * rows, "x": [100.0, 0.0] * rows})
    p = frame.dp(session(), bounds={"x": (0, 100)}, keys={"g": ["a", "b"]})
    out = p.groupby("g").mean("x", accuracy=2.0, min_rows=rows, ci=0.95)
    half = (out["upper"] - out["lower"]) / 2
    assert (half <= 2.0 * 1.01).all(), half.tolist()
    eps = out.attrs["dp"]["epsilon"]
    tighter = p.groupby("g").mean("x", epsilon=eps / 2, ci=0.95)
    assert ((tighter["upper"] - tighter["lower"]) / 2 > 2.0).any()


@pytest.mark.parametrize("kw", [
    {"epsilon": 1.0, "accuracy": 10},      # both
    {},                                    # neither
    {"accuracy": 0},                       # not positive
    {"accuracy": -5},
    {"accuracy": float("nan")},
    {"accuracy": "10"},
    {"accuracy": True},
    {"accuracy": 1e-12},                   # finer than any epsilon can reach
])
def test_bad_accuracy_is_refused_before_the_charge(df: pd.DataFrame, kw: dict) -> None:
    s = session()
    with pytest.raises(dpf.ValidationError):
        _priv(df, s).sum("x", **kw)
    assert s.spent == (0.0, 0.0)


def test_accuracy_where_the_error_depends_on_the_data_is_refused(df: pd.DataFrame) -> None:
    s = session()
    with pytest.raises(dpf.ValidationError, match="min_rows"):
        _priv(df, s).mean("x", accuracy=1)
    with pytest.raises(dpf.ValidationError, match="min_rows"):
        _priv(df, s).mean("x", accuracy=1, min_rows=0)
    assert s.spent == (0.0, 0.0)


def test_a_means_preview_is_in_its_own_units(df: pd.DataFrame) -> None:
    """0.1 previewed a mean with its noisy sum's half-width (+-12.6M beside means of 58k). The
    dry run now gives a, the mean's half-width being at most a / n over n rows; the ledger and
    report show it as "a/n", and a released interval over n rows is within a / n."""
    s = session()
    p = _priv(df, s)
    m = p.explain("mean", "x", epsilon=0.5)["measures"][0]
    assert m["ci_half_width"] is None and m["sum_ci_half_width"] > 100  # the sum's units
    a = m["ci_half_width_times_rows"]
    n = len(df)
    assert 0 < a / n < 100  # the mean's units: values in [0, 100]
    released = p.mean("x", epsilon=0.5, ci=0.95)
    assert (released.upper - released.lower) / 2 <= a / n * 1.01
    assert f"{a:.6g}/n" in s.report()


#: Every aggregate of the frame and of a group-by, with the arguments it needs besides the
#: budget (docs/reference.md: "Every aggregate takes accuracy="; "ci=" adds an interval).
AGGREGATES = {
    "count": ((), {}), "count_distinct": (("n",), {}), "sum": (("x",), {}),
    "mean": (("x",), {"min_rows": 100}), "var": (("x",), {}), "std": (("x",), {}),
    "max": (("x",), {}), "min": (("x",), {}), "median": (("x",), {}),
    "quantile": (("x", 0.25), {}), "histogram": (("x", [0, 50, 100]), {}),
    "agg": (({"x": "sum"},), {}), "nunique": (("n",), {}), "mode": (("n",), {}),
}
#: Those released by the exponential mechanism: no interval, no other mechanism (from the
#: registry).
EXPONENTIAL = {name for name, a in NAMES.items() if a.exponential}


def test_the_table_holds_every_aggregate_of_the_registry() -> None:
    assert set(AGGREGATES) == {*NAMES, "agg"}
    assert {"max", "min", "median", "quantile", "mode"} == EXPONENTIAL


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("name", list(AGGREGATES))
def test_every_aggregate_takes_accuracy_ci_and_mechanism(df: pd.DataFrame, name: str,
                                                         grouped: bool) -> None:
    """``accuracy=``, ``ci=`` and ``mechanism=`` on any aggregate: released, or refused with a
    typed error naming the reason before any charge (never a TypeError of the signature)."""
    args, extra = AGGREGATES[name]
    for kw in ({"accuracy": 50.0, **extra}, {"epsilon": 1.0, "ci": 0.9},
               {"epsilon": 1.0, "delta": 1e-6, "mechanism": "gaussian"}):
        s = session()
        target = _priv(df, s).groupby("g") if grouped else _priv(df, s)
        if not hasattr(target, name):  # agg is a group-by's, histogram a frame's
            assert (name, grouped) in (("agg", False), ("histogram", True))
            continue
        try:
            getattr(target, name)(*args, **kw)
        except dpf.ValidationError as e:
            assert s.spent == (0.0, 0.0), (kw, str(e))
            refused = ("accuracy" in kw and name not in ("count", "sum", "histogram", "mean",
                                                         "agg", "count_distinct",
                                                         "nunique")) or (
                name in EXPONENTIAL)
            assert refused, (kw, str(e))
            assert any(word in str(e) for word in ("accuracy=", "ci=", "mechanism=")), str(e)
        else:
            assert s.spent[0] > 0, kw
