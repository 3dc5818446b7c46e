"""Shared by the CLI tests: run the CLI in a subprocess or in-process, read a ledger's entries,
write synthetic visit files."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from typer.testing import CliRunner

import dpframe as dpf
from dpframe.cli.commands import app
from dpframe.datasets import visit_events

# the package under test (run with PYTHONPATH=<another checkout> to test that one)
PKG_ROOT = Path(dpf.__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(PKG_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
       "COLUMNS": "120"}

#: The head of a release spec over the synthetic visit files: input, unit, bounds, keys, output
#: and two queries (a count and a sum by region); tests append their own queries.
SPEC_HEAD = """
[release]
name = "nightly"
epsilon = {epsilon}
delta = 1e-5
ledger = "budget.sqlite"

[input]
path = "{data}/*.parquet"
{input_extra}

[privacy]
unit = "person_id"
max_rows_per_unit = 5

[bounds]
cost = [0, 1000]
age = [0, 100]

[keys]
region = ["Northeast", "Midwest", "South", "West"]

[output]
dir = "{out}"

[[query]]
name = "visits"
aggregate = "count"
epsilon = 0.2

[[query]]
name = "cost_by_region"
aggregate = "sum"
column = "{column}"
by = ["region"]
epsilon = 0.3
"""


def cli(*args: str | Path, cwd: Path | None = None, timeout: float = 120
        ) -> subprocess.CompletedProcess[str]:
    """``python -m dpframe.cli ARGS`` in a subprocess."""
    return subprocess.run([sys.executable, "-m", "dpframe.cli", *map(str, args)], cwd=cwd,
                          env=ENV, capture_output=True, text=True, timeout=timeout)


def inproc(*args: str | Path) -> tuple[int, str]:
    """Run the CLI in this process: (exit code, stdout + stderr with whitespace collapsed)."""
    r = CliRunner().invoke(app, [str(a) for a in args])
    return r.exit_code, " ".join(r.output.split())


def entries(ledger: Path) -> list[tuple[int, str, str]]:
    """``(id, status, query)`` of every ledger entry ([] when there is no ledger)."""
    if not ledger.exists():
        return []
    with sqlite3.connect(ledger) as conn:
        return list(conn.execute("SELECT id, status, query FROM entries ORDER BY id"))


def write_visits(folder: Path, files: int, people: int) -> Path:
    """``files`` Parquet files of synthetic visits, ``people`` distinct people each."""
    for i in range(files):
        ev = visit_events(people, seed=i, first_id=1 + people * i)
        pq.write_table(pa.Table.from_pandas(ev, preserve_index=False),
                       folder / f"part-{i}.parquet")
    return folder
