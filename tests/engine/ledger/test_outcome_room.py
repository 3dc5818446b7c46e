"""A full ledger disk between a charge and its outcome (issue 36, item 3).

The charge reserves room for its outcome in its own transaction (:mod:`dpframe.engine.ledger.room`):
recording the outcome then writes no byte past the end of any ledger file, so it succeeds on a
disk that filled up after the charge. When it still fails, the error says that the budget was
spent (:class:`~dpframe.errors.OutcomeNotRecordedError`), never "nothing charged".
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core.accounting import PrivacyCost
from dpframe.engine.ledger import SqliteLedger
from tests.cli._support import ENV

COST = PrivacyCost(0.01, 0)
MAX_DETAILS = 16 * 1024  # dpframe.engine.ledger.room.MAX_DETAILS, the documented size


def sizes(path: Path) -> tuple[int, ...]:
    """The sizes of the ledger and its ``-wal`` and ``-shm`` files (-1: absent)."""
    return tuple(os.path.getsize(f"{path}{s}") if os.path.exists(f"{path}{s}") else -1
                 for s in ("", "-wal", "-shm"))


def statuses(path: Path) -> list[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return [r[0] for r in conn.execute("SELECT status FROM entries ORDER BY id")]


def test_recording_an_outcome_grows_no_ledger_file(tmp_path: Path) -> None:
    """Charges of 1 to 4 entries, then their outcomes one by one with details of 0 to 16 KiB:
    no outcome makes the ledger, its write-ahead log or its shared-memory file any larger (on
    a full disk it needs no new block), and the ledger verifies with every outcome recorded."""
    path = tmp_path / "l.db"
    led = SqliteLedger(path, 1000, 0)
    grown = []
    for i in range(40):
        ids = led.charge_many([(COST, {"query": f"q{i}"})] * (1 + i % 4))
        for j, entry in enumerate(ids):
            pad = (i * 977 + j * 4099) % (MAX_DETAILS - 100) if i != 7 else MAX_DETAILS - 100
            before = sizes(path)
            led.record(entry, "released" if j % 3 else "failed", {"pad": "x" * pad})
            if sizes(path) != before:
                grown.append((i, j, pad, before, sizes(path)))
    assert grown == []
    assert led.verify()["entries"] == 100
    assert set(statuses(path)) == {"released", "failed"}
    with sqlite3.connect(path) as conn:  # every room was given back
        assert conn.execute("SELECT count(*) FROM outcome_room").fetchone()[0] == 0
    led.close()


FULL_AFTER_CHARGE = """
import os, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
from dpframe.core.accounting import PrivacyCost
from dpframe.engine.ledger import SqliteLedger
path, limit = sys.argv[1], sys.argv[2]
led = SqliteLedger(path, 10, 0)
ids = led.charge_many([(PrivacyCost(0.5, 0), {"query": "q"})] * 3)
wal = os.path.getsize(path + "-wal")
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
# the disk is full from here on: no write past the end of the write-ahead log (or past 4 KiB)
resource.setrlimit(resource.RLIMIT_FSIZE, (wal if limit == "wal" else int(limit), hard))
for e in ids:
    try:
        led.record(e, "released", {"noise_scale": 2.0, "plan": {"mechanism": "laplace"}})
        print("recorded", e)
    except Exception as exc:
        print("NOT RECORDED", e, type(exc).__name__, " ".join(str(exc).split()))
"""


def _full_after_charge(tmp_path: Path, limit: str) -> tuple[Path, str]:
    path = tmp_path / "l.db"
    r = subprocess.run([sys.executable, "-c", FULL_AFTER_CHARGE, str(path), limit], env=ENV,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return path, r.stdout


@pytest.mark.slow
def test_outcomes_are_recorded_on_a_disk_full_since_the_charge(tmp_path: Path) -> None:
    """A real fault: right after a run's charge of 3 entries, RLIMIT_FSIZE forbids every write
    past the current end of the write-ahead log (EFBIG from the OS, as on a full disk). The 3
    outcomes are recorded all the same, in the room their charge reserved."""
    path, out = _full_after_charge(tmp_path, "wal")
    assert out.split("\n")[:3] == ["recorded 1", "recorded 2", "recorded 3"], out
    assert statuses(path) == ["released"] * 3
    led = SqliteLedger(path, readonly=True)
    assert led.verify()["entries"] == 3 and led.spent()[0] == pytest.approx(1.5)
    led.close()


@pytest.mark.slow
def test_an_outcome_that_cannot_be_recorded_says_the_budget_was_spent(tmp_path: Path) -> None:
    """The backstop: a limit that even the reserved room cannot beat (no write past 4 KiB of
    any file). Recording raises ``OutcomeNotRecordedError`` (a ``LedgerError``) saying the
    entry was charged and its budget spent; the entries stay ``charged``, their spend counts."""
    path, out = _full_after_charge(tmp_path, "4096")
    lines = out.strip().split("\n")
    assert len(lines) == 3, out
    assert all(line.startswith("NOT RECORDED") and "OutcomeNotRecordedError" in line
               for line in lines), out
    assert "ledger entry 1 was charged: its budget is spent" in lines[0]
    assert "The entry stays 'charged'" in lines[0] and "nothing was charged" not in out
    assert statuses(path) == ["charged"] * 3
    led = SqliteLedger(path, readonly=True)
    assert led.verify()["entries"] == 3 and led.spent()[0] == pytest.approx(1.5)
    led.close()


def test_a_release_whose_outcome_is_lost_raises_a_typed_charged_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Python-level injection: SQLite answers SQLITE_FULL when the outcome row is appended.
    The release raises ``OutcomeNotRecordedError`` (a ``DPError``) saying the budget was spent;
    the session and the ledger count the charge; the entry stays ``charged``."""
    import dpframe.engine.ledger.sqlite as ledger_sqlite

    original = ledger_sqlite.append

    def append(conn, head, table, values, extra=None):  # type: ignore[no-untyped-def]
        if table == "outcomes":
            exc = sqlite3.OperationalError("database or disk is full")
            exc.sqlite_errorcode = 13  # type: ignore[attr-defined]
            exc.sqlite_errorname = "SQLITE_FULL"  # type: ignore[attr-defined]
            raise exc
        return original(conn, head, table, values, extra)

    monkeypatch.setattr(ledger_sqlite, "append", append)
    path = tmp_path / "l.db"
    session = dpf.Session(1.0, ledger=path)
    df = pd.DataFrame({"x": range(100)})
    with pytest.raises(dpf.OutcomeNotRecordedError) as info:
        df.dp(session).count(epsilon=0.25)
    assert isinstance(info.value, dpf.LedgerError) and isinstance(info.value, dpf.DPError)
    text = " ".join(str(info.value).split())
    assert "was charged: its budget is spent" in text and "is full" in text
    assert session.spent[0] == pytest.approx(0.25)
    assert statuses(path) == ["charged"]
