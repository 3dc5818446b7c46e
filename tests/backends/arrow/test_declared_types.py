"""``dpf.scan`` over CSV: the columns a query reads are typed by declaration, never inferred
from the values (issue 31, item 2; audit findings 53 and 54; docs/privacy.md, threat model).

1. one added row ``abc`` or ``1.5`` changes neither whether a sum is answered nor its
   mechanism, dtype or provenance: undeclared, the sum is refused on both datasets before any
   charge; declared, the value is missing on both;
2. the refusal depends on the declaration, the query and the header's names only;
3. one rule for unparsable values, shared by the CLI and Python (one code path: the CLI hands
   ``[input] types`` to ``dpf.scan(types=...)``), and nothing exact about them leaks (no
   warning, log line or count);
4. the vocabulary: Arrow type names (the CLI's), pyarrow types, numpy / pandas dtypes, a
   pandera schema; what is refused.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import dpframe as dpf
from dpframe.cli.inputs import open_input
from dpframe.cli.spec import load_spec

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # seeded sessions warn

BOUNDS = {"x": (0, 10)}


def _session(seed: int = 5) -> dpf.Session:
    """Releases at epsilon 1e6 on this budget are the exact aggregates."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(1e9, 1e-3, seed=seed)


def _csv(path: Path, extra: str = "") -> Path:
    """``k,x`` with 200 rows ``1,3`` (and ``extra``, a row)."""
    path.write_text("k,x\n" + "1,3\n" * 200 + (extra + "\n" if extra else ""))
    return path


def _outcome(scan: dpf.Scan, seed: int = 5, **types: Any) -> tuple[Any, ...]:
    """A sum of ``x`` at epsilon 1: (type, value, provenance) or (error type, message), and
    what the session spent."""
    s = _session(seed)
    try:
        out = scan.dp(s, bounds=BOUNDS).sum("x", epsilon=1.0)
    except dpf.DPError as exc:
        return type(exc).__name__, str(exc), s.spent, len(s.ledger)
    return type(out).__name__, float(out), _public(out.attrs["dp"]), s.spent


def _public(prov: dict[str, Any]) -> dict[str, Any]:
    """The provenance without the digest of the noisy values (a function of the noise)."""
    return {k: v for k, v in prov.items() if k != "values_digest"}


# -- 1. one row changes nothing but the noise --------------------------------------------------

@pytest.mark.parametrize("extra", ["1,abc", "1,1.5", "1,", "1,1e400", "1,0x10", "1,NaN"])
def test_one_odd_row_changes_neither_the_answer_nor_the_mechanism(tmp_path: Path, extra: str
                                                                  ) -> None:
    """Findings 53 and 54: ``abc`` made the column text (the sum refused), ``1.5`` made it a
    float (granular Laplace instead of the geometric mechanism)."""
    d = _csv(tmp_path / "d.csv")
    d2 = _csv(tmp_path / "d2.csv", extra)
    undeclared = [_outcome(dpf.scan(p)) for p in (d, d2)]
    assert undeclared[0] == undeclared[1]
    assert undeclared[0][0] == "ValidationError"
    assert undeclared[0][2:] == ((0.0, 0.0), 0)  # nothing charged, nothing recorded
    declared = [_outcome(dpf.scan(p, types={"x": "int64"})) for p in (d, d2)]
    assert declared[0][0] == declared[1][0] == "DPInt"
    assert declared[0][2]["measures"][0]["mechanism"] == "geometric"
    assert declared[0][2:] == declared[1][2:]  # provenance and charge
    if extra not in ("1,1e400",):
        assert abs(declared[1][1] - declared[0][1]) <= 10  # the sum's own sensitivity
    as_float = [_outcome(dpf.scan(p, types={"x": "float64"})) for p in (d, d2)]
    assert as_float[0][0] == as_float[1][0] == "DPFloat"
    assert as_float[0][2] == as_float[1][2]


def test_the_same_seed_releases_the_same_sum_when_the_odd_value_is_missing(tmp_path: Path
                                                                          ) -> None:
    """A declared int64 column: ``abc`` and ``1.5`` are missing, so with the same noise the
    release is the same, to the bit."""
    got = {extra: _outcome(dpf.scan(_csv(tmp_path / f"{i}.csv", extra), types={"x": "int64"}),
                           seed=11)
           for i, extra in enumerate(["", "1,abc", "1,1.5"])}
    assert len({repr(v) for v in got.values()}) == 1


# -- 2. the decision depends on the declaration and the query only ------------------------------

@pytest.mark.parametrize("body", ["", "1,3\n", "a,b\n", "1,1.5\n", ",\n", "true,2020-01-01\n"])
def test_a_query_reading_an_undeclared_csv_column_is_refused_whatever_the_values(
        tmp_path: Path, body: str) -> None:
    path = tmp_path / "x.csv"
    path.write_text("k,x\n" + body * 50)
    s = _session()
    scan = dpf.scan(path, types={"k": "string"})
    assert scan.schema.field("x").type == pa.string()  # undeclared: text, never inferred
    calls = [
        lambda: scan.dp(s, bounds=BOUNDS).sum("x", epsilon=1.0),
        lambda: scan.dp(s, bounds=BOUNDS).explain("mean", "x", epsilon=1.0),
        lambda: scan.dp(s, bounds=BOUNDS).sum("x", accuracy=100),
        lambda: scan.dp(s).count("x", epsilon=1.0),
        lambda: scan.dp(s, keys={"x": ["1"]}).groupby("x").count(epsilon=1.0),
        lambda: scan.dp(s, privacy_unit="x", max_rows_per_unit=1).count(epsilon=1.0),
        lambda: scan.dp(s, privacy_unit="x").contribution_bounds(epsilon=1.0),
        lambda: scan.dp(s, privacy_unit="k", keys={"x": ["1"]}).groupby("x")
        .contribution_bounds(epsilon=1.0),
    ]
    for call in calls:
        with pytest.raises(dpf.ValidationError, match="'x' has no declared type") as info:
            call()
        assert "types=" in str(info.value)
    assert s.spent == (0.0, 0.0) and len(s.ledger) == 0
    # reading only declared columns (or none) is answered
    assert int(scan.dp(s).count(epsilon=1e6)) == len(body.splitlines()) * 50
    assert int(scan.dp(s, keys={"k": ["1"]}).groupby("k").count(epsilon=1e6).iloc[0]) == (
        50 if body.startswith("1,") else 0)


def test_contribution_bounds_read_a_unit_by_its_declared_type(tmp_path: Path) -> None:
    """Finding 73 (issue 43, item 4): the DP choice of contribution bounds reads its columns
    as a release does. Undeclared, the unit column was text: one person whose id is spelled
    ``100``, ``0100`` and ``00100`` counted as three units of one row each in the histograms
    of per-unit counts; now that read is refused before any charge, and declared ``int64``
    the three spellings are one unit of three rows (histograms at epsilon 1e6: exact)."""
    path = tmp_path / "u.csv"
    path.write_text("uid,g\n100,a\n0100,a\n00100,b\n7,a\n8,b\n")
    s = _session()
    for by in ((), ("g",)):
        with pytest.raises(dpf.ValidationError, match="'uid' has no declared type"):
            dpf.scan(path, types={"g": "string"}).dp(
                s, privacy_unit="uid", keys={"g": ["a", "b"]}).contribution_bounds(
                    epsilon=1.0, by=by)
    assert s.spent == (0.0, 0.0) and len(s.ledger) == 0
    typed = dpf.scan(path, types={"uid": "int64", "g": "string"})
    out = typed.dp(s, privacy_unit="uid", keys={"g": ["a", "b"]}).groupby(
        "g").contribution_bounds(epsilon=1e6, cap=10)
    hist = out.provenance["histograms"]
    assert out.provenance["candidates"][:3] == [1, 2, 3]
    assert hist["rows"][:3] == [2, 0, 1]  # units 7 and 8 with one row, 100 with three
    assert hist["groups"][:2] == [2, 1] and sum(hist["rows"]) == 3


def test_a_format_with_column_types_declares_them(tmp_path: Path) -> None:
    """``CsvFileFormat(convert_options=ConvertOptions(column_types=...))`` declares its columns
    as ``types=`` does, and the two combine."""
    path = _csv(tmp_path / "x.csv", "1,abc")
    fmt = ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(column_types={"x": pa.int64()}))
    out = dpf.scan(path, format=fmt).dp(_session(), bounds=BOUNDS).sum("x", epsilon=1e6)
    assert isinstance(out, dpf.DPInt) and int(out) == 600
    both = dpf.scan(path, format=fmt, types={"k": "int64"})
    assert both.schema.types == [pa.int64(), pa.int64()]
    over = dpf.scan(path, format=fmt, types={"x": "float64"})  # types= has the last word
    assert isinstance(over.dp(_session(), bounds=BOUNDS).sum("x", epsilon=1e6), dpf.DPFloat)


def test_partition_keys_are_not_csv_columns(tmp_path: Path) -> None:
    """A hive folder's keys come from its paths, not from the files' values: no declaration
    is needed to group by one."""
    for region in ("n", "s"):
        (tmp_path / f"region={region}").mkdir()
        _csv(tmp_path / f"region={region}" / "a.csv")
    scan = dpf.scan(tmp_path, format="csv", partitioning="hive", types={"x": "int64"})
    out = scan.dp(_session(), bounds=BOUNDS, keys={"region": ["n", "s"]}).groupby(
        "region").sum("x", epsilon=1e6)
    assert out.tolist() == [600, 600]


def test_a_csv_dataset_declares_through_types_or_its_format(tmp_path: Path) -> None:
    """A ``pyarrow.dataset`` of CSV files: its schema (inferred by pyarrow, or given) is no
    declaration; ``types=`` or its format's ``column_types`` are."""
    path = str(_csv(tmp_path / "x.csv", "1,abc"))
    schema = pa.schema([("k", pa.int64()), ("x", pa.int64())])
    with pytest.raises(dpf.ValidationError, match="no declared type"):
        dpf.scan(ds.dataset(path, format="csv", schema=schema)).dp(
            _session(), bounds=BOUNDS).sum("x", epsilon=1.0)
    scan = dpf.scan(ds.dataset(path, format="csv"), types={"x": "int64"})
    assert int(scan.dp(_session(), bounds=BOUNDS).sum("x", epsilon=1e6)) == 600
    clean = str(_csv(tmp_path / "clean.csv"))  # pyarrow's own discovery fails on 'abc'
    fmt = ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(column_types={"x": pa.int64()}))
    scan = dpf.scan(ds.dataset(clean, format=fmt))
    assert int(scan.dp(_session(), bounds=BOUNDS).sum("x", epsilon=1e6)) == 600
    union = ds.dataset([ds.dataset(clean, format=fmt), ds.dataset(clean, format=fmt)])
    assert int(dpf.scan(union).dp(_session(), bounds=BOUNDS).sum("x", epsilon=1e6)) == 1200
    with pytest.raises(dpf.ValidationError, match="union"):
        dpf.scan(union, types={"x": "int64"})


# -- 3. one rule, in the CLI and in Python; nothing exact about it leaks ----------------------

_SPEC = """
[release]
epsilon = 1e9
delta = 1e-3
[input]
path = "data.csv"
types = {{ k = "string", x = "{t}" }}
[bounds]
x = [0, 10]
[keys]
k = ["1", "2"]
[[query]]
aggregate = "sum"
column = "x"
by = "k"
epsilon = 1e6
"""


@pytest.mark.parametrize("t", ["int64", "float64"])
def test_the_cli_and_python_read_unparsable_values_alike(tmp_path: Path, t: str) -> None:
    """The CLI's ``[input] types`` and ``dpf.scan(types=...)`` are one path: the same public
    schema, the same values (an unparsable one missing), the same release."""
    (tmp_path / "data.csv").write_text("k,x\n" + "1,3\n" * 20 + "2,abc\n2,1.5\n2,\n2, 4 \n1,x\n")
    (tmp_path / "release.toml").write_text(_SPEC.format(t=t))
    spec = load_spec(tmp_path / "release.toml")
    cli = open_input(spec, progress=False)
    py = dpf.scan(tmp_path / "data.csv", types={"k": "string", "x": t})
    assert cli.schema == py.schema
    assert (list(cli.source.batches(["k", "x"], 100))  # type: ignore[union-attr]
            == list(py.source.batches(["k", "x"], 100)))
    released = [scan.dp(_session(), **spec.frame_options()).groupby("k").sum(
        "x", epsilon=1e6).round().tolist() for scan in (cli, py)]
    want = [60, 4 + 1.5] if t == "float64" else [60, 4]  # 1.5 is no int64: missing
    assert released[0] == released[1] == [round(v) for v in want]


def test_no_warning_log_or_count_tells_how_many_values_did_not_parse(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The number of unparsable values is released only as a noisy, charged count
    (``diagnostics=``): reading them emits nothing, and the release's metadata is the same
    whatever their number."""
    outs = []
    for n_bad in (0, 1, 37):
        path = tmp_path / f"{n_bad}.csv"
        path.write_text("k,x\n" + "1,3\n" * 200 + "1,SECRET-abc\n" * n_bad)
        caplog.clear()
        with caplog.at_level(logging.DEBUG), warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            s = dpf.Session(10.0)  # not seeded: no warning of its own
            out = dpf.scan(path, types={"x": "int64"}).dp(s, bounds=BOUNDS).sum(
                "x", epsilon=1.0)
        assert not seen and not caplog.records, n_bad
        ledger = [{**e, "details": _public(e["details"])}
                  for e in s.ledger.drop(columns=["time"]).to_dict("records")]
        outs.append((type(out), repr(_public(out.attrs["dp"])), repr(ledger)))
        assert "SECRET" not in repr(out) + repr(out.attrs) + repr(ledger)
    assert outs[0] == outs[1] == outs[2]


# -- 4. the vocabulary ---------------------------------------------------------------------

def test_the_declared_type_names(tmp_path: Path) -> None:
    """Arrow's type names (a release spec's vocabulary), pyarrow types, numpy and pandas
    dtypes; Arrow's ``float`` is float32, as in ``pyarrow.type_for_alias``."""
    path = tmp_path / "x.csv"
    path.write_text("a,b,c,d,e,f\n1,2.5,x,true,2020-01-02,2020-01-02 03:04:05\n")
    names = {"a": "int64", "b": "float", "c": "string", "d": "bool", "e": "date32",
             "f": "timestamp[s]"}
    assert dpf.scan(path, types=names).schema.types == [
        pa.int64(), pa.float32(), pa.string(), pa.bool_(), pa.date32(), pa.timestamp("s")]
    objects = {"a": pa.int8(), "b": np.dtype("float64"), "c": pd.StringDtype(),
               "d": pd.BooleanDtype(), "e": pd.ArrowDtype(pa.date32()), "f": "datetime64[ns]"}
    with pytest.raises(dpf.ValidationError, match="unknown Arrow type name 'datetime64"):
        dpf.scan(path, types=objects)  # a string is an Arrow name: numpy's are objects
    objects["f"] = np.dtype("datetime64[ns]")
    assert dpf.scan(path, types=objects).schema.types == [
        pa.int8(), pa.float64(), pa.string(), pa.bool_(), pa.date32(), pa.timestamp("ns")]


def test_a_pandera_schema_declares_its_columns_dtypes(tmp_path: Path) -> None:
    pandera = pytest.importorskip("pandera.pandas")
    path = _csv(tmp_path / "x.csv", "1,abc")
    schema = pandera.DataFrameSchema({"x": pandera.Column(int, pandera.Check.in_range(0, 10)),
                                      "k": pandera.Column()})  # k: no dtype, undeclared
    scan = dpf.scan(path, types=schema)
    assert scan.schema.field("x").type == pa.int64()
    assert int(scan.dp(_session(), schema=schema).sum("x", epsilon=1e6)) == 600
    with pytest.raises(dpf.ValidationError, match="'k' has no declared type"):
        scan.dp(_session(), keys={"k": ["1"]}).groupby("k").count(epsilon=1.0)


@pytest.mark.parametrize(("types", "words"), [
    ({"x": "float65"}, "unknown Arrow type name 'float65' for column 'x'"),
    ({"x": "null"}, "none a CSV field can spell"),
    ({"x": pa.list_(pa.int64())}, "none a CSV field can spell"),
    ({"x": "category"}, "unknown Arrow type name"),
    ({"x": pd.CategoricalDtype(["a"])}, "none a CSV field can spell"),
    ({"x": object}, "none a CSV field can spell"),
    ({"nope": "int64"}, "'nope', which is not a column"),
    ({1: "int64"}, "named by strings"),
    (["x"], "must be a mapping"),
])
def test_bad_declarations_are_refused_before_anything_is_read(
        tmp_path: Path, types: Any, words: str) -> None:
    path = _csv(tmp_path / "x.csv")
    with pytest.raises(dpf.ValidationError, match=words):
        dpf.scan(path, types=types)


def test_types_are_for_csv_only(tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": [1, 2]}), tmp_path / "x.parquet")
    for source in (tmp_path / "x.parquet", pa.table({"x": [1, 2]})):
        with pytest.raises(dpf.ValidationError, match="CSV files only"):
            dpf.scan(source, types={"x": "int64"})
    assert int(dpf.scan(tmp_path / "x.parquet").dp(_session(), bounds=BOUNDS).sum(
        "x", epsilon=1e6)) == 3  # Parquet carries its types: nothing to declare
