"""The ``dpframe`` command line: ``demo``, ``run SPEC``, ``ledger show PATH``.

Exit codes (docs/cli.md):

* 0 - success;
* 1 - a release failed after its charge (the ledger entry is marked failed), or an
  unexpected error;
* 2 - usage or spec error (unknown column, missing bounds, malformed spec): nothing spent;
* 3 - budget exceeded: nothing spent (checked for the whole run before the first query);
* 4 - ledger error (missing or corrupt ledger, budget mismatch): nothing spent;
* 5 - a release file could not be written (a full disk): its ledger entry is marked failed,
  its charge stands, no partial file is left;
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

from ..errors import BudgetExceededError, LedgerError, OutputError, ValidationError
from . import runner
from .demo import run_demo
from .outputs import check_output_targets
from .render import console, escape, print_plan, print_release, run_status
from .runner import RunLog, run_spec
from .spec import load_spec

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_SPEC = 2
EXIT_BUDGET = 3
EXIT_LEDGER = 4
EXIT_OUTPUT = 5
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C so that it unwinds the same way (ledger
    transactions hold it back until they end, outcomes are recorded, temporary files
    removed)."""


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
        signal.signal(signal.SIGTERM, previous)

app = typer.Typer(
    name="dpframe",
    help="Differentially private releases from tables: a demo, declarative release specs "
    "(dpframe run), and the privacy ledger.",
    epilog="Exit codes: 0 ok; 1 a release failed after its charge; 2 spec, usage or input error "
    "(nothing spent); 3 budget exceeded (nothing spent); 4 ledger error; 5 an output file "
    "could not be written; 130 interrupted; 143 terminated. See docs/cli.md.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,  # tracebacks with local variables could print data
)
ledger_app = typer.Typer(help="Inspect a durable privacy ledger.", no_args_is_help=True)
app.add_typer(ledger_app, name="ledger")


def _fail(code: int, message: str) -> typer.Exit:
    # the message names spec sections ("[release] epsilon"): print it as text, not markup
    console(stderr=True).print(f"[bold red]error:[/] {escape(message)}", markup=True)
    return typer.Exit(code)


def _error_exit(exc: BaseException, debug: bool, log: RunLog | None = None) -> typer.Exit:
    """Map an exception to the documented exit code, with a message that holds no data and,
    for a release command, says truly what was charged and written."""
    tail = "" if log is None else f". Status: {run_status(log)}."
    where = "" if log is None or log.current is None else f"query {log.current!r}: "
    if isinstance(exc, KeyboardInterrupt):
        term = isinstance(exc, Terminated)
        return _fail(EXIT_TERMINATED if term else EXIT_INTERRUPTED,
                     f"{'terminated (SIGTERM)' if term else 'interrupted'}"
                     f"{' during ' + where[:-2] if where else ''}"
                     f"; no partial output file is left{tail}")
    if isinstance(exc, OutputError):
        return _fail(EXIT_OUTPUT, f"{where}{exc}{tail}")
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


def _guarded(fn: Callable[[RunLog], None], *, debug: bool = False, log: bool = True) -> None:
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
        raise _error_exit(exc, debug, run_log if log else None) from None


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
) -> None:
    """Run a declarative release spec: check everything, then release and write each query."""
    _guarded(lambda log: _run(spec, dry_run, ledger, progress, log), debug=debug)


class _NoticeHandler(logging.Handler):
    """The runner's notices on the terminal: warnings on stderr, the rest on stdout."""

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            console(stderr=True).print(f"warning: {record.getMessage()}", markup=False)
        else:
            console().print(record.getMessage(), markup=False)


@contextlib.contextmanager
def _notices() -> Iterator[None]:
    """Print the runner's log records (the seed warning, the generated input) as they come."""
    logger, handler = logging.getLogger(runner.__name__), _NoticeHandler()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _run(spec_path: Path, dry_run: bool, ledger: Path | None, progress: bool | None,
         log: RunLog) -> None:
    """Run the spec and print what it did (or, dry, would do)."""
    s = load_spec(spec_path)
    with _notices():
        report = run_spec(s, ledger=ledger, dry_run=dry_run, progress=progress, log=log)
    if not dry_run:
        print_release(console(), report)
        return
    print_plan(console(), report, s.output_suffix)
    if not report.fits:
        raise BudgetExceededError(report.plan.over_budget())


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
