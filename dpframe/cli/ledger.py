"""``dpframe ledger show PATH [--verify]``: render a SQLite ledger as tables (budget history,
entries) without writing to it; ``dpframe ledger migrate PATH``: migrate a ledger of schema 1,
2 or 3 to schema 4 explicitly (its entries' (epsilon, delta) recorded as privacy events);
``dpframe ledger verify PATH --against RELEASE``: check that releases were charged in this
ledger's chain (a rolled-back or replaced ledger fails)."""

from __future__ import annotations

import io
import os
from typing import TYPE_CHECKING, Any

from ..core.accounting import posterior_bound
from ..display.text import budget_table, entries_table, num
from ..engine.ledger import SqliteLedger
from ..errors import LedgerError, ValidationError

if TYPE_CHECKING:
    from rich.table import Table


#: How many of the latest entries ``dpframe ledger show`` lists by default.
SHOW_LAST = 20


def show_ledger(path: str | os.PathLike[str], *, width: int = 160, verify: bool = False,
                all: bool = False, last: int = SHOW_LAST) -> str:
    """The ledger at ``path`` as plain-text tables, opened read-only (it works on read-only
    media, never writes and creates no file beside the ledger). The budget, its history, the
    count of entries by status and the ``last`` entries (every entry with ``all``; the output
    says how many are hidden) are read in one transaction in which the hash chain is verified
    since its checkpoint; ``verify=True`` verifies the whole chain instead, also runs SQLite's
    full integrity check and prints the chain's length and head hash (keep a copy elsewhere: a
    forger who rewrites the whole chain changes it).

    Entries still ``charged`` belong to a query that was interrupted (or is running): their
    budget is spent and counted in the total.

    Raises :class:`~dpframe.errors.LedgerError` when there is no dpframe ledger at ``path`` or
    it fails verification.
    """
    from rich.console import Console
    from rich.text import Text

    if not os.path.exists(os.fspath(path)):
        raise LedgerError(f"no ledger at {os.fspath(path)}")
    snap = SqliteLedger.read_snapshot(path, integrity=verify, last=None if all else last)
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
    console.print(entries_table(snap.entries, _summary(snap.counts), with_session=True))
    hidden = sum(snap.counts.values()) - len(snap.entries)
    if hidden:
        console.print(_hidden(hidden, len(snap.entries)))
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


def _hidden(hidden: int, shown: int) -> str:
    return (f"{hidden} earlier entr{'y is' if hidden == 1 else 'ies are'} hidden: the last "
            f"{shown} are listed (dpframe ledger show --all lists every entry).")


def _summary(counts: dict[str, int]) -> str:
    """What :func:`~dpframe.display.text.entries_summary` says of every entry, from the counts
    by status."""
    parts = [f"{counts.get('released', 0)} released", f"{counts.get('failed', 0)} failed"]
    if counts.get("charged"):
        parts.append(f"{counts['charged']} interrupted or running (charged, no outcome)")
    return f"Entries: {sum(counts.values())} ({', '.join(parts)})"


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


def migrate_ledger(path: str | os.PathLike[str], *, dry_run: bool = False,
                   backup: str | os.PathLike[str] | None = None) -> str:
    """``dpframe ledger migrate PATH [--dry-run] [--backup FILE]``: migrate a ledger of schema 1
    (dpframe 0.1), 2 or 3 to schema 4 explicitly, in one transaction
    (:meth:`SqliteLedger.migrate`), after writing a backup of it (``PATH.bak-<schema>`` or
    ``backup``): every entry records its stated (epsilon, delta) as its privacy event, the
    chain is (re-)hashed in the schema-4 format, and the migration is recorded in the ledger as
    a chained budget row. ``dry_run``: what it would do, nothing written. ``LedgerError``
    (nothing changed) for a downgraded, damaged or tampered file, or a backup name taken."""
    report = SqliteLedger.migrate(path, session="dpframe ledger migrate", dry_run=dry_run,
                                  backup=backup)
    where = os.fspath(path)
    if not report["migrated"]:
        return (f"ledger {where} is already at schema {report['schema_version']}: "
                "nothing to migrate, nothing changed\n")
    if dry_run:
        return (f"Dry run: ledger {where} would be migrated from schema "
                f"{report['from_schema']} to {report['schema_version']}: its "
                f"{report['entries']} entries would record their (epsilon, delta) as privacy "
                f"events, its hash chain ({report['rows']} rows with the migration's own) "
                f"re-hashed under a new ledger id, and the migration recorded in its budget "
                f"history; a backup would be written to {report['backup']} first. Its chain "
                "verifies. Nothing was written.\n")
    return (f"Backed up ledger {where} (schema {report['from_schema']}) to "
            f"{report['backup']}.\n"
            f"Migrated ledger {where} to schema {report['schema_version']} (new "
            f"ledger id {report['ledger_id']}); the migration is recorded in its budget history. "
            f"Hash chain of {report['rows']} rows; head {report['head']}\n")


#: ``verify --against``: the release's chain head is not in this ledger.
MISMATCH = "mismatch"
#: ``verify --against``: the release carries no chain head to check.
NO_HEAD = "no head"


def _release_document(source: str) -> dict[str, Any]:
    """The provenance document of the release file ``source``; ``ValidationError`` if it is
    not a readable dpframe release."""
    from ..export import read_provenance

    try:
        return read_provenance(source)
    except (OSError, ValueError) as exc:  # pyarrow's errors are ValueErrors
        if isinstance(exc, ValidationError):
            raise ValidationError(f"{source}: {exc}") from None
        raise ValidationError(f"{source} is not a readable dpframe release file") from None


def _release_head(doc: dict[str, Any]) -> dict[str, Any] | None:
    """A release document's ``ledger_head`` (None if it has none, or a malformed one)."""
    head = doc.get("ledger_head")
    if not isinstance(head, dict) or not {"ledger_id", "seq", "hash"} <= set(head):
        return None
    return head


def _against(led: SqliteLedger, ledger_id: str, rows: int, source: str,
             released: dict[int, str | None]) -> tuple[str, str]:
    """Whether the chain head in the provenance of the release file ``source`` is a row of
    this ledger's (verified) chain, and its values those the ledger recorded for its entry
    (``released``: entry id -> values digest): ``("ok" | MISMATCH | NO_HEAD, message)``."""
    doc = _release_document(source)
    head = _release_head(doc)
    if doc.get("derived"):
        derived = (doc.get("derived_from") or {}).get("ledger_entry") or "?"
        return MISMATCH, (f"{source}: its values were derived from the release of ledger "
                          f"entry {derived} (changed after it): it claims no ledger entry")
    if head is None:
        return NO_HEAD, (f"{source}: its provenance carries no ledger chain head (released "
                         "with an in-memory ledger, or by an older dpframe)")
    seq = head["seq"]
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        return MISMATCH, f"{source}: its ledger chain head is malformed"
    if head["ledger_id"] != ledger_id:
        return _against_premigration(led, source, doc, head, released)
    if seq > rows:
        return MISMATCH, (f"{source}: charged at row {seq} of the chain, but this ledger has "
                          f"only {rows} rows: it was rolled back (restored from an older copy "
                          "or truncated) since that release")
    if led.link_at(seq) != head["hash"]:
        return MISMATCH, (f"{source}: row {seq} of this ledger's chain is not the one the "
                          "release was charged at: since that release, the ledger was rolled "
                          "back and charged again, or its chain was rewritten")
    why = _values_differ(source, doc, released)
    if why is not None:
        return MISMATCH, f"{source}: {why}"
    return "ok", (f"{source}: charged at row {seq} of this ledger's chain (hash matches; its "
                  "values are the ones released)")


def _against_premigration(led: SqliteLedger, source: str, doc: dict[str, Any],
                          head: dict[str, Any], released: dict[int, str | None]
                          ) -> tuple[str, str]:
    """``--against`` a release whose chain head names another ledger identity: found when this
    ledger was migrated from that identity (its chain before the migration, recomputed and
    vouched by the head the migration recorded, holds the release's hash at its position)."""
    old = led.premigration_chain(str(head["ledger_id"]))
    if old is None:
        return MISMATCH, (f"{source}: released from a ledger with another identity: this "
                          "ledger was replaced (or re-created) since that release, or the "
                          "release did not come from it")
    version, hashes = old
    seq = head["seq"]
    if seq > len(hashes) or hashes[seq - 1] != head["hash"]:
        return MISMATCH, (f"{source}: released from this ledger before its migration from "
                          f"schema {version}, but row {seq} of its chain then was not the one "
                          "the release was charged at")
    why = _values_differ(source, doc, released)
    if why is not None:
        return MISMATCH, f"{source}: {why}"
    return "ok", (f"{source}: charged at row {seq} of this ledger's chain before its migration "
                  f"from schema {version} (ledger id {head['ledger_id']}; the hash matches the "
                  "chain its migration recorded; its values are the ones released)")


def _values_differ(source: str, doc: dict[str, Any], released: dict[int, str | None]
                   ) -> str | None:
    """Why the values of ``source`` (its provenance document ``doc``) are not those its
    ledger entry released (None when they are, or when the file or the entry predates values
    digests)."""
    from ..export import file_values_digest

    stated, entry = doc.get("values_digest"), doc.get("ledger_entry")
    if stated is None:
        return None
    if file_values_digest(source) != stated:
        return "its values are not the ones its provenance states (the file was edited)"
    recorded = released.get(entry) if isinstance(entry, int) else None
    if recorded is not None and recorded != stated:
        return f"its values are not the ones ledger entry {entry} released"
    return None


def verify_ledger(path: str | os.PathLike[str], against: list[str]) -> tuple[str, str]:
    """``dpframe ledger verify PATH [--against RELEASE]...``: verify the ledger read-only
    (SQLite integrity check, whole hash chain, accounting) and check that every release file's
    chain head is a row of its chain. Returns the worst outcome (``"ok"``, :data:`MISMATCH`,
    :data:`NO_HEAD`) and the text to print; ``LedgerError`` if the ledger fails verification."""
    if not os.path.exists(os.fspath(path)):
        raise LedgerError(f"no ledger at {os.fspath(path)}")
    led = SqliteLedger(path, readonly=True)
    try:
        report = led.verify(integrity=True)
        lines = [f"Verified ledger {led.path}: SQLite integrity check ok; hash chain of "
                 f"{report['rows']} rows intact (schema {report['schema_version']}, ledger id "
                 f"{report['ledger_id']}); head {report['head']}"]
        worst = "ok"
        released = {int(e["id"]): (e.get("details") or {}).get("values_digest")
                    for e in led.entries()} if against else {}
        for source in against:
            outcome, text = _against(led, report["ledger_id"], report["rows"], source, released)
            lines.append(("ok: " if outcome == "ok" else "FAILED: ") + text)
            if outcome == MISMATCH or (outcome == NO_HEAD and worst == "ok"):
                worst = outcome
    finally:
        led.close()
    return worst, "\n".join(lines) + "\n"


__all__ = ["MISMATCH", "NO_HEAD", "ledger_json", "migrate_ledger", "show_ledger",
           "verify_ledger"]
