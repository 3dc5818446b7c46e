"""Exports cannot be altered unnoticed (issue 45, item 3): a release records the digest of its
values in its provenance and its ledger entry; an export of other values (``r * 2`` keeps
pandas' ``.attrs``) is marked ``derived`` and claims no ledger entry, and ``dpframe ledger
verify --against`` recomputes the digest from the file."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import dpframe as dpf
from dpframe.cli.commands import app
from dpframe.core.digest import RULE, values_digest
from dpframe.export import file_values_digest

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")

DF = pd.DataFrame({"g": ["a", "b", "c"] * 40, "x": np.linspace(0, 9, 120)})


def _release(tmp_path: Path) -> tuple[pd.DataFrame, Path]:
    ledger = tmp_path / "budget.sqlite"
    s = dpf.Session(5.0, ledger=str(ledger), seed=3)
    r = DF.dp(s, bounds={"x": (0, 10)}, keys={"g": ["a", "b", "c"]}).groupby("g").mean(
        "x", epsilon=1.0, ci=0.9)
    return r, ledger


def _verify(ledger: Path, release: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["ledger", "verify", str(ledger), "--against", str(release)])
    return result.exit_code, " ".join(result.output.split())


def _rewrite(path: Path, table: pa.Table, doc: dict[str, object]) -> None:
    meta = dict(table.schema.metadata or {})
    meta[b"dpframe"] = json.dumps(doc).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)


def test_the_digest_is_of_the_values_only() -> None:
    assert values_digest([[1, 2, 3]]) == values_digest([np.array([1.0, 2.0, 3.0])])
    assert values_digest([[0.0, np.nan]]) == values_digest([[-0.0, float("nan")]])
    assert values_digest([[1.0, 2.0]]) != values_digest([[2.0, 1.0]])
    assert values_digest([[1.0], [2.0]]) != values_digest([[1.0, 2.0]])  # measures apart
    assert values_digest([[1.0]]).startswith(RULE)


def test_release_records_its_digest_and_an_honest_export_verifies(tmp_path: Path) -> None:
    r, ledger = _release(tmp_path)
    prov = r.attrs["dp"]
    assert prov["values_digest"] == values_digest([r["x"].to_numpy()])
    entry = next(e for e in dpf.Session(5.0, ledger=str(ledger)).ledger_store.entries()
                 if e["id"] == prov["ledger_entry"])
    assert entry["details"]["values_digest"] == prov["values_digest"]
    path = dpf.to_parquet(r, tmp_path / "r.parquet")
    doc = dpf.read_provenance(path)
    assert doc["derived"] is False and doc["values_digest"] == prov["values_digest"]
    assert file_values_digest(path) == prov["values_digest"]
    code, out = _verify(ledger, path)
    assert code == 0 and "values are the ones released" in out, out


def test_arithmetic_on_a_result_is_exported_as_derived(tmp_path: Path) -> None:
    """0.2 wrote ``r["x"] * 2`` with the release's provenance, and verify said "ok"."""
    r, ledger = _release(tmp_path)
    with pytest.warns(dpf.DPWarning, match="exported as derived"):
        path = dpf.to_parquet(r["x"] * 2, tmp_path / "doubled.parquet")
    doc = dpf.read_provenance(path)
    assert doc["derived"] is True and doc["ledger_entry"] is None and doc["ledger_head"] is None
    assert doc["derived_from"] == {"ledger_entry": r.attrs["dp"]["ledger_entry"],
                                   "values_digest": r.attrs["dp"]["values_digest"]}
    code, out = _verify(ledger, path)
    assert code == 6 and "derived" in out, out


def test_a_file_edited_after_export_fails_verification(tmp_path: Path) -> None:
    r, ledger = _release(tmp_path)
    path = dpf.to_parquet(r, tmp_path / "r.parquet")
    table = pq.read_table(path)
    doc = dpf.read_provenance(path)
    x = table.schema.get_field_index("x")
    doubled = table.set_column(x, table.schema.field(x), pa.compute.multiply(table["x"], 2))
    _rewrite(path, doubled, doc)  # the values edited, the metadata kept
    code, out = _verify(ledger, path)
    assert code == 6 and "the file was edited" in out, out
    _rewrite(path, doubled, {**doc, "values_digest": file_values_digest(path)})  # and restated
    code, out = _verify(ledger, path)
    assert code == 6 and f"ledger entry {doc['ledger_entry']} released" in out, out


def test_values_a_front_computes_are_derived_without_a_warning(tmp_path: Path) -> None:
    s = dpf.Session(5.0, ledger=str(tmp_path / "b.sqlite"), seed=1)
    lo, _ = pd.DataFrame({"x": np.arange(2000.0)}).dp(s).bounds("x", epsilon=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpf.DPWarning)
        path = dpf.to_parquet(lo, tmp_path / "lo.parquet")
    doc = dpf.read_provenance(path)
    assert doc["derived"] is True and doc["derived_from"]["ledger_entry"] == 1
