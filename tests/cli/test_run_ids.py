"""``dpframe run --run-id`` (issue 45, item 1): the first run with an id records each release
file's bytes in the ledger; a re-run with the id charges nothing, draws no noise and rewrites a
missing or damaged file byte-identical; a changed spec or input is refused (exit 8) before
anything is charged; a full output disk is recovered by re-running the id."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dpframe.cli.commands import EXIT_LEDGER, EXIT_OUTPUT, EXIT_RUN_ID, app
from tests.cli._support import ENV, SPEC_HEAD, entries, inproc, write_visits


def _spec(tmp_path: Path, data: Path, *, extra: str = "", epsilon: float = 2.0) -> Path:
    spec = tmp_path / "release.toml"
    spec.write_text(SPEC_HEAD.format(epsilon=epsilon, data=data.as_posix(), out="out",
                                     column="cost", input_extra="") + extra)
    return spec


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    return write_visits(folder, 2, 500)


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir()) if p.is_file()}


def _spent(ledger: Path) -> list[tuple[int, str]]:
    return [(i, s) for i, s, _ in entries(ledger)]


def _json(*args: str | Path) -> tuple[int, dict[str, Any]]:
    """Run the CLI in this process with ``--json``: (exit code, the document on stdout)."""
    r = CliRunner().invoke(app, [str(a) for a in args])
    return r.exit_code, json.loads(r.stdout.strip().splitlines()[-1])


def test_replay_charges_nothing_and_restores_files_byte_identical(tmp_path: Path,
                                                                   data: Path) -> None:
    spec = _spec(tmp_path, data)
    out, ledger = tmp_path / "out", tmp_path / "budget.sqlite"
    code, text = inproc("run", spec, "--run-id", "n1", "--no-progress")
    assert code == 0, text
    first = _digests(out)
    assert set(first) == {"visits.parquet", "cost_by_region.parquet"}
    charged = _spent(ledger)
    assert charged == [(1, "released"), (2, "released")]

    (out / "visits.parquet").unlink()  # missing
    damaged = out / "cost_by_region.parquet"
    damaged.write_bytes(damaged.read_bytes()[:-7] + b"garbage")  # damaged
    code, doc = _json("run", spec, "--run-id", "n1", "--json")
    assert code == 0, doc
    assert _digests(out) == first  # byte-identical to the first run
    assert _spent(ledger) == charged  # nothing charged: no new entry
    assert doc["replayed"] is True and doc["run_id"] == "n1"
    assert doc["charged"] == {"epsilon": 0.0, "delta": 0.0} and doc["spent"]["epsilon"] == 0.5
    assert {r["query"]: r["action"] for r in doc["restored"]} == {
        "visits": "restored", "cost_by_region": "restored"}

    mtime = (out / "visits.parquet").stat().st_mtime_ns
    code, text = inproc("run", spec, "--run-id", "n1", "--no-progress")
    assert code == 0 and "restored 0 of 2 file(s)" in text and "no charge" in text, text
    assert "(unchanged)" in text
    assert (out / "visits.parquet").stat().st_mtime_ns == mtime  # an intact file left alone
    assert _spent(ledger) == charged
    code, text = inproc("ledger", "verify", ledger, "--against", out / "visits.parquet",
                        "--against", damaged)
    assert code == 0 and text.count("its values are the ones released") == 2, text


def test_replay_draws_no_noise(tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch
                               ) -> None:
    """The replay never reaches the noise step (nor the charge)."""
    spec = _spec(tmp_path, data)
    assert inproc("run", spec, "--run-id", "n1", "--no-progress")[0] == 0
    from dpframe.cli import runner

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("noise drawn or budget charged on a replay")

    monkeypatch.setattr(runner, "add_noise", boom)
    monkeypatch.setattr(runner, "charge_all", boom)
    (tmp_path / "out" / "visits.parquet").unlink()
    code, text = inproc("run", spec, "--run-id", "n1", "--no-progress")
    assert code == 0 and "restored 1 of 2" in text, text


def test_run_id_in_the_spec_with_the_date(tmp_path: Path, data: Path) -> None:
    spec = _spec(tmp_path, data, extra='\n[run]\nid = "nightly-{date}"\n')
    code, doc = _json("run", spec, "--json")
    assert code == 0, doc
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert doc["run_id"] == f"nightly-{today}" and doc["replayed"] is False
    code, doc = _json("run", spec, "--json")
    assert code == 0 and doc["replayed"] is True and doc["charged"]["epsilon"] == 0.0
    code, doc = _json("run", spec, "--json", "--dry-run")  # the dry run says it too
    assert code == 0 and doc["replayed"] is True and doc["charged"]["epsilon"] == 0.0


def test_bad_run_id_placeholder_is_a_spec_error(tmp_path: Path, data: Path) -> None:
    spec = _spec(tmp_path, data, extra='\n[run]\nid = "nightly-{day}"\n')
    code, text = inproc("run", spec)
    assert code == 2 and "{date} and {name}" in text, text
    code, text = inproc("run", _spec(tmp_path, data), "--run-id", "a b")
    assert code == 2 and "run id" in text and not (tmp_path / "budget.sqlite").exists()


def test_changed_spec_is_refused_with_exit_8_before_anything(tmp_path: Path, data: Path
                                                            ) -> None:
    spec = _spec(tmp_path, data)
    assert inproc("run", spec, "--run-id", "n1", "--no-progress")[0] == 0
    before, files = _spent(tmp_path / "budget.sqlite"), _digests(tmp_path / "out")
    spec.write_text(spec.read_text().replace("epsilon = 0.3", "epsilon = 0.4"))
    (tmp_path / "out" / "visits.parquet").unlink()
    code, doc = _json("run", spec, "--run-id", "n1", "--json")
    assert code == EXIT_RUN_ID == 8
    assert doc["error"] == "RunIdError" and "another spec" in doc["message"]
    assert _spent(tmp_path / "budget.sqlite") == before  # nothing charged
    assert "visits.parquet" not in _digests(tmp_path / "out")  # nothing written
    del files["visits.parquet"]
    assert _digests(tmp_path / "out") == files
    # a comment or the output folder is not the release: the same id still replays
    spec.write_text("# nightly\n" + spec.read_text().replace("epsilon = 0.4", "epsilon = 0.3"))
    assert inproc("run", spec, "--run-id", "n1", "--no-progress")[0] == 0


def test_changed_input_is_refused_with_exit_8_before_any_charge(tmp_path: Path, data: Path
                                                               ) -> None:
    spec = _spec(tmp_path, data)
    assert inproc("run", spec, "--run-id", "n1", "--no-progress")[0] == 0
    before = _spent(tmp_path / "budget.sqlite")
    write_visits(data, 1, 501)  # part-0 rewritten: one more person
    code, text = inproc("run", spec, "--run-id", "n1", "--no-progress")
    assert code == EXIT_RUN_ID and "another input" in text and "nothing was charged" in text
    assert "sha256" not in text  # no digest is printed
    assert _spent(tmp_path / "budget.sqlite") == before
    # a new id releases the new input (and charges)
    assert inproc("run", spec, "--run-id", "n2", "--no-progress")[0] == 0
    assert len(_spent(tmp_path / "budget.sqlite")) == 4


def test_a_run_stopped_between_records_is_completed_by_its_id(
        tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A defect while recording the second query (after the first was recorded, before any
    file): a re-run with the id replays the first from the ledger and releases the second,
    charged again (its failed entry's charge stands); a third run changes nothing."""
    from dpframe.cli import runner

    spec = _spec(tmp_path, data)
    ledger, out = tmp_path / "budget.sqlite", tmp_path / "out"
    real, calls = runner.release_bytes, {"n": 0}

    def defect(release: object, fmt: str) -> bytes:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("a defect")
        return real(release, fmt)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "release_bytes", defect)
    code, text = inproc("run", spec, "--run-id", "n1", "--no-progress")
    assert code == 1 and "#1 released; #2 failed" in text, text
    assert not out.exists() or not list(out.iterdir())  # no value written anywhere
    monkeypatch.setattr(runner, "release_bytes", real)
    with sqlite3.connect(ledger) as conn:
        (det,) = conn.execute("SELECT details FROM outcomes WHERE entry_id = 1").fetchone()
    recorded_sha = json.loads(det)["run"]["sha256"]

    code, doc = _json("run", spec, "--run-id", "n1", "--json")
    assert code == 0, doc
    assert doc["replayed"] is True and doc["charged"]["epsilon"] == pytest.approx(0.3)
    assert [(q["name"], q["status"]) for q in doc["queries"]] == [
        ("visits", "replayed"), ("cost_by_region", "released")]
    assert _spent(ledger) == [(1, "released"), (2, "failed"), (3, "released")]
    assert hashlib.sha256((out / "visits.parquet").read_bytes()).hexdigest() == recorded_sha
    files = _digests(out)
    code, doc = _json("run", spec, "--run-id", "n1", "--json")
    assert code == 0 and doc["charged"]["epsilon"] == 0.0 and len(_spent(ledger)) == 3
    assert {r["action"] for r in doc["restored"]} == {"intact"} and _digests(out) == files


def test_without_a_run_id_json_says_a_rerun_charges_again(tmp_path: Path, data: Path) -> None:
    spec = _spec(tmp_path, data)
    assert inproc("run", spec, "--no-progress")[0] == 0
    r = subprocess.run([sys.executable, "-m", "dpframe.cli", "run", str(spec), "--json"],
                       env=ENV, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["earlier_releases"] == 2 and doc["run_id"] is None
    assert doc["charged"]["epsilon"] == pytest.approx(0.5)
    assert "already holds 2 releases" in r.stderr and "charges its budget again" in r.stderr
    code, doc = _json("run", spec, "--json", "--dry-run")
    assert code == 0 and doc["earlier_releases"] == 4
    assert doc["charged"]["epsilon"] == pytest.approx(0.5)


# -- a full output disk after the charge --------------------------------------------------------

FULL_DISK_RUN = """
import errno, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
from dpframe.cli import commands, runner
write, calls, at = runner.write_bytes, {"n": 0}, int(sys.argv[2])
def full(path, data):
    calls["n"] += 1
    if calls["n"] != at:
        return write(path, data)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (256, hard))  # the disk is full for this file
    try:
        return write(path, data)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
runner.write_bytes = full
sys.argv = ["dpframe", "run", sys.argv[1], "--run-id", "n1", "--no-progress"]
commands.main()
"""


def test_full_output_disk_is_recovered_by_rerunning_the_id(tmp_path: Path, data: Path) -> None:
    """The first file cannot be written (RLIMIT_FSIZE: a real EFBIG) after the charge: exit
    5, every entry released with its values in the ledger, the other file written; freeing
    space and re-running the id writes it, the spend unchanged."""
    spec = _spec(tmp_path, data)
    r = subprocess.run([sys.executable, "-c", FULL_DISK_RUN, str(spec), "1"], env=ENV,
                       capture_output=True, text=True, timeout=120)
    text = " ".join((r.stdout + r.stderr).split())
    assert r.returncode == EXIT_OUTPUT, text
    assert "File too large" in text and "--run-id n1" in text and "Traceback" not in text
    ledger, out = tmp_path / "budget.sqlite", tmp_path / "out"
    charged = _spent(ledger)
    assert charged == [(1, "released"), (2, "released")]
    assert sorted(p.name for p in out.iterdir()) == ["cost_by_region.parquet"]  # no temp file
    code, doc = _json("run", spec, "--run-id", "n1", "--json")
    assert code == 0 and doc["charged"]["epsilon"] == 0.0, doc
    assert {r["query"]: r["action"] for r in doc["restored"]} == {
        "visits": "restored", "cost_by_region": "intact"}
    assert _spent(ledger) == charged
    with sqlite3.connect(ledger) as conn:
        recorded = {json.loads(d)["run"]["file"]: json.loads(d)["run"]["sha256"]
                    for (d,) in conn.execute("SELECT details FROM outcomes")}
    assert _digests(out) == recorded  # every charged release written, as recorded


def test_ledger_show_json_does_not_print_the_input_digest(tmp_path: Path, data: Path) -> None:
    spec = _spec(tmp_path, data)
    assert inproc("run", spec, "--run-id", "n1", "--no-progress")[0] == 0
    ledger = tmp_path / "budget.sqlite"
    with sqlite3.connect(ledger) as conn:
        stored = {json.loads(d)["run"]["input_digest"]
                  for (d,) in conn.execute("SELECT details FROM outcomes")}
    (digest,) = stored
    assert digest.startswith("sha256:")
    r = CliRunner().invoke(app, ["ledger", "show", str(ledger), "--json"])
    assert r.exit_code == 0 and digest[7:] not in r.stdout and digest[7:19] not in r.stdout
    doc = json.loads(r.stdout)
    assert {e["details"]["run"]["input_digest"] for e in doc["entries"]} == {
        "(recorded, not shown)"}


# -- the ledger covers the run records ----------------------------------------------------------

@pytest.mark.parametrize("table", ["outcomes", "entries"])
def test_tampered_run_record_fails_verification(tmp_path: Path, data: Path, table: str
                                                ) -> None:
    spec = _spec(tmp_path, data)
    assert inproc("run", spec, "--run-id", "n1", "--no-progress")[0] == 0
    ledger = tmp_path / "budget.sqlite"
    with sqlite3.connect(ledger) as conn:
        rid, det = conn.execute(f"SELECT id, details FROM {table} ORDER BY id LIMIT 1").fetchone()
        d = json.loads(det)
        d["run"]["bytes"] = d["run"]["bytes"][:-8] + "AAAAAAA="  # another stored value
        conn.execute(f"UPDATE {table} SET details = ? WHERE id = ?", (json.dumps(d), rid))
    code, text = inproc("ledger", "verify", ledger)
    assert code == EXIT_LEDGER and "fails verification" in text, text
    (tmp_path / "out" / "visits.parquet").unlink()
    code, text = inproc("run", spec, "--run-id", "n1", "--no-progress")  # never replayed
    assert code == EXIT_LEDGER and not (tmp_path / "out" / "visits.parquet").exists(), text


# -- the crash points of docs/cli.md's fault table -----------------------------------------------

SIGTERM_RUN = """
import os, signal, sys
from dpframe.cli import commands, runner
at, where, calls = int(sys.argv[2]), sys.argv[3], {"n": 0}
original = getattr(runner, where)
def step(*args, **kwargs):
    calls["n"] += 1
    if calls["n"] == at:
        os.kill(os.getpid(), signal.SIGTERM)
    return original(*args, **kwargs)
setattr(runner, where, step)
sys.argv = ["dpframe", "run", sys.argv[1], "--run-id", "n1", "--no-progress"]
commands.main()
"""


@pytest.mark.parametrize(("where", "statuses", "files", "recharged"), [
    ("compute_exact", [], 0, True),  # before the charge: the re-run is the first run
    ("add_noise", ["released", "released"], 0, False),  # after the charge, before any write
    ("write_bytes", ["released", "released"], 1, False),  # mid-write
])
def test_sigterm_then_rerun_of_the_id(tmp_path: Path, data: Path, where: str,
                                      statuses: list[str], files: int, recharged: bool
                                      ) -> None:
    """SIGTERM at the second query's read, noise or file write (exit 143), then a re-run with
    the id: every release written, as recorded, charged once."""
    spec = _spec(tmp_path, data)
    ledger, out = tmp_path / "budget.sqlite", tmp_path / "out"
    r = subprocess.run([sys.executable, "-c", SIGTERM_RUN, str(spec), "2", where], env=ENV,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 143 and "Traceback" not in r.stderr, (r.stdout, r.stderr)
    assert [s for _, s in _spent(ledger)] == statuses
    assert (sorted(p.name for p in out.iterdir()) if out.exists() else []) == \
        ["visits.parquet"][:files]  # no temporary file
    code, doc = _json("run", spec, "--run-id", "n1", "--json")
    assert code == 0, doc
    assert doc["charged"]["epsilon"] == pytest.approx(0.5 if recharged else 0.0)
    assert _spent(ledger) == [(1, "released"), (2, "released")]
    with sqlite3.connect(ledger) as conn:
        recorded = {json.loads(d)["run"]["file"]: json.loads(d)["run"]["sha256"]
                    for (d,) in conn.execute("SELECT details FROM outcomes")}
    assert _digests(out) == recorded
