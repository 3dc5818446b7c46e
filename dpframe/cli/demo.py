"""``dpframe demo``: synthetic people, eight releases under one budget, Parquet files.

The demo runs like a release spec (everything checked and the whole cost priced before the
first charge) on a pandas frame of built-in synthetic people (no real person)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ..errors import BudgetExceededError
from .outputs import check_output_targets
from .render import escape, fmt, release_rows, table
from .runner import QueryResult, ReleaseJob, RunLog, RunReport, price_run
from .spec import QuerySpec as Q

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from .pricing import RunPlan

#: (title, query, rows shown) of each demo release.
STEPS: list[tuple[str, Q, int | None]] = [
    ("count of people", Q("people", "count", 0.05), None),
    ("total income $", Q("income_total", "sum", 0.1, column="income"), None),
    ("mean income $", Q("income_mean", "mean", 0.1, column="income"), None),
    ("mean visits/year", Q("visits_mean", "mean", 0.05, column="visits"), None),
    ("people by age", Q("age_histogram", "histogram", 0.1, column="age",
                        bins=[0, 18, 30, 50, 70, 100]), None),
    ("max age ¹", Q("age_max", "max", 0.05, column="age", resolution=101), None),
    ("income by state $", Q("income_by_state", "sum", 0.2, column="income", by=["state"]), 5),
    ("people by city ²", Q("cities", "count", 0.2, by=["city"], private_keys=True,
                           delta=1e-6), 5),
]
BOUNDS = {"age": (0, 100), "income": (0, 250_000), "visits": (0, 30)}
SESSION = "dpframe-demo"
DELTA = 1e-6
_COLUMNS = (("statistic", "left"), ("group", "left"), ("value", "right"), ("± 95%", "right"),
            ("epsilon", "right"))


def run_demo(con: Console, rows: int, out: Path, seed: int, epsilon: float,
             ledger: Path | None, log: RunLog) -> None:
    """Generate ``rows`` synthetic people (``seed``), release the demo's statistics under
    ``epsilon`` (``ledger``: a SQLite ledger, else in memory), write them to ``out``, and print
    them with their error bounds and the budget left."""
    from ..backends.pandas import PandasBackend
    from ..datasets import STATES, people

    t0 = time.perf_counter()
    folder = out.absolute()
    ledger_path = None if ledger is None else ledger.absolute()
    check_output_targets(folder, [folder / f"{q.name}.parquet" for _, q, _ in STEPS], "--out")
    df = people(rows, seed)
    con.print(f"[bold]dpframe demo[/]: {rows:,} synthetic people (age, income, state, city, "
              f"visits), seed {seed}", markup=True)
    job = ReleaseJob(SESSION, epsilon, DELTA, PandasBackend(df),
                     {"bounds": BOUNDS, "keys": {"state": STATES}}, [q for _, q, _ in STEPS],
                     folder, ledger_path)
    with price_run(job, log, dry_run=False) as priced:
        if not priced.plan.fits:
            raise BudgetExceededError(priced.plan.over_budget(_hint(priced.plan, ledger_path)))
        report = priced.release(log)
    _print(con, report, time.perf_counter() - t0)


def _hint(plan: RunPlan, ledger: Path | None) -> str:
    """What to do when the demo does not fit."""
    if ledger is not None and plan.spent_before[0] > 0:
        return f" in the ledger {ledger}: use another --ledger file"
    return ": pass a larger --epsilon"


def _add_step(rows: Table, title: str, limit: int | None, q: QueryResult) -> None:
    assert q.release is not None
    shown, cut = release_rows(q.release, limit)
    eps = cast(float, q.release.provenance.get("epsilon"))
    for i, (g, v, h) in enumerate(shown):
        rows.add_row(title if i == 0 else "", g, v, h, fmt(eps) if i == 0 else "")
    if q.name == "cities":
        rows.add_row("", f"… {len(q.release.keys)} cities released", "", "", "")
    elif cut:
        rows.add_row("", f"… {cut} more in {q.name}.parquet", "", "", "")
    rows.add_section()


def _print(con: Console, report: RunReport, seconds: float) -> None:
    released = table("Released statistics, with 95% error bounds", _COLUMNS)
    for (title, _, limit), q in zip(STEPS, report.queries, strict=True):
        _add_step(released, title, limit, q)
    con.print(released)
    con.print("¹ exponential mechanism over a grid of candidate values (no ± interval). "
              "² DP key selection: only cities whose noisy count of people clears a "
              "threshold are released, so rare cities stay hidden.")
    (ce, cd), (re_, rd) = report.charged, report.remaining
    to = "" if report.ledger is None else f" to {escape(report.ledger)}"
    con.print(f"Budget: this demo charged epsilon {ce:.4g}, delta {cd:.3g}{to}; spent epsilon "
              f"{report.spent[0]:.4g} of {report.budget[0]:.4g}; [bold]left: epsilon "
              f"{re_:.4g}, delta {rd:.3g}[/]", markup=True)
    con.print(f"Wrote {len(report.files)} Parquet releases with provenance to {report.folder} "
              f"(dpf.read_provenance(path) or any Parquet reader's key-value metadata "
              f"'dpframe'); {seconds:.1f} s.", markup=False)
