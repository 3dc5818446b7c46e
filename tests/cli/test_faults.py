"""``dpframe run`` under faults (issue 36): an input changed or corrupt during the run, a full
output disk, a full ledger disk between a charge and its outcome, SIGTERM, and concurrent runs
on one ledger. Each refuses with nothing spent when it can (before the run's one reservation of
its whole cost), and otherwise gives every entry it charged an outcome (or, when the ledger
cannot record it, says that it was charged), leaves no partial or temporary file, and exits
with the documented code.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpframe.datasets import visit_events
from tests.cli._support import ENV, SPEC_HEAD, entries, inproc, write_visits

SPEC = SPEC_HEAD + """
[[query]]
name = "mean_cost"
aggregate = "mean"
column = "cost"
epsilon = 0.2
"""


def write_spec(folder: Path, data: Path, *, epsilon: float = 1.0, out: str = "out",
               input_extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    spec = folder / "release.toml"
    spec.write_text(SPEC.format(epsilon=epsilon, data=data.as_posix(), out=out, column="cost",
                                input_extra=input_extra))
    return spec


def leftovers(folder: Path) -> list[str]:
    """Temporary or partial files left in ``folder``."""
    if not folder.exists():
        return []
    return [p.name for p in folder.iterdir() if p.name.startswith(".") or
            p.name.endswith(".tmp")]


@pytest.fixture
def visits(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    return write_visits(data, 2, 2000)


def other_file(tmp_path: Path) -> Path:
    """A valid Parquet file of the same schema with other people's visits."""
    ev = visit_events(2000, seed=99, first_id=1)
    path = tmp_path / "other.parquet"
    pq.write_table(pa.Table.from_pandas(ev, preserve_index=False), path)
    return path


# -- 1. an input that changes or is corrupt during the run -----------------------------------

def _on_exact(monkeypatch: pytest.MonkeyPatch, call: int, act: Any) -> None:
    """``act()`` just before the ``call``-th exact computation of the scan backend."""
    import dpframe.backends.arrow as arrow

    original = arrow.ArrowBackend.exact
    calls = {"n": 0}

    def exact(self: Any, *args: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == call:
            act()
        return original(self, *args)

    monkeypatch.setattr(arrow.ArrowBackend, "exact", exact)



def refused_with_nothing_spent(tmp_path: Path, data: Path, message: str) -> None:
    """``dpframe run`` over ``data`` refuses with an input error (exit 2) saying ``message``
    and that nothing was charged; the ledger holds no entry."""
    spec = write_spec(tmp_path / "run", data)
    code, out = inproc("run", spec, "--no-progress")
    assert code == 2, out
    assert message in out and "nothing was charged" in out
    assert entries(tmp_path / "run" / "budget.sqlite") == []

def test_input_replaced_between_queries_refuses_with_nothing_spent(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, visits: Path) -> None:
    """A file replaced (``cp other new && mv new in.parquet``) after the first query read it:
    the run reads one snapshot or none. Exit 2 (an input error), nothing charged, nothing
    written (it used to release the second query from other data than the first)."""
    other = other_file(tmp_path)
    _on_exact(monkeypatch, 2, lambda: os.replace(shutil.copy(other, tmp_path / "new"),
                                                 visits / "part-0.parquet"))
    spec = write_spec(tmp_path / "run", visits)
    code, out = inproc("run", spec, "--no-progress")
    assert code == 2, out
    assert "part-0.parquet changed or was replaced" in out
    assert "nothing was charged and no release file was written" in out
    assert entries(tmp_path / "run" / "budget.sqlite") == []
    assert not (tmp_path / "run" / "out").exists()


def test_input_replaced_mid_read_refuses_with_nothing_spent(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, visits: Path) -> None:
    """A file replaced while a query reads it (pyarrow then reads pages of the new file with
    the old footer): a typed input error before any charge, not an OSError after it."""
    from dpframe.backends.arrow.source import DatasetSource

    other = other_file(tmp_path)
    original = DatasetSource._raw_batches

    def raw_batches(self: Any, *args: Any) -> Any:
        for i, batch in enumerate(original(self, *args)):
            if i == 0:
                os.replace(shutil.copy(other, tmp_path / "new"), visits / "part-0.parquet")
            yield batch

    monkeypatch.setattr(DatasetSource, "_raw_batches", raw_batches)
    refused_with_nothing_spent(tmp_path, visits, "changed or was replaced")


def test_corrupt_input_refuses_with_nothing_spent(tmp_path: Path) -> None:
    """Bytes overwritten in a data page: a typed input error (exit 2) with nothing charged,
    not an unexpected OSError after the charge. The message quotes nothing from the file."""
    data = tmp_path / "data"
    data.mkdir()
    ev = visit_events(3000, seed=1, first_id=1)
    path = data / "part-0.parquet"
    pq.write_table(pa.Table.from_pandas(ev, preserve_index=False), path, compression="snappy")
    meta = pq.ParquetFile(path).metadata
    col = meta.row_group(0).column(meta.schema.names.index("cost"))
    start = col.data_page_offset
    with open(path, "r+b") as f:  # a page header and the start of its values
        f.seek(start)
        f.write(bytes(range(7, 7 + 64)))
    refused_with_nothing_spent(tmp_path, data, "cannot read the input")


def test_garbage_in_a_checksummed_page_is_refused_not_released(tmp_path: Path) -> None:
    """Bytes overwritten among a data page's values, which decode without error (an
    uncompressed page): a file written with page checksums (as ``dpframe generate`` and
    ``dpf.to_parquet`` write them) is verified as it is read, so the run refuses with nothing
    spent instead of releasing statistics of garbage."""
    data = tmp_path / "data"
    data.mkdir()
    ev = visit_events(3000, seed=1, first_id=1)
    path = data / "part-0.parquet"
    pq.write_table(pa.Table.from_pandas(ev, preserve_index=False), path, compression="none",
                   use_dictionary=False, write_page_checksum=True)
    meta = pq.ParquetFile(path).metadata
    col = meta.row_group(0).column(meta.schema.names.index("cost"))
    with open(path, "r+b") as f:  # among the values, past the page header
        f.seek(col.data_page_offset + col.total_compressed_size // 2)
        f.write(b"\xff" * 32)
    refused_with_nothing_spent(tmp_path, data, "cannot read the input")


# -- 2. a full output disk ---------------------------------------------------------------------

FULL_DISK_RUN = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
from dpframe.cli import commands, runner
write = runner._WRITERS["parquet"]
calls, at = {"n": 0}, int(sys.argv[2])
def full(release, path):
    calls["n"] += 1
    if calls["n"] < at:
        return write(release, path)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (256, hard))  # the disk is full from here on
    try:
        return write(release, path)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
runner._WRITERS["parquet"] = full
sys.argv = ["dpframe", "run", sys.argv[1], "--no-progress"]
commands.main()
"""


def test_full_output_disk_marks_the_entry_failed(tmp_path: Path, visits: Path) -> None:
    """The disk fills up while the second release file is written (RLIMIT_FSIZE: a real
    EFBIG from the OS): exit 5 with a typed message, the entry marked failed (not published),
    the later query failed too (the run stops), no temporary file, the first file intact."""
    spec = write_spec(tmp_path / "run", visits)
    r = subprocess.run([sys.executable, "-c", FULL_DISK_RUN, str(spec), "2"], env=ENV,
                       capture_output=True, text=True, timeout=120)
    out = " ".join((r.stdout + r.stderr).split())
    assert r.returncode == 5, out
    assert "File too large" in out and "cannot write" in out and "Traceback" not in out
    assert "#1 released; #2, #3 failed" in out and "1 release file written" in out
    assert [s for _, s, _ in entries(tmp_path / "run" / "budget.sqlite")] == [
        "released", "failed", "failed"]
    folder = tmp_path / "run" / "out"
    assert sorted(p.name for p in folder.iterdir()) == ["visits.parquet"]
    assert pq.read_table(folder / "visits.parquet").num_rows == 1


# -- 3. a full ledger disk between a charge and its outcome ------------------------------------

FULL_LEDGER_RUN = """
import os, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
from dpframe.cli import commands
from dpframe.engine.ledger import SqliteLedger
record, limit = SqliteLedger.record, sys.argv[2]
def full(self, *args, **kwargs):
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft == resource.RLIM_INFINITY:  # the disk fills up after the charge, before the outcome
        wal = os.path.getsize(str(self.path) + "-wal")
        resource.setrlimit(resource.RLIMIT_FSIZE, (wal if limit == "wal" else int(limit), hard))
    return record(self, *args, **kwargs)
SqliteLedger.record = full
sys.argv = ["dpframe", "run", sys.argv[1], "--no-progress"]
commands.main()
"""


def _run_on_full_ledger_disk(tmp_path: Path, visits: Path, limit: str
                             ) -> tuple[subprocess.CompletedProcess[str], str]:
    spec = write_spec(tmp_path / "run", visits)
    r = subprocess.run([sys.executable, "-c", FULL_LEDGER_RUN, str(spec), limit], env=ENV,
                       capture_output=True, text=True, timeout=120)
    return r, " ".join((r.stdout + r.stderr).split())


@pytest.mark.slow
def test_full_ledger_disk_after_the_charge_records_every_outcome(
        tmp_path: Path, visits: Path) -> None:
    """The ledger's disk fills up between the run's reservation and its first outcome
    (RLIMIT_FSIZE: no write past the end of the write-ahead log, a real EFBIG): every outcome
    still fits in the room the reservation made, so the run succeeds (exit 0)."""
    r, out = _run_on_full_ledger_disk(tmp_path, visits, "wal")
    assert r.returncode == 0, out
    assert [s for _, s, _ in entries(tmp_path / "run" / "budget.sqlite")] == ["released"] * 3
    assert len(list((tmp_path / "run" / "out").iterdir())) == 3


@pytest.mark.slow
def test_full_ledger_disk_beyond_the_room_exits_7_charged(tmp_path: Path, visits: Path) -> None:
    """When even the reserved room cannot be written (no write past 4 KiB of any file), the
    run exits 7 "charged; outcome not recorded", never 4 ("nothing spent"): the entries stay
    ``charged`` and the status names them and the file that was written."""
    r, out = _run_on_full_ledger_disk(tmp_path, visits, "4096")
    assert r.returncode == 7, out
    assert "charged; outcome not recorded" in out and "its budget is spent" in out, out
    assert "Traceback" not in out and "nothing was charged" not in out
    assert "this run charged 3 ledger entries" in out and "1 release file written" in out, out
    assert [s for _, s, _ in entries(tmp_path / "run" / "budget.sqlite")] == ["charged"] * 3
    assert len(list((tmp_path / "run" / "out").iterdir())) == 1


# -- 4. SIGTERM ----------------------------------------------------------------------------------

def _created(ledger: Path) -> bool:
    """Whether the run has created its ledger (its creation is the ledger's own business:
    tests/engine/ledger/test_interrupts.py)."""
    try:
        entries(ledger)
    except sqlite3.Error:
        return False
    return ledger.exists()


SIGTERM_RUN = """
import os, signal, sys
from dpframe.cli import commands, runner
from dpframe.engine import release
at, where = int(sys.argv[2]), sys.argv[3]
calls = {"n": 0}
def hook(original):
    def step(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == at:
            os.kill(os.getpid(), signal.SIGTERM)
        return original(*args, **kwargs)
    return step
if where == "write":
    runner._WRITERS["parquet"] = hook(runner._WRITERS["parquet"])
else:
    setattr(runner, where, hook(getattr(runner, where)))
sys.argv = ["dpframe", "run", sys.argv[1], "--no-progress"]
commands.main()
"""


@pytest.mark.parametrize(("where", "statuses", "files"), [
    ("compute_exact", [], 0),  # while reading the input: nothing charged
    ("add_noise", ["released", "failed", "failed"], 1),  # after the reservation
    ("write", ["released", "released", "failed"], 2),  # mid-write: the file and its outcome
])
def test_sigterm_exits_143_with_every_outcome_recorded(
        tmp_path: Path, visits: Path, where: str, statuses: list[str], files: int) -> None:
    """SIGTERM at the second query's read, noise or file write: exit 143 with a status
    message, no entry left ``charged``, no temporary file, one file per released entry."""
    spec = write_spec(tmp_path / "run", visits)
    r = subprocess.run([sys.executable, "-c", SIGTERM_RUN, str(spec), "2", where], env=ENV,
                       capture_output=True, text=True, timeout=120)
    err = " ".join(r.stderr.split())
    assert r.returncode == 143, (r.stdout, r.stderr)
    assert "terminated (SIGTERM) during query 'cost_by_region'" in err and "Status:" in err
    assert "Traceback" not in err
    assert [s for _, s, _ in entries(tmp_path / "run" / "budget.sqlite")] == statuses
    folder = tmp_path / "run" / "out"
    assert leftovers(folder) == []
    assert len(list(folder.iterdir()) if folder.exists() else []) == files


@pytest.mark.slow
def test_sigterm_at_any_moment_exits_143_with_every_outcome_recorded(tmp_path: Path) -> None:
    """SIGTERM (a service stop, ``timeout``) at a fixed list of moments after a run opened its
    ledger: exit 143 with a status message (or 0 when the run had already finished), no entry
    left ``charged``, no temporary file, and one file per released entry. (It used to die
    silently, leaving entries ``charged`` and temporary files.)"""
    data = tmp_path / "data"
    data.mkdir()
    write_visits(data, 4, 6000)
    delays = [0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.6, 0.8]
    codes = []
    for i, delay in enumerate(delays):
        spec = write_spec(tmp_path / f"run{i}", data, epsilon=100.0,
                          input_extra="batch_size = 1000")
        ledger, folder = tmp_path / f"run{i}" / "budget.sqlite", tmp_path / f"run{i}" / "out"
        proc = subprocess.Popen([sys.executable, "-m", "dpframe.cli", "run", str(spec),
                                 "--no-progress"], env=ENV, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            while not _created(ledger) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(delay)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        codes.append(proc.returncode)
        assert proc.returncode in (0, 143), (delay, out, err)
        if proc.returncode == 143:
            assert "terminated (SIGTERM)" in err and "Status:" in err, (delay, err)
            assert "Traceback" not in err
        got = entries(ledger)
        assert all(s in ("released", "failed") for _, s, _ in got), (delay, got, err)
        assert leftovers(folder) == [], delay
        files = sorted(p.name for p in folder.iterdir()) if folder.exists() else []
        assert len(files) == sum(1 for _, s, _ in got if s == "released"), (delay, got, files)
    assert codes.count(143) >= len(delays) // 2, codes  # most signals landed mid-run


# -- 5. concurrent runs on one ledger -----------------------------------------------------------

def test_concurrent_runs_reserve_their_whole_cost(tmp_path: Path, visits: Path) -> None:
    """Six runs of one spec (cost 0.7 each) start together on a ledger that fits two: exactly
    two complete, the other four exit 3 with nothing charged (none releases part of its
    queries), and the ledger holds two whole runs."""
    ledger = tmp_path / "run" / "budget.sqlite"
    specs = []
    for i in range(6):
        s = write_spec(tmp_path / "run", visits, epsilon=1.5, out=f"out-{i}")
        specs.append(s.rename(tmp_path / "run" / f"release-{i}.toml"))
    procs = [subprocess.Popen([sys.executable, "-m", "dpframe.cli", "run", str(s),
                               "--no-progress"], env=ENV, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=tmp_path / "run")
             for s in specs]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 0, 3, 3, 3, 3], results
    for code, _, err in results:
        if code == 3:
            assert "nothing was charged" in " ".join(err.split()), err
    got = entries(ledger)
    assert len(got) == 6 and all(s == "released" for _, s, _ in got), got
    done = [i for i in range(6) if (tmp_path / "run" / f"out-{i}").exists()]
    assert len(done) == 2
    for i in done:
        assert len(list((tmp_path / "run" / f"out-{i}").iterdir())) == 3
