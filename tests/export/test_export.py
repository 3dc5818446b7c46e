"""Exports: Arrow / Parquet / IPC round trips keep values and provenance; writes are atomic."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpframe as dpf
from dpframe.export import PROVENANCE_KEY
from tests.cli._support import ENV
from tests.engine._releases import recording

#: The documented top-level fields of the provenance document (docs/export.md).
DOCUMENTED = {
    "format", "format_version", "library", "library_version", "exported_at", "query",
    "session", "ledger_entry", "ledger_head", "seeded", "neighbouring", "privacy_unit",
    "max_rows_per_unit", "max_groups_per_unit", "max_rows_per_group", "covers", "epsilon",
    "delta",
    "charge_epsilon",
    "charge_delta", "mechanism",
    "noise_scale", "granularity", "ci_level", "ci_half_width", "group_by", "keys",
    "key_selection", "measures", "columns", "rows", "values_digest", "derived",
}


@pytest.fixture
def session() -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(50.0, 1e-4, name="export-test", seed=5)


@pytest.fixture
def priv(session: dpf.Session) -> Any:
    rng = np.random.default_rng(3)
    n = 5000
    df = pd.DataFrame({"state": rng.choice(["CA", "NY", "TX"], n),
                       "city": rng.choice(["a", "b", "c", "d"], n, p=[0.5, 0.3, 0.19, 0.01]),
                       "income": rng.lognormal(10, 1, n), "age": rng.integers(0, 100, n)})
    return df.dp(session, bounds={"income": (0, 500_000), "age": (0, 100)},
                 keys={"state": ["CA", "NY", "TX"]}, privacy_unit=None)


def _doc(table: pa.Table) -> dict[str, Any]:
    """Read the provenance the way a reader without dpframe would."""
    return json.loads(table.schema.metadata[b"dpframe"])


def test_grouped_round_trip_parquet(priv: Any, session: dpf.Session, tmp_path: Path) -> None:
    with recording() as published:
        r = priv.groupby("state").sum("income", epsilon=1, ci=0.9)
    path = dpf.to_parquet(r, tmp_path / "r.parquet")
    back = pq.read_table(path)
    assert back.column("state").to_pylist() == ["CA", "NY", "TX"]
    np.testing.assert_array_equal(back.column("income").to_numpy(), r["income"].to_numpy())
    np.testing.assert_array_equal(back.column("lower").to_numpy(), r["lower"].to_numpy())
    doc = _doc(back)
    assert set(doc) == DOCUMENTED
    prov = r.attrs["dp"]
    m = prov["measures"][0]
    assert doc["format"] == "dpframe.release" and doc["format_version"] == 1
    assert doc["mechanism"] == m["mechanism"] == "granular laplace"
    assert doc["epsilon"] == 1.0 and doc["delta"] == 0.0
    assert doc["noise_scale"] == m["noise_scale"] and doc["granularity"] == m["granularity"]
    assert doc["ci_level"] == 0.9 and doc["ci_half_width"] == m["ci_half_width"]
    assert doc["neighbouring"] == "add_remove" and doc["privacy_unit"] is None
    assert doc["session"] == "export-test" and doc["seeded"] is True
    assert doc["ledger_entry"] == prov["ledger_entry"] == int(session.ledger["id"].iloc[-1])
    assert doc["library_version"] == dpf.__version__
    assert doc["group_by"] == ["state"] and doc["keys"] == "public" and doc["rows"] == 3
    assert doc["columns"] == {"state": "key", "income": "value", "lower": "lower",
                              "upper": "upper"}
    assert doc["measures"][0]["output"] == {"value": "income", "lower": "lower",
                                            "upper": "upper"}
    field_doc = json.loads(back.schema.field("income").metadata[PROVENANCE_KEY])
    assert field_doc["noise_scale"] == m["noise_scale"]
    assert dpf.read_provenance(path) == doc
    # the release's own export gives the same values and provenance fields
    t2 = dpf.to_arrow(published.last(session))
    assert t2.column("income").to_pylist() == back.column("income").to_pylist()
    d2 = _doc(t2)
    assert {k: v for k, v in d2.items() if k != "exported_at"} == \
        {k: v for k, v in doc.items() if k != "exported_at"}


def test_histogram_agg_private_and_ipc(priv: Any, session: dpf.Session, tmp_path: Path) -> None:
    with recording() as published:
        h = priv.histogram("age", [0, 18, 65, 100], epsilon=1)
    t = dpf.to_arrow(h)
    assert t.column_names == ["bin_left", "bin_right", "count"]
    assert t.column("bin_left").to_pylist() == [0.0, 18.0, 65.0]
    assert t.column("count").to_pylist() == h.tolist()
    assert _doc(t)["bins_closed"] == "right"
    core = dpf.to_arrow(published.last(session))
    assert core.column("count").to_pylist() == h.tolist()
    assert {"lower", "upper"} <= set(core.column_names)

    a = priv.groupby("state").agg({"income": ["sum", "mean"], "age": "max"}, epsilon=1)
    t = dpf.to_arrow(a)
    assert t.column_names == ["state", "income.sum", "income.mean", "age.max"]
    doc = _doc(t)
    assert doc["noise_scale"] is None and len(doc["measures"]) == 3
    assert [m["output"]["value"] for m in doc["measures"]] == ["income.sum", "income.mean",
                                                              "age.max"]
    np.testing.assert_array_equal(t.column("income.mean").to_numpy(),
                                  a[("income", "mean")].to_numpy())

    p = priv.groupby("city", keys="private").count(epsilon=1, delta=1e-6)
    path = dpf.to_ipc(p, tmp_path / "cities.arrow")
    with pa.memory_map(str(path)) as src:
        back = pa.ipc.open_file(src).read_all()
    assert back.column("city").to_pylist() == list(p.index)
    doc = dpf.read_provenance(path)
    assert doc["keys"] == "private" and doc["key_selection"]["threshold"] >= 2
    assert "key selection" in doc["mechanism"]


def test_scalar_results_carry_their_own_provenance_and_interval(
        priv: Any, session: dpf.Session) -> None:
    """Each scalar result owns its provenance and, with ci=, its interval; exports keep both
    (0.1 exported scalars through a session-wide last release another thread could replace)."""
    m = priv.mean("income", epsilon=1, ci=0.9)
    assert isinstance(m, float) and m.lower is not None and m.upper is not None
    assert m.lower <= m <= m.upper and m.ci == (m.lower, m.upper)
    assert m.attrs["dp"]["measures"][0]["aggregate"] == "mean"
    assert m.provenance["query"] == "mean(income)"
    assert priv.sum("income", epsilon=1).lower is None  # no ci asked
    assert isinstance(m + 1, float) and not isinstance(m + 1, dpf.DPFloat)
    t = dpf.to_arrow(m)
    assert t.column("lower").to_pylist() == [m.lower]
    assert t.column("upper").to_pylist() == [m.upper]
    import pickle

    back = pickle.loads(pickle.dumps(m))
    assert back == m and back.lower == m.lower and back.attrs == m.attrs


def test_scalar_results_of_concurrent_threads_keep_their_own_provenance(
        priv: Any, session: dpf.Session) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def run(i: int) -> tuple[int, str]:
        r = priv.quantile("income", q=(i % 9 + 1) / 10, epsilon=0.001)
        return i, str(r.provenance["query"])

    with ThreadPoolExecutor(4) as pool:
        for i, query in pool.map(run, range(200)):
            assert query.endswith(f", {(i % 9 + 1) / 10})")


def test_scalars_need_provenance(priv: Any, session: dpf.Session, tmp_path: Path) -> None:
    with recording() as published:
        c = priv.count(epsilon=1)
    assert dpf.to_arrow(c).column("count").to_pylist() == [c]  # a result owns its provenance
    with pytest.raises(dpf.ValidationError, match="provenance"):
        dpf.to_arrow(int(c))  # a plain number does not
    t = dpf.to_arrow(int(c), provenance=published.last(session))
    assert t.column("count").to_pylist() == [c]
    doc = _doc(t)
    assert doc["query"] == "count()" and doc["ci_half_width"] is not None
    assert t.column("upper").to_pylist()[0] - c == doc["ci_half_width"]
    with recording() as published:
        m = priv.mean("income", epsilon=1)
    rel = published.last(session)
    assert rel is not None
    t = dpf.to_arrow(rel)
    assert t.column("income").to_pylist() == [m]
    assert t.column("lower").to_pylist()[0] <= m <= t.column("upper").to_pylist()[0]
    path = dpf.to_parquet(m, tmp_path / "m.parquet", provenance=rel.provenance)
    assert pq.read_table(path).column("income").to_pylist() == [m]
    with pytest.raises(dpf.ValidationError):
        dpf.to_arrow("not a result", provenance={})  # type: ignore[arg-type]


def test_writes_are_atomic(priv: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = priv.groupby("state").count(epsilon=1)
    target = tmp_path / "out.parquet"
    dpf.to_parquet(r, target)
    before = target.read_bytes()

    def torn(table: pa.Table, where: str, **kw: Any) -> None:
        with open(where, "wb") as f:
            f.write(b"PAR1 partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(pq, "write_table", torn)
    with pytest.raises(KeyboardInterrupt):
        dpf.to_parquet(r, target)
    assert target.read_bytes() == before  # the old file is intact
    with pytest.raises(KeyboardInterrupt):
        dpf.to_parquet(r, tmp_path / "new.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.parquet"]  # no partial file
    with pytest.raises(dpf.ValidationError, match="does not exist"):
        dpf.to_ipc(r, tmp_path / "missing" / "x.arrow")


def test_provenance_holds_no_data_values(priv: Any) -> None:
    r = priv.groupby("state").sum("income", epsilon=1)
    raw = dpf.to_arrow(r).schema.metadata[PROVENANCE_KEY].decode()
    for v in r.tolist():  # the released values live in columns, not in the metadata
        assert repr(float(v)) not in raw


def test_private_keys_of_several_types_past_int64_or_none_export() -> None:
    """Released keys Arrow cannot hold in one type (an object column's ``1`` and ``"a"``, an
    int past int64) are exported as text, and a key column with no key released is text too
    (never Arrow's null type); nothing raises on a released key."""
    warnings.simplefilter("ignore")
    s = dpf.Session(100, 1e-3, seed=1)

    def private(df: pd.DataFrame) -> pd.Series:
        return df.dp(s).groupby("k", keys="private").count(epsilon=5, delta=1e-5)

    mixed = private(pd.DataFrame({"k": pd.Series([1] * 500 + ["a"] * 500, dtype=object)}))
    table = dpf.to_arrow(mixed)
    assert table.schema.field("k").type == pa.large_string()
    assert table.column("k").to_pylist() == ["1", "a"]  # the released order, as text
    huge = private(pd.DataFrame({"k": pd.Series([2**70] * 500, dtype=object)}))
    assert dpf.to_arrow(huge).column("k").to_pylist() == [str(2**70)]
    from dpframe.export import _key_column

    assert _key_column([5, 2**64 - 1]).type == pa.uint64()  # a uint64 column's keys
    empty = private(pd.DataFrame({"k": pd.Series([], dtype=object)}))
    assert dpf.to_arrow(empty).schema.field("k").type == pa.large_string()
    plain = private(pd.DataFrame({"k": ["a"] * 500 + ["b"] * 500}))
    assert dpf.to_arrow(plain).column("k").to_pylist() == ["a", "b"]


def test_a_column_grouped_by_twice_is_refused_before_the_charge() -> None:
    warnings.simplefilter("ignore")
    s = dpf.Session(10, seed=1)
    df = pd.DataFrame({"k": ["a", "b"], "x": [1.0, 2.0]})
    with pytest.raises(dpf.ValidationError, match="twice"):
        df.dp(s, keys={"k": ["a", "b"]}).groupby(["k", "k"]).count(epsilon=1)
    assert s.spent == (0.0, 0.0)


TO_PARQUET_ON_A_FULL_DISK = """
import resource, signal, sys
import pandas as pd
import dpframe as dpf
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
target = sys.argv[1]
with open(target, "w") as f:
    f.write("old")
s = dpf.Session(1.0)
df = pd.DataFrame({"x": [1.0] * 50})
result = df.dp(s).count(epsilon=0.5)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (64, hard))  # the disk is full
try:
    dpf.to_parquet(result, target)
except dpf.OutputError as exc:
    assert isinstance(exc, dpf.DPError) and isinstance(exc, OSError)
    print("OutputError:", exc)
"""


def test_to_parquet_on_a_full_disk_raises_output_error(tmp_path: Path) -> None:
    """A write that fails for want of space (RLIMIT_FSIZE: a real EFBIG from the OS) raises
    ``dpf.OutputError`` (a DPError and an OSError), removes the temporary file and leaves the
    target as it was."""
    target = tmp_path / "release.parquet"
    r = subprocess.run([sys.executable, "-c", TO_PARQUET_ON_A_FULL_DISK, str(target)],
                       env=ENV, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "OutputError: cannot write" in r.stdout and "File too large" in r.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release.parquet"]
    assert target.read_text() == "old"
