"""Release specs run from Python (``dpframe.cli.run_spec``, docs/cli.md "From Python"): the
report says what was planned, charged and written, and it is what the ledger and the files
hold; every refusal comes before the first charge."""

from __future__ import annotations

import logging
import os
import re
import shutil
import sqlite3
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpframe as dpf
from dpframe.cli import RunLog, RunReport, run_spec
from dpframe.cli.spec import SpecError, load_spec
from dpframe.errors import BudgetExceededError, ValidationError

REPO = Path(__file__).resolve().parents[2]

SPEC = """
[release]
name = "from-python"
epsilon = {epsilon}
delta = 1e-5
ledger = "budget.sqlite"

[input]
generate = {{ dataset = "visits", people = 3000, seed = 5 }}

[privacy]
unit = "person_id"
max_rows_per_unit = 4

[bounds]
cost = [0, 1000]
age = [0, 100]

[keys]
region = ["Northeast", "Midwest", "South", "West"]

[output]
dir = "out/{{name}}"

[[query]]
name = "visits"
aggregate = "count"
epsilon = 0.2

[[query]]
name = "cost_by_region"
aggregate = "sum"
column = "{column}"
by = ["region"]
ci = 0.9
epsilon = 0.3

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
delta = 1e-7
epsilon = 0.3
"""
NAMES = ["visits", "cost_by_region", "ages", "cities"]


def write_spec(folder: Path, *, epsilon: float = 5.0, column: str = "cost") -> Path:
    path = folder / "release.toml"
    path.write_text(SPEC.format(epsilon=epsilon, column=column))
    return path


def ledger_rows(path: Path) -> list[tuple[int, str, str]]:
    with sqlite3.connect(path) as conn:
        return list(conn.execute("SELECT id, status, session FROM entries ORDER BY id"))


def test_dry_run_reports_the_plan_and_creates_nothing(tmp_path: Path) -> None:
    spec = write_spec(tmp_path)
    report = run_spec(spec, dry_run=True)
    assert isinstance(report, RunReport) and report.dry_run and report.fits
    assert [q.name for q in report.queries] == NAMES
    assert {q.status for q in report.queries} == {"planned"}
    assert all(q.ledger_entry is None and q.path is None and q.release is None
               for q in report.queries)
    sums = report.queries[1].plan["measures"]
    assert [m["aggregate"] for m in sums] == ["sum"] and sums[0]["noise_scale"] > 0
    assert report.queries[3].plan["key_selection"]["threshold"] > 0
    assert report.plan.spent_before == (0, 0)
    assert float(report.plan.spent_after[0]) == pytest.approx(1.0)
    assert report.charged == (0.0, 0.0) and report.files == []
    assert report.ledger == tmp_path / "budget.sqlite"
    assert report.folder == tmp_path / "out" / "from-python"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release.toml"]  # nothing created


def test_run_releases_writes_and_reports_truly(tmp_path: Path) -> None:
    spec = write_spec(tmp_path)
    log = RunLog()
    report = run_spec(spec, progress=False, log=log)
    assert not report.dry_run and report.fits
    assert [(q.name, q.status) for q in report.queries] == [(n, "released") for n in NAMES]
    ledger = ledger_rows(tmp_path / "budget.sqlite")
    assert [q.ledger_entry for q in report.queries] == [i for i, _, _ in ledger] == [1, 2, 3, 4]
    assert {(s, name) for _, s, name in ledger} == {("released", "from-python")}
    assert log.charged == log.released == [1, 2, 3, 4] and log.written == report.files
    folder = tmp_path / "out" / "from-python"
    assert report.files == [folder / f"{n}.parquet" for n in NAMES]
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{n}.parquet" for n in NAMES)
    for q in report.queries:
        assert q.path is not None and q.release is not None
        doc = dpf.read_provenance(q.path)
        assert doc["ledger_entry"] == q.ledger_entry and doc["session"] == "from-python"
        assert doc["privacy_unit"] == "person_id" and doc["epsilon"] == pytest.approx(q.epsilon)
        assert doc["rows"] == pq.read_table(q.path).num_rows
    by_region = pq.read_table(folder / "cost_by_region.parquet")
    assert by_region.column("region").to_pylist() == ["Northeast", "Midwest", "South", "West"]
    assert report.queries[1].release.measures[0].values.tolist() == pytest.approx(
        by_region.column("cost").to_pylist())
    assert report.charged[0] == pytest.approx(1.0) and report.charged[1] == pytest.approx(1e-7)
    assert report.spent[0] == pytest.approx(1.0) and report.remaining[0] == pytest.approx(4.0)
    assert report.budget == (5.0, 1e-5) and report.earlier_releases == 0

    again = run_spec(load_spec(spec), progress=False)  # a ReleaseSpec works too
    assert again.earlier_releases == 4 and again.spent[0] == pytest.approx(2.0)
    assert [q.ledger_entry for q in again.queries] == [5, 6, 7, 8]


def test_ledger_and_out_dir_override_the_spec(tmp_path: Path) -> None:
    spec = write_spec(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    report = run_spec(spec, ledger=tmp_path / "other.sqlite", out_dir=elsewhere,
                      progress=False)
    assert report.ledger == tmp_path / "other.sqlite" and report.folder == elsewhere
    assert sorted(p.name for p in elsewhere.iterdir()) == sorted(f"{n}.parquet" for n in NAMES)
    assert len(ledger_rows(tmp_path / "other.sqlite")) == 4
    assert not (tmp_path / "budget.sqlite").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("dry_run", [False, True])
def test_refusals_come_before_any_charge(tmp_path: Path, dry_run: bool) -> None:
    log = RunLog()
    with pytest.raises(ValidationError, match="query 'cost_by_region': unknown column 'nope'"):
        run_spec(write_spec(tmp_path, column="nope"), dry_run=dry_run, log=log)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release.toml"]
    small = write_spec(tmp_path, epsilon=0.5)
    if dry_run:
        report = run_spec(small, dry_run=True)
        assert not report.fits and "needs epsilon=1," in report.plan.over_budget()
    else:
        with pytest.raises(BudgetExceededError, match="needs epsilon=1,"):
            run_spec(small, log=log)
    assert log.charged == [] and log.written == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release.toml"]


def test_seeded_spec_is_warned_about_on_the_runner_logger(tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture
                                                          ) -> None:
    spec = write_spec(tmp_path)
    spec.write_text(spec.read_text().replace('ledger = "budget.sqlite"',
                                             'ledger = "budget.sqlite"\nseed = 1'))
    with caplog.at_level(logging.INFO, logger="dpframe.cli.runner"):
        run_spec(spec, dry_run=True)
    said = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert ("WARNING", "[release] seed makes the noise deterministic and INSECURE; never "
                       "publish these releases") in said
    assert ("INFO", "Input: built-in synthetic visits (3,000 people, seed 5; no real person)"
            ) in said


def test_the_documented_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The first example of docs/cli.md "From Python" runs as written, from a clone."""
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text[text.index("### From Python"):]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    exec(compile(code.group(1), "cli.md", "exec"), {})
    out = capsys.readouterr().out
    assert "visits released ledger #1 " in out and "charged epsilon 2;" in out
    assert (tmp_path / "examples" / "budget.sqlite").exists()
    assert os.listdir(tmp_path / "examples" / "releases")


ORDER_SPEC = """
[release]
name = "order"
epsilon = {epsilon}
delta = 0.2
ledger = "budget.sqlite"

[input]
path = "data.csv"
types = {{ x = "float64" }}

[output]
dir = "out"

[bounds]
x = [0, 10]

[[query]]
name = "q0"
aggregate = "count"
epsilon = 0.01

[[query]]
name = "q1"
aggregate = "sum"
column = "x"
mechanism = "gaussian"
epsilon = 0.6
delta = 1e-10

[[query]]
name = "q2"
aggregate = "sum"
column = "x"
mechanism = "gaussian"
epsilon = 0.01
delta = 0.1
"""


def write_order_spec(folder: Path, epsilon: float) -> Path:
    """Three queries whose charges, composed all at once in zCDP, cost far less (epsilon
    about 0.05) than the ledger's running maximum records one release at a time (0.61)."""
    (folder / "data.csv").write_text("x\n1\n2\n3\n")
    path = folder / "release.toml"
    path.write_text(ORDER_SPEC.format(epsilon=epsilon))
    return path


def test_dry_run_states_the_total_the_ledger_will_charge(tmp_path: Path) -> None:
    """The plan charges the queries one by one by the ledger's rule (a running maximum)."""
    report = run_spec(write_order_spec(tmp_path, 0.5), dry_run=True)
    after = report.plan.spent_after
    assert float(after[0]) == pytest.approx(0.61) and float(after[1]) == pytest.approx(0.1)
    assert not report.fits
    assert "needs epsilon=0.61, delta=0.1 but only epsilon=0.5" in report.plan.over_budget()


def test_run_that_does_not_fit_is_refused_before_its_first_charge(tmp_path: Path) -> None:
    spec = write_order_spec(tmp_path, 0.5)
    log = RunLog()
    with pytest.raises(BudgetExceededError, match=r"needs epsilon=0\.61"):
        run_spec(spec, progress=False, log=log)
    assert log.charged == [] and log.written == []
    assert not (tmp_path / "budget.sqlite").exists() and not (tmp_path / "out").exists()
    # the same on an existing ledger: nothing charged
    dpf.Session(0.5, 0.2, ledger=str(tmp_path / "budget.sqlite")).close()
    with pytest.raises(BudgetExceededError, match=r"needs epsilon=0\.61"):
        run_spec(spec, progress=False, log=log)
    assert log.charged == [] and ledger_rows(tmp_path / "budget.sqlite") == []


def test_run_is_charged_exactly_as_planned(tmp_path: Path) -> None:
    spec = write_order_spec(tmp_path, 2.0)
    spec.write_text(spec.read_text().replace("delta = 0.2\n", "delta = 0.5\n", 1))
    spent: tuple[Fraction, Fraction] = (Fraction(0), Fraction(0))
    for _ in range(2):  # on a new ledger, then on one holding the first run's charges
        planned = run_spec(spec, dry_run=True).plan
        assert planned.spent_before == spent and planned.fits
        report = run_spec(spec, progress=False)
        assert [q.status for q in report.queries] == ["released"] * 3
        session = dpf.Session(2.0, 0.5, ledger=str(tmp_path / "budget.sqlite"))
        try:
            spent = session.spent_exact
        finally:
            session.close()
        assert spent == planned.spent_after
        rise = [a - b for a, b in zip(planned.spent_after, planned.spent_before, strict=True)]
        assert report.charged == (float(rise[0]), float(rise[1]))
        assert report.spent == (float(spent[0]), float(spent[1]))
    assert float(spent[0]) == pytest.approx(0.61)  # the second run fell under the maximum


CSV_SPEC = """
[release]
epsilon = 100.0
delta = 1e-3
ledger = "budget.sqlite"
seed = 1

[input]
path = "{path}"
{input_extra}

[privacy]
{privacy}

[output]
dir = "out"

[bounds]
cost = [0, 10]

[[query]]
name = "s"
aggregate = "sum"
column = "cost"
epsilon = 1.0

[[query]]
name = "k"
aggregate = "count"
by = ["key"]
keys = "private"
delta = 1e-5
epsilon = 1.0
"""
#: Rows that, in the first block of a CSV whose types Arrow would infer, turned cost into text
#: (the sum refused) or double (a double sum, granular Laplace), and key into bool or text.
ODD_ROWS = ["", "1,1.5\n", "1,-0.0\n", "1,abc\n", "True,3\n", "x,3\n"]


def write_csv_spec(folder: Path, extra_row: str, *, input_extra: str = "",
                   path: str = "data.csv", privacy: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / path).write_text("key,cost\n" + "1,3\n" * 200 + extra_row)
    spec = folder / "release.toml"
    spec.write_text(CSV_SPEC.format(path=path, input_extra=input_extra, privacy=privacy))
    return spec


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize("extra_row", ODD_ROWS)
def test_csv_without_types_is_refused_before_the_input_is_opened(
        tmp_path: Path, extra_row: str, dry_run: bool) -> None:
    """Whatever the rows, the same refusal (naming the columns, no value), nothing charged,
    written or created."""
    spec = write_csv_spec(tmp_path, extra_row)
    log = RunLog()
    with pytest.raises(SpecError) as err:
        run_spec(spec, progress=False, dry_run=dry_run, log=log)
    assert str(err.value).startswith(
        "[input] types must declare the type of every CSV column the queries read")
    assert "missing: 'cost', 'key'." in str(err.value)
    assert 'types = { cost = "<type>", key = "<type>" }' in str(err.value)
    assert log.charged == [] and log.written == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "release.toml"]


def test_csv_types_must_cover_every_column_read_before_the_file_is_read(tmp_path: Path
                                                                        ) -> None:
    """Only the undeclared columns are named (the privacy unit's too); the check comes before
    the file is opened (an empty file, that the scan refuses, is refused for its types); an
    unknown type name is named first."""
    spec = write_csv_spec(tmp_path, "", input_extra='types = { cost = "int64" }',
                          privacy='unit = "key"\nmax_rows_per_unit = 300')
    with pytest.raises(SpecError, match=r"missing: 'key'\. Add to \[input\]: types = "
                                        r"\{ key = \"<type>\" \}"):
        run_spec(spec, dry_run=True)
    (tmp_path / "data.csv").write_bytes(b"")
    with pytest.raises(SpecError, match=r"missing: 'key'\."):
        run_spec(spec, dry_run=True)
    spec.write_text(spec.read_text().replace('{ cost = "int64" }', '{ cost = "integer" }'))
    with pytest.raises(SpecError, match="unknown Arrow type name"):
        run_spec(spec, dry_run=True)
    # format = "csv" makes any file name a CSV input
    other = write_csv_spec(tmp_path / "b", "", path="data.txt",
                           input_extra='format = "csv"')
    with pytest.raises(SpecError, match=r"missing: 'cost', 'key'\."):
        run_spec(other, dry_run=True)
    # a folder of CSV files is CSV input too (the scan tells it from the files' names)
    (tmp_path / "c" / "parts").mkdir(parents=True)
    folder = write_csv_spec(tmp_path / "c", "", path="parts/a.csv")
    folder.write_text(folder.read_text().replace("parts/a.csv", "parts"))
    with pytest.raises(SpecError, match=r"missing: 'cost', 'key'\."):
        run_spec(folder, dry_run=True)


def test_csv_with_declared_types_releases_the_same_dtypes_whatever_the_rows(tmp_path: Path
                                                                           ) -> None:
    """Declared types: every run is answered, with the same dtypes and label types."""
    schemas = set()
    for i, row in enumerate(ODD_ROWS):
        spec = write_csv_spec(tmp_path / str(i), row,
                              input_extra='types = { cost = "int64", key = "int64" }')
        report = run_spec(spec, progress=False)
        assert [q.status for q in report.queries] == ["released", "released"]
        schemas.add(tuple(str(pq.read_table(f).schema) for f in report.files))
    assert len(schemas) == 1, schemas
    (sums, keys), = schemas
    assert "cost: int64" in sums and "key: int64" in keys


def test_parquet_input_needs_no_types(tmp_path: Path) -> None:
    """Parquet files carry their schema."""
    pq.write_table(pa.table({"key": [1] * 200, "cost": [3] * 200}), tmp_path / "data.parquet")
    spec = tmp_path / "release.toml"
    spec.write_text(CSV_SPEC.format(path="data.parquet", input_extra="", privacy=""))
    report = run_spec(spec, progress=False)
    assert [q.status for q in report.queries] == ["released", "released"]
