"""``--json``: what ``dpframe run`` and ``dpframe ledger show`` print for schedulers.

Each document is one JSON object on stdout with a ``format`` key naming its schema and version
(``dpframe.run/1``, ``dpframe.ledger/1``, ``dpframe.error/1``); the keys below are stable within
a version (new keys may be added, none renamed or dropped). Everything in them is public: plans,
budgets, ledger entries and file names; released values stay in the release files.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from .._json import jsonable
from ..export import file_rows

if TYPE_CHECKING:
    from ..engine.ledger.sqlite import LedgerSnapshot
    from .runner import QueryResult, RunReport

RUN_FORMAT = "dpframe.run/1"
LEDGER_FORMAT = "dpframe.ledger/1"
ERROR_FORMAT = "dpframe.error/1"


def _budget(pair: tuple[Any, Any]) -> dict[str, float]:
    return {"epsilon": float(pair[0]), "delta": float(pair[1])}


def _query(q: QueryResult) -> dict[str, Any]:
    rows = None if q.release is None else file_rows(q.release)
    hints = [] if q.release is None else q.release.provenance.get("warnings", [])
    doc = {"name": q.name, "status": q.status, "epsilon": q.epsilon,
           "ledger_entry": q.ledger_entry, "path": None if q.path is None else str(q.path),
           "rows": rows, "plan": jsonable(q.plan), "warnings": jsonable(hints)}
    if q.release is not None and q.release.provenance.get("diagnostics"):
        doc["diagnostics"] = jsonable(q.release.provenance["diagnostics"])
    return doc


def run_document(report: RunReport) -> dict[str, Any]:
    """A run (or dry run) as a JSON-safe dict: the run, each query and the budget.

    Keys: ``format``, ``name``, ``dry_run``, ``fits``, ``ledger``, ``folder``, ``queries``
    (each ``name``, ``status`` ("planned" or "released"), ``epsilon``, ``ledger_entry``,
    ``path``, ``rows``, ``plan``, ``warnings``: hints read from the noisy values, such as
    :class:`~dpframe.errors.NearZeroWarning`'s), ``budget``, ``spent``, ``remaining``,
    ``charged`` (each ``{"epsilon", "delta"}``; a dry run's ``charged`` is what the run
    would charge), ``earlier_releases`` (releases of the same name the ledger held before: a
    run without a run id charges again), ``run_id``, ``replayed`` (a re-run of a recorded run
    id: nothing charged) and ``restored`` (each file of a replay: ``query``, ``path``,
    ``action`` "restored", "intact" or, dry, "would restore", ``ledger_entry``)."""
    plan = report.plan
    charged: tuple[Any, Any] = report.charged
    if report.dry_run:
        charged = (plan.spent_after[0] - plan.spent_before[0],
                   plan.spent_after[1] - plan.spent_before[1])
    return {
        "format": RUN_FORMAT,
        "name": report.name,
        "dry_run": report.dry_run,
        "fits": report.fits,
        "ledger": None if report.ledger is None else str(report.ledger),
        "folder": str(report.folder),
        "queries": [_query(q) for q in report.queries],
        "budget": _budget(report.budget),
        "spent": _budget(report.spent),
        "remaining": _budget(report.remaining),
        "charged": _budget(charged),
        "earlier_releases": report.earlier_releases,
        "run_id": report.run_id,
        "replayed": report.replayed is not None,
        "restored": [{"query": d.query, "path": str(d.path), "action": d.action,
                      "ledger_entry": d.ledger_entry} for d in report.replayed or []],
    }


def ledger_document(snap: LedgerSnapshot, verified: bool) -> dict[str, Any]:
    """A ledger as a JSON-safe dict. Keys: ``format``, ``path``, ``neighbouring``, ``budget``,
    ``spent``, ``remaining`` (each ``{"epsilon", "delta"}``), ``budget_history``, ``entries``
    (one dict per entry, as ``Session.ledger`` has them, a run record's input digest not
    shown), ``verified`` and ``chain`` (with
    ``--verify``: the chain's rows, head and schema version; else null)."""
    total, spent = snap.total, snap.spent
    return {
        "format": LEDGER_FORMAT,
        "path": str(snap.path),
        "neighbouring": snap.neighbouring,
        "budget": _budget(total),
        "spent": _budget(spent),
        "remaining": _budget((max(total[0] - spent[0], 0), max(total[1] - spent[1], 0))),
        "budget_history": jsonable(snap.budget_history),
        "entries": jsonable([_shown_entry(e) for e in snap.entries]),
        "verified": verified,
        "chain": jsonable(snap.chain) if verified else None,
    }


def _shown_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` as printed: a run record's input digest (a function of the private data,
    dpframe.cli.runids) replaced by ``"(recorded, not shown)"``."""
    run = (entry.get("details") or {}).get("run")
    if not isinstance(run, dict) or "input_digest" not in run:
        return entry
    shown = {**run, "input_digest": "(recorded, not shown)"}
    return {**entry, "details": {**entry["details"], "run": shown}}


def error_document(exit_code: int, exc: BaseException, message: str) -> dict[str, Any]:
    """A refusal or failure: ``format``, ``exit_code``, ``error`` (the exception's class name)
    and ``message`` (the same text as on stderr: it never quotes data values)."""
    return {"format": ERROR_FORMAT, "exit_code": exit_code, "error": type(exc).__name__,
            "message": message}


def emit(document: dict[str, Any]) -> None:
    """Print ``document`` as one line of JSON on stdout."""
    sys.stdout.write(json.dumps(document, sort_keys=True) + "\n")
    sys.stdout.flush()


__all__ = ["ERROR_FORMAT", "LEDGER_FORMAT", "RUN_FORMAT", "emit", "error_document",
           "ledger_document", "run_document"]
