"""``dpframe ledger show PATH [--verify]``: render a SQLite ledger as tables (budget history,
entries) without writing to it."""

from __future__ import annotations

import io
import os
from typing import TYPE_CHECKING, Any

from ..core.accounting import posterior_bound
from ..display.text import budget_table, entries_summary, entries_table, num
from ..engine.ledger import SqliteLedger
from ..errors import LedgerError

if TYPE_CHECKING:
    from rich.table import Table


def show_ledger(path: str | os.PathLike[str], *, width: int = 160, verify: bool = False) -> str:
    """The ledger at ``path`` as plain-text tables, opened read-only (it works on read-only
    media and never writes). Everything shown is read in one transaction in which the hash
    chain is verified once; ``verify=True`` also runs SQLite's full integrity check and prints
    the chain's length and head hash (keep a copy elsewhere: a forger who rewrites the whole
    chain changes it).

    Entries still ``charged`` belong to a query that was interrupted (or is running): their
    budget is spent and counted in the total.

    Raises :class:`~dpframe.errors.LedgerError` when there is no dpframe ledger at ``path`` or
    it fails verification.
    """
    from rich.console import Console
    from rich.text import Text

    if not os.path.exists(os.fspath(path)):
        raise LedgerError(f"no ledger at {os.fspath(path)}")
    snap = SqliteLedger.read_snapshot(path, integrity=verify)
    (te, td), (se, sd) = snap.total, snap.spent

    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False)
    names = sorted({h["session"] for h in snap.budget_history if h["session"]})
    head = f"dpframe ledger {snap.path} (neighbouring={snap.neighbouring}"
    head += f", session {', '.join(names)})" if names else ")"
    console.print(Text(head, style="bold"))
    console.print(budget_table((te, td), (se, sd)))
    if len(snap.budget_history) > 1:
        console.print(_history_table(snap.budget_history))
    console.print(entries_table(snap.entries, entries_summary(snap.entries), with_session=True))
    console.print(
        f"At epsilon = {float(se):.4g} spent, a 50% prior belief about any one person can rise "
        f"to at most {100 * posterior_bound(float(se), 0.5):.3g}%."
    )
    if verify and snap.chain is not None:
        report = snap.chain
        console.print(
            f"Verified: SQLite integrity check ok; hash chain of {report['rows']} rows intact "
            f"(schema {report['schema_version']}, ledger id {report['ledger_id']}); head "
            f"{report['head']}"
        )
    return buf.getvalue()


def ledger_json(path: str | os.PathLike[str], *, verify: bool = False) -> str:
    """The ledger at ``path`` as one line of JSON (``dpframe.ledger/1``, see
    :mod:`dpframe.cli.jsonout`), read as :func:`show_ledger` reads it (read-only, the chain
    verified; ``verify=True`` adds SQLite's integrity check and the chain's head)."""
    import json

    from .jsonout import ledger_document

    if not os.path.exists(os.fspath(path)):
        raise LedgerError(f"no ledger at {os.fspath(path)}")
    snap = SqliteLedger.read_snapshot(path, integrity=verify)
    return json.dumps(ledger_document(snap, verify), sort_keys=True) + "\n"


def _history_table(history: list[dict[str, Any]]) -> Table:
    """The budget history (creation, then recorded changes) as a rich table."""
    from rich.table import Table

    table = Table(title="Budget history")
    for c in ("time (UTC)", "epsilon", "delta", "session", "note"):
        table.add_column(c)
    for h in history:
        table.add_row(
            str(h["time"])[:19].replace("T", " "),
            num(h["epsilon"]),
            num(h["delta"]),
            h["session"] or "",
            h["note"],
        )
    return table


__all__ = ["ledger_json", "show_ledger"]
