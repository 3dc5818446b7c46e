"""The shipped example spec runs as cloned: a fresh user copies nothing but the repository and
runs ``dpframe run examples/release.toml --dry-run`` and then a real run (docs/cli.md)."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import dpframe as dpf
from dpframe.cli.spec import parse_spec
from dpframe.datasets import synthetic

REPO = Path(__file__).resolve().parents[2]
# the package under test (run this file with PYTHONPATH=<another checkout> to test that one)
PKG_ROOT = Path(dpf.__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(PKG_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
       "COLUMNS": "120"}


def cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dpframe.cli", *map(str, args)], cwd=cwd,
                          env=ENV, capture_output=True, text=True, timeout=300)


def test_example_runs_as_cloned(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    shutil.copytree(REPO / "examples", clone / "examples")
    shipped = sorted(p.relative_to(clone) for p in clone.rglob("*"))

    dry = cli("run", "examples/release.toml", "--dry-run", cwd=clone)
    assert dry.returncode == 0, dry.stderr
    assert "it fits" in dry.stdout and "synthetic visits" in dry.stdout
    assert "would charge epsilon 2," in dry.stdout
    assert sorted(p.relative_to(clone) for p in clone.rglob("*")) == shipped  # nothing created

    real = cli("run", "examples/release.toml", cwd=clone)
    assert real.returncode == 0, real.stderr
    assert "Wrote 7 files" in real.stdout and "Charged epsilon 2," in real.stdout
    ledger = clone / "examples" / "budget.sqlite"
    with sqlite3.connect(ledger) as conn:
        statuses = [s for (s,) in conn.execute("SELECT status FROM entries ORDER BY id")]
    assert statuses == ["released"] * 7
    (folder,) = (clone / "examples" / "releases").iterdir()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", folder.name)
    files = sorted(p.name for p in folder.iterdir())
    assert files == sorted(f"{n}.parquet" for n in (
        "visits", "cost_by_region", "mean_cost", "age_of_visitors", "max_cost",
        "cost_stats_by_region", "visits_by_city"))
    table = pq.read_table(folder / "cost_by_region.parquet")
    assert table.column("region").to_pylist() == ["Northeast", "Midwest", "South", "West"]
    doc = dpf.read_provenance(folder / "visits.parquet")
    assert doc["privacy_unit"] == "person_id" and doc["session"] == "nightly-visits"

    show = cli("ledger", "show", "examples/budget.sqlite", cwd=clone)
    assert show.returncode == 0 and "nightly-visits" in show.stdout, show.stderr


def test_generated_input_is_the_generate_command_data(tmp_path: Path) -> None:
    """``[input] generate`` makes the same synthetic data as ``dpframe generate`` (one file),
    in memory, deterministically."""
    r = cli("generate", "visits", tmp_path / "v.parquet", "--rows", "300", "--seed", "7",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    on_disk = pq.read_table(tmp_path / "v.parquet").to_pandas()
    made = synthetic("visits", 300, 7)
    assert on_disk.equals(made) and synthetic("visits", 300, 7).equals(made)


def test_the_documented_spec_parses() -> None:
    """The spec in docs/cli.md is a valid spec (docs and parser agree on every field)."""
    text = (REPO / "docs" / "cli.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", text, flags=re.S)
    assert blocks
    import tomllib

    for block in blocks:
        spec = parse_spec(tomllib.loads(block), REPO / "docs" / "spec.toml")
        assert spec.queries


def test_example_on_generated_csv_files_needs_the_types_it_shows(tmp_path: Path) -> None:
    """The example over CSV files written by ``dpframe generate --format csv``: refused (exit 2)
    without ``[input] types``; the types line in the example's comment (the one ``generate``
    prints, restricted to the columns read) makes it run."""
    from dpframe.cli import run_spec
    from dpframe.cli.spec import SpecError

    gen = cli("generate", "visits", tmp_path / "data", "--rows", "500", "--files", "2",
              "--format", "csv", cwd=tmp_path)
    assert gen.returncode == 0, gen.stderr
    printed = gen.stdout.splitlines()[-1]
    assert printed.startswith("types = { visit_id = \"int64\", person_id = \"int64\"")
    text = (REPO / "examples" / "release.toml").read_text()
    (commented,) = {m.strip() for m in re.findall(r"^#\s+(types = \{.*\})", text, re.M)}
    pairs = re.compile(r'(\w+) = "([^"]+)"')
    assert set(pairs.findall(commented)) <= set(pairs.findall(printed))
    csv_input = 'path = "data/*.csv"'
    without = re.sub(r"^generate = .*$", csv_input, text, count=1, flags=re.M)
    spec = tmp_path / "release.toml"
    spec.write_text(without)
    with pytest.raises(SpecError, match="missing: 'person_id', 'cost', 'region', 'age', "
                                        "'city'"):
        run_spec(spec, dry_run=True)
    spec.write_text(without.replace(csv_input, f"{csv_input}\n{commented}"))
    report = run_spec(spec, dry_run=True)
    assert report.fits and len(report.queries) == 7
