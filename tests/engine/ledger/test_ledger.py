"""Ledgers: exact charges, atomic refusal, durable SQLite, concurrency and crash safety."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import sqlite3
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from dpframe.cli.ledger import show_ledger
from dpframe.core.accounting import PrivacyCost, session_spend, zcdp_rho_for_epsilon
from dpframe.engine.ledger import Ledger, MemoryLedger, SqliteLedger, spend_of
from dpframe.errors import BudgetExceededError, DPError, LedgerError, ValidationError

HUNDREDTH = PrivacyCost(Fraction(1, 100))
META = {"query": "count", "columns": ["age"], "mechanism": "geometric"}


@pytest.fixture(params=["memory", "sqlite"])
def make_ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    made: list[Any] = []

    def make(eps: Any = Fraction(1), delta: Any = Fraction(0)) -> Ledger:
        led: Ledger
        if request.param == "memory":
            led = MemoryLedger(Fraction(eps), Fraction(delta))
        else:
            led = SqliteLedger(tmp_path / f"l{len(made)}.sqlite", Fraction(eps), Fraction(delta))
        made.append(led)
        return led

    yield make
    for led in made:
        if isinstance(led, SqliteLedger):
            led.close()


def test_both_stores_satisfy_the_protocol(make_ledger: Any) -> None:
    assert isinstance(make_ledger(), Ledger)


def test_exactly_one_hundred_hundredths_fit(make_ledger: Any) -> None:
    led = make_ledger(Fraction(1))
    for _ in range(100):
        led.charge(HUNDREDTH, META)
    assert led.spent() == (Fraction(1), Fraction(0))
    assert not led.fits(HUNDREDTH)
    with pytest.raises(BudgetExceededError, match="nothing was computed or charged"):
        led.charge(HUNDREDTH, META)
    assert len(led.entries()) == 100
    assert led.spent() == (Fraction(1), Fraction(0))


def test_refusal_writes_nothing_and_smaller_queries_still_fit(make_ledger: Any) -> None:
    led = make_ledger(Fraction(1), Fraction(1, 10**6))
    led.charge(PrivacyCost(Fraction(9, 10)), META)
    before = led.entries()
    with pytest.raises(BudgetExceededError):
        led.charge(PrivacyCost(Fraction(2, 10)), META)
    with pytest.raises(BudgetExceededError):  # delta does not fit either
        led.charge(PrivacyCost(Fraction(1, 100), Fraction(1, 10**5)), META)
    assert led.entries() == before
    led.charge(PrivacyCost(Fraction(1, 10)), META)  # exactly the rest
    assert led.spent()[0] == 1


def test_entries_record_and_statuses(make_ledger: Any) -> None:
    led = make_ledger()
    a = led.charge(PrivacyCost(Fraction(1, 10)), META)
    b = led.charge(PrivacyCost(Fraction(1, 5)), {**META, "query": "sum"})
    led.record(a, "released", {"noise_scale": 2.5, "ci_half_width": Fraction(7, 2)})
    led.record(b, "failed", {"error": "TypeError"})
    rows = led.entries()
    assert [r["id"] for r in rows] == [a, b]
    assert [r["status"] for r in rows] == ["released", "failed"]
    assert rows[0]["details"] == {"noise_scale": 2.5, "ci_half_width": 3.5}
    assert rows[0]["columns"] == ["age"]
    assert rows[1]["epsilon"] == Fraction(1, 5)
    assert rows[1]["spent_epsilon"] == Fraction(3, 10)
    assert led.spent()[0] == Fraction(3, 10)  # a failed release keeps its charge
    with pytest.raises(LedgerError):
        led.record(a, "failed", {})  # an outcome is recorded once
    with pytest.raises(LedgerError):
        led.record(999, "released", {})
    with pytest.raises(ValidationError):
        led.record(a, "done", {})
    with pytest.raises(ValidationError):
        led.charge((0.1, 0), META)


def test_gaussian_charges_compose_in_zcdp_and_never_go_negative(make_ledger: Any) -> None:
    led = make_ledger(Fraction(3), Fraction(1, 10**5))
    d = Fraction(1, 10**7)
    rho = zcdp_rho_for_epsilon(Fraction(1, 5), d)
    g = PrivacyCost(Fraction(1, 5), d, rho)
    tiny = PrivacyCost(Fraction(1, 10**6), Fraction(1, 10**6), Fraction(1, 10**14))
    last = Fraction(0)
    for cost in [g] * 10 + [tiny, PrivacyCost(Fraction(1, 10))] + [g] * 3:
        led.charge(cost, META)
        s = led.spent()
        assert s[0] >= last
        last = s[0]
    rows = led.entries()
    assert all(r["epsilon"] >= 0 and r["delta"] >= 0 for r in rows)
    assert sum(r["epsilon"] for r in rows) == led.spent()[0]
    assert sum(r["delta"] for r in rows) == led.spent()[1]
    # 13 Gaussian releases at 0.2 each cost far less than 2.6 together
    assert led.spent()[0] < Fraction(3, 2)
    assert led.spent()[0] >= spend_of(rows).epsilon


# ---- SQLite specifics ---------------------------------------------------------------------


def test_sqlite_stores_exact_fractions_and_schema(tmp_path: Path) -> None:
    p = tmp_path / "b.sqlite"
    led = SqliteLedger(p, Fraction(1), Fraction(1, 10**6), name="census")
    led.charge(PrivacyCost(Fraction(1, 3)), META)
    led.close()
    with sqlite3.connect(p) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert con.execute("SELECT app, version FROM dpframe_schema").fetchone() == (
            "dpframe-ledger", 4)
        row = con.execute("SELECT epsilon, spent_epsilon, session FROM entries").fetchone()
        assert row == ("1/3", "1/3", "census")
        assert con.execute("SELECT epsilon, delta FROM budget").fetchone() == ("1/1", "1/1000000")
    con.close()


def test_sqlite_reopen_keeps_budget_and_charges(tmp_path: Path) -> None:
    p = tmp_path / "b.sqlite"
    led = SqliteLedger(p, Fraction(1), Fraction(0))
    for _ in range(30):
        led.charge(HUNDREDTH, META)
    led.close()
    again = SqliteLedger(p, Fraction(1), Fraction(0))
    assert again.spent()[0] == Fraction(3, 10)
    assert SqliteLedger(p).total() == (Fraction(1), Fraction(0))  # opened with stored budget
    with pytest.raises(LedgerError, match="allow_budget_change"):
        SqliteLedger(p, Fraction(2), Fraction(0))
    assert again.total() == (Fraction(1), Fraction(0))
    changed = SqliteLedger(p, Fraction(2), Fraction(0), allow_budget_change=True, name="x")
    assert changed.total() == (Fraction(2), Fraction(0))
    hist = changed.budget_history()
    assert [h["epsilon"] for h in hist] == [1, 2] and "allow_budget_change" in hist[1]["note"]
    assert changed.spent()[0] == Fraction(3, 10)
    with pytest.raises(LedgerError, match="neighbouring"):
        SqliteLedger(p, Fraction(2), Fraction(0), neighbouring="change_one")


def test_sqlite_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    p = tmp_path / "no" / "such" / "b.sqlite"
    with pytest.raises(LedgerError, match="does not exist"):
        SqliteLedger(p, Fraction(1))
    assert not p.parent.exists()
    with pytest.raises(LedgerError, match="folder"):
        SqliteLedger(tmp_path, Fraction(1))
    with pytest.raises(ValidationError):
        SqliteLedger(42, Fraction(1))  # type: ignore[arg-type]
    with pytest.raises(LedgerError):
        SqliteLedger(tmp_path / "absent.sqlite", create=False)


def test_sqlite_garbage_file_is_refused_and_untouched(tmp_path: Path) -> None:
    p = tmp_path / "garbage.sqlite"
    content = os.urandom(4096)
    p.write_bytes(content)
    with pytest.raises(LedgerError, match="not a dpframe ledger"):
        SqliteLedger(p, Fraction(1))
    assert p.read_bytes() == content


def test_sqlite_foreign_database_is_refused_and_untouched(tmp_path: Path) -> None:
    p = tmp_path / "other.sqlite"
    with sqlite3.connect(p) as con:
        con.execute("CREATE TABLE people (name TEXT)")
    con.close()
    content = p.read_bytes()
    with pytest.raises(LedgerError, match="not a dpframe ledger"):
        SqliteLedger(p, Fraction(1))
    assert p.read_bytes() == content


def test_sqlite_corrupt_pages_are_a_ledger_error(tmp_path: Path) -> None:
    p = tmp_path / "b.sqlite"
    led = SqliteLedger(p, Fraction(100))
    for _ in range(200):
        led.charge(HUNDREDTH, {**META, "query": "x" * 200})
    led.close()
    with sqlite3.connect(p) as con:  # fold the WAL into the main file
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(p.read_bytes())
    assert len(data) > 3 * 4096
    data[4096 + 100 : len(data) - 100] = os.urandom(len(data) - 4096 - 200)
    p.write_bytes(bytes(data))
    with pytest.raises(LedgerError):
        led2 = SqliteLedger(p, Fraction(100))
        led2.charge(HUNDREDTH, META)
        led2.entries()


def test_sqlite_tampered_number_is_a_ledger_error(tmp_path: Path) -> None:
    p = tmp_path / "b.sqlite"
    led = SqliteLedger(p, Fraction(1))
    led.charge(HUNDREDTH, META)
    led.close()
    with sqlite3.connect(p) as con:
        con.execute("UPDATE entries SET requested_epsilon = 'abc'")
    con.close()
    with pytest.raises(LedgerError):
        SqliteLedger(p, Fraction(1)).spent()


def test_show_ledger_renders_a_table(tmp_path: Path) -> None:
    p = tmp_path / "b.sqlite"
    led = SqliteLedger(p, Fraction(1), Fraction(1, 10**6), name="census-2026")
    i = led.charge(PrivacyCost(Fraction(1, 10)), {**META, "session": "census-2026"})
    led.record(i, "released", {"noise_scale": 10.0, "ci_half_width": 29.96})
    led.close()
    out = show_ledger(p)
    for text in ("census-2026", "count", "geometric", "released", "0.1", "0.9", "29.96"):
        assert text in out
    with pytest.raises(LedgerError):
        show_ledger(tmp_path / "absent.sqlite")
    assert not (tmp_path / "absent.sqlite").exists()


# ---- concurrency --------------------------------------------------------------------------


def _hammer(path: str, attempts: int, start: Any, results: Any) -> None:
    led = SqliteLedger(path)
    start.wait()
    ok = refused = 0
    for _ in range(attempts):
        try:
            i = led.charge(HUNDREDTH, META)
            led.record(i, "released", {"noise_scale": 1.0})
            ok += 1
        except BudgetExceededError:
            refused += 1
    results.put((ok, refused))


def test_processes_hammering_one_ledger_never_overspend(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    SqliteLedger(path, Fraction(1), Fraction(0)).close()
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    results = ctx.Queue()
    procs = [ctx.Process(target=_hammer, args=(path, 40, start, results)) for _ in range(4)]
    for pr in procs:
        pr.start()
    time.sleep(0.5)
    start.set()
    outcomes = [results.get(timeout=60) for _ in procs]
    for pr in procs:
        pr.join(timeout=30)
        assert pr.exitcode == 0
    assert sum(o[0] for o in outcomes) == 100  # exactly what the budget allows
    assert sum(o[1] for o in outcomes) == 60
    led = SqliteLedger(path)
    rows = led.entries()
    assert len(rows) == 100
    assert led.spent() == (Fraction(1), Fraction(0))
    assert all(r["status"] == "released" for r in rows)
    assert [r["spent_epsilon"] for r in rows] == [Fraction(k, 100) for k in range(1, 101)]
    led.close()


# ---- crash safety -------------------------------------------------------------------------


def _charge_forever(path: str, log: str) -> None:
    led = SqliteLedger(path)
    with open(log, "a", buffering=1) as fh:
        while True:
            i = led.charge(PrivacyCost(Fraction(1, 1000)), META)
            fh.write(f"{i}\n")  # the charge has committed: the release may now be computed
            led.record(i, "released", {"noise_scale": 1.0})


def test_sigkill_at_any_instant_leaves_a_consistent_ledger(tmp_path: Path) -> None:
    path = str(tmp_path / "crash.sqlite")
    log = str(tmp_path / "committed.log")
    SqliteLedger(path, Fraction(10**6), Fraction(0)).close()
    ctx = mp.get_context("spawn")
    rnd = random.Random(1234)
    for _ in range(3):
        pr = ctx.Process(target=_charge_forever, args=(path, log))
        pr.start()
        deadline = time.monotonic() + 20
        base = Path(log).read_text().count("\n") if Path(log).exists() else 0
        while time.monotonic() < deadline:
            if Path(log).exists() and Path(log).read_text().count("\n") >= base + 20:
                break
            time.sleep(0.01)
        time.sleep(rnd.uniform(0, 0.05))
        assert pr.pid is not None
        os.kill(pr.pid, signal.SIGKILL)
        pr.join(timeout=10)
        assert pr.exitcode == -signal.SIGKILL

        led = SqliteLedger(path)
        rows = led.entries()
        committed = {int(x) for x in Path(log).read_text().split()}
        ids = [r["id"] for r in rows]
        assert committed <= set(ids)  # no committed charge is ever lost
        assert ids == list(range(1, len(ids) + 1))
        assert sum(1 for r in rows if r["status"] == "charged") <= len(committed) and all(
            r["status"] in ("charged", "released") for r in rows
        )
        spent = led.spent()
        assert spent[0] == Fraction(len(rows), 1000) == rows[-1]["spent_epsilon"]
        assert spent[0] == session_spend(
            PrivacyCost(r["requested_epsilon"], r["requested_delta"]) for r in rows
        ).epsilon
        led.close()
        with sqlite3.connect(path) as con:
            assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        con.close()


def test_errors_are_dpframe_errors() -> None:
    assert issubclass(LedgerError, DPError) and issubclass(BudgetExceededError, DPError)


def test_opening_without_budget_needs_an_existing_ledger(tmp_path: Path) -> None:
    p = tmp_path / "new.sqlite"
    with pytest.raises(LedgerError, match="no ledger"):
        SqliteLedger(p)
    assert not p.exists()
    with pytest.raises(ValidationError):
        SqliteLedger(p, 0.0)
    with pytest.raises(ValidationError):
        MemoryLedger(1.0, 1.0)
