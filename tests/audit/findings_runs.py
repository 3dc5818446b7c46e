"""Run ids (issue 45, item 1): a re-run of a recorded run id is no second release.

``dpframe run --run-id ID`` records each release file's bytes in the ledger; a re-run with the
id writes those bytes again and charges nothing. A run id is therefore one release: what an
observer of every file written under the id (and of the ledger's record) sees is a function of
one noisy draw per query, charged once. The scenarios run the CLI's own code
(:func:`~dpframe.cli.runner.run_spec`, unseeded noise from the OS CSPRNG) on a spec over
built-in synthetic data (a count by region over four public keys: each query releases four
independent geometric draws), and count the distinct releases one run id produced across its
first run and its re-runs (the released values read back from the files).

The bound is structural, not sampled: ``epsilon = releases per run id x the query's epsilon``
(independent draws of one query on the same data compose), against the claim ``what the ledger
charged for the run id``. A replay that re-draws the noise writes a second, independent
release under one charge: twice the epsilon claimed.

- finding 87: the id re-run after its files were deleted (or one damaged).
- finding 88: a full output disk after the charge (``OSError(ENOSPC)`` for one file), then
  the id re-run once space is free: the file written late holds the values recorded at the
  charge, not a new draw.

The broken control (both): a replay that draws the noise again (the exact half computed again
and noised on the session's generator, no charge).
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import errno
import shutil
import tempfile
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from dpframe.cli import runner
from dpframe.cli.runids import release_bytes, write_bytes
from dpframe.core.apply import apply_plan
from dpframe.engine.release import compute_exact
from dpframe.errors import OutputError

EPSILON = 0.5
TRIALS = 3

_SPEC = """
[release]
name = "audit-runs"
epsilon = 10.0
ledger = "budget.sqlite"
[input]
generate = {{ dataset = "people", people = 300, seed = 7 }}
[keys]
region = ["Northeast", "Midwest", "South", "West"]
[output]
dir = "out"
[[query]]
name = "by_region"
aggregate = "count"
by = ["region"]
epsilon = {epsilon}
"""


def _folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="dpframe-audit-runs-"))
    atexit.register(shutil.rmtree, folder, True)
    (folder / "release.toml").write_text(_SPEC.format(epsilon=EPSILON))
    return folder


def _values(path: Path) -> tuple[float, ...]:
    table = pq.read_table(path)
    return tuple(float(v) for v in table.column("count").to_pylist())


def _charged(folder: Path) -> Fraction:
    import sqlite3

    with sqlite3.connect(folder / "budget.sqlite") as conn:
        return sum((Fraction(e) for (e,) in conn.execute("SELECT epsilon FROM entries")),
                   Fraction(0))


@contextlib.contextmanager
def _full_disk_once() -> Iterator[None]:
    """The first release file of the run cannot be written (ENOSPC), after the charge."""
    write, calls = runner.write_bytes, {"n": 0}

    def full(path: Path, data: bytes) -> Path:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OutputError(f"cannot write {path.name} ({errno.errorcode[errno.ENOSPC]})")
        return write(path, data)

    runner.write_bytes = full  # type: ignore[assignment]
    try:
        yield
    finally:
        runner.write_bytes = write  # type: ignore[assignment]


def _one_id(full_disk: bool) -> tuple[int, Fraction]:
    """One run id: its first run (on a full disk, then the file is missing), then two
    re-runs, each after the file was deleted or damaged; the distinct releases it wrote and
    what the ledger charged."""
    folder = _folder()
    spec, out = folder / "release.toml", folder / "out" / "by_region.parquet"
    seen = []
    if full_disk:
        with _full_disk_once(), pytest.raises(OutputError):
            runner.run_spec(spec, run_id="night", progress=False)
        assert not out.exists()
    else:
        runner.run_spec(spec, run_id="night", progress=False)
        seen.append(_values(out))
        out.unlink()
    report = runner.run_spec(spec, run_id="night", progress=False)
    assert report.replayed is not None
    seen.append(_values(out))
    out.write_bytes(out.read_bytes()[:-16] + b"\x00" * 16)  # damaged
    runner.run_spec(spec, run_id="night", progress=False)
    seen.append(_values(out))
    return len(set(seen)), _charged(folder)


def _run_ids(full_disk: bool) -> Any:
    def exact(seed: int) -> tuple[float, float, float, str]:
        worst, claim = 0, Fraction(0)
        for _ in range(TRIALS):
            releases, charged = _one_id(full_disk)
            worst, claim = max(worst, releases), max(claim, charged)
        how = (f"{worst} distinct release(s) of one run id over {TRIALS} ids (first run and two "
               f"re-runs each) x epsilon {EPSILON} each; claim: the ledger's charge per id")
        return worst * EPSILON, float(claim), 0.0, how

    return exact


run_id_replay = _run_ids(full_disk=False)
run_id_full_disk = _run_ids(full_disk=True)


def _redraw(self: runner.PricedRun, records: list[dict[str, Any]], *,
            first_folder: bool = True, dry_run: bool, log: runner.RunLog | None = None
            ) -> runner.RunReport:
    """BROKEN: a replay that draws the noise again (no charge) instead of the recorded bytes."""
    for p, rec in zip(self.queries, records, strict=True):
        c = compute_exact(self.session, p.query, self.job.backend)
        release = apply_plan(c.plan, c.exact, self.session.rng)
        data = release_bytes(release, self.job.output_format)
        write_bytes(Path(rec["folder"]) / rec["file"], data)
    return dataclasses.replace(self._report([], dry_run=dry_run), replayed=[])


@contextlib.contextmanager
def replay_redraws() -> Iterator[None]:
    """The broken replay patched into :class:`~dpframe.cli.runner.PricedRun`."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner.PricedRun, "replay", _redraw)
        yield


__all__ = ["replay_redraws", "run_id_full_disk", "run_id_replay"]
