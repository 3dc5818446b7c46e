"""``dpframe ledger show PATH``: render a SQLite ledger as tables (budget history, entries)."""

from __future__ import annotations

import io
import os

from ._render import budget_table, entries_table, num
from .core.accounting import posterior_bound
from .errors import LedgerError
from .ledger import SqliteLedger


def show_ledger(path: str | os.PathLike[str], *, width: int = 160) -> str:
    """The ledger at ``path`` as plain-text tables. Opens it without changing its budget.

    Raises :class:`~dpframe.errors.LedgerError` when there is no dpframe ledger at ``path``.
    """
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    if not os.path.exists(os.fspath(path)):
        raise LedgerError(f"no ledger at {os.fspath(path)}")
    ledger = SqliteLedger(path, create=False)
    try:
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

    counts = {s: sum(1 for e in entries if e["status"] == s) for s in ("released", "failed")}
    table = entries_table(entries, f"Entries: {len(entries)} ({counts['released']} released, "
                                   f"{counts['failed']} failed)", with_session=True)
    console.print(table)
    console.print(
        f"At epsilon = {float(se):.4g} spent, a 50% prior belief about any one person can rise "
        f"to at most {100 * posterior_bound(float(se), 0.5):.3g}%."
    )
    return buf.getvalue()


__all__ = ["show_ledger"]
