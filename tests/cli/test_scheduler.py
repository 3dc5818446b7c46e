"""The CLI for schedulers: ``--version``, ``--json`` on ``run`` (dry or not) and on ``ledger
show``, and ``--allow-budget-change`` (docs/cli.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import dpframe as dpf
from dpframe.cli.commands import app
from tests.cli._support import entries, write_visits
from tests.cli.test_end_to_end import write_spec

RUN_KEYS = {"format", "name", "dry_run", "fits", "ledger", "folder", "queries", "budget",
            "spent", "remaining", "charged", "earlier_releases", "run_id", "replayed", "restored"}
QUERY_KEYS = {"name", "status", "epsilon", "ledger_entry", "path", "rows", "plan", "warnings"}


@pytest.fixture(scope="module")
def visits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_visits(tmp_path_factory.mktemp("visits"), 2, 1500)


def invoke(*args: str | Path) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of the CLI run in this process."""
    r = CliRunner().invoke(app, [str(a) for a in args])
    return r.exit_code, r.stdout, r.stderr


def document(stdout: str) -> dict[str, Any]:
    """The one JSON document a ``--json`` command printed (stdout holds nothing else)."""
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, stdout
    doc = json.loads(lines[0])
    assert isinstance(doc, dict)
    return doc


def test_version() -> None:
    code, out, _ = invoke("--version")
    assert code == 0 and out.strip() == f"dpframe {dpf.__version__}"
    assert dpf.__version__ == "0.3.0"


def test_run_json_dry_then_real(visits: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, visits)
    ledger = tmp_path / "budget.sqlite"
    code, out, _ = invoke("run", spec, "--dry-run", "--json")
    assert code == 0
    dry = document(out)
    assert set(dry) == RUN_KEYS and dry["format"] == "dpframe.run/1"
    assert dry["dry_run"] is True and dry["fits"] is True
    assert [q["status"] for q in dry["queries"]] == ["planned"] * 4
    assert all(set(q) == QUERY_KEYS and q["ledger_entry"] is None for q in dry["queries"])
    assert dry["charged"]["epsilon"] == pytest.approx(1.0)
    assert dry["budget"] == {"epsilon": 5.0, "delta": 1e-5}
    assert not ledger.exists()  # a dry run creates nothing

    code, out, _ = invoke("run", spec, "--json")
    assert code == 0
    real = document(out)
    assert set(real) == RUN_KEYS and real["dry_run"] is False
    assert [q["status"] for q in real["queries"]] == ["released"] * 4
    ids = [i for i, _, _ in entries(ledger)]
    assert [q["ledger_entry"] for q in real["queries"]] == ids
    for q in real["queries"]:
        assert Path(q["path"]).exists() and q["rows"] >= (0 if q["name"] == "cities" else 1)
    assert real["charged"]["epsilon"] == pytest.approx(1.0)
    assert real["spent"]["epsilon"] == pytest.approx(1.0)
    assert real["remaining"]["epsilon"] == pytest.approx(4.0)

    code, out, _ = invoke("ledger", "show", ledger, "--json")
    assert code == 0
    shown = document(out)
    assert shown["format"] == "dpframe.ledger/1" and shown["verified"] is False
    assert [e["id"] for e in shown["entries"]] == ids
    assert {e["status"] for e in shown["entries"]} == {"released"}
    assert shown["spent"]["epsilon"] == pytest.approx(1.0)
    code, out, _ = invoke("ledger", "show", ledger, "--json", "--verify")
    verified = document(out)
    assert code == 0 and verified["verified"] is True and verified["chain"]["head"]


def test_json_refusals_are_documents(visits: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, visits, epsilon=0.5)  # the run needs 1.0
    for extra in ((), ("--dry-run",)):
        code, out, err = invoke("run", spec, "--json", *extra)
        assert code == 3
        doc = document(out)
        assert doc == {"format": "dpframe.error/1", "exit_code": 3,
                       "error": "BudgetExceededError", "message": doc["message"]}
        assert "budget exceeded" in doc["message"] and "budget exceeded" in err
    code, out, _ = invoke("ledger", "show", tmp_path / "nope.sqlite", "--json")
    assert code == 4 and document(out)["error"] == "LedgerError"


def test_allow_budget_change(visits: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "budget.sqlite"
    assert invoke("run", write_spec(tmp_path / "a", visits), "--ledger", ledger)[0] == 0
    bigger = write_spec(tmp_path / "b", visits, epsilon=6.0)
    code, _, err = invoke("run", bigger, "--ledger", ledger)
    assert code == 4 and "--allow-budget-change" in " ".join(err.split())
    assert len(entries(ledger)) == 4  # refused: nothing charged
    code, out, _ = invoke("run", bigger, "--ledger", ledger, "--allow-budget-change", "--json")
    assert code == 0
    doc = document(out)
    assert doc["budget"]["epsilon"] == 6.0 and doc["spent"]["epsilon"] == pytest.approx(2.0)
    history = document(invoke("ledger", "show", ledger, "--json")[1])["budget_history"]
    assert [h["epsilon"] for h in history] == [5.0, 6.0]


def test_misspelled_keys_warn_in_the_cli(visits: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, visits, epsilon=50.0)
    text = spec.read_text().replace('region = ["Northeast", "Midwest", "South", "West"]',
                                    'region = ["northeast", "midwest"]')
    spec.write_text(text.replace("[input]", "seed = 3  # deterministic: the hint fires in 95%\n\n"
                                 "[input]", 1))
    code, out, err = invoke("run", spec, "--json")
    assert code == 0
    by_name = {q["name"]: q for q in document(out)["queries"]}
    assert by_name["visits"]["warnings"] == []  # ungrouped
    hint = by_name["cost_by_region"]["warnings"]
    assert len(hint) == 1 and "spelled as in the data" in hint[0]
    assert "warning: query 'cost_by_region'" in err


AGG_AND_HISTOGRAM = """
[[query]]
name = "region_stats"
aggregate = "agg"
by = ["region"]
aggregates = { cost = ["sum", "mean"], age = "max" }
epsilon = 0.3

[[query]]
name = "age_bins"
aggregate = "histogram"
column = "age"
bins = [0, 10, 20, 40, 60, 80, 100]
epsilon = 0.2
"""


def test_rows_are_each_files_rows_and_a_dry_run_counts_earlier_releases(
        visits: Path, tmp_path: Path) -> None:
    """Issue 45: the summary's and JSON's ``rows`` are the rows of each file (an agg of three
    measures over 4 regions has 4, not 12; a histogram of 6 bins 6, not 1), and a dry run after
    a run says how many releases of the spec the ledger holds (it said 0)."""
    spec = write_spec(tmp_path, visits, extra=AGG_AND_HISTOGRAM)
    code, out, _ = invoke("run", spec, "--json")
    assert code == 0
    real = document(out)
    assert real["earlier_releases"] == 0
    rows = {q["name"]: q["rows"] for q in real["queries"]}
    for q in real["queries"]:
        assert q["rows"] == pq.read_table(q["path"]).num_rows, q["name"]
    assert rows["region_stats"] == 4 and rows["age_bins"] == 6
    code, out, _ = invoke("run", spec, "--dry-run", "--json")
    assert code == 0 and document(out)["earlier_releases"] == len(real["queries"])
    code, out, err = invoke("run", spec, "--dry-run")
    assert code == 0 and f"already holds {len(real['queries'])} releases" in " ".join(
        (out + err).split())
    code, out, err = invoke("run", spec)  # the table's rows column: each file's rows
    assert code == 0
    assert "already held 6 releases" in " ".join(out.split())
    for name, epsilon, n in (("region_stats", "0.3", "4"), ("age_bins", "0.2", "6")):
        line = next(ln for ln in out.splitlines() if name in ln)  # the row's first line
        cells = [c.strip() for c in re.split(r"[│┃|]", line)]
        assert cells[2:4] == [epsilon, n], line
