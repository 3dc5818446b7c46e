"""The harness itself can fail: every kind of misbehaviour the corpus looks for, simulated, is
caught (a leak in the error, its cause or context, a warning, a log line or printed output; an
error that is not a DPError or not the documented one; a charge before the refusal; no refusal
at all; a CLI message quoting a planted value)."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpframe as dpf

from ._harness import (
    SECRET_FLOAT,
    SECRET_INT,
    SECRET_TEXT,
    SECRET_UNIT,
    Case,
    expect_exit,
    expect_refusal,
    frame,
    leaks,
    ledger_session,
)


def test_leak_patterns_match_every_text_form() -> None:
    for text in (SECRET_TEXT, SECRET_UNIT.lower(), repr(SECRET_FLOAT), f"{SECRET_FLOAT:g}",
                 f"{SECRET_FLOAT:,}", f"{SECRET_FLOAT:e}", str(SECRET_INT), f"{SECRET_INT:,}",
                 f"{float(SECRET_INT):g}", f"{float(SECRET_INT):e}", repr(-SECRET_FLOAT),
                 str(np.float32(SECRET_FLOAT)), f"{SECRET_FLOAT:.2f}"):
        assert leaks(f"value {text} here"), text
    assert not leaks("epsilon 0.5 bounds (0, 10) keys ['a', 'b'] column 'x' 3f9a0c1e")


def _message(s: dpf.Session) -> None:
    raise dpf.ValidationError(f"bad value {SECRET_TEXT}")


def _context(s: dpf.Session) -> None:
    try:
        raise ValueError(f"could not convert {SECRET_TEXT!r}")
    except ValueError:
        raise dpf.ValidationError("bad input")  # noqa: B904 - the context is displayed


def _charged(s: dpf.Session) -> None:
    frame().dp(s).count(epsilon=0.1)
    raise dpf.ValidationError("refused after a charge")


def _warns(s: dpf.Session) -> None:
    warnings.warn(f"dropped {SECRET_TEXT}", UserWarning, stacklevel=1)
    raise dpf.ValidationError("bad input")


def _logs(s: dpf.Session) -> None:
    logging.getLogger("dpframe").info("row %s", SECRET_INT)
    raise dpf.ValidationError("bad input")


def _prints(s: dpf.Session) -> None:
    print(f"row {SECRET_FLOAT}")
    raise dpf.ValidationError("bad input")


def _cause(s: dpf.Session) -> None:
    raise dpf.ValidationError("bad input") from KeyError(SECRET_UNIT)


#: (simulated misbehaviour, the error class the case documents, what the harness must say)
MISBEHAVIOURS: dict[str, tuple[Callable[[dpf.Session], Any], type[BaseException], str]] = {
    "leaky-message": (_message, dpf.ValidationError, "leaked into the error"),
    "leaky-cause": (_cause, dpf.ValidationError, "leaked into the error"),
    "leaky-context": (_context, dpf.ValidationError, "leaked into the error"),
    "leaky-warning": (_warns, dpf.ValidationError, "leaked into a warning"),
    "leaky-log": (_logs, dpf.ValidationError, "leaked into a log"),
    "leaky-print": (_prints, dpf.ValidationError, "leaked into stdout"),
    "not-a-dperror": (lambda s: int("x"), dpf.ValidationError, "not a DPError"),
    "other-dperror": (lambda s: frame().dp(s, bounds={}).sum("x", epsilon=1), dpf.KeysError,
                      "expected KeysError"),
    "charged-first": (_charged, dpf.ValidationError, "charged"),
    "no-error": (lambda s: frame().dp(s).count(epsilon=0.1), dpf.ValidationError, "no error"),
}


@pytest.mark.parametrize(("run", "expect", "says"),
                         [pytest.param(r, e, m, id=i) for i, (r, e, m) in MISBEHAVIOURS.items()])
def test_refusal_harness_catches(run: Callable[[dpf.Session], Any],
                                 expect: type[BaseException], says: str, tmp_path: Path,
                                 caplog: pytest.LogCaptureFixture,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    session = ledger_session(tmp_path)
    try:
        with pytest.raises((AssertionError, pytest.fail.Exception), match=says):
            expect_refusal(Case("misbehaving", run, expect), session,
                           tmp_path / "budget.sqlite", caplog, capsys)
    finally:
        session.close()


def test_cli_harness_catches_a_quoted_value(tmp_path: Path,
                                            caplog: pytest.LogCaptureFixture) -> None:
    """``dpframe run`` names a missing spec by its path: a path holding a planted value is
    reported as a leak, and a wrong exit code as a failure."""
    with pytest.raises(AssertionError, match="leaked"):
        expect_exit(["run", str(tmp_path / f"{SECRET_TEXT}.toml")], 2, tmp_path, caplog)
    with pytest.raises(AssertionError, match="expected 3"):
        expect_exit(["run", str(tmp_path / "nope.toml")], 3, tmp_path, caplog)
