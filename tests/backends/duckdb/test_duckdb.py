"""The DuckDB front against the pandas reference: ``rel.dp(...)`` on relations and tables.

The shared suites run DuckDB through the registry (``tests/backends/contract.py``); here are
what is DuckDB's own: the same queries on the same data through pandas and a DuckDB table give
identical answers, labels, provenance, charges and ledger rows (the noise is drawn from the
same generator); the public schema comes from the relation's types (an ``ENUM``'s values are
declared categories, a column DuckDB cannot hand to Arrow is refused by name before any
charge); columns whose names differ in case are read apart; a query failing while DuckDB
runs it quotes no value; ``import dpframe`` never imports duckdb, and ``rel.dp`` exists
whatever the import order.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

duckdb = pytest.importorskip("duckdb")

import dpframe as dpf  # noqa: E402
import dpframe.fronts.duckdb  # noqa: E402  (adds rel.dp)
from dpframe.backends import duckdb as duckdb_backend  # noqa: E402
from dpframe.fronts.duckdb import private_frame  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # seeded sessions warn

N = 3000
E = 1e9  # noise of scale ~1e-9: 0 but with probability about exp(-1e8)
BOUNDS = {"x": (0.0, 10.0), "n": (0, 5)}
KEYS = {"g": ["a", "b", "c", "zz"]}
BATCH = 997  # several batches per release


def _session(unit: str | None = None) -> dpf.Session:
    return dpf.Session(epsilon=1e12, delta=0.5, seed=7, privacy_unit=unit)


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, Any]:
    """One data set as pandas and as a DuckDB table: text keys with nulls, floats with NaN
    and NULL, integers with NULL, an integer unit."""
    rng = np.random.default_rng(5)
    i = np.arange(N)
    g = rng.choice(["a", "b", "c"], N).astype(object)
    g[i % 31 == 0] = None
    x = rng.uniform(-2, 12, N)
    x[i % 17 == 0] = np.nan
    n = pd.array(rng.integers(-1, 8, N), dtype="Int64")
    n[i % 13 == 0] = pd.NA
    u = rng.integers(0, 300, N)
    pdf = pd.DataFrame({"g": pd.array(g, dtype="str"), "x": x, "n": n, "u": u})
    table = pa.table({"g": pa.array(g.tolist(), pa.string()),
                      "x": pa.array(x, pa.float64(), from_pandas=False),  # NaN stays NaN
                      "n": pa.array(n, pa.int64(), from_pandas=True), "u": pa.array(u)})
    con = duckdb.connect()
    con.register("data", table)
    con.execute("CREATE TABLE t AS SELECT * FROM data")
    # a NULL beside NaN: both missing, as in pandas
    con.execute("UPDATE t SET x = NULL WHERE rowid % 19 = 0")
    pdf.loc[np.arange(N) % 19 == 0, "x"] = np.nan
    return pdf, con


QUERIES: dict[str, Callable[[Any], Any]] = {
    "count": lambda p: p.count(epsilon=E),
    "count_x": lambda p: p.count("x", epsilon=E),
    "sum_x": lambda p: p.sum("x", epsilon=E),
    "mean_n": lambda p: p.mean("n", epsilon=E),
    "g_count": lambda p: p.groupby("g").count(epsilon=E),
    "g_mean": lambda p: p.groupby("g").mean("x", epsilon=E),
    "g_agg": lambda p: p.groupby("g").agg({"x": ["sum", "mean"], "n": ["count"]}, epsilon=E),
    "private": lambda p: p.groupby("g", keys="private").count(epsilon=E, delta=1e-6),
    "quantile": lambda p: p.quantile("x", 0.5, epsilon=E),
}


def _same(a: Any, b: Any) -> None:
    if isinstance(a, pd.Series | pd.DataFrame):
        assert type(a) is type(b)
        if isinstance(a, pd.Series):
            pd.testing.assert_series_equal(a, b)
        else:
            pd.testing.assert_frame_equal(a, b)
    else:
        assert type(a) is type(b) and a == b
    assert a.attrs["dp"] == b.attrs["dp"]


def _parity(data: tuple[pd.DataFrame, Any], query: Callable[[Any], Any],
            unit: str | None = None, **opts: Any) -> Any:
    pdf, con = data
    sp, sd = _session(unit), _session(unit)
    ref = query(pdf.dp(sp, **opts))
    got = query(con.table("t").dp(sd, batch_size=BATCH, **opts))
    _same(ref, got)
    assert sd.spent == sp.spent and sp.spent[0] > 0
    pd.testing.assert_frame_equal(sd.ledger.drop(columns=["time"]),
                                  sp.ledger.drop(columns=["time"]))
    return got


@pytest.mark.parametrize("name", list(QUERIES))
def test_row_level_matches_pandas(data: tuple[pd.DataFrame, Any], name: str) -> None:
    got = _parity(data, QUERIES[name], bounds=BOUNDS, keys=KEYS)
    pdf = data[0]
    if name == "count_x":  # NaN and NULL are both missing
        assert int(got) == int(pdf["x"].notna().sum())
    if name == "g_count":
        truth = pdf.groupby("g").size().reindex(KEYS["g"], fill_value=0)
        assert got.tolist() == truth.tolist()


@pytest.mark.parametrize("partitions", [1, 3])
def test_unit_level_matches_pandas(data: tuple[pd.DataFrame, Any], partitions: int) -> None:
    """Bounds that truncate nothing give identical results; truncating ones an exact count."""
    pdf, con = data
    rows = int(pdf.groupby("u").size().max())
    opts = {"bounds": BOUNDS, "keys": KEYS, "privacy_unit": "u", "max_rows_per_unit": rows,
            "max_groups_per_unit": 4}
    _parity(data, QUERIES["g_mean"], unit="u", **opts)
    truth = int(np.minimum(pdf.groupby("u").size(), 2).sum())
    count = con.table("t").dp(_session("u"), privacy_unit="u", max_rows_per_unit=2,
                              partitions=partitions, batch_size=BATCH).count(epsilon=E)
    assert int(count) == truth < N


def test_schema_comes_from_types_and_enum_values_are_declared_keys() -> None:
    con = duckdb.connect()
    con.execute("CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')")
    con.execute("CREATE TABLE m (e mood, k INTEGER)")
    con.execute("INSERT INTO m VALUES ('ok', 1), ('ok', 2), ('sad', 3)")
    s = _session()
    out = con.table("m").dp(s, keys={"e": "categories"}).groupby("e").count(epsilon=E)
    assert list(out.index) == ["sad", "ok", "happy"] and out.tolist() == [1, 2, 0]
    with pytest.raises(dpf.KeysError):  # categories are public keys only on opt-in
        con.table("m").dp(s).groupby("e").count(epsilon=E)
    # a VARCHAR's values are data, never categories
    with pytest.raises(dpf.KeysError):
        con.sql("SELECT e::VARCHAR AS e FROM m").dp(s, keys={"e": "categories"}).groupby(
            "e").count(epsilon=E)
    assert len(s.ledger) == 1
    # an empty relation has the same schema, hence the same plan, as a full one
    empty = con.sql("SELECT * FROM m WHERE k > 99")
    assert duckdb_backend.arrow_schema(empty) == duckdb_backend.arrow_schema(con.table("m"))


def test_columns_that_differ_in_case_or_hold_quotes_are_each_themselves() -> None:
    """``a`` beside ``A`` (DuckDB binds names case-insensitively, and its Arrow result spells
    the second ``A_1``) and a name holding a quote: each column reads its own values (the
    adapter projects by position, ``#i``)."""
    rel = duckdb.sql('SELECT 1.0::DOUBLE AS a, 5.0::DOUBLE AS "A", 2.0::DOUBLE AS "we""ird"')
    names = duckdb_backend.arrow_schema(rel).names  # DuckDB's Arrow result spells it A_1
    assert names[0] == "a" and names[1].lower().startswith("a") and names[1] != "a"
    s = _session()
    assert float(rel.dp(s, bounds={names[1]: (0, 10)}).sum(names[1], epsilon=E)) == 5.0
    assert float(rel.dp(s, bounds={"a": (0, 10)}).sum("a", epsilon=E)) == 1.0
    assert float(rel.dp(s, bounds={'we"ird': (0, 10)}).sum('we"ird', epsilon=E)) == 2.0


def test_a_type_without_arrow_form_is_refused_by_name_before_any_charge(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rel = duckdb.sql("SELECT 1 AS a, 2 AS b")
    real = rel.limit(0).to_arrow_table().schema
    calls = []

    def fails_on_b(self: Any) -> pa.Table:  # as DuckDB does for a type Arrow lacks
        calls.append(self.columns)
        if "b" in self.columns or "#2" in self.columns:
            raise duckdb.NotImplementedException("no Arrow form")
        return pa.table({"a": pa.array([], real.field("a").type)})

    monkeypatch.setattr(duckdb.DuckDBPyRelation, "to_arrow_table", fails_on_b)
    with pytest.raises(dpf.ValidationError, match="column 'b' has the DuckDB type INTEGER"):
        rel.dp(_session())


def test_a_relation_that_cannot_run_is_refused_before_any_charge() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE gone AS SELECT 1 AS a")
    rel = con.table("gone")
    con.execute("DROP TABLE gone")
    with pytest.raises(dpf.ValidationError, match="cannot run the DuckDB relation"):
        rel.dp(_session())


def test_a_failure_while_reading_quotes_no_value() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE s AS SELECT * FROM (VALUES ('1.5'), ('secret-4711')) v(t)")
    rel = con.sql("SELECT CAST(t AS DOUBLE) AS x FROM s")
    s = _session()
    with pytest.raises(dpf.ValidationError) as info:
        rel.dp(s, bounds={"x": (0, 10)}).sum("x", epsilon=1.0)
    assert "secret-4711" not in str(info.value) and "ConversionException" in str(info.value)
    assert s.spent[0] > 0  # after the charge, which stands (as for a scan)


def test_tables_by_name_and_bad_sources_before_any_charge(data: tuple[pd.DataFrame, Any]
                                                          ) -> None:
    pdf, con = data
    s = _session()
    assert int(private_frame("t", s, con=con).count(epsilon=E)) == N
    for bad, kw in (("nope", {"con": con}), (pdf, {}), (con.table("t"), {"con": con})):
        with pytest.raises(dpf.ValidationError):
            private_frame(bad, s, **kw)
    assert len(s.ledger) == 1


_CHECK = """
import warnings
warnings.simplefilter("ignore")
s = dpf.Session(epsilon=1e7, seed=1)
assert int(duckdb.sql("SELECT range AS x FROM range(3)").dp(s).count(epsilon=1e6)) == 3
from dpframe.fronts.hooks import AfterImport
assert not any(isinstance(f, AfterImport) and f.name == "duckdb" for f in sys.meta_path)
print("ok")
"""


@pytest.mark.parametrize("prelude", [
    "import sys, dpframe as dpf\nassert 'duckdb' not in sys.modules\n"
    "from dpframe.fronts.hooks import AfterImport\n"
    "assert [f for f in sys.meta_path if isinstance(f, AfterImport) and f.name == 'duckdb']\n"
    "import duckdb",
    "import sys\nimport duckdb\nimport dpframe as dpf",
])
def test_accessor_whatever_the_import_order(prelude: str) -> None:
    code = textwrap.dedent(prelude) + "\n" + _CHECK
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")
