"""Bad input to declared key combinations (``keys=`` a DataFrame) and ``rollup=True`` (issue
47, item 4): each refused with its typed error before anything is charged, no planted private
value in the error, the ledger or any output (see ``_harness``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf

from ._harness import BOUNDS, Case, expect_refusal, frame, ledger_session, params

V = dpf.ValidationError
K = dpf.KeysError

#: The declared combinations of the harness frame's (g, k) columns.
COMBOS = pd.DataFrame({"g": ["a", "a", "b"], "k": [1, 2, 1]})


def priv(s: dpf.Session, keys: Any = COMBOS) -> Any:
    return frame().dp(s, bounds=BOUNDS, keys=keys)


def rolled(**kw: Any) -> Callable[[dpf.Session], Any]:
    return lambda s: priv(s).groupby(["g", "k"]).count(epsilon=0.5, rollup=True, **kw)


CASES: list[Case] = [
    # declared combinations
    Case("combos-duplicate-row", lambda s: priv(s, pd.concat([COMBOS, COMBOS.iloc[:1]])), K),
    Case("combos-duplicate-equal-spelling",
         lambda s: priv(s, pd.DataFrame({"g": ["a", "a"], "k": [1, 1.0]})), K),
    Case("combos-no-rows", lambda s: priv(s, COMBOS.iloc[:0]), K),
    Case("combos-missing-value",
         lambda s: priv(s, pd.DataFrame({"g": ["a", None], "k": [1, 2]})), K),
    Case("combos-text-for-int-column", lambda s: priv(s, pd.DataFrame(
        {"g": ["a", "b"], "k": ["1", "2"]})).groupby(["g", "k"]).count(epsilon=0.5), K),
    Case("combos-int-column-names", lambda s: priv(s, pd.DataFrame({0: ["a"], 1: [1]})), K),
    Case("combos-unknown-column",
         lambda s: priv(s, pd.DataFrame({"g": ["a"], "zz": [1]})), V),
    # rollup=
    Case("rollup-not-bool", lambda s: priv(s).groupby(["g", "k"]).count(epsilon=0.5,
                                                                         rollup="yes"), V),
    Case("rollup-shares-without-rollup", lambda s: priv(s).groupby(["g", "k"]).count(
        epsilon=0.5, level_shares=[1, 1, 1]), V),
    Case("rollup-shares-length", rolled(level_shares=[1, 1]), V),
    Case("rollup-shares-negative", rolled(level_shares=[1, -1, 1]), V),
    Case("rollup-shares-zero", rolled(level_shares=[1, 0, 1]), V),
    Case("rollup-shares-nan", rolled(level_shares=[1, float("nan"), 1]), V),
    Case("rollup-shares-string", rolled(level_shares="111"), V),
    Case("rollup-margins-collide", lambda s: priv(s, pd.DataFrame(
        {"g": ["All", "b"], "k": [1, 2]})).groupby(["g", "k"]).count(epsilon=0.5, rollup=True),
         K),
    Case("rollup-margins-name-collide", rolled(margins_name="a"), K),
    Case("rollup-margins-name-not-str", rolled(margins_name=3), V),
    Case("rollup-gaussian", lambda s: priv(s).groupby(["g", "k"]).count(
        epsilon=0.5, delta=1e-6, mechanism="gaussian", rollup=True), V),
    Case("rollup-accuracy", lambda s: priv(s).groupby(["g", "k"]).count(
        accuracy=10, rollup=True), V),
    Case("rollup-private-keys", lambda s: priv(s).groupby("g", keys="private").count(
        epsilon=0.5, delta=1e-6, rollup=True), V),
    Case("rollup-sum-unbounded", lambda s: frame().dp(s, keys=COMBOS).groupby(
        ["g", "k"]).sum("x", epsilon=0.5, rollup=True), dpf.BoundsError),
    Case("rollup-budget", lambda s: priv(s).groupby(["g", "k"]).count(epsilon=50, rollup=True),
         dpf.BudgetExceededError),
]


@pytest.mark.parametrize("case", params(CASES))
def test_rollup_bad_input(case: Case, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                          capsys: pytest.CaptureFixture[str]) -> None:
    session = ledger_session(tmp_path)
    try:
        expect_refusal(case, session, tmp_path / "budget.sqlite", caplog, capsys)
    finally:
        session.close()


def test_numpy_level_shares_release(tmp_path: Path) -> None:
    """level_shares as a numpy array is a list of numbers like any other."""
    s = ledger_session(tmp_path)
    try:
        out = priv(s).groupby(["g", "k"]).count(epsilon=0.5, rollup=True,
                                                level_shares=np.array([1.0, 2.0, 3.0]))
        assert out.attrs["dp"]["rollup"]["level_shares"] == pytest.approx([1 / 6, 1 / 3, 1 / 2])
    finally:
        s.close()
