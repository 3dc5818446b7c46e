"""One option bag (``ReleaseOptions``) and one preview verb (``priv.explain``): every query
method takes its aggregate's own arguments plus the options that apply to it, documented once;
a misspelled or inapplicable option is a typed error before any charge; ``explain`` returns the
plan ``dry_run=True`` returned (now a deprecated alias); every method has one return type."""

from __future__ import annotations

import inspect
import typing
import warnings

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.fronts.docs import COMMON_PARAMS, DEFAULTS, ReleaseOptions
from dpframe.fronts.frame import PrivateFrame
from dpframe.fronts.groupby import PrivateGroupBy

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # seeded sessions, docs only
OPTIONS = list(ReleaseOptions.__annotations__)
#: Each query method, with the arguments of one call of it (frame or grouped).
CALLS: list[tuple[str, bool, tuple[object, ...], dict[str, object]]] = [
    (name, grouped, args, {}) for grouped in (False, True) for name, args in [
        ("count", ()), ("count_distinct", ("x",)), ("sum", ("x",)), ("mean", ("x",)),
        ("var", ("x",)), ("std", ("x",)), ("quantile", ("x", 0.3)), ("max", ("x",)),
        ("min", ("x",)), ("median", ("x",)), ("histogram", ("x", [0, 2, 4])),
        ("nunique", ("x",)), ("mode", ("i",))]
] + [("bounds", False, ("x",), {}), ("describe", False, (), {}),
     ("agg", True, ({"x": ["sum", "mean"]},), {})]


def _priv(session: dpf.Session) -> PrivateFrame:
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"g": rng.choice(["a", "b"], 400), "x": rng.uniform(0, 4, 400)})
    df["i"] = rng.integers(0, 5, 400)  # drawn after g and x, which stay as they were
    return df.dp(session, bounds={"x": (0, 4), "i": (0, 4)}, keys={"g": ["a", "b"]})


def _methods() -> list[tuple[type, str]]:
    return [(cls, n) for cls in (PrivateFrame, PrivateGroupBy) for n, fn in vars(cls).items()
            if not n.startswith("_") and inspect.isfunction(fn)
            and "dry_run" in inspect.signature(fn).parameters]


def test_every_option_is_documented_once_in_release_options() -> None:
    doc = ReleaseOptions.__doc__ or ""
    assert set(OPTIONS) == set(DEFAULTS)
    for name in OPTIONS:
        assert doc.count(f":ivar {name}:") == 1, name
        assert COMMON_PARAMS[name]  # read from that docstring, not written a second time


def test_the_query_methods_are_covered() -> None:
    assert len(_methods()) == 29  # 25, and nunique and mode generated from the registry


@pytest.mark.parametrize(("cls", "name"), _methods())
def test_each_method_lists_and_documents_its_options_and_has_one_return_type(
        cls: type, name: str) -> None:
    fn = getattr(cls, name)
    params = inspect.signature(fn).parameters
    taken = [o for o in OPTIONS if o in params]
    assert "epsilon" in taken and "dry_run" in taken
    assert all(params[o].kind is inspect.Parameter.KEYWORD_ONLY for o in taken)
    for option in taken:
        assert f":param {option}: {COMMON_PARAMS[option]}" in (fn.__doc__ or ""), option
    assert typing.get_overloads(fn) == []
    assert "dict" not in str(inspect.signature(fn).return_annotation)


@pytest.mark.parametrize(("name", "grouped", "args", "kw"), CALLS)
def test_a_misspelled_option_is_refused_with_the_close_name_before_any_charge(
        name: str, grouped: bool, args: tuple[object, ...], kw: dict[str, object]) -> None:
    s = dpf.Session(10, seed=1)
    priv = _priv(s)
    target = priv.groupby("g") if grouped else priv
    with pytest.raises(dpf.ValidationError, match=r"no option 'epsilom' \(did you mean "
                                                  r"'epsilon'\?\)") as info:
        getattr(target, name)(*args, epsilom=1.0, **kw)
    assert isinstance(info.value, dpf.OptionError)
    assert s.spent == (0.0, 0.0)


def test_an_option_that_does_not_apply_is_refused_before_any_charge() -> None:
    s = dpf.Session(10, seed=1)
    priv = _priv(s)
    with pytest.raises(dpf.OptionError, match=r"count\(\) has no option 'selection_share'"):
        priv.count(epsilon=1.0, selection_share=0.3)  # one ungrouped count: no key selection
    with pytest.raises(dpf.OptionError, match=r"mean\(\) has no option 'postprocess'"):
        priv.groupby("g").mean("x", epsilon=1.0, postprocess=None)
    with pytest.raises(dpf.ValidationError, match="dry_run must be True or False"):
        priv.mean("x", epsilon=1.0, dry_run="yes")  # type: ignore[typeddict-item]
    assert s.spent == (0.0, 0.0)


@pytest.mark.parametrize(("name", "grouped", "args", "kw"), CALLS)
def test_explain_returns_the_deprecated_dry_runs_plan_and_charges_nothing(
        name: str, grouped: bool, args: tuple[object, ...], kw: dict[str, object]) -> None:
    s = dpf.Session(10, seed=1)
    priv = _priv(s)
    by = "g" if grouped else None
    plan = priv.explain(name, *args, by=by, epsilon=0.5, **kw)
    target = priv.groupby("g") if grouped else priv
    with pytest.warns(DeprecationWarning, match=rf"{name}\(dry_run=True\) is deprecated.*"
                                                rf"priv\.explain\('{name}', \.\.\.\)"):
        old = getattr(target, name)(*args, epsilon=0.5, dry_run=True, **kw)
    assert plan == old
    assert plan["epsilon"] == 0.5 and plan["measures"]
    assert s.spent == (0.0, 0.0)


def test_explain_chooses_the_epsilon_of_accuracy_as_the_release_does() -> None:
    s = dpf.Session(10, seed=1)
    priv = _priv(s)
    plan = priv.explain("mean", "x", by="g", accuracy=0.5, min_rows=50)
    assert s.spent == (0.0, 0.0)
    out = priv.groupby("g").mean("x", accuracy=0.5, min_rows=50)
    assert out.attrs["dp"]["epsilon"] == plan["epsilon"]
    assert s.spent[0] == pytest.approx(plan["epsilon"])


def test_explain_and_query_mirror_each_other() -> None:
    s = dpf.Session(10, seed=1)
    priv = _priv(s)
    q = priv.query("sum", "x", by="g", epsilon=0.25, ci=0.9)
    plan = priv.explain("sum", "x", by="g", epsilon=0.25, ci=0.9)
    assert float(q.epsilon) == plan["epsilon"] == 0.25 and q.by == ("g",)
    with pytest.raises(dpf.ValidationError, match=r"unknown aggregate 'meen'.*'mean'"):
        priv.explain("meen", "x", epsilon=1.0)
    with pytest.raises(dpf.OptionError, match="takes no dry_run"):
        priv.explain("mean", "x", epsilon=1.0, dry_run=True)
    with pytest.raises(dpf.UnknownColumnError, match=r"'y'"):
        priv.explain("mean", "y", epsilon=1.0)  # the release's own typed refusal
    assert s.spent == (0.0, 0.0)


def test_a_release_after_explain_is_unchanged() -> None:
    """Previewing leaves the frame as it was: the same seed gives the same release."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        plain = _priv(dpf.Session(10, seed=7)).groupby("g").sum("x", epsilon=1.0)
        priv = _priv(dpf.Session(10, seed=7))
        priv.explain("sum", "x", by="g", epsilon=1.0)
        again = priv.groupby("g").sum("x", epsilon=1.0)
    pd.testing.assert_series_equal(plain, again)
