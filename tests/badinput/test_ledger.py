"""Bad ledger files: garbage, truncated, foreign, tampered with (edited, deleted, inserted rows,
a sealed head or budget changed), locked by another connection, read-only, a folder, or with
another budget or relation. Opened by a session (``Session(ledger=...)``) they raise
``LedgerError`` and charge nothing; shown by ``dpframe ledger show`` they exit 4. The file's rows
are unchanged and no planted value (from the data of the ledger's earlier releases, or written
into a cell by the tamperer) appears in any message or output."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import dpframe as dpf
from dpframe.engine.ledger import SqliteLedger

from ._harness import (
    BOUNDS,
    KEYS,
    SECRET_FLOAT,
    SECRET_TEXT,
    Case,
    assert_clean,
    assert_ledger_clean,
    channels,
    displayed_chain,
    expect_exit,
    expect_refusal,
    frame,
    raw_ledger,
)

EPS, DELTA = 5.0, 1e-5


def make_ledger(path: Path, **kw: Any) -> Path:
    """A ledger with two released entries, made from the frame holding the planted values."""
    s = dpf.Session(EPS, DELTA, ledger=str(path), name="badinput", **kw)
    priv = frame().dp(s, bounds=BOUNDS, keys=KEYS)
    priv.sum("x", epsilon=0.5)
    priv.groupby("g").mean("n", epsilon=0.5)
    s.close()
    checkpoint(path)
    return path


def checkpoint(path: Path) -> None:
    """Fold the write-ahead log into the file (so byte-level damage hits the real pages)."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def sql(*statements: str, params: tuple[Any, ...] = ()) -> Callable[[Path], None]:
    def edit(path: Path) -> None:
        conn = sqlite3.connect(path)
        try:
            for stmt in statements:
                conn.execute(stmt, params if "?" in stmt else ())
            conn.commit()
        finally:
            conn.close()
        checkpoint(path)
    return edit


def truncate(fraction: float) -> Callable[[Path], None]:
    def cut(path: Path) -> None:
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * fraction)])
    return cut


def overwrite(data: bytes) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(data)


def foreign(path: Path) -> None:
    path.unlink()
    conn = sqlite3.connect(path)
    try:
        conn.execute("CREATE TABLE patients (name TEXT, income REAL)")
        conn.execute("INSERT INTO patients VALUES (?, ?)", (SECRET_TEXT, SECRET_FLOAT))
        conn.commit()
    finally:
        conn.close()


def to_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


#: How a good ledger is damaged before it is opened (id -> edit). Each one must be refused.
DAMAGE: dict[str, Callable[[Path], None]] = {
    "garbage-bytes": overwrite(SECRET_TEXT.encode() * 200),
    "sqlite-header-then-garbage": overwrite(b"SQLite format 3\x00" + SECRET_TEXT.encode() * 200),
    "truncated-to-half": truncate(0.5),
    "truncated-to-header": truncate(100 / 16384),
    "foreign-sqlite": foreign,
    "is-a-folder": to_folder,
    "entry-epsilon-edited": sql("UPDATE entries SET epsilon = '1/1000000' WHERE id = 1"),
    "entry-spend-edited": sql("UPDATE entries SET spent_epsilon = '0', requested_epsilon = '0'"),
    "entry-query-edited-to-private-value": sql("UPDATE entries SET query = ? WHERE id = 2",
                                               params=(f"mean({SECRET_TEXT})",)),
    "entry-columns-edited-to-private-value": sql("UPDATE entries SET columns = ?",
                                                 params=(f'["{SECRET_FLOAT}"]',)),
    "last-entry-deleted": sql("DELETE FROM entries WHERE id = (SELECT max(id) FROM entries)",
                              "DELETE FROM outcomes WHERE entry_id NOT IN "
                              "(SELECT id FROM entries)"),
    "first-entry-deleted": sql("DELETE FROM entries WHERE id = 1"),
    "all-entries-deleted": sql("DELETE FROM outcomes", "DELETE FROM entries"),
    "entry-inserted": sql("INSERT INTO entries (time, session, query, columns, mechanism, "
                          "requested_epsilon, requested_delta, epsilon, delta, spent_epsilon, "
                          "spent_delta, seeded, status, details, seq) SELECT time, session, "
                          "query, columns, mechanism, requested_epsilon, requested_delta, "
                          "epsilon, delta, spent_epsilon, spent_delta, seeded, status, details, "
                          "seq + 100 FROM entries WHERE id = 1"),
    "outcome-edited": sql("UPDATE outcomes SET status = 'failed' WHERE entry_id = 1"),
    "budget-raised": sql("UPDATE budget SET epsilon = '500/1'"),
    "chain-head-spend-edited": sql("UPDATE chain_head SET spent_epsilon = '0/1'"),
    "chain-head-deleted": sql("DELETE FROM chain_head"),
    "outcomes-table-dropped": sql("DROP TABLE outcomes"),
    "schema-from-the-future": sql("UPDATE dpframe_schema SET version = 99"),
    "schema-row-deleted": sql("DELETE FROM dpframe_schema"),
}


@pytest.fixture
def good_ledger(tmp_path: Path) -> Path:
    return make_ledger(tmp_path / "budget.sqlite")


def _snapshot(path: Path) -> tuple[Any, bytes | None]:
    return raw_ledger(path), path.read_bytes() if path.is_file() else None


@pytest.mark.parametrize("damage", [pytest.param(d, id=i) for i, d in DAMAGE.items()])
def test_session_refuses_a_damaged_ledger(damage: Callable[[Path], None], good_ledger: Path,
                                          caplog: pytest.LogCaptureFixture,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    damage(good_ledger)
    before = _snapshot(good_ledger)
    with channels(caplog, capsys) as ch, pytest.raises(dpf.LedgerError) as info:
        s = dpf.Session(EPS, DELTA, ledger=str(good_ledger), name="badinput")
        try:  # reached only if the damage went unnoticed: the query must not be charged
            frame().dp(s, bounds=BOUNDS).sum("x", epsilon=0.1)
        finally:
            s.close()
    assert_clean(displayed_chain(info.value), "the error")
    ch.assert_clean()
    assert _snapshot(good_ledger) == before, "the damaged ledger was changed"


@pytest.mark.parametrize("damage", [pytest.param(d, id=i) for i, d in DAMAGE.items()])
def test_ledger_show_refuses_a_damaged_ledger(damage: Callable[[Path], None], good_ledger: Path,
                                              caplog: pytest.LogCaptureFixture) -> None:
    damage(good_ledger)
    before = _snapshot(good_ledger)
    expect_exit(["ledger", "show", str(good_ledger), "--verify"], 4, good_ledger.parent, caplog,
                ledgers=(good_ledger,) if good_ledger.is_file() else ())
    assert _snapshot(good_ledger) == before


def test_ledger_show_missing_and_empty(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    expect_exit(["ledger", "show", str(tmp_path / "nope.sqlite")], 4, tmp_path, caplog)
    (tmp_path / "empty.sqlite").write_bytes(b"")
    expect_exit(["ledger", "show", str(tmp_path / "empty.sqlite")], 4, tmp_path, caplog)


def test_ledger_show_of_a_good_ledger_quotes_no_data(good_ledger: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    """The control case: the same harness passes a sound ledger (exit 0, clean output)."""
    res = expect_exit(["ledger", "show", str(good_ledger), "--verify"], 0, good_ledger.parent,
                      caplog, ledgers=(good_ledger,))
    assert "Verified" in res.text and "Entries: 2" in res.text, res.text


# -- a sound ledger refused for what it protects, or because it cannot be written ---------------

@contextlib.contextmanager
def write_locked(path: Path) -> Iterator[None]:
    """Another connection holds the ledger's write lock."""
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN EXCLUSIVE")
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def _locked_open(path: Path) -> Any:
    with write_locked(path):
        SqliteLedger(path, EPS, DELTA, timeout=0.05)


def _other(**kw: Any) -> Callable[[Path], Any]:
    def open_(path: Path) -> Any:
        opts: dict[str, Any] = {"epsilon": EPS, "delta": DELTA, **kw}
        s = dpf.Session(ledger=str(path), **opts)
        s.close()
    return open_


OPEN_REFUSED: dict[str, Callable[[Path], Any]] = {
    "locked-on-open": _locked_open,
    "other-budget": _other(epsilon=EPS + 1),
    "other-delta": _other(delta=1e-7),
    "other-relation": _other(neighbouring="change_one"),
    "parent-folder-missing": lambda p: dpf.Session(EPS, DELTA, ledger=str(p.parent / "no" / "x")),
}


@pytest.mark.parametrize("open_", [pytest.param(f, id=i) for i, f in OPEN_REFUSED.items()])
def test_opening_refused(open_: Callable[[Path], Any], good_ledger: Path,
                         caplog: pytest.LogCaptureFixture,
                         capsys: pytest.CaptureFixture[str]) -> None:
    before = _snapshot(good_ledger)
    with channels(caplog, capsys) as ch, pytest.raises(dpf.LedgerError) as info:
        open_(good_ledger)
    assert_clean(displayed_chain(info.value), "the error")
    ch.assert_clean()
    assert raw_ledger(good_ledger) == before[0]
    assert_ledger_clean(good_ledger)


def _locked_session(path: Path) -> dpf.Session:
    return dpf.Session(EPS, DELTA, ledger=SqliteLedger(path, EPS, DELTA, timeout=0.05))


def _readonly_session(path: Path) -> dpf.Session:
    return dpf.Session(EPS, DELTA, ledger=SqliteLedger(path, readonly=True))


@pytest.mark.parametrize("opener", [pytest.param(_locked_session, id="locked-on-charge"),
                                    pytest.param(_readonly_session, id="read-only")])
def test_charge_refused(opener: Callable[[Path], dpf.Session], good_ledger: Path,
                        caplog: pytest.LogCaptureFixture,
                        capsys: pytest.CaptureFixture[str]) -> None:
    """A session whose ledger cannot be written refuses the query and charges nothing."""
    session = opener(good_ledger)
    case = Case("charge-refused",
                lambda s: frame().dp(s, bounds=BOUNDS, keys=KEYS).groupby("g").sum(
                    "x", epsilon=0.1), dpf.LedgerError)
    try:
        with write_locked(good_ledger):
            expect_refusal(case, session, good_ledger, caplog, capsys)
        assert session.spent == pytest.approx((1.0, 0.0))
    finally:
        session.close()


@pytest.mark.parametrize(("ledger", "expect"), [
    pytest.param(5, dpf.ValidationError, id="ledger-an-int"),
    pytest.param("", dpf.ValidationError, id="ledger-empty-path"),
    pytest.param(b"budget.sqlite", dpf.ValidationError, id="ledger-bytes"),
])
def test_ledger_argument_of_wrong_type(ledger: Any, expect: type[Exception],
                                       tmp_path: Path) -> None:
    with pytest.raises(expect) as info:
        dpf.Session(EPS, DELTA, ledger=ledger)
    assert_clean(displayed_chain(info.value), "the error")
    assert list(tmp_path.iterdir()) == []
