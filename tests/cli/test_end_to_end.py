"""The dpframe CLI end to end, in subprocesses: demo, run, dry run, bad specs, SIGINT.

Variations of the same paths run in-process (typer's CliRunner) to keep the suite fast.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpframe as dpf
from dpframe.datasets import visit_events
from tests.cli._support import ENV, SPEC_HEAD, cli, entries, inproc, write_visits


@pytest.fixture(scope="module")
def visits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_visits(tmp_path_factory.mktemp("visits"), 3, 4000)


SPEC = SPEC_HEAD + """ci = 0.95

[[query]]
name = "ages"
aggregate = "histogram"
column = "age"
bins = [0, 18, 65, 100]
epsilon = 0.2

[[query]]
name = "cities"
aggregate = "count"
by = ["city"]
keys = "private"
epsilon = 0.3
delta = 1e-7
"""


def write_spec(folder: Path, data: Path, *, epsilon: float = 5.0, column: str = "cost",
               input_extra: str = "", extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / "release.toml"
    p.write_text(SPEC.format(epsilon=epsilon, data=data.as_posix(), column=column, out="out",
                             input_extra=input_extra) + extra)
    return p


def test_demo(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    r = cli("demo", "--rows", "20000", "--out", tmp_path / "demo")
    assert r.returncode == 0, r.stderr
    assert time.perf_counter() - t0 < 30
    out = r.stdout
    for text in ("count of people", "± 95%", "income by state", "cities released", "left:"):
        assert text in out
    files = sorted((tmp_path / "demo").glob("*.parquet"))
    assert len(files) == 8
    doc = dpf.read_provenance(tmp_path / "demo" / "income_by_state.parquet")
    assert doc["session"] == "dpframe-demo" and doc["seeded"] is False
    assert pq.read_table(tmp_path / "demo" / "income_by_state.parquet").num_rows == 51


def test_run_dry_run_and_rerun(visits: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, visits)
    ledger = tmp_path / "budget.sqlite"
    dry = cli("run", spec, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "noise scale" in dry.stdout and "would charge epsilon 1" in dry.stdout
    assert "fits" in dry.stdout
    assert not ledger.exists() and not (tmp_path / "out").exists()  # nothing spent or written

    r = cli("run", spec)
    assert r.returncode == 0, r.stderr
    assert "Charged epsilon 1" in r.stdout and "left epsilon 4" in r.stdout
    got = entries(ledger)
    assert [s for _, s, _ in got] == ["released"] * 4
    for name in ("visits", "cost_by_region", "ages", "cities"):
        doc = dpf.read_provenance(tmp_path / "out" / f"{name}.parquet")
        assert doc["privacy_unit"] == "person_id" and doc["session"] == "nightly"
        assert doc["ledger_entry"] in {i for i, _, _ in got}
        assert doc["ledger_head"]["seq"] >= 2  # the chain head after the charge (31.3)
    against = [a for n in ("visits", "cost_by_region", "ages", "cities")
               for a in ("--against", tmp_path / "out" / f"{n}.parquet")]
    code, out = inproc("ledger", "verify", ledger, *against)
    assert code == 0 and out.count("charged at row") == 4, out
    t = pq.read_table(tmp_path / "out" / "cost_by_region.parquet")
    assert t.column("region").to_pylist() == ["Northeast", "Midwest", "South", "West"]
    assert {"cost", "lower", "upper"} <= set(t.column_names)

    again = cli("run", spec)  # a nightly re-run charges again, visibly
    assert again.returncode == 0, again.stderr
    assert "charges its budget again" in again.stdout
    assert len(entries(ledger)) == 8

    code, out = inproc("run", spec, "--dry-run")
    assert code == 0 and "spent so far epsilon 2" in out

    code, out = inproc("ledger", "show", ledger)
    assert code == 0 and "nightly" in out and "released" in out
    assert inproc("ledger", "show", tmp_path / "nope.sqlite")[0] == 4


@pytest.mark.parametrize(("column", "extra", "code", "message"), [
    ("nope", "", 2, "unknown column 'nope'"),
    ("day", "", 2, "no declared bounds"),
    ("cost", "\n[[query]]\nname = 'x'\naggregate = 'count'\nepsilon = 0.1\ncolumnn = 'a'\n",
     2, "unknown field 'columnn'"),
    ("cost", "\n[[query]]\nname = 'visits'\naggregate = 'count'\nepsilon = 0.1\n", 2,
     "named 'visits'"),
    ("cost", "\n[[query]]\nname = 'big'\naggregate = 'count'\nepsilon = 100\n", 3,
     "budget exceeded"),
])
def test_bad_specs_spend_nothing(visits: Path, tmp_path: Path, column: str, extra: str,
                                 code: int, message: str) -> None:
    spec = write_spec(tmp_path, visits, column=column, extra=extra)
    for args in (("run", spec), ("run", spec, "--dry-run")):
        got, out = inproc(*args)
        assert got == code and message in out, out
    assert entries(tmp_path / "budget.sqlite") == []
    assert not (tmp_path / "out").exists()


def test_bad_spec_in_a_subprocess(visits: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, visits, column="nope")
    r = cli("run", spec)
    assert r.returncode == 2 and "unknown column 'nope'" in r.stderr
    assert "Traceback" not in r.stderr
    assert entries(tmp_path / "budget.sqlite") == [] and not (tmp_path / "out").exists()


def test_usage_errors(visits: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[release\nepsilon = 1")
    code, out = inproc("run", bad)
    assert code == 2 and "not valid TOML" in out
    assert inproc("run", tmp_path / "missing.toml")[0] == 2
    spec = write_spec(tmp_path / "noledger", visits)
    spec.write_text(spec.read_text().replace('ledger = "budget.sqlite"', ""))
    code, out = inproc("run", spec)
    assert code == 2 and "durable ledger" in out
    code, out = inproc("run", spec, "--ledger", tmp_path / "other.sqlite")
    assert code == 0, out
    assert len(entries(tmp_path / "other.sqlite")) == 4
    assert inproc("frobnicate")[0] == 2
    assert inproc("run", spec, "--ledger", tmp_path / "other.sqlite", "--dry-run")[0] == 0
    other = write_spec(tmp_path / "mismatch", visits, epsilon=7.0)
    code, out = inproc("run", other, "--ledger", tmp_path / "other.sqlite")
    assert code == 4 and "budget" in out  # the ledger's budget differs from the spec's


def test_sigint_mid_scan(tmp_path: Path) -> None:
    """SIGINT during a scan: exit 130, nothing charged (the run's reservation follows its
    reads), no partial file, spill files removed."""
    data = tmp_path / "big"
    data.mkdir()
    for i in range(8):
        ev = visit_events(12_000, seed=10 + i, first_id=1 + 12_000 * i)
        pq.write_table(pa.Table.from_pandas(ev, preserve_index=False), data / f"p{i}.parquet",
                       row_group_size=5000)
    spill = tmp_path / "spill"
    spill.mkdir()
    spec = write_spec(tmp_path / "run", data, input_extra=textwrap.dedent(f"""
        batch_size = 2000
        partitions = 16
        spill_dir = "{spill.as_posix()}"
        """))
    ledger = tmp_path / "run" / "budget.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "dpframe.cli", "run", str(spec)], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # wait until a spill partition is being written
            if any(p.is_dir() and any(p.iterdir()) for p in spill.iterdir()):
                break
            if proc.poll() is not None:
                pytest.fail(f"the run ended before the interrupt: {proc.communicate()}")
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (out, err)
    assert "interrupted" in err and "terminate called" not in err and "Traceback" not in err
    got = entries(ledger)
    assert got == []  # interrupted while reading: a run reserves its cost after its reads
    out_dir = tmp_path / "run" / "out"
    written = sorted(p.name for p in out_dir.iterdir()) if out_dir.exists() else []
    assert not [n for n in written if n.endswith(".tmp") or n.startswith(".")]
    assert len(written) == sum(1 for _, s, _ in got if s == "released")
    assert list(spill.iterdir()) == []


@pytest.mark.parametrize("grouped", [False, True])
def test_every_aggregate(visits: Path, tmp_path: Path, grouped: bool) -> None:
    """Every spec aggregate plans (dry run) and releases, grouped or not."""
    by = 'by = ["region"]\n' if grouped else ""
    queries = "".join(
        f"\n[[query]]\nname = 'q{i}_{agg}'\naggregate = '{agg}'\nepsilon = 0.1\n{by}{extra}\n"
        for i, (agg, extra) in enumerate([("count", ""), ("sum", "column = 'cost'"),
                           ("mean", "column = 'cost'\nci = 0.9"), ("max", "column = 'age'"),
                           ("min", "column = 'age'"), ("median", "column = 'age'"),
                           ("quantile", "column = 'cost'\nq = 0.9\nresolution = 101"),
                           ("sum", "column = 'cost'\nmechanism = 'gaussian'\ndelta = 1e-7"),
                           ("nunique", "column = 'city'"), ("mode", "column = 'age'")]))
    queries += (f"\n[[query]]\nname = 'hist'\naggregate = 'histogram'\ncolumn = 'age'\n"
                f"bins = [0, 50, 100]\nepsilon = 0.1\nci = 0.9\n{by}")
    if grouped:
        queries += ("\n[[query]]\nname = 'agg'\naggregate = 'agg'\nby = ['region']\n"
                    "aggregates = { cost = ['sum', 'mean'], age = 'median' }\n"
                    "weights = { 'cost.sum' = 2, 'cost.mean' = 1, 'age.median' = 1 }\n"
                    "epsilon = 0.1\n"
                    "\n[[query]]\nname = 'hist10'\naggregate = 'histogram'\ncolumn = 'age'\n"
                    "bins = 10\nby = ['region']\nepsilon = 0.1\n")
    spec = write_spec(tmp_path, visits)
    text = spec.read_text()
    spec.write_text(text[: text.index("[[query]]")] + queries)
    code, out = inproc("run", spec, "--dry-run")
    assert code == 0, out
    code, out = inproc("run", spec, "--ledger", tmp_path / "l.sqlite", "--no-progress")
    assert code == 0, out
    got = entries(tmp_path / "l.sqlite")
    assert len(got) == (13 if grouped else 11) and all(s == "released" for _, s, _ in got)
    for f in (tmp_path / "out").iterdir():
        table = pq.read_table(f)
        doc = dpf.read_provenance(f)
        assert doc["rows"] == table.num_rows and doc["group_by"] == (["region"] if grouped
                                                                    else [])
    if grouped:  # a crosstab: a row per region and bin, the bins spread over the bounds
        t = pq.read_table(tmp_path / "out" / "hist10.parquet")
        assert t.num_rows == 40 and t.column("region").to_pylist()[:10] == ["Northeast"] * 10


def test_python_m_dpframe_runs_the_command_line() -> None:
    """``python -m dpframe`` is the command line too (it failed: no ``__main__``)."""
    out = subprocess.run([sys.executable, "-m", "dpframe", "--help"], env=ENV,
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0 and "demo" in out.stdout and "run" in out.stdout
