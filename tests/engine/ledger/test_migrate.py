"""``dpframe ledger migrate PATH [--dry-run] [--backup FILE]`` (issue 47's ledger leftovers): a
backup of the ledger as it was is written first, atomically (``PATH.bak-<schema>``, never over
an existing file, removed again if the migration fails), and a dry run says what would happen
while writing nothing."""

from __future__ import annotations

import json
import sqlite3
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import dpframe as dpf
from dpframe.core.accounting import PrivacyCost
from dpframe.engine.ledger import SqliteLedger
from tests.cli._support import inproc

from ._sql import run_sql
from .test_events import make_schema_3_ledger

COSTS = [PrivacyCost(Fraction(1, 10), Fraction(1, 10**7))] * 3


def _folder(path: Path) -> dict[str, tuple[int, int]]:
    """Every file beside the ledger, its size and mtime (a ``-shm`` file's mtime moves with
    any reader's locks: its size only)."""
    return {p.name: (p.stat().st_size, 0 if p.name.endswith("-shm") else p.stat().st_mtime_ns)
            for p in path.parent.iterdir()}


def _rows(path: Path) -> list[tuple[object, ...]]:
    con = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        return con.execute("SELECT id, requested_epsilon, row_hash FROM entries").fetchall()
    finally:
        con.close()


def _version(path: Path) -> int:
    con = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        return int(con.execute("SELECT version FROM dpframe_schema").fetchone()[0])
    finally:
        con.close()


@pytest.fixture
def schema3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_schema_3_ledger(tmp_path / "budget.sqlite", monkeypatch, COSTS)


def test_migrate_writes_a_backup_of_the_ledger_as_it_was(schema3: Path) -> None:
    before = _rows(schema3)
    code, out = inproc("ledger", "migrate", str(schema3))
    assert code == 0, out
    bak = schema3.with_name("budget.sqlite.bak-3")
    assert f"to {bak}" in out and "Migrated ledger" in out
    assert _version(schema3) == 4 and _version(bak) == 3
    assert _rows(bak) == before != _rows(schema3)  # the old rows, the old hashes
    old = SqliteLedger(bak, readonly=True)  # a sound schema-3 ledger: it verifies
    assert old.verify()["entries"] == 3
    old.close()
    assert sorted(p.name for p in schema3.parent.iterdir()
                  if not p.name.endswith(("-wal", "-shm"))) == ["budget.sqlite",
                                                                 "budget.sqlite.bak-3"]
    code, out = inproc("ledger", "migrate", str(schema3))  # current: no second backup
    assert code == 0 and "nothing to migrate" in out


def test_backup_path_and_a_taken_name(schema3: Path, tmp_path: Path) -> None:
    taken = schema3.with_name("budget.sqlite.bak-3")
    taken.write_text("someone's file")
    state = _folder(schema3)
    code, out = inproc("ledger", "migrate", str(schema3))
    assert code == 4 and "already exists" in out and "nothing was changed" in out
    assert _version(schema3) == 3 and taken.read_text() == "someone's file"
    assert {k for k in _folder(schema3) if not k.endswith(("-wal", "-shm"))} == {
        k for k in state if not k.endswith(("-wal", "-shm"))}
    (tmp_path / "safe").mkdir()
    code, out = inproc("ledger", "migrate", str(schema3), "--backup",
                       str(tmp_path / "safe" / "old.sqlite"))
    assert code == 0, out
    assert _version(tmp_path / "safe" / "old.sqlite") == 3 and _version(schema3) == 4


def test_a_failed_migration_leaves_no_backup(schema3: Path) -> None:
    """A chain that does not verify: refused (exit 4), the backup written in the same
    transaction removed again, the ledger unchanged."""
    run_sql(schema3, "UPDATE entries SET requested_epsilon = '1/1000' WHERE id = 1")
    before = _rows(schema3)
    code, out = inproc("ledger", "migrate", str(schema3))
    assert code == 4 and "fails verification" in out
    assert not schema3.with_name("budget.sqlite.bak-3").exists()
    assert _rows(schema3) == before and _version(schema3) == 3
    assert not [p for p in schema3.parent.iterdir() if ".backup" in p.name]


def test_dry_run_says_what_it_would_do_and_writes_nothing(schema3: Path) -> None:
    assert _version(schema3) == 3  # (this test's own read leaves SQLite's -wal and -shm)
    state = _folder(schema3)
    code, out = inproc("ledger", "migrate", str(schema3), "--dry-run")
    assert code == 0, out
    assert "Dry run" in out and "from schema 3 to 4" in out and "3 entries" in out
    assert f"{schema3.name}.bak-3" in out and "Nothing was written" in out
    assert _folder(schema3) == state and _version(schema3) == 3
    state = _folder(schema3)
    code, out = inproc("ledger", "migrate", str(schema3), "--dry-run", "--backup",
                       str(schema3))  # a taken backup name is said by the dry run too
    assert code == 4 and "already exists" in out
    assert _folder(schema3) == state


def test_dry_run_refuses_what_the_migration_would_refuse(schema3: Path) -> None:
    run_sql(schema3, "UPDATE entries SET requested_epsilon = '1/1000' WHERE id = 1")
    state = _folder(schema3)
    code, out = inproc("ledger", "migrate", str(schema3), "--dry-run")
    assert code == 4 and "fails verification" in out
    assert _folder(schema3) == state


def test_dry_run_on_a_current_ledger(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    SqliteLedger(path, 1, 1e-6).close()
    state = _folder(path)
    code, out = inproc("ledger", "migrate", str(path), "--dry-run")
    assert code == 0 and "nothing to migrate" in out
    assert _folder(path) == state


def test_exports_made_before_a_migration_verify_against_the_migrated_ledger(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The migration records the old ledger id, row count and head in its chained budget row;
    ``verify --against`` recomputes the chain as it was (its own format) and finds a release
    charged before the migration at its position. A hash that was never there, or another
    ledger's release, still fails."""
    path = make_schema_3_ledger(tmp_path / "budget.sqlite", monkeypatch, COSTS)
    df = pd.DataFrame({"x": range(50)})
    s = dpf.Session(1, 1e-6, ledger=str(path), accountant="basic")
    files = []
    for i in range(2):
        res = df.dp(s).count(epsilon=0.05)
        files.append(tmp_path / f"r{i}.parquet")
        dpf.to_parquet(res, files[-1], provenance=res.provenance)
    del s
    old_id = dpf.read_provenance(files[0])["ledger_head"]["ledger_id"]
    args = [a for f in files for a in ("--against", str(f))]
    code, out = inproc("ledger", "verify", str(path), *args)
    assert code == 0, out
    assert inproc("ledger", "migrate", str(path))[0] == 0
    code, out = inproc("ledger", "verify", str(path), *args)
    assert code == 0, out
    assert out.count("before its migration from schema 3") == 2 and old_id in out

    forged = tmp_path / "forged.parquet"  # a head that was never in the chain
    table = pq.read_table(files[1])
    doc = dpf.read_provenance(files[1])
    doc["ledger_head"]["hash"] = "0" * 64
    meta = dict(table.schema.metadata or {})
    meta[b"dpframe"] = json.dumps(doc).encode()
    pq.write_table(table.replace_schema_metadata(meta), forged)
    code, out = inproc("ledger", "verify", str(path), "--against", str(forged))
    assert code != 0 and "before its migration from schema 3" in out and "FAILED" in out

    other = tmp_path / "other.sqlite"
    s2 = dpf.Session(1, 1e-6, ledger=str(other))
    res = df.dp(s2).count(epsilon=0.05)
    dpf.to_parquet(res, tmp_path / "elsewhere.parquet", provenance=res.provenance)
    del s2
    code, out = inproc("ledger", "verify", str(path), "--against",
                       str(tmp_path / "elsewhere.parquet"))
    assert code != 0 and "another identity" in out


def test_a_schema_1_ledger_dry_run_then_backup(tmp_path: Path) -> None:
    from .test_interrupts import make_schema_1_ledger

    path = tmp_path / "old.sqlite"
    make_schema_1_ledger(path)
    before = path.read_bytes()
    code, out = inproc("ledger", "migrate", str(path), "--dry-run")
    assert code == 0 and "from schema 1 to 4" in out, out
    assert path.read_bytes() == before
    code, out = inproc("ledger", "migrate", str(path))
    assert code == 0, out
    assert path.with_name("old.sqlite.bak-1").read_bytes()[:16] == b"SQLite format 3\x00"
    assert _version(path.with_name("old.sqlite.bak-1")) == 1 and _version(path) == 4
