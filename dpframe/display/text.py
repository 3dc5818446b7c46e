"""Rich tables shared by ``session.report()`` and ``dpframe ledger show`` (public data only:
budgets, charges and the public parameters of each release)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from ..core.numbers import format_number

#: A number for display (6 significant digits; empty for None): the one formatter's
#: ``display`` style.
num = functools.partial(format_number, style="display")


def budget_table(total: tuple[Fraction, Fraction], spent: tuple[Fraction, Fraction]) -> Any:
    """Total, spent and left, for epsilon and delta."""
    from rich.table import Table

    table = Table(title="Budget")
    for c in ("", "total", "spent", "left"):
        table.add_column(c, justify="right" if c else "left")
    for name, t, s in (("epsilon", total[0], spent[0]), ("delta", total[1], spent[1])):
        table.add_row(name, num(t), num(s), num(max(t - s, 0)))
    return table


def ci_text(details: dict[str, Any]) -> str:
    """An entry's interval half-width in the result's units: a mean's as ``a/n`` (n rows)."""
    if details.get("ci_half_width") is None and details.get("ci_half_width_times_rows"):
        return f"{num(details['ci_half_width_times_rows'])}/n"
    return num(details.get("ci_half_width"))


def diagnostics_text(diagnostics: Any) -> str:
    """``diagnostics=``'s noisy counts as ``"rows clamped ~N [lo, hi], rows dropped ~M [lo,
    hi]"`` (empty when there are none): the bias an interval about the clamped value cannot
    show. Reads ``{name: DPInt}`` or the core's ``{name: {"value", "lower", "upper"}}``."""
    if not isinstance(diagnostics, dict):
        return ""
    parts = []
    for name in ("rows_clamped", "rows_dropped"):
        v = diagnostics.get(name)
        if v is None:
            continue
        value, lo, hi = ((v["value"], v["lower"], v["upper"]) if isinstance(v, dict)
                         else (int(v), getattr(v, "lower", None), getattr(v, "upper", None)))
        parts.append(f"{name.replace('_', ' ')} ~{value} [{num(lo)}, {num(hi)}]")
    return ", ".join(parts)


def coverage_text(provenance: Any, grouped: bool = True) -> str:
    """What a release's values and intervals are about, in words (empty when there is nothing
    to say: a count of rows, each row protected): the declared clamp bounds of each measure
    (``"bounds"``) and, at the unit level, the contribution bounds T, k and R, e.g. ``"values
    clamped to [-60, 240]; at most 200 rows per unit"``. An interval covers that clamped,
    bounded value, not the raw one; ``diagnostics=`` counts the rows clamped and dropped.
    ``grouped``: the release is grouped (an ungrouped one has one group: k is not named).
    A histogram or grouped count also states its form: projected onto non-negative values
    (the default) or raw (``postprocess=None``).
    Public: declared bounds only. A provenance stating ``"covers"`` (the engine writes it)
    gives that."""
    if not isinstance(provenance, dict):
        return ""
    if isinstance(provenance.get("covers"), str):
        return str(provenance["covers"])
    parts = (_clamp_text(provenance.get("measures") or []),
             _contribution_text(provenance, grouped),
             _form_text(provenance.get("measures") or []))
    return "; ".join(p for p in parts if p)


#: How a histogram's or grouped count's form is stated (``"postprocess"`` of its measure).
FORM_TEXT = {
    "nonnegative": "counts projected onto non-negative values keeping their noisy total "
                   "(biased toward 0 near 0; interval: the raw one cut at 0, same coverage; "
                   "postprocess=None for the raw counts)",
    None: "raw noisy counts (unbiased, may be negative; postprocess=None)",
}


def _form_text(measures: Sequence[Any]) -> str:
    """Which form the counts of a histogram or grouped count are in (their measure's
    ``"postprocess"``); empty for measures without one, and for ``bounds()`` (two numbers
    read off a raw histogram, not counts)."""
    for m in measures:
        if isinstance(m, dict) and "postprocess" in m and m.get("aggregate") != "bounds":
            return FORM_TEXT.get(m["postprocess"], f"counts post-processed: {m['postprocess']}")
    return ""


def _clamp_text(measures: Sequence[Any]) -> str:
    """``"values clamped to [lo, hi]"`` (one clamped column) or ``"x clamped to [lo, hi], y
    clamped to [lo, hi]"``, from the measures' ``"bounds"``; empty when none clamps."""
    clamps: dict[object, list[float]] = {}
    for m in measures:
        b = m.get("bounds") if isinstance(m, dict) else None
        if b is not None:
            clamps.setdefault(m.get("column"), b)
    named = len(clamps) > 1
    return ", ".join(f"{c if named else 'values'} clamped to [{num(b[0])}, {num(b[1])}]"
                     for c, b in clamps.items())


def _contribution_text(provenance: dict[str, Any], grouped: bool) -> str:
    """``"at most T rows per unit[, in at most k groups][, at most R rows per group]"`` at the
    unit level (k and R named where they bound more than T does), empty at the row level."""
    cap = provenance.get("max_rows_per_unit")
    if provenance.get("privacy_unit") is None or cap is None:
        return ""
    text = f"at most {num(cap)} rows per unit"
    groups, rows = provenance.get("max_groups_per_unit"), provenance.get("max_rows_per_group")
    if grouped and groups is not None and groups < cap:
        text += f", in at most {num(groups)} group{'' if groups == 1 else 's'}"
    if rows is not None and rows < cap:
        text += f", at most {num(rows)} rows per group"
    return text


def entries_summary(entries: Sequence[dict[str, Any]], label: str = "Entries") -> str:
    """``"<label>: N (a released, b failed, c interrupted)"``: every status is counted, so the
    parts add up to N. An entry still ``charged`` was charged by a query that has not recorded
    its outcome (interrupted, or still running): its budget is spent."""
    counts = {s: sum(1 for e in entries if e["status"] == s)
              for s in ("released", "failed", "charged")}
    parts = [f"{counts['released']} released", f"{counts['failed']} failed"]
    if counts["charged"]:
        parts.append(f"{counts['charged']} interrupted or running (charged, no outcome)")
    return f"{label}: {len(entries)} ({', '.join(parts)})"


def _entry_columns(with_session: bool) -> list[str]:
    return ["id", "time (UTC)", *(["session"] if with_session else []), "query", "columns",
            "mechanism", "epsilon", "delta", "noise scale", "± CI", "status",
            *(["seeded"] if with_session else [])]


def _entry_row(e: dict[str, Any], with_session: bool) -> list[str]:
    det = e.get("details") or {}
    row = [str(e["id"]), str(e["time"])[:19].replace("T", " ")]
    if with_session:
        row.append(e.get("session") or "")
    plan = det.get("plan") or {}
    covers = coverage_text(plan)
    diag = diagnostics_text(plan.get("diagnostics"))
    row += [str(e["query"]) + (f" (covers {covers})" if covers else "")
            + (f" ({diag})" if diag else ""),
            ", ".join(e.get("columns") or []), str(e["mechanism"]),
            num(e["epsilon"]), num(e["delta"]), num(det.get("noise_scale")),
            ci_text(det), str(e["status"])]
    if with_session:
        row.append("yes (insecure)" if e.get("seeded") else "")
    return row


def entries_table(entries: Sequence[dict[str, Any]], title: str, *,
                  with_session: bool = False) -> Any:
    """One row per ledger entry: what was released, its charge, noise scale and status."""
    from rich.table import Table

    table = Table(title=title)
    for c in _entry_columns(with_session):
        table.add_column(
            c,
            justify="right" if c in ("id", "epsilon", "delta") else "left",
            no_wrap=c in ("id", "time (UTC)", "epsilon", "delta", "status"),
            overflow="fold",
        )
    for e in entries:
        table.add_row(*_entry_row(e, with_session))
    return table
