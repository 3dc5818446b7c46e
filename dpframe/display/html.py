"""HTML for notebooks (``_repr_html_``): sessions and scalar results.

Only public information is shown: budgets, charges, the public parameters of each release and
released (noisy) values. Everything is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ..core.numbers import format_number
from .text import ci_text, coverage_text, diagnostics_text

_STYLE = ("font-family: var(--jp-ui-font-family, sans-serif); font-size: 13px; "
          "line-height: 1.4")


def _num(x: Any, digits: int = 6) -> str:
    """:func:`~dpframe.core.numbers.format_number` (``display``), escaped for HTML."""
    return escape(format_number(x, digits, style="display"))


def budget_bar(spent: float, total: float, width_px: int = 240) -> str:
    """A horizontal bar: the share of ``total`` spent (red above 90%)."""
    share = 0.0 if total <= 0 else min(max(spent / total, 0.0), 1.0)
    colour = "#c0392b" if share > 0.9 else "#2e86c1"
    return (f'<div style="width:{width_px}px;height:10px;background:#e5e8ec;border-radius:3px;'
            f'display:inline-block;vertical-align:middle">'
            f'<div style="width:{100 * share:.1f}%;height:100%;background:{colour};'
            f'border-radius:3px"></div></div> {100 * share:.0f}% spent')


def session_html(*, title: str, where: str, neighbouring: str, unit: str | None,
                 spent: tuple[float, float], total: tuple[float, float],
                 entries: Sequence[Mapping[str, Any]], seeded: bool, recent: int = 10) -> str:
    """A session: budget bar, privacy unit, the ``recent`` latest releases."""
    rows = []
    for e in list(entries)[-recent:][::-1]:
        det = e.get("details") or {}
        rows.append(
            "<tr>" + "".join(f"<td>{c}</td>" for c in (
                escape(str(e.get("id", ""))), _query_cell(e.get("query", ""), det),
                escape(str(e.get("mechanism", ""))), _num(e.get("epsilon")),
                _num(e.get("delta")), ci_text(det),
                escape(str(e.get("status", ""))))) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in
                   ("id", "query", "mechanism", "ε", "δ", "± CI", "status"))
    table = (f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
             if rows else "<p>No release yet.</p>")
    more = (f"<p>{len(entries) - recent} earlier releases: <code>session.ledger</code>.</p>"
            if len(entries) > recent else "")
    warn = ('<p style="color:#c0392b"><b>Seeded (insecure) noise:</b> for tests and docs only, '
            "never publish these releases.</p>" if seeded else "")
    unit_text = "not fixed yet (the first release fixes it)" if unit is None else (
        "single rows" if unit == "rows" else f"column <code>{escape(unit)}</code>")
    return (
        f'<div style="{_STYLE}"><b>{escape(title)}</b> <small>{escape(where)}, '
        f"neighbouring={escape(neighbouring)}</small><br>"
        f"ε {_num(spent[0])} of {_num(total[0])} · δ {_num(spent[1])} of {_num(total[1])} "
        f"{budget_bar(spent[0], total[0])}<br>protects: {unit_text}{warn}{table}{more}</div>")


def _query_cell(query: object, details: Mapping[str, Any]) -> str:
    """A ledger entry's query and, in small print, what its values cover."""
    covers = coverage_text(details.get("plan"))
    return escape(str(query)) + (f" <small>(covers {escape(covers)})</small>" if covers else "")


def scalar_html(value: float, provenance: Mapping[str, Any], lower: float | None,
                upper: float | None) -> str:
    """A released number: value, interval when asked for, what was released and its charge."""
    measures = provenance.get("measures") or [{}]
    m = measures[0]
    interval = ""
    if lower is not None and upper is not None:
        level = m.get("ci_level")
        pct = f"{100 * float(level):g}% " if level is not None else ""
        interval = (f" ± {_num((upper - lower) / 2, 4)} <small>({pct}interval "
                    f"[{_num(lower)}, {_num(upper)}])</small>")
    what = escape(str(provenance.get("query", "")))
    mech = escape(str(m.get("mechanism", "")))
    charge = f"ε={_num(provenance.get('epsilon'))}"
    if provenance.get("delta"):
        charge += f", δ={_num(provenance.get('delta'))}"
    seeded = " <b style='color:#c0392b'>seeded, insecure</b>" if provenance.get("seeded") else ""
    diag = diagnostics_text(provenance.get("diagnostics"))
    diag = f" · {escape(diag)}" if diag else ""
    covers = coverage_text(dict(provenance))
    covers = f" · covers {escape(covers)}" if covers else ""
    return (f'<span style="{_STYLE}"><b>{_num(value, 8)}</b>{interval} '
            f"<small>{what} · {mech} · {charge}{covers}{diag}{seeded}</small></span>")


def _keys_cell(keys: object, max_keys: int) -> str:
    """Declared public keys, the first ``max_keys`` of them and how many there are."""
    if isinstance(keys, list):
        shown = ", ".join(escape(str(v)) for v in keys[:max_keys])
        return shown + (f", … ({len(keys)} keys)" if len(keys) > max_keys else "")
    return "" if keys is None else escape(str(keys))


def _column_row(declared: Mapping[str, Any], col: Any, kind: Any, max_keys: int) -> str:
    b = declared["bounds"].get(col)
    role = "privacy unit" if col == declared["privacy_unit"] else ""
    return "<tr>" + "".join(f"<td>{c}</td>" for c in (
        f"<code>{escape(str(col))}</code>", escape(str(kind)),
        "" if b is None else f"[{_num(b[0])}, {_num(b[1])}]",
        _keys_cell(declared["keys"].get(col), max_keys), role)) + "</tr>"


def frame_html(declared: Mapping[str, Any], max_keys: int = 8) -> str:
    """A private frame: one row per column with its public kind, declared bounds and keys
    (public by declaration), and the privacy unit."""
    rows = [_column_row(declared, col, kind, max_keys)
            for col, kind in declared["columns"].items()]
    head = "".join(f"<th>{h}</th>" for h in ("column", "kind", "bounds", "public keys", ""))
    unit = declared["privacy_unit"]
    declared_bounds = [f"{n} {what}" for n, what in (
        (declared.get("max_rows_per_unit"), "rows"),
        (declared.get("max_groups_per_unit"), "groups"),
        (declared.get("max_rows_per_group"), "rows per group")) if n is not None]
    protects = "each row" if unit is None else (
        f"<code>{escape(str(unit))}</code>: at most {', '.join(declared_bounds)} per unit")
    rate = declared.get("sample_rate")
    sample = "" if rate is None else f" · Poisson sample at rate {_num(rate, 4)}"
    return (f'<div style="{_STYLE}"><b>PrivateFrame</b> <small>protects {protects}{sample}'
            f"</small><table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody>"
            "</table></div>")


__all__ = ["budget_bar", "frame_html", "scalar_html", "session_html"]
