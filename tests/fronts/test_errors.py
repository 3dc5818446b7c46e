"""Bad input: typed errors, raised before any charge, that never quote private data.

Every case runs against a session that has already spent part of its budget; afterwards
``session.spent`` and ``len(session.ledger)`` must be unchanged. The frame holds distinctive
values (987654.321, "SECRET-KEY-Q", unit "uid-424242") that no message may contain.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")

SECRETS = ("987654", "987,654", "9.87654", "SECRET-KEY", "secret-key", "424242", "31415926")


def frame() -> pd.DataFrame:
    return pd.DataFrame({
        "income": [987654.321, 12.5, np.nan, 31415926.0],
        "n": np.array([987654, 3, 4, 5], dtype=np.int64),
        "state": ["SECRET-KEY-Q", "CA", "NY", "CA"],
        "uid": ["uid-424242", "u2", "u3", "u2"],
        "empty": [np.nan] * 4,
    })


def new_session() -> dpf.Session:
    s = dpf.Session(epsilon=5.0, delta=1e-5, seed=3)
    frame().dp(s).count(epsilon=0.5)  # something already spent
    return s


OK_BOUNDS = {"income": (0, 1e6), "n": (0, 10)}
KEYS = {"state": ["CA", "NY"]}


def dp(s: dpf.Session, df: pd.DataFrame | None = None, **kw: Any):
    opts: dict[str, Any] = {"bounds": OK_BOUNDS, "keys": KEYS}
    opts.update(kw)
    return (frame() if df is None else df).dp(s, **opts)


Case = tuple[str, type[dpf.DPError], Callable[[dpf.Session], Any]]

CASES: list[Case] = [
    # bounds
    ("missing bounds sum", dpf.BoundsError, lambda s: dp(s, bounds={}).sum("income", epsilon=1)),
    ("missing bounds mean", dpf.BoundsError, lambda s: dp(s, bounds={}).mean("income", epsilon=1)),
    ("missing bounds max", dpf.BoundsError, lambda s: dp(s, bounds={}).max("income", epsilon=1)),
    ("missing bounds quantile", dpf.BoundsError,
     lambda s: dp(s, bounds={}).quantile("income", 0.3, epsilon=1)),
    ("missing bounds grouped", dpf.BoundsError,
     lambda s: dp(s, bounds={}).groupby("state").sum("income", epsilon=1)),
    ("missing bounds agg", dpf.BoundsError,
     lambda s: dp(s, bounds={"n": (0, 1)}).groupby("state").agg(
         {"n": "sum", "income": "mean"}, epsilon=1)),
    ("reversed bounds", dpf.BoundsError,
     lambda s: dp(s, bounds={"income": (10, 0)}).sum("income", epsilon=1)),
    ("equal bounds", dpf.BoundsError,
     lambda s: dp(s, bounds={"income": (5, 5)}).sum("income", epsilon=1)),
    ("nan bound", dpf.BoundsError,
     lambda s: dp(s, bounds={"income": (0, float("nan"))}).sum("income", epsilon=1)),
    ("inf bound", dpf.BoundsError,
     lambda s: dp(s, bounds={"income": (0, float("inf"))}).sum("income", epsilon=1)),
    ("-inf bound", dpf.BoundsError,
     lambda s: dp(s, bounds={"income": (-np.inf, 0)}).mean("income", epsilon=1)),
    ("string bounds", dpf.BoundsError,
     lambda s: dp(s, bounds={"income": ("0", "10")}).sum("income", epsilon=1)),
    ("None bound", dpf.BoundsError,
     lambda s: dp(s, bounds={"income": (None, 10)}).sum("income", epsilon=1)),
    ("three bounds", dpf.BoundsError,
     lambda s: dp(s, bounds={"income": (0, 5, 10)}).sum("income", epsilon=1)),
    ("scalar bound", dpf.BoundsError,
     lambda s: dp(s, bounds={"income": 10}).sum("income", epsilon=1)),
    ("bounds beyond 2**52", dpf.ValidationError,
     lambda s: dp(s, bounds={"income": (0, 2.0**53)}).sum("income", epsilon=1)),
    ("bounds beyond -2**52", dpf.ValidationError,
     lambda s: dp(s, bounds={"n": (-(2**60), 0)}).groupby("state").sum("n", epsilon=1)),
    ("int bounds without an integer", dpf.ValidationError,
     lambda s: dp(s, bounds={"n": (0.2, 0.8)}).sum("n", epsilon=1)),
    # keys
    ("groupby without keys", dpf.KeysError, lambda s: dp(s, keys={}).groupby("state")
     .count(epsilon=1)),
    ("groupby second column without keys", dpf.KeysError,
     lambda s: dp(s).groupby(["state", "uid"]).count(epsilon=1)),
    ("empty key list", dpf.KeysError,
     lambda s: dp(s, keys={"state": []}).groupby("state").count(epsilon=1)),
    ("keys as a string", dpf.KeysError,
     lambda s: dp(s, keys={"state": "CA"}).groupby("state").count(epsilon=1)),
    ("private keys without delta", dpf.ValidationError,
     lambda s: dp(s).groupby("state", keys="private").count(epsilon=1)),
    ("keys not a list", dpf.KeysError,
     lambda s: dp(s, keys={"state": 5}).groupby("state").count(epsilon=1)),
    ("bad keys mode", dpf.ValidationError,
     lambda s: dp(s).groupby("state", keys="observed").count(epsilon=1)),
    # columns and dtypes
    ("unknown column sum", dpf.ValidationError, lambda s: dp(s).sum("nope", epsilon=1)),
    ("unknown column count", dpf.ValidationError, lambda s: dp(s).count("nope", epsilon=1)),
    ("unknown column groupby", dpf.ValidationError,
     lambda s: dp(s, keys={"nope": [1]}).groupby("nope").count(epsilon=1)),
    ("unknown column histogram", dpf.ValidationError,
     lambda s: dp(s).histogram("nope", bins=[0, 1], epsilon=1)),
    ("unknown privacy unit", dpf.ValidationError,
     lambda s: dp(s, privacy_unit="nope", max_rows_per_unit=1).count(epsilon=1)),
    ("non-numeric sum", dpf.ValidationError,
     lambda s: dp(s, bounds={"state": (0, 1)}).sum("state", epsilon=1)),
    ("non-numeric mean", dpf.ValidationError,
     lambda s: dp(s, bounds={"uid": (0, 1)}).mean("uid", epsilon=1)),
    ("non-numeric histogram", dpf.ValidationError,
     lambda s: dp(s).histogram("state", bins=[0, 1], epsilon=1)),
    ("non-numeric max", dpf.ValidationError,
     lambda s: dp(s, bounds={"state": (0, 1)}).max("state", epsilon=1)),
    # epsilon / delta
    *[(f"epsilon={e!r}", dpf.ValidationError, lambda s, e=e: dp(s).count(epsilon=e))
      for e in (0, 0.0, -1, float("nan"), float("inf"), "1", True, None, [1], 1e-300)],
    *[(f"delta={d!r}", dpf.ValidationError,
       lambda s, d=d: dp(s).count(epsilon=1, delta=d))
      for d in (-0.1, 1, 1.5, float("nan"), "0.1", True)],
    ("epsilon too small for the sampler", dpf.ValidationError,
     lambda s: dp(s).sum("income", epsilon=1e-13)),
    ("gaussian without delta", dpf.ValidationError,
     lambda s: dp(s).sum("income", epsilon=1, mechanism="gaussian")),
    ("unknown mechanism", dpf.ValidationError,
     lambda s: dp(s).sum("income", epsilon=1, mechanism="cauchy")),
    # other arguments
    ("ci level 1.5", dpf.ValidationError,
     lambda s: dp(s).groupby("state").count(epsilon=1, ci=1.5)),
    ("ci level 0", dpf.ValidationError,
     lambda s: dp(s).groupby("state").sum("income", epsilon=1, ci=0)),
    ("bins decreasing", dpf.ValidationError,
     lambda s: dp(s).histogram("income", bins=[10, 0], epsilon=1)),
    ("one bin edge", dpf.ValidationError,
     lambda s: dp(s).histogram("income", bins=[0], epsilon=1)),
    ("nan bin edge", dpf.ValidationError,
     lambda s: dp(s).histogram("income", bins=[0, np.nan, 5], epsilon=1)),
    ("string bins", dpf.ValidationError,
     lambda s: dp(s).histogram("income", bins=["a", "b"], epsilon=1)),
    ("quantile q > 1", dpf.ValidationError,
     lambda s: dp(s).quantile("income", 1.5, epsilon=1)),
    ("quantile q < 0", dpf.ValidationError,
     lambda s: dp(s).groupby("state").quantile("income", -0.1, epsilon=1)),
    ("resolution 1", dpf.ValidationError,
     lambda s: dp(s).max("income", epsilon=1, resolution=1)),
    ("resolution bool", dpf.ValidationError,
     lambda s: dp(s).max("income", epsilon=1, resolution=True)),
    *[(f"max_rows_per_unit={r!r}", dpf.ValidationError,
       lambda s, r=r: dp(s, privacy_unit="uid", max_rows_per_unit=r).count(epsilon=1))
      for r in (0, -1, 1.5, True)],
    ("max_groups_per_unit=0", dpf.ValidationError,
     lambda s: dp(s, privacy_unit="uid", max_rows_per_unit=1, max_groups_per_unit=0)
     .groupby("state").count(epsilon=1)),
    ("privacy_unit without max_rows_per_unit", dpf.ValidationError,
     lambda s: dp(s, privacy_unit="uid").count(epsilon=1)),
    ("agg unknown aggregate", dpf.ValidationError,
     lambda s: dp(s).groupby("state").agg({"income": "trimmed_mean"}, epsilon=1)),
    ("agg empty", dpf.ValidationError, lambda s: dp(s).groupby("state").agg({}, epsilon=1)),
    ("agg wrong number of weights", dpf.ValidationError,
     lambda s: dp(s).groupby("state").agg({"income": ["sum", "mean"]}, epsilon=1, weights=[1])),
    ("agg negative weight", dpf.ValidationError,
     lambda s: dp(s).groupby("state").agg({"income": ["sum", "mean"]}, epsilon=1,
                                           weights=[1, -1])),
    ("not a session", dpf.ValidationError,
     lambda s: frame().dp("session", bounds=OK_BOUNDS).count(epsilon=1)),
]


def _all_text(exc: BaseException) -> str:
    parts = []
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        parts += [str(e), repr(e), *map(str, e.args)]
        e = e.__cause__ or e.__context__
    return "\n".join(parts)


@pytest.mark.parametrize(("name", "error", "call"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused_before_any_charge(name, error, call):
    s = new_session()
    spent, rows = s.spent, len(s.ledger)
    with pytest.raises(error) as info:
        call(s)
    assert isinstance(info.value, dpf.DPError)
    assert s.spent == spent and len(s.ledger) == rows
    text = _all_text(info.value)
    for secret in SECRETS:
        assert secret not in text, f"{name}: error message leaks {secret!r}: {text!r}"


DRY_CASES: list[Case] = [
    ("missing bounds", dpf.BoundsError,
     lambda s: dp(s, bounds={}).explain("sum", "income", epsilon=1)),
    ("reversed bounds", dpf.BoundsError,
     lambda s: dp(s, bounds={"income": (1, 0)}).explain("mean", "income", epsilon=1)),
    ("no keys", dpf.KeysError,
     lambda s: dp(s, keys={}).explain("count", by="state", epsilon=1)),
    ("bad epsilon", dpf.ValidationError, lambda s: dp(s).explain("count", epsilon=-1)),
    ("non-numeric", dpf.ValidationError,
     lambda s: dp(s, bounds={"state": (0, 1)}).explain("max", "state", epsilon=1)),
]


@pytest.mark.parametrize(("name", "error", "call"), DRY_CASES, ids=[c[0] for c in DRY_CASES])
def test_dry_run_refuses_bad_input_too(name, error, call):
    """A dry run validates exactly like a release (and never charges)."""
    s = new_session()
    with pytest.raises(error) as info:
        call(s)
    assert s.spent == (0.5, 0.0) and len(s.ledger) == 1
    assert not any(x in _all_text(info.value) for x in SECRETS)


DEGENERATE: list[tuple[str, Callable[[dpf.Session], Any]]] = [
    ("empty frame count", lambda s: dp(s, df=frame().iloc[:0]).count(epsilon=1)),
    ("empty frame grouped",
     lambda s: dp(s, df=frame().iloc[:0]).groupby("state").sum("income", epsilon=1)),
    ("all-NaN column sum", lambda s: dp(s, bounds={"empty": (0, 1)}).sum("empty", epsilon=1)),
    ("all-NaN column quantile",
     lambda s: dp(s, bounds={"empty": (0, 1)}).median("empty", epsilon=1)),
    ("all-NaN column grouped mean",
     lambda s: dp(s, bounds={"empty": (0, 1)}).groupby("state").mean("empty", epsilon=1)),
]


@pytest.mark.parametrize(("name", "call"), DEGENERATE, ids=[c[0] for c in DEGENERATE])
def test_degenerate_data_is_released_with_noise_not_refused(name, call):
    """docs/privacy.md: whether a query is answered never depends on the data. An empty frame or an
    all-missing column is released like any other (0.1 refused them: a data-dependent refusal
    that one person's row could flip)."""
    s = new_session()
    spent = s.spent[0]
    out = call(s)
    assert isinstance(out, int | float | pd.Series)
    if isinstance(out, pd.Series):  # the declared keys, in declared order, as for any data
        assert list(out.index) == KEYS["state"]
    assert s.spent[0] == spent + 1


def test_numpy_scalars_are_accepted():
    s = new_session()
    p = dp(s)
    assert isinstance(p.count(epsilon=np.float64(0.5)), int)
    assert isinstance(p.sum("income", epsilon=np.float32(0.25), delta=np.float64(0)), float)
    p.groupby("state").sum("n", epsilon=np.int64(1))
    assert s.spent == (2.25, 0.0)


# -- budget -------------------------------------------------------------------------------------

def test_query_over_budget_changes_nothing_and_later_queries_work():
    df = frame()
    s = dpf.Session(epsilon=1.0, delta=1e-6, seed=5)
    p = df.dp(s, bounds=OK_BOUNDS, keys=KEYS)
    p.count(epsilon=0.7)
    spent, rows = s.spent, len(s.ledger)
    plan = p.explain("sum", "income", epsilon=0.5)
    assert plan["fits_budget"] is False
    for attempt in (lambda: p.sum("income", epsilon=0.5),
                    lambda: p.groupby("state").count(epsilon=0.31),
                    lambda: p.groupby("state", keys="private").count(epsilon=0.1, delta=2e-6),
                    lambda: p.mean("income", epsilon=0.30000001)):
        with pytest.raises(dpf.BudgetExceededError) as info:
            attempt()
        assert s.spent == spent and len(s.ledger) == rows
        assert not any(x in str(info.value) for x in SECRETS)
    assert p.sum("income", epsilon=0.3) is not None   # exactly the rest still fits
    assert s.spent == (1.0, 0.0) and s.remaining == (0.0, 1e-6)
    with pytest.raises(dpf.BudgetExceededError):
        p.count(epsilon=1e-9)
    assert len(s.ledger) == rows + 1


def test_budget_arithmetic_is_exact():
    df = frame()
    s = dpf.Session(epsilon=1.0, seed=6)
    p = df.dp(s)
    for _ in range(100):
        p.count(epsilon=0.01)
    assert s.spent == (1.0, 0.0)
    with pytest.raises(dpf.BudgetExceededError):
        p.count(epsilon=0.01)


def test_dry_run_charges_nothing():
    s = new_session()
    spent, rows = s.spent, len(s.ledger)
    p = dp(s)
    plans = [p.explain("count", epsilon=1), p.explain("sum", "income", epsilon=1),
             p.explain("mean", "income", epsilon=1), p.explain("max", "income", epsilon=1),
             p.explain("histogram", "income", bins=[0, 1, 2], epsilon=1),
             p.explain("agg", {"income": ["sum", "median"]}, by="state", epsilon=1),
             p.explain("count", by="state", keys="private", epsilon=1, delta=1e-6),
             p.explain("count", epsilon=100)]
    assert all(isinstance(x, dict) for x in plans)
    assert plans[0]["fits_budget"] is True and plans[-1]["fits_budget"] is False
    assert s.spent == spent and len(s.ledger) == rows


def test_plan_and_ledger_contain_no_data_values():
    s = new_session()
    p = dp(s)
    p.groupby("state").agg({"income": ["sum", "mean", "max"]}, epsilon=1.0)
    p.sum("income", epsilon=0.5)
    ledger_text = s.ledger.to_string() + repr(s.ledger["details"].tolist())
    for secret in SECRETS:
        assert secret not in ledger_text
