"""``dpframe ledger show PATH``: render a SQLite ledger as tables (budget history, entries)."""

from __future__ import annotations

import io
import os
from typing import Any

from .core.accounting import posterior_bound
from .errors import LedgerError
from .ledger import SqliteLedger


def _num(x: Any) -> str:
    if x is None:
        return ""
    try:
        return format(float(x), ".6g")
    except (TypeError, ValueError):
        return str(x)


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

    budget = Table(title="Budget")
    for c in ("", "total", "spent", "left"):
        budget.add_column(c, justify="right" if c else "left")
    budget.add_row("epsilon", _num(te), _num(se), _num(max(te - se, 0)))
    budget.add_row("delta", _num(td), _num(sd), _num(max(td - sd, 0)))
    console.print(budget)

    if len(history) > 1:
        hist = Table(title="Budget history")
        for c in ("time (UTC)", "epsilon", "delta", "session", "note"):
            hist.add_column(c)
        for h in history:
            hist.add_row(
                str(h["time"])[:19].replace("T", " "),
                _num(h["epsilon"]),
                _num(h["delta"]),
                h["session"] or "",
                h["note"],
            )
        console.print(hist)

    counts = {s: sum(1 for e in entries if e["status"] == s) for s in ("released", "failed")}
    table = Table(
        title=f"Entries: {len(entries)} ({counts['released']} released, "
        f"{counts['failed']} failed)"
    )
    for c in ("id", "time (UTC)", "session", "query", "columns", "mechanism", "epsilon",
              "delta", "noise scale", "± CI", "status", "seeded"):
        table.add_column(
            c,
            justify="right" if c in ("id", "epsilon", "delta") else "left",
            no_wrap=c in ("id", "time (UTC)", "epsilon", "delta", "status"),
            overflow="fold",
        )
    for e in entries:
        det = e.get("details") or {}
        table.add_row(
            str(e["id"]),
            str(e["time"])[:19].replace("T", " "),
            e["session"] or "",
            str(e["query"]),
            ", ".join(e.get("columns") or []),
            str(e["mechanism"]),
            _num(e["epsilon"]),
            _num(e["delta"]),
            _num(det.get("noise_scale")),
            _num(det.get("ci_half_width")),
            str(e["status"]),
            "yes (insecure)" if e.get("seeded") else "",
        )
    console.print(table)
    console.print(
        f"At epsilon = {float(se):.4g} spent, a 50% prior belief about any one person can rise "
        f"to at most {100 * posterior_bound(float(se), 0.5):.3g}%."
    )
    return buf.getvalue()


__all__ = ["show_ledger"]
