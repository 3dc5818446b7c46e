"""The bad-input corpus's one harness (issue 12).

Every case plants distinctive private values in the data it queries and runs one bad input
through a public entry point (the pandas accessor, ``dpf.scan``, Dask, the CLI, a release spec,
a ledger file). The harness then asserts what docs/privacy.md promises of every refusal:

* the documented error: a :class:`dpframe.DPError` subclass (the CLI: its documented exit code);
* nothing charged: the session's spend is what it was, and the ledger's rows are unchanged;
* no private value in the error (its whole displayed chain), any warning, log record, printed
  output, ledger row (the SQLite file read raw, every cell of every table) or provenance;
* nothing released that is wrong (cases that must release check the released value).

Only names that dpframe 0.1 had are imported, so the corpus also runs against 0.1
(``PYTHONPATH=/work/old``), where some cases are expected to fail.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sqlite3
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from tests.engine._releases import recording

# -- the planted private values ------------------------------------------------------------------
#
# Long enough that no hex digest, uuid or timestamp in a ledger contains one by chance.

SECRET_TEXT = "SECRET-7741"            # a key value, a text value
SECRET_UNIT = "SECRET-UNIT-5521"       # a privacy-unit id
SECRET_FLOAT = 987654.321              # a float value (far outside every declared bound)
SECRET_INT = 3133731337                # an int value (far outside every declared bound)

#: Text forms of the planted values (repr, %g, thousands separators, scientific notation).
LEAK_PATTERNS = [
    re.compile(r"secret", re.IGNORECASE),
    re.compile(r"987\D?654"),           # 987654.321, 987,654, 9.87654e+05 (below)
    re.compile(r"9\.87654"),
    re.compile(r"3\D?133\D?731\D?337"),  # 3133731337, 3,133,731,337
    re.compile(r"3\.13373"),
]

#: PrivacyUnitError is new in 0.2 (0.1 had no notion of a session's unit).
PrivacyUnitError: type[dpf.DPError] = getattr(dpf, "PrivacyUnitError", dpf.ValidationError)

#: Declared (public) bounds and keys of the frame below. No planted value is declared.
BOUNDS: dict[str, tuple[float, float]] = {"x": (0.0, 10.0), "n": (0, 10)}
KEYS: dict[str, list[object]] = {"g": ["a", "b"], "k": [1, 2], "s": ["p", "q"]}
E = 1e9            # an epsilon so large that the noise is 0 (for cases that must release)


def frame() -> pd.DataFrame:
    """Six rows holding every planted value: in a float, an int, an object key, an int key, a
    string-dtype key and a privacy-unit column."""
    return pd.DataFrame({
        "x": [SECRET_FLOAT, 1.5, np.nan, 2.0, -SECRET_FLOAT, 4.0],
        "n": np.array([SECRET_INT, 1, 2, 3, 4, 5], dtype=np.int64),
        "g": [SECRET_TEXT, "a", "b", "a", None, "b"],
        "u": [SECRET_UNIT, "u2", "u2", "u3", "u4", SECRET_UNIT],
        "k": np.array([1, 2, 2, 1, SECRET_INT, 1], dtype=np.int64),
        "s": pd.array([SECRET_TEXT, "p", "q", None, "p", "q"], dtype="string"),
    })


def leaks(text: str) -> list[str]:
    """The planted values ``text`` quotes (patterns found)."""
    return [p.pattern for p in LEAK_PATTERNS if p.search(text)]


def assert_clean(text: str, where: str) -> None:
    found = leaks(text)
    assert not found, f"a private value ({found}) leaked into {where}: {text[:2000]!r}"


def displayed_chain(exc: BaseException) -> str:
    """What a traceback would show of ``exc``: every exception of its displayed chain (causes,
    and contexts unless suppressed), with type, message and arguments."""
    parts: list[str] = []
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        parts.extend(traceback.format_exception_only(type(cur), cur))
        parts.append(repr(cur))
        parts.extend(repr(a) for a in cur.args)
        nxt = cur.__cause__
        if nxt is None and not cur.__suppress_context__:
            nxt = cur.__context__
        cur = nxt
    return "\n".join(parts)


# -- reading what was recorded ---------------------------------------------------------------------

def raw_ledger(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the SQLite file at ``path``, read raw (read-only), or {}
    when there is no readable database there."""
    if not path.is_file():
        return {}
    uri = "file:" + str(path) + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error:
        return {}
    try:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: list(conn.execute(f'SELECT * FROM "{t}"')) for t in tables}
    except sqlite3.Error:
        return {}
    finally:
        conn.close()


def assert_ledger_clean(path: Path) -> None:
    """No planted value in any cell of any table of the ledger file."""
    for table, rows in raw_ledger(path).items():
        for row in rows:
            for cell in row:
                text = cell.decode("latin-1") if isinstance(cell, bytes) else str(cell)
                assert_clean(text, f"ledger table {table}")


def session_rows(session: dpf.Session) -> list[dict[str, Any]]:
    return list(session.ledger_store.entries())


def provenance_text(result: Any) -> str:
    """The provenance a result carries (``.attrs["dp"]``), as text."""
    attrs = getattr(result, "attrs", None)
    prov = attrs.get("dp") if isinstance(attrs, dict) else None
    return json.dumps(prov, default=str, sort_keys=True)


# -- capture of every side channel ---------------------------------------------------------------

@dataclass
class Channels:
    """Warnings, log records and printed output collected around one case."""

    warnings: list[warnings.WarningMessage]
    caplog: pytest.LogCaptureFixture
    capsys: pytest.CaptureFixture[str]

    def assert_clean(self) -> None:
        for w in self.warnings:
            assert_clean(f"{w.category.__name__}: {w.message}", "a warning")
        assert_clean(self.caplog.text, "a log line")
        for rec in self.caplog.records:
            assert_clean(rec.getMessage(), "a log record")
        out, err = self.capsys.readouterr()
        assert_clean(out, "stdout")
        assert_clean(err, "stderr")


@contextlib.contextmanager
def channels(caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
             ) -> Iterator[Channels]:
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        yield Channels(rec, caplog, capsys)


# -- API cases -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """One bad input: ``run(session)`` builds the input and runs it; ``expect`` is the error
    class it must raise (a DPError subclass)."""

    id: str
    run: Callable[[dpf.Session], Any]
    expect: type[BaseException]


def params(cases: Iterable[Case]) -> list[Any]:
    cases = list(cases)
    ids = [c.id for c in cases]
    dup = {i for i in ids if ids.count(i) > 1}
    assert not dup, f"duplicate case ids: {sorted(dup)}"
    return [pytest.param(c, id=c.id) for c in cases]


def ledger_session(tmp: Path, epsilon: float = 5.0, delta: float = 1e-5,
                   **kw: Any) -> dpf.Session:
    """A fresh session on a new SQLite ledger in ``tmp`` (nothing spent)."""
    return dpf.Session(epsilon, delta, ledger=str(tmp / "budget.sqlite"), **kw)


def expect_refusal(case: Case, session: dpf.Session, ledger: Path | None,
                   caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
                   ) -> BaseException:
    """Run ``case`` on ``session`` and assert the refusal contract (module docstring); return
    the error."""
    spent = session.spent
    rows_before = session_rows(session)
    raw_before = raw_ledger(ledger) if ledger is not None else None
    with channels(caplog, capsys) as ch:
        try:
            result = case.run(session)
        except BaseException as exc:
            caught: BaseException | None = exc
        else:
            caught = None
    if caught is None:
        pytest.fail(f"no error: expected {case.expect.__name__}, got a release "
                    f"{result!r:.200}")
    chain = displayed_chain(caught)
    assert isinstance(caught, dpf.DPError), (
        f"not a DPError: {type(caught).__module__}.{type(caught).__name__}: {caught}")
    assert isinstance(caught, case.expect), (
        f"expected {case.expect.__name__}, got {type(caught).__name__}: {caught}")
    assert_clean(chain, "the error")
    ch.assert_clean()
    assert session.spent == spent, f"charged {session.spent} (was {spent}) before refusing"
    assert session_rows(session) == rows_before, "the ledger got a new entry"
    if ledger is not None:
        assert raw_ledger(ledger) == raw_before, "the ledger file changed"
        assert_ledger_clean(ledger)
    return caught


def expect_release(run: Callable[[], Any], session: dpf.Session, ledger: Path | None,
                   caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
                   ) -> Any:
    """Run a case that must release (malformed values count as missing): no error, no planted
    value in any channel, the ledger or the provenance. Returns the result."""
    with channels(caplog, capsys) as ch, recording() as published:
        result = run()
    ch.assert_clean()
    assert_clean(provenance_text(result), "the provenance")
    last = published.last(session)
    assert last is not None
    assert_clean(json.dumps(last.provenance, default=str), "the release's provenance")
    assert_clean(repr(result), "the released result")
    for row in session_rows(session):
        assert_clean(json.dumps(row, default=str), "a ledger row")
    if ledger is not None:
        assert_ledger_clean(ledger)
    return result


def as_float(x: Any) -> float:
    return float(np.asarray(x, dtype=np.float64))


# -- CLI cases -------------------------------------------------------------------------------------

def _files(root: Path) -> set[Path]:
    """Every file and folder under ``root`` except SQLite's -wal/-shm companions."""
    return {p for p in root.rglob("*") if not p.name.endswith(("-wal", "-shm", "-journal"))}


@dataclass
class CliResult:
    code: int
    text: str


def invoke(args: list[str], caplog: pytest.LogCaptureFixture) -> CliResult:
    """Run ``dpframe ARGS`` in process; assert that nothing escaped as a traceback and that no
    planted value is in its output (stdout, stderr), a log line or a warning."""
    from typer.testing import CliRunner

    from dpframe.cli.commands import app

    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        r = CliRunner().invoke(app, args)
    exc = r.exception
    assert exc is None or isinstance(exc, SystemExit), "".join(
        traceback.format_exception(type(exc), exc, exc.__traceback__))
    text = r.output + "\n" + r.stdout + "\n" + r.stderr
    assert_clean(text, "the command's output")
    assert_clean(caplog.text, "a log line")
    for w in rec:
        assert_clean(str(w.message), "a warning")
    assert "Traceback" not in text, text
    return CliResult(r.exit_code, " ".join(r.output.split()))


def expect_exit(args: list[str], code: int, root: Path, caplog: pytest.LogCaptureFixture,
                ledgers: tuple[Path, ...] = ()) -> CliResult:
    """Run the CLI; assert exit ``code``, a clean output, no file created under ``root`` and the
    raw rows of every ledger in ``ledgers`` (and every ``*.sqlite`` under ``root``) unchanged."""
    watched = set(ledgers) | {p for p in root.rglob("*.sqlite") if p.is_file()}
    before = {p: raw_ledger(p) for p in watched}
    files = _files(root)
    res = invoke(args, caplog)
    assert res.code == code, f"exit {res.code}, expected {code}: {res.text[:1500]}"
    assert _files(root) == files, f"created {sorted(_files(root) - files)}"
    for p, rows in before.items():
        assert raw_ledger(p) == rows, f"ledger {p} changed"
        if not any(leaks(str(cell)) for table in rows.values() for row in table
                   for cell in row):  # (a foreign database may hold anything)
            assert_ledger_clean(p)
    if code in (2, 3, 4) and args[0] == "run":
        assert "nothing was charged" in res.text, res.text
    return res
