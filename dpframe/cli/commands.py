"""The ``dpframe`` command line: ``demo``, ``run SPEC``, ``ledger show PATH``, ``--version``.

Exit codes (docs/cli.md):

* 0 - success;
* 1 - a release failed after its charge (the ledger entry is marked failed), or an
  unexpected error;
* 2 - usage or spec error (unknown column, missing bounds, malformed spec): nothing spent;
* 3 - budget exceeded: nothing spent (checked for the whole run before the first query);
* 4 - ledger error (missing or corrupt ledger, budget mismatch, a schema-1 ledger to migrate,
  a ledger that fails verification): nothing spent;
* 5 - a release file could not be written (a full disk): its ledger entry is marked failed,
  its charge stands, no partial file is left;
* 6 - ``ledger verify --against``: a release's chain head is not in this ledger (it was rolled
  back or replaced since);
* 7 - charged; outcome not recorded: a release's charge committed (its budget is spent) but
  recording its outcome failed (a full ledger disk despite the room its charge reserved);
* 8 - ``run --run-id``: the run id was released by another spec or from another input:
  nothing spent or written;
* 130 - interrupted (SIGINT); 143 - terminated (SIGTERM, as a service stop or ``timeout``
  sends it): handled alike: every entry the run charged gets an outcome (failed unless its
  file was written), and no partial output file is left.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from .._version import __version__
from ..errors import (
    BudgetExceededError,
    LedgerError,
    OutcomeNotRecordedError,
    OutputError,
    RunIdError,
    ValidationError,
)
from . import runner
from .continual import is_continual
from .demo import run_demo
from .outputs import check_output_targets
from .render import console, escape, print_plan, print_release, print_replay, run_status
from .runner import RunLog, run_spec
from .spec import load_spec
from .spec_errors import SpecError

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_SPEC = 2
EXIT_BUDGET = 3
EXIT_LEDGER = 4
EXIT_OUTPUT = 5
EXIT_MISMATCH = 6
EXIT_UNRECORDED = 7
EXIT_RUN_ID = 8
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C so that it unwinds the same way (ledger
    transactions hold it back until they end, outcomes are recorded, temporary files
    removed)."""


#: Whether this process is the ``dpframe`` console script (set by :func:`main`), not a host
#: program calling the commands in-process (whose SIGTERM handler is restored as it was).
_CONSOLE_SCRIPT = False


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread."""
    def handler(signum: int, frame: Any) -> None:
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave SIGTERM as it is
        yield
        return
    try:
        yield
    finally:
        # in the console script the process is about to exit with the run's own code: a SIGTERM
        # now (interpreter teardown) must not turn a finished run into a death by signal
        signal.signal(signal.SIGTERM, signal.SIG_IGN if _CONSOLE_SCRIPT else previous)

app = typer.Typer(
    name="dpframe",
    help="Differentially private releases from tables: a demo, declarative release specs "
    "(dpframe run), and the privacy ledger.",
    epilog="Exit codes: 0 ok; 1 a release failed after its charge; 2 spec, usage or input error "
    "(nothing spent); 3 budget exceeded (nothing spent); 4 ledger error; 5 an output file "
    "could not be written; 6 a release is not in the ledger (ledger verify --against); "
    "7 charged, outcome not recorded (the budget is spent); 8 a run id released by another "
    "spec or input (nothing spent); 130 interrupted; 143 terminated. "
    "See docs/cli.md.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,  # tracebacks with local variables could print data
)
ledger_app = typer.Typer(help="Inspect, verify or migrate a durable privacy ledger.",
                         no_args_is_help=True)
app.add_typer(ledger_app, name="ledger")


def _version(value: bool) -> None:
    """``dpframe --version``: print the package version and exit 0."""
    if value:
        sys.stdout.write(f"dpframe {__version__}\n")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Differentially private releases from tables."""


def _fail(code: int, message: str, exc: BaseException | None = None,
          as_json: bool = False) -> typer.Exit:
    # the message names spec sections ("[release] epsilon"): print it as text, not markup
    console(stderr=True).print(f"[bold red]error:[/] {escape(message)}", markup=True)
    if as_json and exc is not None:
        from .jsonout import emit, error_document

        emit(error_document(code, exc, message))
    return typer.Exit(code)


def _error_exit(exc: BaseException, debug: bool, log: RunLog | None = None,
                as_json: bool = False) -> typer.Exit:
    """Map an exception to the documented exit code, with a message that holds no data and,
    for a release command, says truly what was charged and written (``as_json``: also as a
    ``dpframe.error/1`` document on stdout)."""
    tail = "" if log is None else f". Status: {run_status(log)}."
    where = "" if log is None or log.current is None else f"query {log.current!r}: "
    if isinstance(exc, KeyboardInterrupt):
        term = isinstance(exc, Terminated)
        code = EXIT_TERMINATED if term else EXIT_INTERRUPTED
        message = (f"{'terminated (SIGTERM)' if term else 'interrupted'}"
                   f"{' during ' + where[:-2] if where else ''}"
                   f"; no partial output file is left{tail}")
    elif isinstance(exc, OutputError):
        code, message = EXIT_OUTPUT, f"{where}{exc}{tail}"
    elif isinstance(exc, RunIdError):
        code, message = EXIT_RUN_ID, f"{exc}{tail}"
    elif isinstance(exc, BudgetExceededError):
        code, message = EXIT_BUDGET, f"{where}{exc}{tail}"
    elif isinstance(exc, OutcomeNotRecordedError):  # charged: never "nothing spent" (4)
        code, message = EXIT_UNRECORDED, f"{where}charged; outcome not recorded: {exc}{tail}"
    elif isinstance(exc, LedgerError):
        code, message = EXIT_LEDGER, f"{where}{exc}{tail}"
    elif isinstance(exc, ValidationError):
        code, message = EXIT_SPEC, f"{where}{exc}{tail}"
    elif debug:
        raise exc
    else:
        code, message = EXIT_FAILED, (f"{where}unexpected {type(exc).__name__} (details hidden "
                                      "because they may quote data values; rerun with --debug "
                                      f"to see them){tail}")
    return _fail(code, message, exc, as_json)


def _guarded(fn: Callable[[RunLog], None], *, debug: bool = False, log: bool = True,
             as_json: bool = False) -> None:
    """Run a command body; map every error to its exit code (nothing escapes as a traceback)."""
    run_log = RunLog()
    try:
        with _sigterm_as_interrupt():
            fn(run_log)
    except typer.Exit:
        raise
    except BaseException as exc:
        if isinstance(exc, SystemExit):
            raise
        raise _error_exit(exc, debug, run_log if log else None, as_json) from None


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
    _guarded(lambda log: run_demo(console(), rows, out, seed, epsilon, ledger, log))


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
    from ..export import atomic_write

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
                pq.write_table(t, tmp, write_page_checksum=True)  # verified when scanned

        atomic_write(target, write)
    console().print(f"wrote {len(targets)} file(s) of synthetic {kind} ({rows:,} people) to "
                    f"{out}", markup=False)
    if any(t.suffix.lower() == ".csv" for t in targets):
        from .inputs import types_line

        console().print("A spec reading these CSV files declares their column types in "
                        f"[input]:\n{types_line(table.schema)}", markup=False)


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
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout "
                                          "(format dpframe.run/1, or dpframe.error/1 on a "
                                          "refusal or failure) instead of tables.")] = False,
    allow_budget_change: Annotated[bool, typer.Option(
        "--allow-budget-change", help="Let the spec's budget replace the ledger's total (the "
                                      "change is recorded in the ledger).")] = False,
    engine: Annotated[str | None, typer.Option(
        "--engine", help="Read the input with 'arrow' (a scan, the default) or 'spark' "
                         "(overrides the spec's [input] engine).")] = None,
    run_id: Annotated[str | None, typer.Option(
        "--run-id", help="Make the run idempotent: a re-run with this id charges nothing and "
                         "rewrites missing or damaged files from the ledger ({date}: the UTC "
                         "date; overrides the spec's [run] id).")] = None,
) -> None:
    """Run a declarative release spec: check everything, then release and write each query."""
    _guarded(lambda log: _run(spec, dry_run, ledger, progress, log, as_json, allow_budget_change,
                              engine, run_id),
             debug=debug, as_json=as_json)


class _NoticeHandler(logging.Handler):
    """The runner's notices on the terminal: warnings on stderr, the rest on stdout (on stderr
    too with ``--json``, whose stdout holds the document alone)."""

    def __init__(self, quiet_stdout: bool = False) -> None:
        super().__init__()
        self.quiet_stdout = quiet_stdout

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING or self.quiet_stdout:
            console(stderr=True).print(f"warning: {record.getMessage()}", markup=False)
        else:
            console().print(record.getMessage(), markup=False)


@contextlib.contextmanager
def _notices(quiet_stdout: bool = False) -> Iterator[None]:
    """Print the runner's log records (the seed warning, the generated input) as they come."""
    logger, handler = logging.getLogger(runner.__name__), _NoticeHandler(quiet_stdout)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _run(spec_path: Path, dry_run: bool, ledger: Path | None, progress: bool | None,
         log: RunLog, as_json: bool = False, allow_budget_change: bool = False,
         engine: str | None = None, run_id: str | None = None) -> None:
    """Run the spec and print what it did (or, dry, would do)."""
    s = load_spec(spec_path)
    if engine not in (None, "arrow", "spark"):
        raise SpecError(f"--engine must be arrow or spark, not {engine!r}")
    if is_continual(s):  # running totals (docs/continual.md): a path of their own
        if run_id is not None or s.run_id is not None:
            raise SpecError("continual queries replay a night by its date; a run id does not "
                            "apply to them: remove --run-id or [run] id")
        _run_continual(s, dry_run, ledger, progress, as_json)
        return
    with _notices(as_json):
        report = run_spec(s, ledger=ledger, dry_run=dry_run, progress=progress, log=log,
                          allow_budget_change=allow_budget_change, engine=engine,
                          run_id=run_id)
    if as_json:
        from .jsonout import emit, run_document

        if dry_run and not report.fits:  # the refusal's document, exit 3, as without --json
            raise BudgetExceededError(report.plan.over_budget())
        emit(run_document(report))
        return
    if report.replayed is not None:
        print_replay(console(), report)
        return
    if not dry_run:
        print_release(console(), report)
        return
    print_plan(console(), report, s.output_suffix)
    if not report.fits:
        raise BudgetExceededError(report.plan.over_budget())


def _run_continual(s: Any, dry_run: bool, ledger: Path | None, progress: bool | None,
                   as_json: bool) -> None:
    """A spec of continual queries: add this run's night, print or emit what it did."""
    from datetime import UTC, datetime

    from .continual import document, render, run_continual
    from .runner import _targets

    now = datetime.now(UTC)  # one instant names the night and fills {date} in [output] dir
    ledger_path, folder = _targets(s, ledger, None, dry_run, now)
    with _notices(as_json):
        results = run_continual(s, ledger_path, folder, dry_run=dry_run, progress=progress,
                                today=now.date())
    if as_json:
        from .jsonout import emit

        emit(document(results, dry_run))
        return
    console().print(render(results, dry_run), markup=False, highlight=False)


# -- ledger -------------------------------------------------------------------------------------

@ledger_app.command("show")
def ledger_show(
    path: Annotated[Path, typer.Argument(help="The SQLite ledger file.")],
    verify: Annotated[bool, typer.Option(
        "--verify", help="Also run SQLite's full integrity check and print the hash chain's "
                         "length and head (compare it with a copy kept elsewhere).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document (format "
                                          "dpframe.ledger/1, every entry) instead of "
                                          "tables.")] = False,
    show_all: Annotated[bool, typer.Option("--all", help="List every entry (by default the "
                                           "last --last ones; the output says how many are "
                                           "hidden).")] = False,
    last: Annotated[int, typer.Option("--last", min=0, help="How many of the latest entries "
                                      "to list.")] = 20,
) -> None:
    """Print a ledger's budget, its history and its latest entries (read-only: never writes,
    creates no file beside it, works on read-only media). Exit 4 if the ledger fails
    verification (a row deleted, edited, inserted or reordered)."""
    try:
        from .ledger import ledger_json, show_ledger

        text = ledger_json(path, verify=verify) if as_json else show_ledger(
            path, verify=verify, all=show_all, last=last)
    except BaseException as exc:
        if isinstance(exc, SystemExit | typer.Exit):
            raise
        raise _error_exit(exc, debug=False, as_json=as_json) from None
    sys.stdout.write(text)


def _ledger_command(body: Callable[[], int]) -> None:
    """Run a ``ledger`` subcommand; errors map to their exit codes (no traceback)."""
    try:
        code = body()
    except BaseException as exc:
        if isinstance(exc, SystemExit | typer.Exit):
            raise
        raise _error_exit(exc, debug=False) from None
    if code:
        raise typer.Exit(code)


@ledger_app.command("migrate")
def ledger_migrate(
    path: Annotated[Path, typer.Argument(help="The SQLite ledger file (schema 1, 2 or 3).")],
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Say what the migration would do (run on a private copy); write "
        "nothing.")] = False,
    backup: Annotated[Path | None, typer.Option(
        "--backup", help="Where to write the copy of the ledger made before migrating "
        "(default PATH.bak-<schema>; never over an existing file).")] = None,
) -> None:
    """Migrate a ledger of schema 1, 2 or 3 to schema 4, explicitly and in one transaction:
    every entry records its (epsilon, delta) as its privacy event (so PLD composes it), the
    chain is verified then (re-)hashed, and the migration is recorded in the ledger (its budget
    history). A backup of the ledger as it was is written first, atomically
    (PATH.bak-<schema>, or --backup). Exit 4, nothing changed, if the file shows remains of a
    newer ledger (a downgrade), its chain does not verify or the backup's name is taken."""

    def body() -> int:
        from .ledger import migrate_ledger

        sys.stdout.write(migrate_ledger(path, dry_run=dry_run, backup=backup))
        return EXIT_OK

    _ledger_command(body)


@ledger_app.command("verify")
def ledger_verify(
    path: Annotated[Path, typer.Argument(help="The SQLite ledger file.")],
    against: Annotated[list[Path] | None, typer.Option(
        "--against", help="A release file (Parquet or Arrow IPC) whose provenance names the "
                          "ledger's chain head at its release; repeatable.")] = None,
) -> None:
    """Verify a ledger read-only (SQLite integrity, hash chain, accounting) and, with
    --against, that each release was charged in this ledger's chain. Exit 0 ok; 4 the ledger
    fails verification; 5 a release's chain head is not in this ledger (rolled back or
    replaced); 2 a release carries no chain head (in-memory ledger) or is not a release."""

    def body() -> int:
        from .ledger import MISMATCH, NO_HEAD, verify_ledger

        worst, text = verify_ledger(path, [str(a) for a in against or []])
        sys.stdout.write(text)
        return {MISMATCH: EXIT_MISMATCH, NO_HEAD: EXIT_SPEC}.get(worst, EXIT_OK)

    _ledger_command(body)


def main() -> None:
    """Console-script entry point."""
    global _CONSOLE_SCRIPT
    _CONSOLE_SCRIPT = True
    app()


if __name__ == "__main__":
    main()
