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
    _console(stderr=True).print(f"[bold red]error:[/] {message}", markup=True)
    return typer.Exit(code)


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


def _error_exit(exc: BaseException, debug: bool) -> typer.Exit:
    """Map an exception to the documented exit code, with a message that holds no data."""
    from .errors import BudgetExceededError, LedgerError, ValidationError

    if isinstance(exc, KeyboardInterrupt):
        return _fail(EXIT_INTERRUPTED, "interrupted: any release in progress is recorded as "
                     "failed in the ledger (its charge stands); no partial output was written")
    if isinstance(exc, BudgetExceededError):
        return _fail(EXIT_BUDGET, str(exc))
    if isinstance(exc, LedgerError):
        return _fail(EXIT_LEDGER, str(exc))
    if isinstance(exc, ValidationError):
        return _fail(EXIT_SPEC, str(exc))
    if debug:
        raise exc
    return _fail(EXIT_FAILED, f"unexpected {type(exc).__name__} (details hidden because they "
                 "may quote data values; rerun with --debug to see them)")


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
    try:
        _demo(rows, out, seed, epsilon, ledger)
    except typer.Exit:
        raise
    except BaseException as exc:
        if isinstance(exc, SystemExit):
            raise
        raise _error_exit(exc, debug=False) from None


def _demo(rows: int, out: Path, seed: int, epsilon: float, ledger: Path | None) -> None:
    from rich.table import Table

    import dpframe as dpf
    from dpframe.datasets import STATES, people

    con = _console()
    t0 = time.perf_counter()
    df = people(rows, seed)
    con.print(f"[bold]dpframe demo[/]: {rows:,} synthetic people (age, income, state, city, "
              f"visits), seed {seed}", markup=True)
    session = dpf.Session(epsilon, 1e-6, name="dpframe-demo",
                          ledger=None if ledger is None else str(ledger))
    bounds = {"age": (0, 100), "income": (0, 250_000), "visits": (0, 30)}
    priv = cast(Any, df).dp(session, bounds=bounds, keys={"state": STATES})
    out.mkdir(parents=True, exist_ok=True)
    steps: list[tuple[str, str, Callable[[], Any], int | None]] = [
        ("people", "count of people", lambda: priv.count(epsilon=0.05), None),
        ("income_total", "total income $", lambda: priv.sum("income", epsilon=0.1), None),
        ("income_mean", "mean income $", lambda: priv.mean("income", epsilon=0.1), None),
        ("visits_mean", "mean visits/year", lambda: priv.mean("visits", epsilon=0.05), None),
        ("age_histogram", "people by age",
         lambda: priv.histogram("age", bins=[0, 18, 30, 50, 70, 100], epsilon=0.1), None),
        ("age_max", "max age ¹", lambda: priv.max("age", epsilon=0.05, resolution=101), None),
        ("income_by_state", "income by state $",
         lambda: priv.groupby("state").sum("income", epsilon=0.2), 5),
        ("cities", "people by city ²",
         lambda: priv.groupby("city", keys="private").count(epsilon=0.2, delta=1e-6), 5),
    ]
    table = Table(title="Released statistics, with 95% error bounds")
    for c, j in (("statistic", "left"), ("group", "left"), ("value", "right"),
                 ("± 95%", "right"), ("epsilon", "right")):
        table.add_column(c, justify=j, overflow="fold")  # type: ignore[arg-type]
    written: list[Path] = []
    for name, title, fn, limit in steps:
        fn()
        rel = dpf.last_release(session)
        assert rel is not None
        written.append(dpf.to_parquet(rel, out / f"{name}.parquet"))
        disp, cut = _release_rows(rel, limit)
        eps = cast(float, rel.provenance.get("epsilon"))
        for i, (g, v, h) in enumerate(disp):
            table.add_row(title if i == 0 else "", g, v, h, _fmt(eps) if i == 0 else "")
        if name == "cities":
            table.add_row("", f"… {len(rel.keys)} cities released", "", "", "")
        elif cut:
            table.add_row("", f"… {cut} more in {name}.parquet", "", "", "")
        table.add_section()
    con.print(table)
    con.print("¹ exponential mechanism over a grid of candidate values (no ± interval). "
              "² DP key selection: only cities whose noisy count of people clears a threshold "
              "are released, so rare cities stay hidden.")
    se, _ = session.spent
    te, _ = session.epsilon, session.delta
    re_, rd = session.remaining
    con.print(f"Budget: spent epsilon {se:.4g} of {te:.4g}; [bold]left: epsilon {re_:.4g}, "
              f"delta {rd:.3g}[/]", markup=True)
    con.print(f"Wrote {len(written)} Parquet releases with provenance to {out.absolute()} "
              f"(dpf.read_provenance(path) or any Parquet reader's key-value metadata "
              f"'dpframe'); {time.perf_counter() - t0:.1f} s.")


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
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from .datasets import people, visit_events
    from .export import atomic_write

    if kind not in ("people", "visits"):
        raise _fail(EXIT_SPEC, "kind must be 'people' or 'visits'")
    if files == 1 and out.suffix.lower() in (".parquet", ".csv"):
        targets = [out]
    else:
        if fmt not in ("parquet", "csv"):
            raise _fail(EXIT_SPEC, "--format must be 'parquet' or 'csv'")
        out.mkdir(parents=True, exist_ok=True)
        targets = [out / f"part-{i:05d}.{fmt}" for i in range(files)]
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
                     f"{out}")


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
    try:
        _run(spec, dry_run, ledger, progress)
    except typer.Exit:
        raise
    except BaseException as exc:
        if isinstance(exc, SystemExit):
            raise
        raise _error_exit(exc, debug) from None


def _open_scan(s: Any, progress: bool | None) -> Any:
    import pyarrow as pa

    import dpframe as dpf

    from .errors import ValidationError
    from .spec import input_format

    kw: dict[str, Any] = {"batch_size": s.batch_size, "progress": progress}
    if s.partitions is not None:
        kw["partitions"] = s.partitions
    if s.partition_rows is not None:
        kw["partition_rows"] = s.partition_rows
    if s.spill_dir is not None:
        kw["spill_dir"] = s.spill_dir
    try:
        return dpf.scan(s.input_paths if len(s.input_paths) > 1 else s.input_paths[0],
                        columns=s.input_columns, format=input_format(s), **kw)
    except (pa.ArrowException, OSError) as exc:
        raise ValidationError(f"cannot open the input ({type(exc).__name__})") from None


def _run(spec_path: Path, dry_run: bool, ledger: Path | None, progress: bool | None) -> None:
    import pyarrow as pa
    from rich.table import Table

    import dpframe as dpf

    from .errors import ValidationError
    from .spec import load_spec, plan_run

    con = _console()
    s = load_spec(spec_path)
    ledger_path = ledger.absolute() if ledger is not None else s.ledger
    if ledger_path is None and not dry_run:
        raise ValidationError("a run needs a durable ledger: set [release] ledger in the spec "
                              "or pass --ledger PATH")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seed warning is printed below, once
        if dry_run and (ledger_path is None or not ledger_path.exists()):
            session = dpf.Session(s.epsilon, s.delta, neighbouring=s.neighbouring, name=s.name,
                                  seed=s.seed)
        else:
            session = dpf.Session(s.epsilon, s.delta, neighbouring=s.neighbouring, name=s.name,
                                  seed=s.seed, ledger=str(ledger_path))
    try:
        if s.seed is not None:
            _console(stderr=True).print("warning: [release] seed makes the noise deterministic "
                                        "and INSECURE; never publish these releases")
        scan = _open_scan(s, progress)
        try:  # validates and prices everything first
            plan = plan_run(s, scan.backend, session)
        except (pa.ArrowException, OSError) as exc:
            raise ValidationError(f"cannot read the input ({type(exc).__name__})") from None
        te = plan.total[0]
        where = str(ledger_path) if ledger_path is not None else "a new in-memory ledger"
        if dry_run:
            _print_plan(con, s, plan, where, ledger_path)
            if not plan.fits:
                raise dpf.BudgetExceededError(_over_budget(plan))
            return
        if not plan.fits:
            raise dpf.BudgetExceededError(_over_budget(plan))
        earlier = [e for e in session.ledger_store.entries() if e.get("session") == s.name]
        folder = s.output_folder()
        folder.mkdir(parents=True, exist_ok=True)
        export = dpf.to_parquet if s.output_format == "parquet" else dpf.to_ipc
        frame = _spec_frame(s, scan, session)
        table = Table(title=f"Release {s.name!r}")
        for c, j in (("query", "left"), ("epsilon", "right"), ("rows", "right"),
                     ("± 95% (first row)", "right"), ("ledger entry", "right"),
                     ("file", "left")):
            table.add_column(c, justify=j, overflow="fold")  # type: ignore[arg-type]
        from .spec import invoke

        for q in s.queries:
            invoke(frame, q, dry_run=False)
            rel = dpf.last_release(session)
            assert rel is not None
            path = export(rel, s.output_path(folder, q))
            disp, _ = _release_rows(rel)
            table.add_row(q.name, _fmt(q.epsilon), str(len(disp)), disp[0][2] if disp else "—",
                          f"#{rel.provenance.get('ledger_entry')}", path.name)
        con.print(table)
        n_files = len(s.queries)
        con.print(f"Wrote {n_files} file{'s' if n_files != 1 else ''} with provenance to "
                  f"{folder}", markup=False)
        se = session.spent[0]
        re_, rd = session.remaining
        con.print(f"Charged epsilon {float(plan.spent_after[0] - plan.spent_before[0]):.6g}, "
                  f"delta {float(plan.spent_after[1] - plan.spent_before[1]):.3g} to "
                  f"{ledger_path}; spent {se:.6g} of {float(te):.6g}, left epsilon {re_:.6g}, "
                  f"delta {rd:.3g}.")
        if earlier:
            runs = len(earlier) // max(len(s.queries), 1)
            con.print(f"[bold yellow]note:[/] this ledger already held {len(earlier)} releases "
                      f"from {s.name!r} (about {runs} earlier run(s)); re-running a spec "
                      "charges its budget again.", markup=True)
    finally:
        session.close()


def _spec_frame(s: Any, scan: Any, session: Any) -> Any:
    from .spec import make_frame

    return make_frame(s, scan.backend, session)


def _over_budget(plan: Any) -> str:
    need = plan.spent_after[0] - plan.spent_before[0]
    left = plan.total[0] - plan.spent_before[0]
    needd = plan.spent_after[1] - plan.spent_before[1]
    leftd = plan.total[1] - plan.spent_before[1]
    return (f"privacy budget exceeded: this run needs epsilon={float(need):.6g}, "
            f"delta={float(needd):.3g} but only epsilon={float(max(left, 0)):.6g}, "
            f"delta={float(max(leftd, 0)):.3g} remain; nothing was computed or charged")


def _print_plan(con: Any, s: Any, plan: Any, where: str, ledger_path: Path | None) -> None:
    from rich.table import Table

    table = Table(title=f"Dry run of {s.name!r}: no data scanned, nothing spent")
    for c, j in (("query", "left"), ("aggregate", "left"), ("mechanism", "left"),
                 ("epsilon", "right"), ("delta", "right"), ("noise scale", "right"),
                 ("± 95%", "right")):
        table.add_column(c, justify=j, overflow="fold")  # type: ignore[arg-type]
    folder = s.output_folder()
    for q, ex in zip(s.queries, plan.explains, strict=True):
        for i, m in enumerate(ex.get("measures", [])):
            hw = m.get("ci_half_width")
            if m.get("aggregate") == "mean" or (m.get("count_noise_scale") is not None):
                hwtxt = f"sum ±{_fmt(hw)}, count ±{_fmt(m.get('count_ci_half_width'))}"
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
        con.print(f"(the ledger {ledger_path} does not exist yet: a real run creates it)")


# -- ledger -------------------------------------------------------------------------------------

@ledger_app.command("show")
def ledger_show(
    path: Annotated[Path, typer.Argument(help="The SQLite ledger file.")],
) -> None:
    """Print a ledger's budget, its history and every entry."""
    try:
        from .cli_ledger import show_ledger

        text = show_ledger(path)
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
