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
from dpframe.cli import app
from dpframe.datasets import visit_events

# the package under test (run with PYTHONPATH=<another checkout> to test that one)
PKG_ROOT = Path(dpf.__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(PKG_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
       "COLUMNS": "120"}


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
