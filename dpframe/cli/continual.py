"""``dpframe run`` on a spec of continual queries (``continual = { horizon = 365 }``).

Each run adds that night's input to each query's tree (``dpf.Continual``, resumed by the name
``<release name>/<query name>`` from the ledger and its private state file) and writes the
running value. The first run of a query charges its epsilon once, for the whole horizon, after
every check of that night has passed; later runs charge nothing. A re-run of a night replays it
(the same file, nothing drawn); a night skipped is refused unless ``fill_gaps = true``; a
night past the horizon is refused. See docs/continual.md.
"""

from __future__ import annotations

import datetime
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.accounting import PrivacyCost
from ..core.numbers import to_fraction
from ..engine.session import Session
from ..errors import BudgetExceededError, ValidationError
from ..export import to_ipc, to_parquet
from ..fronts.continual import Continual
from .inputs import open_input
from .spec import QuerySpec, ReleaseSpec

_WRITERS = {"parquet": to_parquet, "arrow": to_ipc, "ipc": to_ipc}


@dataclass(frozen=True)
class ContinualResult:
    """One continual query of a run: the night it added (or replayed), its value(s), file."""

    name: str
    night: int
    horizon: int
    replayed: bool
    charged: bool
    value: Any
    path: Path | None
    noise_scale: float = 0.0  # every node's (public)
    std: float = 0.0  # the running total's standard deviation on this night (public)


def is_continual(spec: ReleaseSpec) -> bool:
    """Whether the spec's queries are continual (then they all are: the schema says so)."""
    return any(q.continual is not None for q in spec.queries)


def state_path(spec: ReleaseSpec, q: QuerySpec, ledger: Path) -> Path:
    """The query's private state file: ``state`` (from the spec's folder), else beside the
    ledger, ``<ledger stem>.<query name>.state.json``."""
    given = (q.continual or {}).get("state")
    if given:
        return (spec.path.parent / given).absolute()
    return ledger.with_name(f"{ledger.stem}.{q.name}.state.json")


def night_of(q: QuerySpec, today: datetime.date) -> int | None:
    """The night this run adds: from ``start`` and the run's UTC date, ``night``, or None
    (the next one)."""
    c = q.continual or {}
    start = c.get("start")
    if start is not None:
        night = (today - start).days + 1
        if night < 1:
            raise ValidationError(f"query {q.name!r}: the run's date is before its continual "
                                  "start; nothing was charged")
        return night
    night = c.get("night")
    return None if night is None else int(night)


def _continual(spec: ReleaseSpec, q: QuerySpec, session: Session, ledger: Path | None
               ) -> Continual:
    c = q.continual or {}
    by = q.by[0] if q.by else None
    keys = None
    if by is not None:
        if by not in spec.keys:
            raise ValidationError(f"query {q.name!r}: by {by!r} needs its public keys in "
                                  "[keys]")
        keys = spec.keys[by]
    bounds = None
    if q.column is not None:
        if q.column not in spec.bounds:
            from ..errors import BoundsError

            raise BoundsError(f"query {q.name!r}: sum of {q.column!r} needs [bounds]")
        bounds = spec.bounds[q.column]
    return Continual(session, int(c["horizon"]), to_fraction(q.epsilon, "epsilon"),
                     column=q.column, bounds=bounds, integer=bool(c.get("integer", False)),
                     by=by, keys=keys, privacy_unit=spec.privacy_unit,
                     max_rows_per_unit=spec.max_rows_per_unit if spec.privacy_unit else None,
                     name=f"{spec.name}/{q.name}",
                     state=None if ledger is None else state_path(spec, q, ledger),
                     ci=q.ci or 0.95, charge_on_first_add=True)


def run_continual(spec: ReleaseSpec, ledger: Path | None, folder: Path, *, dry_run: bool,
                  progress: bool | None = None, today: datetime.date | None = None
                  ) -> list[ContinualResult]:
    """Add this run's night to every continual query of ``spec`` and write its running
    value to ``folder`` (``dry_run``: check everything, charge, draw and write nothing).

    Every query is resumed and its night checked before anything is charged; the new
    queries' charges must fit together, else :class:`~dpframe.errors.BudgetExceededError`
    with nothing charged."""
    today = today or datetime.datetime.now(datetime.UTC).date()
    session = _session(spec, ledger, dry_run)
    try:
        scan = open_input(spec, progress)
        trees = [(q, _continual(spec, q, session, ledger), night_of(q, today))
                 for q in spec.queries]
        _check_all(session, scan, trees)
        if dry_run:
            return [_planned(q, c, n) for q, c, n in trees]
        return [_add(spec, scan, q, c, night, folder) for q, c, night in trees]
    finally:
        session.close()


def _session(spec: ReleaseSpec, ledger: Path | None, dry_run: bool) -> Session:
    """The run's session (quietly: a seeded run is warned about by the CLI); a dry run
    opens an existing ledger (opening writes nothing) and never creates one."""
    durable = ledger is not None and (not dry_run or ledger.exists())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Session(spec.epsilon, spec.delta, neighbouring=spec.neighbouring,
                       name=spec.name, seed=spec.seed, ledger=str(ledger) if durable else None)


def _planned(q: QuerySpec, c: Continual, night: int | None) -> ContinualResult:
    """What a dry run says of one query: its night, whether it replays or charges."""
    t = c.nights + 1 if night is None else night
    return ContinualResult(q.name, t, c.horizon, t <= c.nights, c.entry is None, None, None,
                           c.spec.noise.scale, math.sqrt(c.spec.variance(t)))


def _check_all(session: Session, scan: Any, trees: list[tuple[QuerySpec, Continual,
                                                              int | None]]) -> None:
    """Every refusal of every query's night (no side effect), then the new charges' fit."""
    for q, c, night in trees:
        c.check(scan, night, fill_gaps=bool((q.continual or {}).get("fill_gaps")))
    new = sum((c.epsilon for _, c, _ in trees if c.entry is None), to_fraction(0, "eps"))
    if new and not session.fits(PrivacyCost(new)):
        raise BudgetExceededError(f"privacy budget exceeded: the new continual queries need "
                                  f"epsilon={float(new):g}; nothing was charged")


def _add(spec: ReleaseSpec, scan: Any, q: QuerySpec, c: Continual, night: int | None,
         folder: Path) -> ContinualResult:
    """Add (or replay) one query's night and write its running value."""
    charged = c.entry is None
    replayed = night is not None and night <= c.nights
    value = c.add(scan, night, fill_gaps=bool((q.continual or {}).get("fill_gaps")))
    folder.mkdir(parents=True, exist_ok=True)
    path = _WRITERS[spec.output_format](value, folder / f"{q.name}{spec.output_suffix}")
    prov = value.attrs["dp"]
    return ContinualResult(q.name, prov["night"], c.horizon, replayed, charged, value, path,
                           prov["noise_scale"], prov["std"])


def render(results: list[ContinualResult], dry_run: bool) -> str:
    """The run's lines: per query, the night, the value (or what a dry run would do)."""
    lines = []
    for r in results:
        if dry_run:
            what = ("charges its epsilon once for the horizon" if r.charged else
                    "replays it" if r.replayed else "charges nothing")
            lines.append(f"{r.name}: night {r.night} of {r.horizon}: {what} (node noise "
                         f"scale {r.noise_scale:g}, running total's sd {r.std:.4g})")
            continue
        how = "replayed" if r.replayed else ("charged once" if r.charged else "no charge")
        value = r.value
        shown = (value.to_string() if hasattr(value, "to_string")
                 else f"{value} [{value.lower:g}, {value.upper:g}]")
        lines.append(f"{r.name}: night {r.night} of {r.horizon} ({how}) -> {r.path}\n{shown}")
    return "\n".join(lines)


def document(results: list[ContinualResult], dry_run: bool) -> dict[str, Any]:
    """The ``--json`` document of a continual run."""
    from .._json import jsonable

    def one(r: ContinualResult) -> dict[str, Any]:
        d: dict[str, Any] = {"name": r.name, "night": r.night, "horizon": r.horizon,
                             "replayed": r.replayed, "charged": r.charged,
                             "noise_scale": r.noise_scale, "std": r.std,
                             "file": None if r.path is None else str(r.path)}
        v = r.value
        if v is not None and hasattr(v, "reset_index"):
            d["values"] = jsonable(v.reset_index().to_dict(orient="records"))
        elif v is not None:
            number = int(v) if isinstance(v, int) else float(v)
            d["values"] = [{"value": number, "lower": v.lower, "upper": v.upper}]
        return d

    return {"format": "dpframe.continual-run/1", "dry_run": dry_run,
            "queries": [one(r) for r in results]}


__all__ = ["ContinualResult", "document", "is_continual", "night_of", "render",
           "run_continual", "state_path"]
