"""Run the privacy audit and write its result table into docs/audit.md.

    python tools/update_audit_table.py                 # full audit (a few minutes)
    python tools/update_audit_table.py --fast --print  # the fast subset, table printed only

The table goes between the markers ``<!-- audit-table:start -->`` and
``<!-- audit-table:end -->`` of the page (``--docs``, default docs/audit.md) and to standard
output; progress goes to standard error. The exit status is 1 when a release exceeds its claim
or a broken control is not caught. The scenarios live in ``tests/audit/``.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the scenarios are in tests/audit
    sys.path.insert(0, str(ROOT))

from dpframe.testing import DEFAULT_ALPHA, AuditResult  # noqa: E402
from tests.audit import SCENARIOS, Scenario  # noqa: E402

START, END = "<!-- audit-table:start -->", "<!-- audit-table:end -->"
DOCS = ROOT / "docs" / "audit.md"


def _verdict(r: AuditResult) -> str:
    if r.expect_violation:
        return "violation found (expected)" if r.violation else "NOT CAUGHT"
    return "VIOLATION" if r.violation else "ok"


def _row(r: AuditResult) -> str:
    claim = f"{r.claimed:.3g}" + (f" ({r.delta:.3g})" if r.delta else "")
    exact = r.direction == "exact"
    event = r.event if exact else f"{r.event} ({r.direction})"
    if r.delta and not exact:
        event += f"; delta lower bound {r.delta_lower_bound:.3g}"
    trials = "exact" if exact else f"{r.trials:,}"
    return (f"| {r.name} | {r.neighbours} | {claim} | {r.eps_lower_bound:.3f} | "
            f"{event} | {trials} | {r.seconds:.1f} | {_verdict(r)} |")


def markdown_table(results: Sequence[AuditResult]) -> str:
    """The results as a markdown table."""
    lines = [
        "| release | neighbouring datasets | claimed epsilon (delta) | epsilon lower bound "
        "| best event | trials per dataset | time (s) | result |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    return "\n".join([*lines, *(_row(r) for r in results)])


def run_audits(chosen: Sequence[Scenario], *, full: bool, alpha: float, seed: int
               ) -> list[AuditResult]:
    """Run the ``chosen`` scenarios, reporting each on standard error."""
    results = []
    for s in chosen:
        r = s.run(full=full, alpha=alpha, seed=seed)
        results.append(r)
        print(f"{r.name}: lower bound {r.eps_lower_bound:.3f} vs claimed {r.claimed:.3g} "
              f"({r.seconds:.1f} s)", file=sys.stderr, flush=True)
    return results


def write_between_markers(path: Path, text: str) -> None:
    """Replace what lies between :data:`START` and :data:`END` in ``path`` by ``text``."""
    page = path.read_text(encoding="utf-8")
    i, j = page.index(START) + len(START), page.index(END)
    path.write_text(page[:i] + "\n" + text + "\n" + page[j:], encoding="utf-8")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python tools/update_audit_table.py",
                                 description=main.__doc__)
    ap.add_argument("--fast", action="store_true", help="the fast subset with its trial counts")
    ap.add_argument("--only", default="", help="scenarios whose name contains this text")
    ap.add_argument("--alpha", type=float, default=DEFAULT_ALPHA)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    ap.add_argument("--docs", type=Path, default=DOCS,
                    help="markdown page to update between the markers (default docs/audit.md)")
    ap.add_argument("--print", dest="print_only", action="store_true",
                    help="print the table only, do not write the docs page")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Run the audit, print its markdown table and write it between the markers of the docs
    page. Exit status 1 when a release violates its claim or a broken control is not caught."""
    args = _parser().parse_args(argv)
    chosen = [s for s in SCENARIOS if args.only in s.name and (s.fast_trials or not args.fast)]
    t0 = time.perf_counter()
    results = run_audits(chosen, full=not args.fast, alpha=args.alpha, seed=args.seed)
    header = (f"Last run: {args.date}, {'fast subset' if args.fast else 'full audit'}, "
              f"alpha = {args.alpha:g} per release, seed {args.seed}, "
              f"{time.perf_counter() - t0:.0f} s in total.\n\n")
    table = header + markdown_table(results)
    print(table)
    if not args.print_only:
        write_between_markers(args.docs, table)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
