"""The checkpoint and the chain head are sealed by unkeyed hashes: whoever can write the file
can recompute them. What they state (budget, spend, running totals, privacy unit) is vouched
at every open by the chained rows at the checkpoint's position (finding 74, issue 43, item 6):
rewriting both with the library's own functions, no chained row touched, used to reopen a
spent ledger at 0.0 and release another epsilon 1; now the open refuses it, nothing charged.
A forgery must rewrite chained rows, which every export's ``ledger_head`` pins (docs/cli.md,
"the ledger's guarantees").
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import dpframe as dpf
from dpframe.core.accounting import PrivacyCost, SpendTotals
from dpframe.engine.ledger import SqliteLedger
from dpframe.engine.ledger.chain import (
    read_checkpoint,
    read_head,
    verify_chain,
    write_checkpoint,
    write_head,
)
from dpframe.engine.ledger.schema import frac_text

COST = PrivacyCost(Fraction(1, 10))
GAUSS = PrivacyCost(Fraction(1, 10), Fraction(1, 10**7), Fraction(1, 1000))
META = {"query": "count", "columns": ["age"], "mechanism": "geometric"}
ZERO = frac_text(Fraction(0))


def _spent_ledger(tmp_path: Path, costs: list[PrivacyCost], delta: float = 0) -> Path:
    """A ledger of budget (1, delta) whose ``costs`` were charged over two opens (so that it
    has a checkpoint)."""
    path = tmp_path / "budget.sqlite"
    half = len(costs) // 2
    for part in (costs[:half], costs[half:]):
        led = SqliteLedger(path, 1, delta)
        for c in part:
            led.record(led.charge(c, META), "released", {"noise_scale": 10})
        led.close()
    return path


def _forge(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Rewrite the checkpoint's state with ``edit``, moved to the chain head, and the head to
    agree with it: the library's own functions, no chained row touched."""
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        head = read_head(con, path, check_last=True)
        assert read_checkpoint(con, path) is not None
        state = verify_chain(con, path)["state"]  # the verified state at the head
        assert state["rows"] == head.rows
        edit(state)
        g = [Fraction(x) for x in (*state["budget"], *state["spent"], *state["totals"][:5])]
        write_checkpoint(con, state)
        write_head(con, replace(head, budget=(g[0], g[1]), spent=(g[2], g[3]),
                                totals=SpendTotals(*g[4:9], bool(state["totals"][5])),
                                unit=state["unit"]))
        con.execute("COMMIT")
    finally:
        con.close()


def _zero_spend(state: dict[str, Any]) -> None:
    state["spent"] = [ZERO, ZERO]
    state["totals"] = [ZERO] * 5 + [0]


def _refused_at_open(path: Path) -> None:
    """The open refuses (a typed LedgerError naming the checkpoint), and nothing is charged:
    the file's chained rows and head are as the forger left them."""
    before = path.read_bytes()
    with pytest.raises(dpf.LedgerError, match="fails verification"):
        SqliteLedger(path)
    s = None
    with pytest.raises(dpf.LedgerError, match="fails verification"):
        s = dpf.Session(epsilon=1, ledger=str(path))
    assert s is None
    assert path.read_bytes() == before


def test_a_forged_zero_spend_in_head_and_checkpoint_is_refused_at_open(tmp_path: Path) -> None:
    path = _spent_ledger(tmp_path, [COST] * 10)  # the whole epsilon 1 spent
    led = SqliteLedger(path)
    with pytest.raises(dpf.BudgetExceededError):
        led.charge(COST, META)
    led.close()
    _forge(path, _zero_spend)
    _refused_at_open(path)
    with pytest.raises(dpf.LedgerError, match="fails verification"):
        SqliteLedger(path).verify()


@pytest.mark.parametrize("what", ["budget", "spent", "pure", "delta", "unit", "last_entry"])
def test_each_field_of_a_forged_checkpoint_is_vouched_by_the_chain(tmp_path: Path,
                                                                  what: str) -> None:
    path = _spent_ledger(tmp_path, [PrivacyCost(Fraction(1, 10), Fraction(1, 10**7))] * 6,
                         delta=1e-6)
    edits: dict[str, Callable[[dict[str, Any]], None]] = {
        "budget": lambda s: s.__setitem__("budget", [frac_text(Fraction(2)), s["budget"][1]]),
        "spent": lambda s: s.__setitem__("spent", [frac_text(Fraction(1, 2)), s["spent"][1]]),
        "pure": lambda s: s["totals"].__setitem__(0, frac_text(Fraction(1, 2))),
        "delta": lambda s: s["totals"].__setitem__(1, ZERO),
        "unit": lambda s: s.__setitem__("unit", "uid"),
        "last_entry": lambda s: s.__setitem__("last_entry", s["last_entry"] + 5),
    }
    _forge(path, edits[what])
    _refused_at_open(path)


@pytest.mark.parametrize(("term", "value"), [(0, 0), (2, Fraction(1, 10**6)),
                                             (3, Fraction(1, 10**4))])
def test_forged_gaussian_totals_are_refused(tmp_path: Path, term: int, value: Fraction) -> None:
    """A ledger with Gaussian charges (and pure ones): its totals' composition may honestly
    fall below the spend recorded (a larger delta lowers the zCDP bound), but never below it
    by basic composition (pure plus Gaussian epsilon sums), and the Gaussian delta is part of
    the whole delta: lowering the pure or the Gaussian epsilon sum, or raising the Gaussian
    delta sum past the whole, is refused at open."""
    path = _spent_ledger(tmp_path, [GAUSS, COST] * 3, delta=1e-3)

    def edit(state: dict[str, Any]) -> None:
        state["totals"][term] = frac_text(value)
    _forge(path, edit)
    _refused_at_open(path)


def test_an_untouched_checkpoint_opens(tmp_path: Path) -> None:
    for costs, delta in (([COST] * 6, 0.0), ([GAUSS, COST] * 3, 1e-3)):
        path = _spent_ledger(tmp_path / str(delta), costs, delta) if (
            tmp_path / str(delta)).mkdir() is None else tmp_path
        _forge(path, lambda s: None)  # rewritten as it was
        led = SqliteLedger(path)
        spent = led.spent()
        led.record(led.charge(COST, META), "released", {})
        assert led.spent() > spent
        assert led.verify()["entries"] == len(costs) + 1
        led.close()


def _rho_halved(state: dict[str, Any]) -> None:
    state["totals"][4] = frac_text(Fraction(state["totals"][4]) / 2)


def _delta_into_gaussian(state: dict[str, Any]) -> None:
    state["totals"][3] = state["totals"][1]  # the whole delta as the Gaussian term's


def _pure_as_gaussian(state: dict[str, Any]) -> None:
    """A ledger with no Gaussian charge restated as one whose epsilon is all Gaussian, with a
    tiny rho: the composition falls far below the spend, its epsilon sums still reach it."""
    t = state["totals"]
    state["totals"] = [ZERO, t[1], t[0], t[1], frac_text(Fraction(1, 10**9)), 1]


@pytest.mark.parametrize("edit", [_rho_halved, _delta_into_gaussian])
def test_gaussian_totals_moved_within_the_bounds_are_refused_at_open(
        tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Finding 76: the Gaussian rho sum lowered, or the whole delta moved into the Gaussian
    term, keeps the composition below the recorded spend and the epsilon sums above it (what
    finding 74's check required), so only ``ledger verify`` caught it. Every term is now
    recounted from the chained entries at open."""
    approx = PrivacyCost(Fraction(1, 10), Fraction(1, 10**7))  # a delta outside the Gaussian
    path = _spent_ledger(tmp_path, [GAUSS, approx] * 3, delta=1e-3)
    _forge(path, edit)
    _refused_at_open(path)


def test_a_pure_ledger_restated_as_gaussian_is_refused_at_open(tmp_path: Path) -> None:
    """(epsilon, delta) charges, no Gaussian one, restated as Gaussian with a tiny rho: a basic
    session would charge from a composition near 0 until the recorded spend is passed."""
    path = _spent_ledger(tmp_path, [PrivacyCost(Fraction(1, 10), Fraction(1, 10**7))] * 6,
                         delta=1e-6)
    _forge(path, _pure_as_gaussian)
    _refused_at_open(path)


def test_a_pure_dp_ledger_restated_as_gaussian_is_refused_at_open(tmp_path: Path) -> None:
    """The O(1) case (spend delta 0): the totals must be the spend's pure epsilon alone."""
    path = _spent_ledger(tmp_path, [COST] * 6)
    _forge(path, _pure_as_gaussian)
    _refused_at_open(path)


def test_a_forged_entry_count_is_refused_at_open(tmp_path: Path) -> None:
    path = _spent_ledger(tmp_path, [GAUSS, COST] * 3, delta=1e-3)
    _forge(path, lambda s: s.__setitem__("entries", s["entries"] - 1))
    _refused_at_open(path)


def _charges_until_refused(path: Path, cost: PrivacyCost) -> int:
    led = SqliteLedger(path, accountant="basic")
    n = 0
    try:
        while True:
            led.charge(cost, META)
            n += 1
    except dpf.BudgetExceededError:
        return n
    finally:
        led.close()


def test_a_forged_rho_would_buy_charges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    """What the forgery buys without the check (finding 74's checks alone): a basic session
    charges Gaussian releases from the forged rho, whose composition stays below the recorded
    spend for several more charges, each then free."""
    from dpframe.engine.ledger import chain

    g = PrivacyCost(Fraction(1, 4), Fraction(1, 10**8), Fraction(1, 200))
    honest, forged = tmp_path / "honest", tmp_path / "forged"
    honest.mkdir()
    forged.mkdir()
    n_honest = _charges_until_refused(_spent_ledger(honest, [g] * 4, delta=1e-6), g)
    path = _spent_ledger(forged, [g] * 4, delta=1e-6)
    _forge(path, lambda s: s["totals"].__setitem__(4, frac_text(Fraction(1, 10**6))))
    _refused_at_open(path)
    monkeypatch.setattr(chain, "_totals_agree", lambda conn, walk, spent: True)
    assert _charges_until_refused(path, g) > n_honest
