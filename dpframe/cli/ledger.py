"""``dpframe ledger show PATH [--verify]``: render a SQLite ledger as tables (budget history,
entries) without writing to it."""

from __future__ import annotations

import io
import os

from ..core.accounting import posterior_bound
from ..display.text import budget_table, entries_summary, entries_table, num
from ..engine.ledger import SqliteLedger
from ..errors import LedgerError


def show_ledger(path: str | os.PathLike[str], *, width: int = 160, verify: bool = False) -> str:
    """The ledger at ``path`` as plain-text tables, opened read-only (it works on read-only
    media and never writes). The hash chain is checked on open and before the entries are read;
    ``verify=True`` also runs SQLite's full integrity check and prints the chain's length and
    head hash (keep a copy elsewhere: a forger who rewrites the whole chain changes it).

    Entries still ``charged`` belong to a query that was interrupted (or is running): their
    budget is spent and counted in the total.

    Raises :class:`~dpframe.errors.LedgerError` when there is no dpframe ledger at ``path`` or
    it fails verification.
    """
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    if not os.path.exists(os.fspath(path)):
        raise LedgerError(f"no ledger at {os.fspath(path)}")
    ledger = SqliteLedger(path, readonly=True)
    try:
        report = ledger.verify() if verify else None
        (te, td), (se, sd) = ledger.total(), ledger.spent()
        entries = ledger.entries()
        history = ledger.budget_history()
        relation = ledger.neighbouring()
    finally:
        ledger.close()

    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False)
    names = sorted({h["session"] for h in history if h["session"]})
    head = f"dpframe ledger {ledger.path} (neighbouring={relation}"
    head += f", session {', '.join(names)})" if names else ")"
    console.print(Text(head, style="bold"))

    console.print(budget_table((te, td), (se, sd)))

    if len(history) > 1:
        hist = Table(title="Budget history")
        for c in ("time (UTC)", "epsilon", "delta", "session", "note"):
            hist.add_column(c)
        for h in history:
            hist.add_row(
                str(h["time"])[:19].replace("T", " "),
                num(h["epsilon"]),
                num(h["delta"]),
                h["session"] or "",
                h["note"],
            )
        console.print(hist)

    console.print(entries_table(entries, entries_summary(entries), with_session=True))
    console.print(
        f"At epsilon = {float(se):.4g} spent, a 50% prior belief about any one person can rise "
        f"to at most {100 * posterior_bound(float(se), 0.5):.3g}%."
    )
    if report is not None:
        console.print(
            f"Verified: SQLite integrity check ok; hash chain of {report['rows']} rows intact "
            f"(schema {report['schema_version']}, ledger id {report['ledger_id']}); head "
            f"{report['head']}"
        )
    return buf.getvalue()


__all__ = ["show_ledger"]
