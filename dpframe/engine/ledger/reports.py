"""What ``dpframe ledger show`` reads of a SQLite ledger (:class:`LedgerSnapshot`, read in the
transaction that verified the chain) and the checks of a ledger's opening arguments. Reads
only: nothing here writes to a ledger."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from ...core.accounting import Number
from ...core.numbers import validate_delta, validate_epsilon
from ...errors import ValidationError
from .chain import read_head
from .legacy import legacy_spent, legacy_total
from .schema import NEIGHBOURING, read_budget_history, read_entries, status_counts


def checked_path(path: Any) -> Path:
    """``path`` (user expanded), if it names a file."""
    if isinstance(path, bool) or not isinstance(path, str | os.PathLike):
        raise ValidationError(f"ledger must be a file path, not {type(path).__name__}")
    p = Path(os.fspath(path)).expanduser()
    if str(path) in ("", ":memory:"):
        raise ValidationError("ledger path must name a file (use ledger=None for memory)")
    return p


def checked_arguments(
    path: Any,
    epsilon: Number | None,
    delta: Number | None,
    neighbouring: str | None,
    allow_budget_change: bool,
    readonly: bool,
) -> tuple[Path, Fraction | None, Fraction]:
    """The ledger's absolute path and budget, once the arguments are checked
    (``ValidationError``)."""
    p = checked_path(path)
    if neighbouring is not None and neighbouring not in NEIGHBOURING:
        raise ValidationError(f"neighbouring must be one of {NEIGHBOURING}")
    if readonly and (epsilon is not None or allow_budget_change):
        raise ValidationError("a ledger opened read-only cannot be given a budget")
    eps_total = None if epsilon is None else validate_epsilon(epsilon)
    delta_total = validate_delta(0 if delta is None else delta)
    return p.absolute(), eps_total, delta_total


@dataclass(frozen=True)
class LedgerSnapshot:
    """A whole ledger read in one transaction (:meth:`.SqliteLedger.read_snapshot`)."""

    path: Path
    neighbouring: str
    total: tuple[Fraction, Fraction]
    spent: tuple[Fraction, Fraction]
    budget_history: list[dict[str, Any]]
    entries: list[dict[str, Any]]
    #: How many entries the ledger holds with each status (``entries`` may be the last ones).
    counts: dict[str, int]
    #: The chain's verification (as :meth:`.SqliteLedger.verify` returns it); None for a
    #: schema-1 ledger, which has no chain.
    chain: dict[str, Any] | None


def snapshot(conn: sqlite3.Connection, path: Path, chain: dict[str, Any] | None, *,
             legacy: bool, last: int | None) -> LedgerSnapshot:
    """The snapshot of the ledger open on ``conn`` whose chain verified as ``chain`` (None: a
    schema-1 ledger, ``legacy``): every entry or the ``last`` ones."""
    if legacy:
        total, spent = legacy_total(conn), legacy_spent(conn)
    else:
        head = read_head(conn, path, check_last=False)
        total, spent = head.budget, head.spent
    return LedgerSnapshot(
        path=path,
        neighbouring=str(conn.execute("SELECT neighbouring FROM dpframe_schema").fetchone()[0]),
        total=total,
        spent=spent,
        budget_history=read_budget_history(conn),
        entries=read_entries(conn, with_unit=not legacy, last=last),
        counts=status_counts(conn),
        chain=chain,
    )
