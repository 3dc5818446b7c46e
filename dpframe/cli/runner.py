"""Running a release spec from Python (``run_spec``): the engine behind ``dpframe run``.

A run checks everything that can be checked without spending (the spec, the output folder, the
input's schema, every query, the whole run's cost against the ledger's remaining budget), then
computes every query's exact half from one pinned snapshot of the input (an operational fault:
``InputError``, nothing spent), then reserves the whole run's cost in one ledger transaction
(all entries or none), and only then, query by query, draws the noise, writes the file
atomically with its provenance and records the entry ``released`` (``failed`` when its file
cannot be written: ``OutputError``). Whatever stops a run after its reservation, every entry it
charged gets an outcome. Messages (errors, the log records of ``dpframe.cli.runner``) name
fields, columns and files, never data values.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from ..engine.ledger.signals import signals_held
from ..engine.release import Computed, add_noise, charge_all, compute_exact, publish
from ..engine.session import Session
from ..errors import (
    BudgetExceededError,
    LedgerError,
    OutputError,
    PrivacyUnitError,
    ValidationError,
)
from ..export import to_ipc, to_parquet
from .inputs import open_input, spark_input
from .outputs import check_output_targets
from .pricing import PricedQuery, RunPlan, charged_by, plan_run, price_queries
from .runids import (
    Restored,
    RunIdentity,
    check_replay,
    input_digest,
    record,
    recorded,
    release_bytes,
    resolve_run_id,
    restore,
    spec_digest,
    write_bytes,
)
from .schema import OUTPUT_FORMATS
from .spec import QuerySpec, ReleaseSpec, load_spec
from .spec_errors import SpecError

if TYPE_CHECKING:
    from ..backends.base import Backend
    from ..core.apply import CoreRelease

logger = logging.getLogger(__name__)

SEED_WARNING = ("[release] seed makes the noise deterministic and INSECURE; never publish "
                "these releases")
_WRITERS = {"parquet": to_parquet, "arrow": to_ipc, "ipc": to_ipc}


@dataclass
class RunLog:
    """What a run has charged and written so far, noted as it goes: after an exception it says
    truly what the run did (the ledger entries it charged, their status, the files it wrote)."""

    current: str | None = None  # the query being released
    charging: str | None = None  # a charge in flight: its outcome is not known here
    charged: list[int] = field(default_factory=list)  # ledger entries this run charged
    released: list[int] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    folder: Path | None = None
    status: dict[int, str] | None = None  # the ledger status of ``charged`` after a failure
    missing: list[int] | None = None  # a run id's recorded releases whose file failed

    @property
    def unwritten(self) -> list[int]:
        """Released entries whose file was not written."""
        return self.released[len(self.written):] if self.missing is None else self.missing

    def snapshot(self, session: Session) -> None:
        """Read the ledger status of this run's entries (after a failure, before closing)."""
        try:
            mine = set(self.charged)
            self.status = {int(e["id"]): str(e["status"])
                           for e in session.ledger_store.entries() if e["id"] in mine}
        except BaseException:  # a second Ctrl-C or an unreadable ledger: say less
            self.status = None


@dataclass(frozen=True)
class QueryResult:
    """One query of a run: its public plan and, once released, its ledger entry, file and
    values (the release, with its provenance)."""

    name: str
    epsilon: float
    status: str  # "planned" (a dry run), "released" or "replayed" (a run id's re-run)
    plan: Mapping[str, Any]  # mechanisms, noise scales, error bounds: public
    ledger_entry: int | None = None
    path: Path | None = None
    release: CoreRelease | None = None


@dataclass(frozen=True)
class RunReport:
    """What a run did or, for a dry run, would do: each query's outcome, and the budget."""

    name: str  # the session name recorded in the ledger
    dry_run: bool
    ledger: Path | None  # None: an in-memory ledger
    folder: Path
    queries: list[QueryResult]
    plan: RunPlan  # the whole run's cost against the ledger, checked before any charge
    charged: tuple[float, float]  # what this run added to the ledger's spent (epsilon, delta)
    spent: tuple[float, float]  # the ledger's spent budget after the run
    remaining: tuple[float, float]
    budget: tuple[float, float]  # the ledger's total
    earlier_releases: int = 0  # releases of the same session name the ledger held before
    run_id: str | None = None  # the run's id (--run-id, [run] id), if any
    #: a re-run of a recorded run id: each file restored from the ledger or left intact (a
    #: dry run: "intact" or "would restore"); None for a run that is not a replay
    replayed: list[Restored] | None = None

    @property
    def fits(self) -> bool:
        """Whether the run fits the ledger's remaining budget (a real run only runs if so)."""
        return self.plan.fits

    @property
    def files(self) -> list[Path]:
        """The release files written, in query order."""
        return [q.path for q in self.queries if q.path is not None]


@dataclass(frozen=True)
class ReleaseJob:
    """Queries to release from one input under one session: a spec's run, or the demo."""

    name: str  # the session name recorded in the ledger
    epsilon: float  # the ledger's total budget
    delta: float
    backend: Backend
    declarations: Mapping[str, Any]  # bounds, keys, privacy unit: as for ``df.dp``
    queries: Sequence[QuerySpec]
    folder: Path
    ledger: Path | None = None  # None: an in-memory ledger
    output_format: str = "parquet"
    neighbouring: str = "add_remove"
    seed: int | None = None
    allow_budget_change: bool = False  # a ledger total other than the spec's is recorded
    run: RunIdentity | None = None  # a run id: the run is recorded, a re-run replayed

    def output(self, q: QuerySpec) -> Path:
        return self.folder / f"{q.name}{OUTPUT_FORMATS[self.output_format]}"


def run_spec(spec: ReleaseSpec | str | os.PathLike[str], *,
             ledger: str | os.PathLike[str] | None = None,
             out_dir: str | os.PathLike[str] | None = None, dry_run: bool = False,
             progress: bool | None = None, log: RunLog | None = None,
             allow_budget_change: bool = False, engine: str | None = None,
             run_id: str | None = None) -> RunReport:
    """Run a release spec (a :class:`ReleaseSpec` or the path of its TOML file).

    ``ledger`` overrides ``[release] ledger`` and ``out_dir`` the ``[output] dir`` (used as
    given, no ``{date}`` filled in); ``progress`` shows a progress bar on stderr (default: on
    a terminal). ``dry_run=True`` reads only the input's schema, charges nothing and creates
    no file (not even the ledger): its report has each query's plan and whether the run fits.
    ``log`` is filled as the run goes, so that after an exception it tells what was charged
    and written. ``allow_budget_change=True`` (``--allow-budget-change``) lets the spec's
    budget replace a durable ledger's total; the change is recorded in the ledger.

    ``run_id`` (or ``[run] id`` in the spec; ``{date}``, the run's UTC date, and ``{name}``
    filled in) makes the run idempotent: the first run with an id records in the ledger each
    release file's bytes and the digests of the spec and of the input; a re-run with that id
    charges nothing, draws no noise and rewrites from the ledger each file that is missing or
    damaged (into the first run's folder, or ``out_dir``); the same id with another spec or
    input raises :class:`~dpframe.errors.RunIdError` before anything is charged or written.

    Everything is checked, and every query's exact half computed, before the run's one
    reservation of its whole cost; a failure then raises
    :class:`~dpframe.errors.ValidationError` (a spec or input error;
    :class:`~dpframe.errors.InputError` for an input that cannot be read or changed during the
    run), :class:`~dpframe.errors.BudgetExceededError` (the whole run does not fit, checked
    before reading and again by the reservation) or :class:`~dpframe.errors.LedgerError`, with
    nothing charged or written. After the reservation, an error (an
    :class:`~dpframe.errors.OutputError`, a defect) or an interrupt leaves every earlier query
    released and written, records every other entry of the run failed (its charge stands) and
    leaves no partial file.
    """
    s = spec if isinstance(spec, ReleaseSpec) else load_spec(spec)
    now = datetime.now(UTC)
    ledger_path, folder = _targets(s, ledger, out_dir, dry_run, now)
    if s.seed is not None:
        logger.warning(SEED_WARNING)
    if s.input_generate is not None:
        logger.info("Input: %s", s.input_generate.describe())
    if engine is not None:
        s = dataclasses.replace(s, input_engine=engine)
    backend, run = _open_input(s, progress, run_id, now, dry_run)
    job = ReleaseJob(s.name, s.epsilon, s.delta, backend,
                     s.frame_options(), s.queries, folder, ledger_path, s.output_format,
                     s.neighbouring, s.seed, allow_budget_change, run)
    log = RunLog() if log is None else log
    with price_run(job, log, dry_run=dry_run) as priced:
        replay = priced.recorded()
        if replay:  # the run id was released: checked, then replayed (nothing charged)
            return priced.replay(replay, first_folder=out_dir is None, dry_run=dry_run,
                                 log=log)
        if dry_run:
            return priced.planned()
        if not priced.plan.fits:
            raise BudgetExceededError(priced.plan.over_budget())
        return priced.release(log)


def _open_input(s: ReleaseSpec, progress: bool | None, run_id: str | None, now: datetime,
                dry_run: bool) -> tuple[Backend, RunIdentity | None]:
    """The spec's input (its schema read) and, with a run id (``run_id``, else ``[run] id``,
    its placeholders filled in at ``now``), the run's identity: the digests of the spec and
    (not in a dry run, which reads no data) of the input's bytes."""
    template = run_id if run_id is not None else s.run_id
    run_id = None if template is None else resolve_run_id(template, s.name, now)
    if run_id is not None and s.input_engine == "spark":
        raise SpecError("a run id needs input files or [input] generate, not engine = "
                        "\"spark\" (there is no digest of a Spark input to check a re-run)")
    if s.input_engine == "spark":
        return spark_input(s), None
    opened = open_input(s, progress)
    if run_id is None:
        return opened.backend, None
    digest = "" if dry_run else input_digest(s, opened.source.files)
    return opened.backend, RunIdentity(run_id, spec_digest(s), digest)


def _targets(s: ReleaseSpec, ledger: str | os.PathLike[str] | None,
             out_dir: str | os.PathLike[str] | None, dry_run: bool, now: datetime
             ) -> tuple[Path | None, Path]:
    """The run's ledger and output folder, checked (nothing created)."""
    ledger_path = Path(ledger).absolute() if ledger is not None else s.ledger
    if ledger_path is None and not dry_run:
        raise ValidationError("a run needs a durable ledger: set [release] ledger in the spec "
                              "or pass --ledger PATH")
    folder = s.output_folder(now) if out_dir is None else Path(out_dir).absolute()
    check_output_targets(folder, s.output_paths(folder),
                         "[output] dir" if out_dir is None else "out_dir")
    return ledger_path, folder


@dataclass
class PricedRun:
    """An open session with a run's queries built and priced, before any charge (a context
    manager: leaving it closes the session)."""

    job: ReleaseJob
    session: Session
    queries: list[PricedQuery]
    plan: RunPlan
    _bytes: dict[int, bytes] = field(default_factory=dict)  # a run id's files, by entry

    def __enter__(self) -> PricedRun:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.session.close()

    def planned(self) -> RunReport:
        """The report of a dry run: each query's plan, nothing charged, and how many releases
        of this session name the ledger already holds (a real run would charge again)."""
        return self._report([QueryResult(p.spec.name, p.spec.epsilon, "planned", ex)
                             for p, ex in zip(self.queries, self.plan.explains, strict=True)],
                            dry_run=True, earlier=self.earlier_releases())

    def earlier_releases(self) -> int:
        """The ledger's entries of this run's session name (0 for a ledger not created yet)."""
        name = self.job.name
        return sum(1 for e in self.session.ledger_store.entries() if e.get("session") == name)

    def recorded(self) -> list[dict[str, Any]]:
        """The ledger's records of this run's id ([] without an id, or when it has none)."""
        run = self.job.run
        return [] if run is None else recorded(self.session.ledger_store.entries(), run.id)

    def replay(self, records: list[dict[str, Any]], *, first_folder: bool = True,
               dry_run: bool, log: RunLog | None = None) -> RunReport:
        """Re-run a recorded run id: no charge, no noise. Refused first
        (:class:`~dpframe.errors.RunIdError`, :func:`check_replay`) if the spec or the input
        differs from the first run's. Each file missing or damaged is rewritten from the
        ledger's record (into the first run's folder or, ``first_folder=False``, this run's),
        an intact one left alone (a dry run only says which it would restore). Queries the
        first run charged but never recorded (it stopped before their values existed outside
        the process) are released now, charged again (:meth:`_complete`)."""
        run = self.job.run
        assert run is not None
        check_replay(records, None if dry_run else run, run.spec)
        done = _restore_all(records, None if first_folder else self.job.folder, dry_run)
        by_name = {d.query: d for d in done}
        fresh, charged = self._complete(
            [p for p in self.queries if p.spec.name not in by_name], dry_run, log)
        results = [fresh.get(p.spec.name) or _replayed(p, ex, by_name[p.spec.name])
                   for p, ex in zip(self.queries, self.plan.explains, strict=True)]
        report = self._report(results, dry_run=dry_run, charged=charged,
                              earlier=self.earlier_releases())
        return dataclasses.replace(report, replayed=done, folder=done[0].path.parent)

    def _complete(self, missing: list[PricedQuery], dry_run: bool, log: RunLog | None
                  ) -> tuple[dict[str, QueryResult], tuple[float, float]]:
        """Release (or, dry, plan) the queries of a replayed run id that its first run did
        not record; ``self.plan`` becomes what the replay charges."""
        if not missing:
            before = self.plan.spent_before
            self.plan = RunPlan(self.plan.explains, [], before, before, self.plan.total)
            return {}, (0.0, 0.0)
        part = PricedRun(self.job, self.session, missing, plan_run(self.session, missing))
        if not dry_run and not part.plan.fits:
            raise BudgetExceededError(part.plan.over_budget())
        report = part.planned() if dry_run else part.release(RunLog() if log is None else log)
        self.plan = dataclasses.replace(part.plan, explains=self.plan.explains)
        return {q.name: q for q in report.queries}, report.charged

    def release(self, log: RunLog) -> RunReport:
        """Release the run, noting each charge and file in ``log``: first every query's exact
        half (nothing charged: an operational fault such as a corrupt or changed input
        refuses the whole run), then the whole run's cost reserved in one ledger transaction
        (``BudgetExceededError`` with nothing charged when another run took the budget
        meanwhile), then each query's noise, file and ledger outcome in order. Whatever
        stops the run after the reservation, every entry it charged gets an outcome."""
        earlier = self.earlier_releases()
        if earlier:  # said before the charge, on the runner's logger
            logger.warning("this ledger already holds %d releases of %r: this run charges its "
                           "budget again", earlier, self.job.name)
        log.folder = self.job.folder
        try:
            computed = [self._compute(p, log) for p in self.queries]
            log.current = None
            entries = self._reserve(computed, log)
            results = self._released(computed, entries, log)
            log.current = None
            _raise_defect(self.queries, computed, log)
        except BaseException:
            _abandon(self.session, log)
            log.snapshot(self.session)
            raise
        ce, cd = charged_by(self.session, log.charged)
        return self._report(results, dry_run=False, charged=(float(ce), float(cd)),
                            earlier=earlier)

    def _released(self, computed: list[Computed], entries: list[int], log: RunLog
                  ) -> list[QueryResult]:
        """Each query released: its file written, then its outcome recorded; with a run id,
        every query's values recorded first (an interrupt waits until all are), then every
        file written."""
        todo = list(zip(self.queries, computed, entries, self.plan.explains, strict=True))
        if self.job.run is None:
            return [self._release(p, c, entry, ex, log) for p, c, entry, ex in todo]
        with signals_held():
            results = [self._record(p, c, entry, ex, log) for p, c, entry, ex in todo]
        self._write_recorded(results, log)
        return results

    def _compute(self, p: PricedQuery, log: RunLog) -> Computed:
        log.current = p.spec.name
        return compute_exact(self.session, p.query, self.job.backend)

    def _reserve(self, computed: list[Computed], log: RunLog) -> list[int]:
        """Charge the whole run in one transaction; an interrupt meanwhile is held until the
        entries are noted in ``log`` (so they get an outcome)."""
        log.charging = "(the whole run)"
        with signals_held():
            try:
                entries = charge_all(self.session, computed)
            except (BudgetExceededError, PrivacyUnitError):  # refused: nothing was charged
                log.charging = None
                raise
            log.charged.extend(entries)
            log.charging = None
        return entries

    def _release(self, p: PricedQuery, c: Computed, entry: int, explain: Mapping[str, Any],
                 log: RunLog) -> QueryResult:
        """Noise, file, then the ``released`` outcome; ``failed`` (charge kept) if the exact
        half had a defect or the file cannot be written (:class:`OutputError`)."""
        log.current = p.spec.name
        if c.defect is not None:  # raised once every other query is released
            self.session.record(entry, status="failed", details={})
            return QueryResult(p.spec.name, p.spec.epsilon, "failed", explain, entry)
        release, details = add_noise(self.session, c, entry)
        for hint in cast(list[str], release.provenance.get("warnings", [])):
            logger.warning("query %r: %s", p.spec.name, hint)  # read from the noisy values
        with signals_held():  # the file and its outcome together: an interrupt waits for both
            try:
                self.job.folder.mkdir(parents=True, exist_ok=True)
                path = _WRITERS[self.job.output_format](release, self.job.output(p.spec))
            except BaseException as exc:
                self.session.record(entry, status="failed", details={})
                if isinstance(exc, OSError) and not isinstance(exc, OutputError):
                    raise OutputError(f"cannot create the output folder {self.job.folder} "
                                      f"({type(exc).__name__})") from None
                raise
            log.written.append(path)  # written, whether or not its outcome can be recorded
            publish(self.session, entry, release, details)
            log.released.append(entry)
        return QueryResult(p.spec.name, p.spec.epsilon, "released", explain, entry, path,
                           release)

    def _record(self, p: PricedQuery, c: Computed, entry: int, explain: Mapping[str, Any],
                log: RunLog) -> QueryResult:
        """A run id's release: noise, then the file's bytes recorded in the ledger outcome
        (``released``) before any file is written (:meth:`_write_recorded`), so that a file
        the disk cannot take is written by a re-run with the id, from the ledger."""
        log.current = p.spec.name
        if c.defect is not None:  # raised once every other query is released
            self.session.record(entry, status="failed", details={})
            return QueryResult(p.spec.name, p.spec.epsilon, "failed", explain, entry)
        assert self.job.run is not None
        release, details = add_noise(self.session, c, entry)
        for hint in cast(list[str], release.provenance.get("warnings", [])):
            logger.warning("query %r: %s", p.spec.name, hint)  # read from the noisy values
        path = self.job.output(p.spec)
        data = release_bytes(release, self.job.output_format)
        publish(self.session, entry, release,
                {**details, "run": record(self.job.run, p.spec.name, path, data)})
        log.released.append(entry)
        self._bytes[entry] = data
        return QueryResult(p.spec.name, p.spec.epsilon, "released", explain, entry, path,
                           release)

    def _write_recorded(self, results: list[QueryResult], log: RunLog) -> None:
        """Write every recorded release's file; a file that cannot be written (a full disk)
        does not stop the others, and the first failure is raised once all were tried."""
        failed: list[tuple[int, OutputError]] = []
        for q in results:
            if q.path is None or q.ledger_entry is None:
                continue
            log.current = q.name
            try:
                self.job.folder.mkdir(parents=True, exist_ok=True)
                log.written.append(write_bytes(q.path, self._bytes[q.ledger_entry]))
            except OSError as exc:
                failed.append((q.ledger_entry, exc if isinstance(exc, OutputError) else
                               OutputError(f"cannot create the output folder "
                                           f"{self.job.folder} ({type(exc).__name__})")))
        log.current = None
        if failed:
            assert self.job.run is not None
            log.missing = [entry for entry, _ in failed]
            raise OutputError(f"{failed[0][1]}; {len(failed)} release file(s) not written: "
                              "their values are recorded in the ledger: free space and re-run "
                              f"with --run-id {self.job.run.id} to write them (nothing is "
                              "charged again)")

    def _report(self, results: list[QueryResult], *, dry_run: bool,
                charged: tuple[float, float] = (0.0, 0.0), earlier: int = 0) -> RunReport:
        s = self.session
        return RunReport(self.job.name, dry_run, self.job.ledger, self.job.folder, results,
                         self.plan, charged, s.spent, s.remaining, (s.epsilon, s.delta),
                         earlier, None if self.job.run is None else self.job.run.id)


def _restore_all(records: list[dict[str, Any]], folder: Path | None, dry_run: bool
                 ) -> list[Restored]:
    """Each recorded file restored (or, dry, checked) in ``folder`` or, if None, its own."""
    return [restore(r, Path(r["folder"]) if folder is None else folder, write=not dry_run)
            for r in records]


def _replayed(p: PricedQuery, explain: Mapping[str, Any], done: Restored) -> QueryResult:
    return QueryResult(p.spec.name, p.spec.epsilon, "replayed", explain, done.ledger_entry,
                       done.path)


def _raise_defect(queries: list[PricedQuery], computed: list[Computed], log: RunLog) -> None:
    """Raise the first defect of an exact half (its entry is recorded failed, the other
    queries were released), naming its query in ``log``."""
    for p, c in zip(queries, computed, strict=True):
        if c.defect is not None:
            log.current = p.spec.name
            raise c.defect


def _abandon(session: Session, log: RunLog) -> None:
    """Record ``failed`` every entry this run charged that has no outcome yet (its charge
    stands; no value of it left the process), with interrupts held until done. Best effort:
    an unreadable ledger leaves them ``charged`` (the status message says so)."""
    if not log.charged:
        return
    mine = set(log.charged)
    try:
        with signals_held():
            for e in session.ledger_store.entries():
                if e["id"] in mine and e["status"] == "charged":
                    session.record(int(e["id"]), status="failed", details={})
    except BaseException:  # the run's own error is what the caller reports
        pass


def price_run(job: ReleaseJob, log: RunLog, *, dry_run: bool) -> PricedRun:
    """Open the session and price the whole run before any charge.

    A ledger that does not exist yet is created only once everything validated on an
    in-memory ledger (a bad spec leaves no ledger behind), and never by a dry run."""
    ledger = job.ledger
    if ledger is not None and ledger.exists():
        return _priced_on(job, ledger)
    if ledger is not None and not ledger.parent.is_dir():
        # a real run would fail to create it: a dry run fails too
        raise LedgerError(f"cannot create ledger {ledger}: folder {ledger.parent} does not exist")
    priced = _priced_on(job, None)
    if ledger is None or dry_run or not priced.plan.fits:
        return priced
    priced.session.close()
    return _priced_on(job, ledger, priced.queries)


def _priced_on(job: ReleaseJob, ledger: Path | None,
               queries: list[PricedQuery] | None = None) -> PricedRun:
    """The run priced on a session over ``ledger`` (in memory if None); ``queries`` already
    built and planned are only composed with this ledger's charges."""
    session = _run_session(job, ledger)
    try:
        if queries is None:
            queries = price_queries(session, job.backend, job.declarations, job.queries)
        return PricedRun(job, session, queries, plan_run(session, queries))
    except BaseException:
        session.close()
        raise


def _run_session(job: ReleaseJob, ledger: Path | None) -> Session:
    """The run's Session (quietly: a seeded run is warned about once, by :func:`run_spec`).
    Its charges are noted in the run's log where the run makes them, in one reservation
    (:meth:`PricedRun._reserve`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Session(job.epsilon, job.delta, neighbouring=job.neighbouring, name=job.name,
                       seed=job.seed, ledger=None if ledger is None else str(ledger),
                       allow_budget_change=job.allow_budget_change and ledger is not None)


__all__ = ["SEED_WARNING", "PricedRun", "QueryResult", "ReleaseJob", "RunLog", "RunReport",
           "price_run", "run_spec"]
