"""Session: budget, charge-before-release, the ledger view, report, the active session."""

from __future__ import annotations

import contextlib
import math
import threading
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core.accounting import PrivacyCost, zcdp_rho_for_epsilon
from dpframe.core.noise.rng import InsecureSeedWarning
from dpframe.engine.ledger import MemoryLedger, SqliteLedger
from dpframe.engine.session import LEDGER_COLUMNS, active_session

HUNDREDTH = PrivacyCost(0.01)


def _charge(s: dpf.Session, cost: PrivacyCost = HUNDREDTH, query: str = "count") -> int:
    return s.charge(cost, query=query, columns=["age"], mechanism="geometric")


# ---- construction and bad input -----------------------------------------------------------


@pytest.mark.parametrize(
    "eps", [0, 0.0, -1, math.nan, math.inf, -math.inf, "1.0", None, True, [1.0], 1 + 1j]
)
def test_bad_epsilon_is_a_validation_error(eps: Any) -> None:
    with pytest.raises(dpf.ValidationError, match="epsilon"):
        dpf.Session(eps)


@pytest.mark.parametrize("delta", [-1e-9, 1, 1.0, 2, math.nan, math.inf, "1e-6", True])
def test_bad_delta_is_a_validation_error(delta: Any) -> None:
    with pytest.raises(dpf.ValidationError, match="delta"):
        dpf.Session(1.0, delta)


def test_bad_options_are_validation_errors(tmp_path: Path) -> None:
    with pytest.raises(dpf.ValidationError, match="neighbouring"):
        dpf.Session(1.0, neighbouring="swap")
    with pytest.raises(dpf.ValidationError, match="name"):
        dpf.Session(1.0, name=3)  # type: ignore[arg-type,unused-ignore]
    for seed in (-1, 1.5, "7", True):
        with pytest.raises(dpf.ValidationError, match="seed"):
            dpf.Session(1.0, seed=seed)  # type: ignore[arg-type]
    with pytest.raises(dpf.ValidationError, match="ledger"):
        dpf.Session(1.0, ledger=42)  # type: ignore[arg-type]


def test_ledger_in_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "budget.sqlite"
    with pytest.raises(dpf.LedgerError, match="does not exist"):
        dpf.Session(1.0, ledger=path)
    assert not path.parent.exists()


def test_corrupt_ledger_file_is_a_clear_error_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "budget.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(dpf.LedgerError, match="not a dpframe ledger"):
        dpf.Session(1.0, ledger=path)
    assert path.read_bytes() == b"this is not a database" * 100


def test_totals_are_exact_and_shown_as_floats() -> None:
    s = dpf.Session(2.0, 1e-6)
    assert s.epsilon == 2.0 and s.delta == 1e-6
    assert s.total_exact == (Fraction(2), Fraction(1, 10**6))
    assert s.spent == (0.0, 0.0) and s.remaining == (2.0, 1e-6)
    assert s.neighbouring == "add_remove" and s.name is None and s.seed is None
    assert s.rng.secure
    assert "epsilon=2" in repr(s)


# ---- budget -------------------------------------------------------------------------------


def test_hundred_queries_at_a_hundredth_fit_and_the_next_does_not() -> None:
    s = dpf.Session(1.0)
    for _ in range(100):
        assert s.fits(HUNDREDTH)
        _charge(s)
    assert s.spent == (1.0, 0.0) and s.remaining == (0.0, 0.0)
    assert s.spent_exact == (Fraction(1), Fraction(0))
    assert not s.fits(HUNDREDTH)
    with pytest.raises(dpf.BudgetExceededError):
        _charge(s)
    assert len(s.ledger) == 100


def test_refused_query_changes_nothing_and_smaller_ones_still_run() -> None:
    s = dpf.Session(1.0, 1e-6)
    _charge(s, PrivacyCost(0.7))
    before = s.ledger.copy()
    assert not s.fits(PrivacyCost(0.5))  # fits has no side effect
    with pytest.raises(dpf.BudgetExceededError) as info:
        _charge(s, PrivacyCost(0.5))
    assert "nothing was computed or charged" in str(info.value)
    pd.testing.assert_frame_equal(s.ledger, before)
    assert s.spent == (0.7, 0.0)
    _charge(s, PrivacyCost(0.3))  # exactly what is left
    assert s.remaining == (0.0, 1e-6)


def test_delta_budget_is_enforced() -> None:
    s = dpf.Session(1.0)  # delta = 0: no approximate-DP release fits
    with pytest.raises(dpf.BudgetExceededError):
        _charge(s, PrivacyCost(0.1, 1e-9))
    assert s.spent == (0.0, 0.0)


def test_failed_release_keeps_its_charge() -> None:
    s = dpf.Session(1.0)
    i = _charge(s, PrivacyCost(0.25), query="sum")
    s.record(i, status="failed", details={"error": "MemoryError"})
    j = _charge(s, PrivacyCost(0.25))
    s.record(j, status="released", details={"noise_scale": 4.0, "ci_half_width": 12.0,
                                             "granularity": 2.0**-20})
    assert s.spent == (0.5, 0.0)
    led = s.ledger
    assert list(led["status"]) == ["failed", "released"]
    assert led["noise_scale"].iloc[1] == 4.0 and math.isnan(led["noise_scale"].iloc[0])


def test_threads_never_overspend_a_memory_session() -> None:
    s = dpf.Session(1.0)
    ok: list[int] = []

    def work() -> None:
        for _ in range(40):
            with contextlib.suppress(dpf.BudgetExceededError):
                ok.append(_charge(s))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ok) == 100 and s.spent_exact[0] == 1


def test_gaussian_releases_are_composed_in_zcdp() -> None:
    s = dpf.Session(2.0, 1e-5)
    rho = zcdp_rho_for_epsilon(0.2, 1e-7)
    for _ in range(20):
        s.charge(PrivacyCost(0.2, 1e-7, rho), query="sum", columns=["x"], mechanism="gaussian")
    # 20 x 0.2 = 4 by basic composition would not fit a budget of 2
    assert s.spent[0] < 2.0
    assert s.spent[1] == pytest.approx(2e-6)
    assert (s.ledger["epsilon"] >= 0).all()
    assert s.ledger["epsilon"].sum() == pytest.approx(s.spent[0])


# ---- ledger view and report ---------------------------------------------------------------


def test_ledger_dataframe_shape() -> None:
    s = dpf.Session(1.0, 1e-6, name="census-2026")
    empty = s.ledger
    assert list(empty.columns) == LEDGER_COLUMNS and len(empty) == 0
    i = s.charge(PrivacyCost(0.1), query="groupby sum", columns=["state", "income"],
                 mechanism="laplace")
    s.record(i, status="released", details={"noise_scale": 10.0, "ci_half_width": 29.96,
                                            "granularity": 2.0**-10, "threshold": 3})
    led = s.ledger
    assert list(led.columns) == LEDGER_COLUMNS and len(led) == 1
    row = led.iloc[0]
    assert row["query"] == "groupby sum" and row["columns"] == "state, income"
    assert row["mechanism"] == "laplace" and row["status"] == "released"
    assert row["epsilon"] == 0.1 and row["delta"] == 0.0
    assert row["noise_scale"] == 10.0 and row["ci_half_width"] == 29.96
    assert row["details"] == {"threshold": 3}
    assert row["session"] == "census-2026" and not row["seeded"]
    assert isinstance(led["time"].dtype, pd.DatetimeTZDtype)
    assert led["epsilon"].dtype == "float64" and led["id"].dtype == "int64"


def test_report_explains_budget_releases_and_epsilon(capsys: pytest.CaptureFixture[str]) -> None:
    s = dpf.Session(1.0, 1e-6, name="census-2026")
    i = _charge(s, PrivacyCost(0.25), query="income total")
    s.record(i, status="released", details={"noise_scale": 4.0, "ci_half_width": 12.0})
    text = s.report()
    for needle in ("census-2026", "income total", "0.25", "0.75", "released",
                   "73.1%", "26.9%", "e^eps"):
        assert needle in text
    assert capsys.readouterr().out == ""
    s.report(show=True)
    assert "census-2026" in capsys.readouterr().out


def test_posterior_bound_is_exported() -> None:
    assert dpf.posterior_bound(1.0, 0.5) == pytest.approx(0.731, abs=1e-3)
    assert "Session" in dpf.__all__ and "posterior_bound" in dpf.__all__


# ---- seed ---------------------------------------------------------------------------------


def test_seed_warns_is_deterministic_and_flagged() -> None:
    with pytest.warns(InsecureSeedWarning):
        a = dpf.Session(1.0, seed=7)
    with pytest.warns(InsecureSeedWarning):
        b = dpf.Session(1.0, seed=7)
    assert (a.rng.words(4) == b.rng.words(4)).all()
    assert not a.rng.secure and a.seeded
    _charge(a)
    assert bool(a.ledger.loc[0, "seeded"])
    assert "insecure" in a.report()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dpf.Session(1.0)  # no seed: no warning


# ---- active session -----------------------------------------------------------------------


def test_context_manager_sets_the_active_session_and_nests() -> None:
    a, b = dpf.Session(1.0), dpf.Session(2.0)
    with pytest.raises(dpf.ValidationError, match="no active session"):
        active_session()
    with a as entered:
        assert entered is a and active_session() is a
        with b:
            assert active_session() is b
            with a:
                assert active_session() is a
            assert active_session() is b
        assert active_session() is a
    with pytest.raises(dpf.ValidationError):
        active_session()


def test_active_session_is_restored_after_an_error() -> None:
    s = dpf.Session(1.0)
    with pytest.raises(RuntimeError), s:
        raise RuntimeError("boom")
    with pytest.raises(dpf.ValidationError):
        active_session()


def test_active_session_is_per_thread() -> None:
    s = dpf.Session(1.0)
    seen: list[Any] = []

    def look() -> None:
        try:
            seen.append(active_session())
        except dpf.ValidationError:
            seen.append(None)

    with s:
        t = threading.Thread(target=look)
        t.start()
        t.join()
    assert seen == [None]


# ---- release delegation -------------------------------------------------------------------


# ---- durable ledger -----------------------------------------------------------------------


def test_durable_ledger_survives_sessions(tmp_path: Path) -> None:
    path = tmp_path / "budget.sqlite"
    s = dpf.Session(1.0, 1e-6, ledger=path, name="census-2026")
    for _ in range(30):
        _charge(s)
    s.close()
    again = dpf.Session(1.0, 1e-6, ledger=str(path), name="census-2026")
    assert again.spent == (0.3, 0.0)
    assert len(again.ledger) == 30
    with pytest.raises(dpf.LedgerError, match="allow_budget_change"):
        dpf.Session(5.0, 1e-6, ledger=path)
    with pytest.raises(dpf.LedgerError, match="neighbouring"):
        dpf.Session(1.0, 1e-6, ledger=path, neighbouring="change_one")
    bigger = dpf.Session(2.0, 1e-6, ledger=path, allow_budget_change=True)
    assert bigger.epsilon == 2.0 and bigger.remaining[0] == pytest.approx(1.7)
    assert again.epsilon == 2.0  # the file is the source of truth
    assert "SQLite ledger" in bigger.report()


def test_session_accepts_a_ledger_object() -> None:
    store = MemoryLedger(Fraction(1), Fraction(0))
    s = dpf.Session(1.0, ledger=store)
    _charge(s)
    assert store.spent()[0] == Fraction(1, 100)
    with pytest.raises(dpf.LedgerError):
        dpf.Session(2.0, ledger=store)


def test_sqlite_and_memory_sessions_agree(tmp_path: Path) -> None:
    mem = dpf.Session(1.0, 1e-6)
    disk = dpf.Session(1.0, 1e-6, ledger=tmp_path / "b.sqlite")
    assert isinstance(disk.ledger_store, SqliteLedger)
    rho = zcdp_rho_for_epsilon(0.1, 1e-8)
    costs = [PrivacyCost(0.05), PrivacyCost(0.1, 1e-8, rho), PrivacyCost(0.2, 1e-7)] * 3
    for c in costs:
        _charge(mem, c)
        _charge(disk, c)
    assert mem.spent_exact == disk.spent_exact
    cols = ["id", "query", "epsilon", "delta", "rho", "spent_epsilon", "status"]
    pd.testing.assert_frame_equal(mem.ledger[cols], disk.ledger[cols])
