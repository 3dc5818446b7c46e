"""Schema 4: each entry records its privacy event (chained); the spend of a file-ledger session
is recomposed from the events by its accountant (PLD by default when delta > 0); older ledgers
are refused under PLD/RDP until ``dpframe ledger migrate`` (issue 47, item 1)."""

from __future__ import annotations

import sqlite3
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core.accountant import Component, PrivacyEvent
from dpframe.core.accounting import PrivacyCost
from dpframe.engine.ledger import MemoryLedger, SqliteLedger
from dpframe.engine.ledger import create as create_module
from dpframe.engine.ledger.chain import genesis
from dpframe.engine.ledger.charges import entry_cost, fold
from tests.cli._support import inproc

from ._sql import run_sql

DF = pd.DataFrame({"x": range(100)})
META = {"query": "count", "columns": ["x"], "mechanism": "laplace"}
BUDGET = (Fraction(1), Fraction(1, 10**6))


def make_schema_3_ledger(path: Path, monkeypatch: pytest.MonkeyPatch,
                         costs: list[PrivacyCost]) -> Path:
    """A ledger as dpframe 0.3 wrote it (schema 3: no event column, rows hashed the schema-3
    way), charged ``costs`` by a basic session."""
    with monkeypatch.context() as m:
        m.setattr(create_module, "SCHEMA_VERSION", 3)
        m.setattr(create_module, "genesis", lambda *a: genesis(*a[:4], 3))
        SqliteLedger(path, *BUDGET, accountant="basic").close()
    run_sql(path, "ALTER TABLE entries DROP COLUMN event")
    led = SqliteLedger(path, *BUDGET, accountant="basic")
    for c in costs:
        led.record(led.charge(c, META), "released", {})
    led.close()
    con = sqlite3.connect(path)
    assert con.execute("SELECT version FROM dpframe_schema").fetchone() == (3,)
    con.close()
    return path


def _laplace(eps: Fraction) -> PrivacyCost:
    """A count's cost: sensitivity 1, scale 1 / eps."""
    return PrivacyCost(eps, event=PrivacyEvent((Component("laplace", Fraction(1), 1 / eps),)))


def test_pld_in_a_file_ledger_fits_50_split_counts_and_survives_reopening(tmp_path: Path
                                                                           ) -> None:
    """50 Laplace counts at split(50) fit a (1, 1e-6) file-ledger session (basic composition
    fits only 29 of them), the 51st is refused, and the spend after reopening is exactly the
    in-memory session's (the same recomposition of the same events)."""
    path = str(tmp_path / "b.sqlite")
    s = dpf.Session(1, 1e-6, ledger=path)
    mem = dpf.Session(1, 1e-6)
    assert s.accountant == "pld"
    eps = s.split(50)
    assert eps == mem.split(50) and 1 / eps < 30  # basic: scale 50
    for _ in range(50):
        DF.dp(s).count(epsilon=eps)
        DF.dp(mem).count(epsilon=eps)
    assert s.spent_exact == mem.spent_exact
    assert s.spent_exact[0] <= 1 and s.basic_spend()[0] > 1
    with pytest.raises(dpf.BudgetExceededError):
        DF.dp(s).count(epsilon=eps)
    spent = s.spent_exact
    del s
    again = dpf.Session(1, 1e-6, ledger=path)
    assert again.spent_exact == spent
    with pytest.raises(dpf.BudgetExceededError):
        DF.dp(again).count(epsilon=eps)
    report = SqliteLedger(path, readonly=True).verify()
    assert report["schema_version"] == 4 and report["entries"] == 50


def test_two_ledger_objects_recompose_each_others_charges(tmp_path: Path) -> None:
    """Two processes' charges (two objects here): each charge recomposes, under the write
    lock, every event recorded so far, so together they never overspend."""
    path = tmp_path / "b.sqlite"
    a, b = SqliteLedger(path, *BUDGET), SqliteLedger(path, *BUDGET)
    cost = _laplace(Fraction(1, 25))
    done = 0
    with pytest.raises(dpf.BudgetExceededError):
        while True:
            (a if done % 2 else b).charge(cost, META)
            done += 1
    mem = MemoryLedger(*BUDGET)
    for _ in range(done):
        mem.charge(cost, META)
    assert not mem.fits(cost) and a.spent() == b.spent() == mem.spent()
    assert done > 25  # more than basic composition allows


def test_an_edited_event_is_caught_by_verify(tmp_path: Path) -> None:
    """The event is chained: lowering a release's loss (a larger noise scale) in the file
    fails ``ledger verify`` (and the whole-chain check of ``show --verify``)."""
    path = tmp_path / "b.sqlite"
    led = SqliteLedger(path, *BUDGET)
    for _ in range(3):
        led.record(led.charge(_laplace(Fraction(1, 10)), META), "released", {})
    led.close()
    assert SqliteLedger(path, readonly=True).verify()["entries"] == 3
    forged = '{"v":1,"parts":[["laplace","1","1000"]]}'
    run_sql(path, f"UPDATE entries SET event = '{forged}' WHERE id = 2")
    with pytest.raises(dpf.LedgerError, match="fails verification"):
        SqliteLedger(path, readonly=True).verify()
    code, out = inproc("ledger", "verify", str(path))
    assert code != 0, out


def test_a_schema_3_ledger_is_refused_under_pld_nothing_charged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unmigrated schema-3 ledger opened by a PLD session (the default when delta > 0, or
    asked): LedgerMigrationError naming the fix, the file untouched; a basic session and a
    pure-DP one still open it as before."""
    path = make_schema_3_ledger(tmp_path / "old.sqlite", monkeypatch,
                                [PrivacyCost(Fraction(1, 10))] * 2)
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    before = path.read_bytes()
    for kw in ({}, {"accountant": "pld"}, {"accountant": "rdp"}):
        with pytest.raises(dpf.LedgerMigrationError, match="dpframe ledger migrate"):
            dpf.Session(1, 1e-6, ledger=str(path), **kw)
    assert issubclass(dpf.LedgerMigrationError, dpf.LedgerError)
    assert path.read_bytes() == before
    basic = dpf.Session(1, 1e-6, ledger=str(path), accountant="basic")
    assert basic.accountant == "basic" and basic.spent_exact == (Fraction(1, 5), 0)
    del basic
    pure = dpf.Session(1, ledger=str(path), allow_budget_change=True)
    assert pure.accountant == "basic"


def test_migrate_records_events_and_the_pld_spend_is_between_composition_and_basic(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``dpframe ledger migrate`` rewrites a schema-3 ledger to schema 4: every entry gets its
    (epsilon, delta) event, the chain is re-hashed and verifies, the budget history records the
    migration; reopened under PLD its spend is at most the basic spend and exactly the
    recomposition of the recorded events."""
    costs = [PrivacyCost(Fraction(1, 40), Fraction(1, 10**8))] * 40  # basic: all of it
    path = make_schema_3_ledger(tmp_path / "old.sqlite", monkeypatch, costs)
    basic = SqliteLedger(path, readonly=True).spent()
    code, out = inproc("ledger", "migrate", str(path))
    assert code == 0 and "Migrated" in out and "schema 4" in out, out
    led = SqliteLedger(path, readonly=True)
    report = led.verify()
    assert report["schema_version"] == 4 and report["entries"] == 40
    entries = led.entries()
    assert all(PrivacyEvent.from_json(e["event"]) == PrivacyEvent.approx(c.epsilon, c.delta)
               for e, c in zip(entries, costs, strict=True))
    assert led.budget_history()[-1]["note"].startswith("migrated from schema 3")
    led.close()
    code, out = inproc("ledger", "verify", str(path))
    assert code == 0, out
    s = dpf.Session(1, 1e-6, ledger=str(path))
    mem = MemoryLedger(*BUDGET)
    for c in costs:
        mem.charge(PrivacyCost(c.epsilon, c.delta, event=PrivacyEvent.approx(c.epsilon, c.delta)),
                   META)
    assert s.accountant == "pld" and s.spent_exact == mem.spent()
    assert s.spent_exact[0] <= basic[0] and s.spent_exact[1] <= basic[1]
    composed = fold((entry_cost(e) for e in entries), s.accountant_object.start()).spend()
    assert s.spent_exact[0] >= composed.epsilon and s.spent_exact[1] >= composed.delta
    del s
    more = SqliteLedger(path, *BUDGET)  # PLD composes the migrated events: room for more
    assert more.accountant.name == "pld" and more.fits(costs[0])
    more.charge(costs[0], META)
    assert more.spent()[0] <= 1 and more.verify()["entries"] == 41
    more.close()
    code, out = inproc("ledger", "migrate", str(path))
    assert code == 0 and "nothing to migrate" in out


def test_a_schema_2_ledger_migrates_to_4(tmp_path: Path) -> None:
    from .test_formats import make_schema_2_ledger

    path = make_schema_2_ledger(tmp_path / "old.db")
    with pytest.raises(dpf.LedgerMigrationError):
        SqliteLedger(path, *BUDGET)
    report = SqliteLedger.migrate(path)
    assert report["migrated"] and report["schema_version"] == 4
    led = SqliteLedger(path, 1, 0)
    assert led.spent() == (Fraction(3, 10), 0)
    led.charge(PrivacyCost(Fraction(1, 10)), META)
    assert led.verify()["entries"] == 4


def test_an_event_edited_before_the_checkpoint_is_caught_when_recomposing(tmp_path: Path
                                                                          ) -> None:
    """An open verifies only the rows after its checkpoint, but a PLD session recomposes every
    event: its first recomposition walks the whole chain, so an event edited before the
    checkpoint (its hash left as it was) refuses the session instead of lowering its spend."""
    path = tmp_path / "b.sqlite"
    led = SqliteLedger(path, *BUDGET)
    for _ in range(3):
        led.charge(_laplace(Fraction(1, 10)), META)
    led.close()
    led = SqliteLedger(path, *BUDGET)  # its first charge moves the checkpoint past them
    led.charge(_laplace(Fraction(1, 10)), META)
    led.close()
    assert SqliteLedger(path, *BUDGET, accountant="basic").spent()[0] == Fraction(2, 5)
    run_sql(path, "UPDATE entries SET event = '{\"v\":1,\"parts\":[[\"laplace\",\"1\",\"1000\"]]}' "
                  "WHERE id = 1")
    with pytest.raises(dpf.LedgerError, match="fails verification"):
        SqliteLedger(path, *BUDGET).spent()


def test_ledger_show_states_the_pld_spend(tmp_path: Path) -> None:
    """``ledger show`` (and ``--json``) state what a PLD session spends on the file (the
    default for delta > 0), not the basic sum, which may exceed the budget."""
    path = tmp_path / "b.sqlite"
    led = SqliteLedger(path, *BUDGET)
    cost = _laplace(Fraction(1, 25))
    for _ in range(30):
        led.charge(cost, META)
    spent = led.spent()
    led.close()
    snap = SqliteLedger.read_snapshot(path)
    assert snap.spent == spent and spent[0] <= 1 < 30 * Fraction(1, 25)


def test_each_entry_records_the_accountant_that_charged_it(tmp_path: Path) -> None:
    """Beside its event (hashed with it): the accountant's name and version."""
    from importlib.metadata import version

    path = tmp_path / "b.sqlite"
    for name in ("pld", "rdp", "basic"):
        led = SqliteLedger(path, *BUDGET, accountant=name)
        led.record(led.charge(_laplace(Fraction(1, 100)), META), "released", {})
        led.close()
    events = [e["event"] for e in SqliteLedger(path, readonly=True).entries()]
    assert [(e["accountant"], e["accountant_version"]) for e in events] == [
        ("pld", f"dp_accounting {version('dp-accounting')}"),
        ("rdp", f"dp_accounting {version('dp-accounting')}"),
        ("basic", f"dpframe {dpf.__version__}")]
    assert all(PrivacyEvent.from_json(e).parts for e in events)  # readers ignore the keys
    run_sql(path, "UPDATE entries SET event = replace(event, '\"pld\"', '\"basic\"')")
    with pytest.raises(dpf.LedgerError, match="fails verification"):
        SqliteLedger(path, readonly=True).verify()


def test_a_basic_session_on_a_pld_charged_ledger_names_the_accountant(tmp_path: Path) -> None:
    """40 counts at split(50) fit a PLD (1, 1e-6) ledger; basic composition of the same
    releases (a valid, looser bound: 40 x 0.0346 > 1) refuses the next one with
    AccountantMismatchError (a BudgetExceededError) naming 'pld', nothing charged; a PLD
    session accepts it. Under basic composition of basic-charged releases no such hint."""
    path = str(tmp_path / "b.sqlite")
    s = dpf.Session(1, 1e-6, ledger=path)
    eps = s.split(50)
    for _ in range(40):
        DF.dp(s).count(epsilon=eps)
    del s
    basic = dpf.Session(1, 1e-6, ledger=path, accountant="basic")
    with pytest.raises(dpf.AccountantMismatchError, match="accountant='pld'") as err:
        DF.dp(basic).count(epsilon=eps)
    assert isinstance(err.value, dpf.BudgetExceededError)
    assert "dp_accounting" in str(err.value)
    led = SqliteLedger(path, readonly=True)
    assert len(led.entries()) == 40
    led.close()
    with pytest.raises(dpf.AccountantMismatchError, match="'pld'"):  # the store's own check
        basic.ledger_store.charge(_laplace(Fraction(eps)), META)
    del basic
    again = dpf.Session(1, 1e-6, ledger=path)
    DF.dp(again).count(epsilon=eps)  # composed as charged: it fits
    del again

    other = str(tmp_path / "c.sqlite")
    s = dpf.Session(1, 1e-6, ledger=other, accountant="basic")
    with pytest.raises(dpf.BudgetExceededError) as plain:
        for _ in range(40):
            DF.dp(s).count(epsilon=eps)
    assert type(plain.value) is dpf.BudgetExceededError
