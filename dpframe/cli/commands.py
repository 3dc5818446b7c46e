"""The ``dpframe`` command line: ``demo``, ``run SPEC``, ``ledger show PATH``.

Exit codes (docs/cli.md):

* 0 - success;
* 1 - a release failed after its charge (the ledger entry is marked failed), or an
  unexpected error;
* 2 - usage or spec error (unknown column, missing bounds, malformed spec): nothing spent;
* 3 - budget exceeded: nothing spent (checked for the whole run before the first query);
* 4 - ledger error (missing or corrupt ledger, budget mismatch): nothing spent;
* 130 - interrupted (SIGINT): a release in progress is marked failed, its charge stands, and
  no partial output file is left.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, cast

import typer

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_SPEC = 2
EXIT_BUDGET = 3
EXIT_LEDGER = 4
EXIT_INTERRUPTED = 130
OUTPUT_SUFFIX = {"parquet": ".parquet", "arrow": ".arrow", "ipc": ".arrow"}

app = typer.Typer(
    name="dpframe",
    help="Differentially private releases from tables: a demo, declarative release specs "
    "(dpframe run), and the privacy ledger.",
    epilog="Exit codes: 0 ok; 1 a release failed after its charge; 2 spec or usage error "
    "(nothing spent); 3 budget exceeded (nothing spent); 4 ledger error; 130 interrupted. "
    "See docs/cli.md.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,  # tracebacks with local variables could print data
)
ledger_app = typer.Typer(help="Inspect a durable privacy ledger.", no_args_is_help=True)
app.add_typer(ledger_app, name="ledger")


def _console(stderr: bool = False) -> Any:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(file=stream, width=None if stream.isatty() else 110, soft_wrap=True,
                   highlight=False)


def _fail(code: int, message: str) -> typer.Exit:
    from rich.markup import escape

    # the message names spec sections ("[release] epsilon"): print it as text, not markup
    _console(stderr=True).print(f"[bold red]error:[/] {escape(message)}", markup=True)
    return typer.Exit(code)


def _escape(text: object) -> str:
    from rich.markup import escape

    return escape(str(text))


def _fmt(v: float | int | None, digits: int = 4) -> str:
    if v is None:
        return "—"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if f != f:
        return "—"
    if isinstance(v, int) or (f.is_integer() and abs(f) < 1e15):
        return f"{int(f):,}"
    if abs(f) >= 1000:
        return f"{f:,.0f}"
    return f"{f:.{digits}g}"


class _RunLog:
    """What this command charged and wrote, so that every message about it is true."""

    def __init__(self) -> None:
        self.current: str | None = None  # the query being released
        self.charging: str | None = None  # a charge in flight: its outcome is not known here
        self.charged: list[int] = []  # ledger entries this process charged
        self.released: list[int] = []
        self.written: list[Path] = []
        self.folder: Path | None = None
        self.status: dict[int, str] | None = None

    def snapshot(self, session: Any) -> None:
        """Read the ledger status of this run's entries (after a failure, before closing)."""
        try:
            mine = set(self.charged)
            self.status = {int(e["id"]): str(e["status"])
                           for e in session.ledger_store.entries() if e["id"] in mine}
        except BaseException:  # a second Ctrl-C or an unreadable ledger: say less
            self.status = None

    def summary(self) -> str:
        """What this run charged and wrote, in words."""
        if not self.charged and not self.written and self.charging is None:
            return "nothing was charged and no release file was written"
        parts: list[str] = []
        if self.charged:
            ids = ", ".join(f"#{i}" for i in self.charged)
            n = len(self.charged)
            text = f"this run charged {n} ledger entr{'y' if n == 1 else 'ies'} ({ids})"
            if self.status is None:
                text += " (dpframe ledger show gives their status)"
            else:
                by: dict[str, list[str]] = {}
                for i in self.charged:
                    by.setdefault(self.status.get(i, "unknown"), []).append(f"#{i}")
                said = [f"{', '.join(v)} {k}" for k, v in by.items()]
                text += ": " + "; ".join(said)
                if "failed" in by:
                    text += " (a failed entry's charge stands)"
            parts.append(text)
        else:
            parts.append("nothing was charged")
        if self.charging is not None:
            parts.append(f"the charge of query {self.charging!r} was under way: dpframe ledger "
                         "show tells whether it was recorded")
        if self.written:
            n = len(self.written)
            parts.append(f"{n} release file{'s' if n != 1 else ''} written to {self.folder}")
        else:
            parts.append("no release file was written")
        unwritten = [i for i in self.released if i not in self._written_entries]
        if unwritten:
            parts.append(f"the release of {', '.join(f'#{i}' for i in unwritten)} is in the "
                         "ledger but its file was not written")
        return "; ".join(parts)

    @property
    def _written_entries(self) -> list[int]:
        return self.released[: len(self.written)]


def _error_exit(exc: BaseException, debug: bool, log: _RunLog | None = None) -> typer.Exit:
    """Map an exception to the documented exit code, with a message that holds no data and,
    for a release command, says truly what was charged and written."""
    from ..errors import BudgetExceededError, LedgerError, ValidationError

    tail = "" if log is None else f". Status: {log.summary()}."
    where = "" if log is None or log.current is None else f"query {log.current!r}: "
    if isinstance(exc, KeyboardInterrupt):
        return _fail(EXIT_INTERRUPTED, f"interrupted{' during ' + where[:-2] if where else ''}"
                     f"; no partial output file is left{tail}")
    if isinstance(exc, BudgetExceededError):
        return _fail(EXIT_BUDGET, f"{where}{exc}{tail}")
    if isinstance(exc, LedgerError):
        return _fail(EXIT_LEDGER, f"{where}{exc}{tail}")
    if isinstance(exc, ValidationError):
        return _fail(EXIT_SPEC, f"{where}{exc}{tail}")
    if debug:
        raise exc
    return _fail(EXIT_FAILED, f"{where}unexpected {type(exc).__name__} (details hidden because "
                 f"they may quote data values; rerun with --debug to see them){tail}")


def _guarded(fn: Callable[[_RunLog], None], *, debug: bool = False, log: bool = True) -> None:
    """Run a command body; map every error to its exit code (nothing escapes as a traceback)."""
    run_log = _RunLog()
    try:
        fn(run_log)
    except typer.Exit:
        raise
    except BaseException as exc:
        if isinstance(exc, SystemExit):
            raise
        raise _error_exit(exc, debug, run_log if log else None) from None


def _tracked_session(log: _RunLog, epsilon: float, delta: float, **options: Any) -> Any:
    """A Session whose charges are noted in ``log`` (quietly: the seed warning is printed by
    the command, once)."""
    import dpframe as dpf

    from ..errors import BudgetExceededError, PrivacyUnitError

    class _TrackedSession(dpf.Session):
        def charge(self, cost: Any, **kwargs: Any) -> int:
            log.charging = log.current or "?"
            try:
                entry = super().charge(cost, **kwargs)
            except (BudgetExceededError, PrivacyUnitError):  # refused: nothing was charged
                log.charging = None
                raise
            log.charged.append(entry)
            log.charging = None
            return entry

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _TrackedSession(epsilon, delta, **options)


def _priced_session(log: _RunLog, ledger: Path | None, dry_run: bool,
                    make: Callable[[Path | None], Any], price: Callable[[Any], Any]
                    ) -> tuple[Any, Any]:
    """Open the session and price the whole run (``price(session)``) before any charge.

    A ledger that does not exist yet is created only once everything validated on an
    in-memory ledger (a bad spec leaves no ledger behind), and never by a dry run."""
    from ..errors import LedgerError

    if ledger is not None and not ledger.exists() and not ledger.parent.is_dir():
        # a real run would fail to create it: exit 4 in a dry run too
        raise LedgerError(f"cannot create ledger {ledger}: folder {ledger.parent} does not exist")
    if ledger is None or not ledger.exists():
        session = make(None)
        try:
            priced = price(session)
        except BaseException:
            session.close()
            raise
        if ledger is None or dry_run or not priced[-1].fits:
            return session, priced
        session.close()
    session = make(ledger)
    try:
        return session, price(session)
    except BaseException:
        session.close()
        raise


def _over_budget(plan: Any, hint: str = "") -> str:
    need = plan.spent_after[0] - plan.spent_before[0]
    left = plan.total[0] - plan.spent_before[0]
    needd = plan.spent_after[1] - plan.spent_before[1]
    leftd = plan.total[1] - plan.spent_before[1]
    return (f"privacy budget exceeded: this run needs epsilon={float(need):.6g}, "
            f"delta={float(needd):.3g} but only epsilon={float(max(left, 0)):.6g}, "
            f"delta={float(max(leftd, 0)):.3g} remain{hint}; nothing was computed")


# -- rows of result tables ----------------------------------------------------------------------

def _release_rows(release: Any, limit: int | None = None) -> tuple[list[tuple[str, str, str]],
                                                                  int]:
    """(group, value, ± half-width) display rows of a release; and how many rows were cut."""
    import numpy as np

    rows: list[tuple[str, float, str]] = []
    hist = release.measures[0].bins is not None
    for m in release.measures:
        vals = np.asarray(m.values, dtype=np.float64)
        lo = None if m.lower is None else np.asarray(m.lower, dtype=np.float64)
        hi = None if m.upper is None else np.asarray(m.upper, dtype=np.float64)
        label = m.name if len(release.measures) > 1 else ""
        if hist:
            edges = m.bins
            closed = "(]" if m.right else "[)"
            assert lo is not None and hi is not None and edges is not None
            for g in range(len(release.keys)):
                for b in range(len(edges) - 1):
                    v = float(vals[g, b])
                    bin_hw = float(max(v - lo[g, b], hi[g, b] - v))
                    name = f"{closed[0]}{_fmt(edges[b])}, {_fmt(edges[b + 1])}{closed[1]}"
                    rows.append((name, v, _fmt(bin_hw)))
            continue
        for g, key in enumerate(release.keys):
            v = float(vals[g])
            hw: float | None = None
            if lo is not None and hi is not None and not (np.isnan(lo[g]) or np.isnan(hi[g])):
                hw = float(max(v - lo[g], hi[g] - v))
            name = ", ".join(str(k) for k in key)
            if label:
                name = f"{name} {label}".strip()
            rows.append((name, v, _fmt(hw) if hw is not None else "—"))
    cut = 0
    if limit is not None and len(rows) > limit:
        cut = len(rows) - limit
        rows = sorted(rows, key=lambda r: -r[1])[:limit]
    return [(g, _fmt(v), h) for g, v, h in rows], cut


# -- demo ---------------------------------------------------------------------------------------

@app.command()
def demo(
    rows: Annotated[int, typer.Option(min=1000, help="Synthetic people to generate.")] = 100_000,
    out: Annotated[Path, typer.Option(help="Folder for the Parquet release files.")] = Path(
        "dpframe-demo"),
    seed: Annotated[int, typer.Option(help="Seed of the synthetic data (not of the noise, "
                                            "which comes from the OS CSPRNG).")] = 2026,
    epsilon: Annotated[float, typer.Option(help="The session's total budget.")] = 1.0,
    ledger: Annotated[Path | None, typer.Option(help="A SQLite ledger file (default: an "
                                                      "in-memory ledger).")] = None,
) -> None:
    """Generate synthetic people, release statistics under a budget, write Parquet files."""
    _guarded(lambda log: _demo(rows, out, seed, epsilon, ledger, log))


def _demo_steps() -> list[tuple[str, Any, int | None]]:
    """(title, query, rows shown) of each demo release."""
    from .spec import QuerySpec as Q

    return [
        ("count of people", Q("people", "count", 0.05), None),
        ("total income $", Q("income_total", "sum", 0.1, column="income"), None),
        ("mean income $", Q("income_mean", "mean", 0.1, column="income"), None),
        ("mean visits/year", Q("visits_mean", "mean", 0.05, column="visits"), None),
        ("people by age", Q("age_histogram", "histogram", 0.1, column="age",
                            bins=[0, 18, 30, 50, 70, 100]), None),
        ("max age ¹", Q("age_max", "max", 0.05, column="age", resolution=101), None),
        ("income by state $", Q("income_by_state", "sum", 0.2, column="income", by=["state"]),
         5),
        ("people by city ²", Q("cities", "count", 0.2, by=["city"], private_keys=True,
                               delta=1e-6), 5),
    ]


def _release_query(frame: Any, q: Any, session: Any, log: _RunLog) -> Any:
    """Release query ``q`` (charging the session) and note its ledger entry in ``log``."""
    import dpframe as dpf

    from .spec import invoke

    log.current = q.name
    invoke(frame, q, dry_run=False)
    rel = dpf.last_release(session)
    assert rel is not None
    log.released.append(cast(int, rel.provenance["ledger_entry"]))
    return rel


def _demo(rows: int, out: Path, seed: int, epsilon: float, ledger: Path | None,
          log: _RunLog) -> None:
    from rich.table import Table

    import dpframe as dpf

    from ..backends.pandas import PandasBackend
    from ..datasets import STATES, people
    from .outputs import check_output_targets
    from .spec import capturing_frame, charged_by, plan_queries

    con = _console()
    t0 = time.perf_counter()
    steps = _demo_steps()
    folder = out.absolute()
    ledger_path = None if ledger is None else ledger.absolute()
    check_output_targets(folder, [folder / f"{q.name}.parquet" for _, q, _ in steps], "--out")
    df = people(rows, seed)
    con.print(f"[bold]dpframe demo[/]: {rows:,} synthetic people (age, income, state, city, "
              f"visits), seed {seed}", markup=True)
    backend = PandasBackend(df)
    bounds = {"age": (0, 100), "income": (0, 250_000), "visits": (0, 30)}

    def price(session: Any) -> tuple[Any, Any]:
        frame = capturing_frame(backend, session, bounds=bounds, keys={"state": STATES})
        return frame, plan_queries(frame, [q for _, q, _ in steps], session)

    session, (frame, plan) = _priced_session(
        log, ledger_path, False,
        lambda path: _tracked_session(log, epsilon, 1e-6, name="dpframe-demo",
                                      ledger=None if path is None else str(path)),
        price)
    try:
        if not plan.fits:
            hint = (f" in the ledger {ledger_path}: use another --ledger file"
                    if ledger_path is not None and plan.spent_before[0] > 0
                    else ": pass a larger --epsilon")
            raise dpf.BudgetExceededError(_over_budget(plan, hint))
        log.folder = folder
        table = Table(title="Released statistics, with 95% error bounds")
        for c, j in (("statistic", "left"), ("group", "left"), ("value", "right"),
                     ("± 95%", "right"), ("epsilon", "right")):
            table.add_column(c, justify=j, overflow="fold")  # type: ignore[arg-type]
        try:
            for title, q, limit in steps:
                rel = _release_query(frame, q, session, log)
                folder.mkdir(parents=True, exist_ok=True)
                log.written.append(dpf.to_parquet(rel, folder / f"{q.name}.parquet"))
                disp, cut = _release_rows(rel, limit)
                eps = cast(float, rel.provenance.get("epsilon"))
                for i, (g, v, h) in enumerate(disp):
                    table.add_row(title if i == 0 else "", g, v, h, _fmt(eps) if i == 0 else "")
                if q.name == "cities":
                    table.add_row("", f"… {len(rel.keys)} cities released", "", "", "")
                elif cut:
                    table.add_row("", f"… {cut} more in {q.name}.parquet", "", "", "")
                table.add_section()
            log.current = None
        except BaseException:
            log.snapshot(session)
            raise
        con.print(table)
        con.print("¹ exponential mechanism over a grid of candidate values (no ± interval). "
                  "² DP key selection: only cities whose noisy count of people clears a "
                  "threshold are released, so rare cities stay hidden.")
        ce, cd = charged_by(session, log.charged)
        se, _ = session.spent
        re_, rd = session.remaining
        con.print(f"Budget: this demo charged epsilon {float(ce):.4g}, delta {float(cd):.3g}"
                  f"{'' if ledger_path is None else f' to {_escape(ledger_path)}'}; spent "
                  f"epsilon "
                  f"{se:.4g} of {session.epsilon:.4g}; [bold]left: epsilon {re_:.4g}, "
                  f"delta {rd:.3g}[/]", markup=True)
        con.print(f"Wrote {len(log.written)} Parquet releases with provenance to {folder} "
                  f"(dpf.read_provenance(path) or any Parquet reader's key-value metadata "
                  f"'dpframe'); {time.perf_counter() - t0:.1f} s.", markup=False)
    finally:
        session.close()


# -- generate -----------------------------------------------------------------------------------

@app.command()
def generate(
    kind: Annotated[str, typer.Argument(help="'people' (one row per person) or 'visits' (one "
                                        "row per doctor visit; person_id is the unit).")],
    out: Annotated[Path, typer.Argument(help="A .parquet or .csv file, or a folder when "
                                        "--files > 1.")],
    rows: Annotated[int, typer.Option(min=1, help="People to generate.")] = 100_000,
    files: Annotated[int, typer.Option(min=1, help="Split into this many files.")] = 1,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic data.")] = 2026,
    fmt: Annotated[str, typer.Option("--format", help="parquet or csv (for folders).")] =
    "parquet",
) -> None:
    """Write built-in synthetic data (for trying `dpframe run`; no real person is in it)."""
    _guarded(lambda log: _generate(kind, out, rows, files, seed, fmt), log=False)


def _generate(kind: str, out: Path, rows: int, files: int, seed: int, fmt: str) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from ..datasets import DATASETS, people, visit_events
    from ..errors import ValidationError
    from ..export import atomic_write
    from .outputs import check_output_targets

    if kind not in DATASETS:
        raise ValidationError("kind must be 'people' or 'visits'")
    out = out.absolute()
    if files == 1 and out.suffix.lower() in (".parquet", ".csv"):
        targets = [out]
        check_output_targets(out.parent, targets, "OUT")
    else:
        if fmt not in ("parquet", "csv"):
            raise ValidationError("--format must be 'parquet' or 'csv'")
        targets = [out / f"part-{i:05d}.{fmt}" for i in range(files)]
        check_output_targets(out, targets, "OUT")
        out.mkdir(parents=True, exist_ok=True)
    per = -(-rows // len(targets))
    first = 1
    for i, target in enumerate(targets):
        n = min(per, rows - i * per)
        if n <= 0:
            break
        if kind == "people":
            df = people(n, seed + i)
            df["person_id"] += first - 1
        else:
            df = visit_events(n, seed + i, first_id=first)
        first += n
        table = pa.Table.from_pandas(df, preserve_index=False)

        def write(tmp: str, t: pa.Table = table, csv: bool = target.suffix.lower() == ".csv"
                  ) -> None:
            if csv:
                pacsv.write_csv(t, tmp)
            else:
                pq.write_table(t, tmp)

        atomic_write(target, write)
    _console().print(f"wrote {len(targets)} file(s) of synthetic {kind} ({rows:,} people) to "
                     f"{out}", markup=False)


# -- run ----------------------------------------------------------------------------------------

@app.command()
def run(
    spec: Annotated[Path, typer.Argument(help="The release spec (TOML).")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print noise scales, error bounds "
                                          "and the budget; spend nothing.")] = False,
    ledger: Annotated[Path | None, typer.Option(help="SQLite ledger (overrides the spec's "
                                                      "release.ledger).")] = None,
    progress: Annotated[bool | None, typer.Option("--progress/--no-progress", help="Progress "
                                                  "bar (default: on a terminal).")] = None,
    debug: Annotated[bool, typer.Option(help="Show tracebacks of unexpected errors (they may "
                                        "quote data values).")] = False,
) -> None:
    """Run a declarative release spec: check everything, then release and write each query."""
    _guarded(lambda log: _run(spec, dry_run, ledger, progress, log), debug=debug)


def _run(spec_path: Path, dry_run: bool, ledger: Path | None, progress: bool | None,
         log: _RunLog) -> None:
    import pyarrow as pa

    import dpframe as dpf

    from ..errors import ValidationError
    from .inputs import open_input
    from .outputs import check_output_targets
    from .spec import load_spec, make_frame, plan_queries

    con = _console()
    s = load_spec(spec_path)
    ledger_path = ledger.absolute() if ledger is not None else s.ledger
    if ledger_path is None and not dry_run:
        raise ValidationError("a run needs a durable ledger: set [release] ledger in the spec "
                              "or pass --ledger PATH")
    folder = s.output_folder()
    check_output_targets(folder, s.output_paths(folder))
    if s.seed is not None:
        _console(stderr=True).print("warning: [release] seed makes the noise deterministic "
                                    "and INSECURE; never publish these releases", markup=False)
    if s.input_generate is not None:
        con.print(f"Input: {s.input_generate.describe()}", markup=False)
    scan = open_input(s, progress)

    def price(session: Any) -> tuple[Any, Any]:
        frame = make_frame(s, scan.backend, session)
        try:  # validates and prices everything first
            return frame, plan_queries(frame, s.queries, session)
        except (pa.ArrowException, OSError) as exc:
            raise ValidationError(f"cannot read the input ({type(exc).__name__})") from None

    session, (frame, plan) = _priced_session(
        log, ledger_path, dry_run,
        lambda path: _tracked_session(log, s.epsilon, s.delta, neighbouring=s.neighbouring,
                                      name=s.name, seed=s.seed,
                                      ledger=None if path is None else str(path)),
        price)
    try:
        if dry_run:
            where = str(ledger_path) if ledger_path is not None else "a new in-memory ledger"
            _print_plan(con, s, plan, where, ledger_path, folder)
            if not plan.fits:
                raise dpf.BudgetExceededError(_over_budget(plan))
            return
        if not plan.fits:
            raise dpf.BudgetExceededError(_over_budget(plan))
        _release_all(con, s, session, frame, folder, ledger_path, log)
    finally:
        session.close()


def _release_all(con: Any, s: Any, session: Any, frame: Any, folder: Path,
                 ledger_path: Path | None, log: _RunLog) -> None:
    """Release and write each query of a priced run, in order."""
    from rich.table import Table

    import dpframe as dpf

    from .spec import charged_by

    earlier = [e for e in session.ledger_store.entries() if e.get("session") == s.name]
    export = dpf.to_parquet if s.output_format == "parquet" else dpf.to_ipc
    log.folder = folder
    table = Table(title=f"Release {s.name!r}")
    for c, j in (("query", "left"), ("epsilon", "right"), ("rows", "right"),
                 ("± 95% (first row)", "right"), ("ledger entry", "right"),
                 ("file", "left")):
        table.add_column(c, justify=j, overflow="fold")  # type: ignore[arg-type]
    try:
        for q in s.queries:
            rel = _release_query(frame, q, session, log)
            folder.mkdir(parents=True, exist_ok=True)
            path = export(rel, s.output_path(folder, q))
            log.written.append(path)
            disp, _ = _release_rows(rel)
            table.add_row(q.name, _fmt(q.epsilon), str(len(disp)), disp[0][2] if disp else "—",
                          f"#{rel.provenance.get('ledger_entry')}", path.name)
        log.current = None
    except BaseException:
        log.snapshot(session)
        raise
    con.print(table)
    n_files = len(log.written)
    con.print(f"Wrote {n_files} file{'s' if n_files != 1 else ''} with provenance to "
              f"{folder}", markup=False)
    ce, cd = charged_by(session, log.charged)
    se = session.spent[0]
    re_, rd = session.remaining
    con.print(f"Charged epsilon {float(ce):.6g}, delta {float(cd):.3g} to {ledger_path}; spent "
              f"{se:.6g} of {session.epsilon:.6g}, left epsilon {re_:.6g}, delta {rd:.3g}.",
              markup=False)
    if earlier:
        runs = len(earlier) // max(len(s.queries), 1)
        con.print(f"[bold yellow]note:[/] this ledger already held {len(earlier)} releases "
                  f"from {_escape(repr(s.name))} (about {runs} earlier run(s)); re-running a "
                  "spec charges its budget again.", markup=True)


def _print_plan(con: Any, s: Any, plan: Any, where: str, ledger_path: Path | None,
                folder: Path) -> None:
    from rich.table import Table

    table = Table(title=f"Dry run of {s.name!r}: no data scanned, nothing spent")
    for c, j in (("query", "left"), ("aggregate", "left"), ("mechanism", "left"),
                 ("epsilon", "right"), ("delta", "right"), ("noise scale", "right"),
                 ("± 95%", "right")):
        table.add_column(c, justify=j, overflow="fold")  # type: ignore[arg-type]
    for q, ex in zip(s.queries, plan.explains, strict=True):
        for i, m in enumerate(ex.get("measures", [])):
            hw = m.get("ci_half_width")
            if m.get("ci_half_width_times_rows") is not None:  # a mean: in its own units
                hwtxt = f"±{_fmt(m.get('ci_half_width_times_rows'))} / n rows"
            elif m.get("count_noise_scale") is not None:  # var / std: depends on the rows
                hwtxt = (f"sum ±{_fmt(m.get('sum_ci_half_width'))}, "
                         f"count ±{_fmt(m.get('count_ci_half_width'))}")
            elif hw is None and m.get("rank_error") is not None:
                hwtxt = f"rank ±{_fmt(m.get('rank_error'))}"
            else:
                hwtxt = _fmt(hw)
            table.add_row(q.name if i == 0 else "",
                          f"{m.get('aggregate')}({m.get('column') or ''})",
                          str(m.get("mechanism")).replace(" (permute-and-flip)", ""),
                          _fmt(m.get("epsilon")), _fmt(m.get("delta")),
                          _fmt(m.get("noise_scale")), hwtxt)
        sel = ex.get("key_selection")
        if sel:
            table.add_row("", "key selection", str(sel.get("mechanism")),
                          _fmt(sel.get("epsilon")), _fmt(sel.get("delta")),
                          _fmt(sel.get("noise_scale")), f"threshold {sel.get('threshold')}")
    con.print(table)
    con.print(f"Outputs: {folder}{os.sep}<query>{OUTPUT_SUFFIX[s.output_format]}", markup=False)
    te, td = plan.total
    sb, sa = plan.spent_before, plan.spent_after
    verdict = "[bold green]fits[/]" if plan.fits else "[bold red]does NOT fit[/]"
    con.print(f"Ledger: {where}. Budget epsilon {float(te):.6g}, delta {float(td):.3g}; "
              f"spent so far epsilon {float(sb[0]):.6g}, delta {float(sb[1]):.3g}.", markup=False)
    con.print(f"This run would charge epsilon {float(sa[0] - sb[0]):.6g}, delta "
              f"{float(sa[1] - sb[1]):.3g}, leaving epsilon {float(te - sa[0]):.6g}, delta "
              f"{float(td - sa[1]):.3g}: it {verdict}.", markup=True)
    if ledger_path is not None and not ledger_path.exists():
        con.print(f"(the ledger {ledger_path} does not exist yet: a real run creates it)",
                  markup=False)


# -- ledger -------------------------------------------------------------------------------------

@ledger_app.command("show")
def ledger_show(
    path: Annotated[Path, typer.Argument(help="The SQLite ledger file.")],
    verify: Annotated[bool, typer.Option(
        "--verify", help="Also run SQLite's full integrity check and print the hash chain's "
                         "length and head (compare it with a copy kept elsewhere).")] = False,
) -> None:
    """Print a ledger's budget, its history and every entry (read-only: never writes, works on
    read-only media). Exit 4 if the ledger fails verification (a row deleted, edited, inserted
    or reordered)."""
    try:
        from .ledger import show_ledger

        text = show_ledger(path, verify=verify)
    except BaseException as exc:
        if isinstance(exc, SystemExit | typer.Exit):
            raise
        raise _error_exit(exc, debug=False) from None
    sys.stdout.write(text)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
