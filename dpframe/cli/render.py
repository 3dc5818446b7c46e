"""What the commands print: tables of run plans and releases, and the status of a run.

Everything shown is public: plans, released (noisy) values, ledger entries and file names."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.numbers import format_number
from ..display.text import coverage_text, diagnostics_text
from ..export import file_rows
from .runner import QueryResult, RunLog, RunReport

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from ..core.apply import CoreRelease

#: (group, value, ± half-width) of a released value before formatting.
_Row = tuple[str, float, str]
_PLAN_COLUMNS = (("query", "left"), ("aggregate", "left"), ("mechanism", "left"),
                 ("epsilon", "right"), ("delta", "right"), ("noise scale", "right"),
                 ("± 95%", "right"))
_RELEASE_COLUMNS = (("query", "left"), ("epsilon", "right"), ("rows", "right"),
                    ("± 95% (first row)", "right"), ("ledger entry", "right"), ("file", "left"))


def console(stderr: bool = False) -> Console:
    """A console on stdout (or stderr), 110 columns wide when not a terminal."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(file=stream, width=None if stream.isatty() else 110, soft_wrap=True,
                   highlight=False)


def escape(text: object) -> str:
    """``text`` as literal text in rich markup."""
    from rich.markup import escape as rich_escape

    return rich_escape(str(text))


#: A number for a table (grouped thousands, 4 significant digits, "—" if none): the one
#: formatter's ``table`` style.
fmt = functools.partial(format_number, style="table")


def table(title: str, columns: Sequence[tuple[str, str]]) -> Table:
    """An empty table with ``(name, justify)`` columns that fold long cells."""
    from rich.table import Table

    out = Table(title=title)
    for name, justify in columns:
        out.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    return out


# -- rows of released values ----------------------------------------------------------------------

def release_rows(release: CoreRelease, limit: int | None = None
                 ) -> tuple[list[tuple[str, str, str]], int]:
    """(group, value, ± half-width) display rows of a release; and how many rows were cut
    (beyond ``limit``, the largest values are kept)."""
    rows: list[_Row] = []
    histogram = release.measures[0].layout is not None
    label = len(release.measures) > 1
    for m in release.measures:
        rows += _bin_rows(release, m) if histogram else _group_rows(release, m, label)
    cut = 0
    if limit is not None and len(rows) > limit:
        cut = len(rows) - limit
        rows = sorted(rows, key=lambda r: -r[1])[:limit]
    return [(g, fmt(v), h) for g, v, h in rows], cut


def _arrays(m: Any) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """A measure's values and interval bounds as float arrays."""
    def floats(a: Any) -> np.ndarray | None:
        return None if a is None else np.asarray(a, dtype=np.float64)

    values = floats(m.values)
    assert values is not None
    return values, floats(m.lower), floats(m.upper)


def _half_width(v: float, lo: float, hi: float) -> float:
    return float(max(v - lo, hi - v))


def _bin_rows(release: CoreRelease, m: Any) -> list[_Row]:
    """A histogram's rows: one per group and bin, named by the bin's interval."""
    vals, lo, hi = _arrays(m)
    assert lo is not None and hi is not None and m.layout is not None
    edges, closed = m.layout.edges, "(]" if m.layout.right else "[)"
    rows: list[_Row] = []
    for g in range(len(release.keys)):
        for b in range(len(edges) - 1):
            name = f"{closed[0]}{fmt(edges[b])}, {fmt(edges[b + 1])}{closed[1]}"
            v = float(vals[g, b])
            rows.append((name, v, fmt(_half_width(v, lo[g, b], hi[g, b]))))
    return rows


def _level_rows(release: CoreRelease, m: Any) -> list[_Row]:
    """Several quantile levels released jointly: one row per group and level, named by the
    key and the level (``quantile[0.1]``); no interval."""
    vals = np.asarray(m.values, dtype=np.float64)
    levels = m.description.get("levels") or []
    rows: list[_Row] = []
    for g, key in enumerate(release.keys):
        name = ", ".join(str(k) for k in key)
        for j, q in enumerate(levels):
            rows.append((f"{name} {m.name}[{fmt(q)}]".strip(), float(vals[g, j]), fmt(None)))
    return rows


def _group_rows(release: CoreRelease, m: Any, label: bool) -> list[_Row]:
    """One row per group, named by its key (and the measure's name when there are several)."""
    if np.ndim(m.values) == 2:
        return _level_rows(release, m)
    vals, lo, hi = _arrays(m)
    rows: list[_Row] = []
    for g, key in enumerate(release.keys):
        v = float(vals[g])
        hw = None
        if lo is not None and hi is not None and not (np.isnan(lo[g]) or np.isnan(hi[g])):
            hw = _half_width(v, lo[g], hi[g])
        name = ", ".join(str(k) for k in key)
        rows.append((f"{name} {m.name}".strip() if label and m.name else name, v, fmt(hw)))
    return rows


# -- dpframe run ---------------------------------------------------------------------------------

def _error_bound(m: Mapping[str, Any]) -> str:
    """A measure's 95% error bound, in the terms its mechanism allows before any data."""
    if m.get("ci_half_width_times_rows") is not None:  # a mean: in its own units
        return f"±{fmt(m.get('ci_half_width_times_rows'))} / n rows"
    if m.get("count_noise_scale") is not None:  # var / std: depends on the rows
        return (f"sum ±{fmt(m.get('sum_ci_half_width'))}, "
                f"count ±{fmt(m.get('count_ci_half_width'))}")
    if m.get("ci_half_width") is None and m.get("rank_error") is not None:
        return f"rank ±{fmt(m.get('rank_error'))}"
    return fmt(m.get("ci_half_width"))


def _plan_rows(q: QueryResult) -> list[tuple[str, ...]]:
    """A query's rows in the dry-run table: one per measure, and its key selection."""
    rows: list[tuple[str, ...]] = [
        (q.name if i == 0 else "", f"{m.get('aggregate')}({m.get('column') or ''})",
         str(m.get("mechanism")).replace(" (permute-and-flip)", ""), fmt(m.get("epsilon")),
         fmt(m.get("delta")), fmt(m.get("noise_scale")), _error_bound(m))
        for i, m in enumerate(q.plan.get("measures", []))]
    sel = q.plan.get("key_selection")
    if sel:
        rows.append(("", "key selection", str(sel.get("mechanism")), fmt(sel.get("epsilon")),
                     fmt(sel.get("delta")), fmt(sel.get("noise_scale")),
                     f"threshold {sel.get('threshold')}"))
    diag = q.plan.get("diagnostics")
    if diag:  # two geometric counts, each at half of its epsilon
        rows.append(("", "diagnostics (rows clamped, dropped)", "geometric",
                     fmt(diag.get("epsilon")), "0", fmt(diag.get("noise_scale")),
                     fmt(diag.get("ci_half_width"))))
    return rows


def print_plan(con: Console, report: RunReport, suffix: str) -> None:
    """A dry run: each query's mechanisms and error bounds, the outputs, and the budget."""
    plans = table(f"Dry run of {report.name!r}: no data scanned, nothing spent", _PLAN_COLUMNS)
    for q in report.queries:
        for row in _plan_rows(q):
            plans.add_row(*row)
    con.print(plans)
    con.print(f"Outputs: {report.folder}{os.sep}<query>{suffix}", markup=False)
    plan, ledger = report.plan, report.ledger
    (te, td), (sb, sa) = plan.total, (plan.spent_before, plan.spent_after)
    where = str(ledger) if ledger is not None else "a new in-memory ledger"
    verdict = "[bold green]fits[/]" if plan.fits else "[bold red]does NOT fit[/]"
    con.print(f"Ledger: {where}. Budget epsilon {float(te):.6g}, delta {float(td):.3g}; "
              f"spent so far epsilon {float(sb[0]):.6g}, delta {float(sb[1]):.3g}.", markup=False)
    con.print(f"This run would charge epsilon {float(sa[0] - sb[0]):.6g}, delta "
              f"{float(sa[1] - sb[1]):.3g}, leaving epsilon {float(te - sa[0]):.6g}, delta "
              f"{float(td - sa[1]):.3g}: it {verdict}.", markup=True)
    if ledger is not None and not ledger.exists():
        con.print(f"(the ledger {ledger} does not exist yet: a real run creates it)",
                  markup=False)
    _earlier_note(con, report, "holds", "a real run would charge its budget again")


def _release_row(q: QueryResult) -> tuple[str, ...]:
    assert q.release is not None and q.path is not None
    shown, _ = release_rows(q.release)
    diag = diagnostics_text(q.release.provenance.get("diagnostics"))
    covers = coverage_text(q.release.provenance)
    return (q.name + (f" (covers {covers})" if covers else "") + (f" ({diag})" if diag else ""),
            fmt(q.epsilon), str(file_rows(q.release)),
            shown[0][2] if shown else "—", f"#{q.ledger_entry}", q.path.name)


def print_release(con: Console, report: RunReport) -> None:
    """A run: each query's ledger entry and file, what the run charged and the budget left."""
    releases = table(f"Release {report.name!r}", _RELEASE_COLUMNS)
    for q in report.queries:
        releases.add_row(*_release_row(q))
    con.print(releases)
    n = len(report.files)
    con.print(f"Wrote {n} file{'s' if n != 1 else ''} with provenance to {report.folder}",
              markup=False)
    (ce, cd), (re_, rd) = report.charged, report.remaining
    con.print(f"Charged epsilon {ce:.6g}, delta {cd:.3g} to {report.ledger}; spent "
              f"{report.spent[0]:.6g} of {report.budget[0]:.6g}, left epsilon {re_:.6g}, "
              f"delta {rd:.3g}.", markup=False)
    _earlier_note(con, report, "held", "re-running a spec charges its budget again")


def print_replay(con: Console, report: RunReport) -> None:
    """A re-run of a recorded run id: each file restored from the ledger or left intact, and
    the queries its first run did not record, released (charged) now."""
    done = report.replayed or []
    title = (f"Run id {report.run_id!r} was released (ledger entries "
             f"{', '.join(f'#{d.ledger_entry}' for d in done)}): replayed from the ledger, "
             "no charge, no noise drawn")
    files = table(title, (("query", "left"), ("file", "left"), ("action", "left")))
    for d in done:
        files.add_row(d.query, str(d.path), d.action)
    con.print(files)
    fresh = _fresh_note(con, report)
    n = sum(d.action != "intact" for d in done)
    verb = "would restore" if report.dry_run else "restored"
    con.print(f"{verb} {n} of {len(done)} file(s) in {report.folder} byte-identical to the first "
              f"run; spent {report.spent[0]:.6g} of {report.budget[0]:.6g}"
              f"{'' if fresh else ' (unchanged)'}.", markup=False)


def _fresh_note(con: Console, report: RunReport) -> bool:
    """Say which queries of a replayed run id its first run did not record (released and
    charged now); whether there are any."""
    fresh = [q.name for q in report.queries if q.status in ("released", "planned")]
    if fresh:
        plan, dry = report.plan, report.dry_run
        con.print(f"{'Would release' if dry else 'Released'} {', '.join(fresh)} (charged by "
                  f"the first run, not recorded): {'would charge' if dry else 'charged'} "
                  f"epsilon {float(plan.spent_after[0] - plan.spent_before[0]):.6g} again.",
                  markup=False)
    return bool(fresh)


def _earlier_note(con: Console, report: RunReport, verb: str, what: str) -> None:
    """The releases of the same session name the ledger had before the run, if any."""
    earlier = report.earlier_releases
    if earlier:
        runs = earlier // max(len(report.queries), 1)
        con.print(f"[bold yellow]note:[/] this ledger already {verb} {earlier} releases "
                  f"from {escape(repr(report.name))} (about {runs} earlier run(s)); {what}.",
                  markup=True)


# -- the status of a run that stopped ------------------------------------------------------------

def run_status(log: RunLog) -> str:
    """What a run charged and wrote, in words (true at any point of the run)."""
    if not log.charged and not log.written and log.charging is None:
        return "nothing was charged and no release file was written"
    parts = [_charged(log)]
    if log.charging is not None:
        parts.append(f"the charge of query {log.charging!r} was under way: dpframe ledger "
                     "show tells whether it was recorded")
    parts.append(_written(log))
    if log.unwritten:
        parts.append(f"the release of {', '.join(f'#{i}' for i in log.unwritten)} is in the "
                     "ledger but its file was not written")
    return "; ".join(parts)


def _charged(log: RunLog) -> str:
    if not log.charged:
        return "nothing was charged"
    n = len(log.charged)
    text = (f"this run charged {n} ledger entr{'y' if n == 1 else 'ies'} "
            f"({', '.join(f'#{i}' for i in log.charged)})")
    if log.status is None:
        return text + " (dpframe ledger show gives their status)"
    return f"{text}: {_by_status(log.charged, log.status)}"


def _by_status(entries: list[int], status: Mapping[int, str]) -> str:
    by: dict[str, list[str]] = {}
    for i in entries:
        by.setdefault(status.get(i, "unknown"), []).append(f"#{i}")
    text = "; ".join(f"{', '.join(ids)} {s}" for s, ids in by.items())
    return text + (" (a failed entry's charge stands)" if "failed" in by else "")


def _written(log: RunLog) -> str:
    n = len(log.written)
    if not n:
        return "no release file was written"
    return f"{n} release file{'s' if n != 1 else ''} written to {log.folder}"
