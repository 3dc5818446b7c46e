"""``mode``: permute-and-flip over public candidates, utility = the candidate's count.

The statistical tests count how often the runner-up is released. With two candidates whose
counts differ by ``G``, permute-and-flip at rate ``r = eps_g / (2 Delta_u)`` visits the
runner-up first with probability 1/2 and accepts it with probability ``exp(-r G)``, else
accepts the top one (always accepted): ``P(runner-up) = exp(-r G) / 2`` exactly. Over ``N``
groups (independent draws) the observed rate is tested within ``Z_TOL`` binomial standard
errors, and a companion shows that a wrong epsilon (the group share halved, or doubled) is
rejected by the same check: the test has power.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core.aggregates import AGGREGATES
from dpframe.core.aggregates import mode as mode_module

from ._support import Z_TOL, session

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")

GROUPS = 3000
GAP = 4  # the top candidate's lead, in rows


def _two_candidate_frame(unit_rows: int = 1) -> pd.DataFrame:
    """Each group: 5 rows of 1 and 1 row of 0 (lead 4), each row its own unit or ``unit_rows``
    rows of one value per unit."""
    g = np.repeat(np.arange(GROUPS), 6)
    x = np.tile([1, 1, 1, 1, 1, 0], GROUPS)
    if unit_rows == 1:
        u = np.arange(len(g))
    else:  # per group: units of 2 rows each hold equal values (1,1), (1,1), (1,0) -> split
        u = np.repeat(np.arange(len(g) // unit_rows), unit_rows)
    return pd.DataFrame({"g": g, "x": x, "u": u})


def _runner_up_rate(seed: int, relation: str = "add_remove", epsilon: float = 0.5,
                    unit: bool = False) -> float:
    df = _two_candidate_frame(2 if unit else 1)
    declared: dict[str, Any] = {"bounds": {"x": (0, 1)}, "keys": {"g": list(range(GROUPS))}}
    if unit:
        declared.update(privacy_unit="u", max_rows_per_unit=2, max_groups_per_unit=1,
                        max_rows_per_group=2)
    priv = df.dp(session(seed, relation), **declared)
    out = priv.groupby("g").mode("x", epsilon=epsilon)
    assert set(out.unique()) <= {0.0, 1.0}
    return float((out == 0.0).mean())


def _expected(epsilon: float, share: float, sensitivity: int) -> float:
    return math.exp(-epsilon * share / (2 * sensitivity) * GAP) / 2


def _within(observed: float, p: float) -> bool:
    return abs(observed - p) <= Z_TOL * math.sqrt(p * (1 - p) / GROUPS)


@pytest.mark.parametrize(("relation", "unit", "share", "sensitivity"), [
    ("add_remove", False, 1.0, 1),   # row level: eps per group, Delta_u = 1
    ("change_one", False, 0.5, 1),   # change_one: eps R / (2T) per group
    ("add_remove", True, 1.0, 2),    # units of R = T = 2 rows: Delta_u = 2, eps R / T = eps
])
def test_the_runner_up_is_released_as_often_as_permute_and_flip_says(
        relation: str, unit: bool, share: float, sensitivity: int) -> None:
    observed = _runner_up_rate(11, relation, unit=unit)
    p = _expected(0.5, share, sensitivity)
    assert _within(observed, p), (observed, p)
    # power: the rate a wrong epsilon (half or twice the right one) would give is rejected
    for wrong in (share / 2, share * 2):
        assert not _within(observed, _expected(0.5, wrong, sensitivity)), wrong


@pytest.mark.parametrize("share", [Fraction(1, 2), Fraction(2)])
def test_a_wrong_epsilon_fails_the_check(monkeypatch: pytest.MonkeyPatch, share: Fraction
                                         ) -> None:
    """The same check on a mode planned at half or twice its epsilon per group (injected
    through the registry, as the audit's controls are): fails."""

    class Broken(mode_module.Mode):
        def plan(self, ctx: Any, m: Any, eps: Fraction, delta: Fraction, rho: Any) -> Any:
            return super().plan(ctx, m, eps * share, delta, rho)

    monkeypatch.setitem(AGGREGATES, "mode", Broken())
    observed = _runner_up_rate(11)
    assert not _within(observed, _expected(0.5, 1.0, 1))


def test_the_count_error_bounds_the_released_count() -> None:
    """Five candidates, counts 20, 16, 10, 5, 0 per group: the released value's count is within
    the stated ``count_error`` of the top with probability >= ci_level (a union bound)."""
    counts = {1: 20, 2: 16, 3: 10, 4: 5}
    x = np.concatenate([np.repeat(list(counts), list(counts.values()))] * 400)
    g = np.repeat(np.arange(400), sum(counts.values()))
    priv = pd.DataFrame({"g": g, "x": x}).dp(session(4), bounds={"x": (1, 5)},
                                             keys={"g": list(range(400))})
    out = priv.groupby("g").mode("x", epsilon=1)
    (m,) = out.attrs["dp"]["measures"]
    assert m["candidates"] == 5 and m["candidate_source"] == "integers"
    assert m["count_error"] == pytest.approx(2 * math.log(5 / 0.05) / 1)
    shortfall = 20 - out.map(lambda v: counts.get(int(v), 0))
    assert (shortfall <= m["count_error"]).mean() >= 0.95
    assert (out == 1.0).mean() > 0.5  # and most often the mode itself


def test_declared_values_are_counted_exactly() -> None:
    """Declared float candidates: a row counts for a candidate only when equal to it (the next
    float apart, -0.0 is 0.0), other values for none."""
    v = 0.1
    near = math.nextafter(v, math.inf)
    x = [near] * 30 + [v] * 20 + [0.3] * 50 + [-0.0] * 25 + [7.5] * 100
    priv = pd.DataFrame({"x": x}).dp(session(2), keys={"x": [0.0, v, near, 0.5]})
    assert float(priv.mode("x", epsilon=1e4)) == near
    plan = priv.explain("mode", "x", epsilon=1)
    assert plan["measures"][0]["candidates"] == 4
    counts = pd.Series([0.0, v, near, 0.5])
    assert mode_module.candidates(list(counts), "keys").bins == (0, 2, 3, 5)


def test_bool_and_agg_and_selection() -> None:
    df = pd.DataFrame({"g": ["a", "b"] * 50, "b": [True, True, False, True] * 25,
                       "n": [3] * 80 + [4] * 20})
    priv = df.dp(session(8), bounds={"n": (0, 9)}, keys={"g": ["a", "b"]})
    assert float(priv.mode("b", epsilon=1e4)) == 1.0
    out = priv.groupby("g").agg(m=("n", "mode"), c=("n", "count"), epsilon=1e4)
    assert out["m"].tolist() == [3.0, 3.0] and out.attrs["dp"]["measures"][0]["aggregate"] == (
        "mode")
    assert priv.groupby("g")["n"].mode(epsilon=1e4).tolist() == [3.0, 3.0]


REFUSED = {
    "float column, no declared values": (lambda p: p.mode("f", epsilon=1), "needs public"),
    "text column": (lambda p: p.mode("t", epsilon=1), r"not numbers.*groupby\('t'\)"),
    "no bounds": (lambda p: p.mode("nb", epsilon=1), "no declared bounds"),
    "interval": (lambda p: p.mode("n", epsilon=1, ci=0.9), "no interval"),
    "accuracy-first": (lambda p: p.mode("n", accuracy=2.0), "accuracy= is not available"),
    "too many integers": (lambda p: p.mode("wide", epsilon=1), "more than"),
    "private keys": (lambda p: p.groupby("t", keys="private").mode(
        "mid", epsilon=1, delta=1e-6), "candidates"),
    "unknown column": (lambda p: p.mode("nope", epsilon=1), "unknown column"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_before_the_charge(case: str) -> None:
    call, message = REFUSED[case]
    df = pd.DataFrame({"f": [0.5, 1.5], "t": ["a", "b"], "n": [1, 2], "nb": [1, 2],
                       "wide": [1, 2], "mid": [1, 2]})
    s = session(1)
    priv = df.dp(s, bounds={"f": (0, 2), "n": (0, 5), "wide": (0, 2e6), "mid": (0, 5000)})
    with pytest.raises(dpf.DPError, match=message):
        call(priv)
    assert s.spent == (0.0, 0.0) and s.ledger.empty


def test_text_keys_are_refused_before_the_charge() -> None:
    df = pd.DataFrame({"n": [1, 2]})
    s = session(1)
    with pytest.raises(dpf.ValidationError, match="finite numbers"):
        df.dp(s, keys={"n": ["a", "b"]}).mode("n", epsilon=1)
    assert s.spent == (0.0, 0.0) and s.ledger.empty
