"""Bad input through ``dpf.scan`` over Arrow tables, Parquet, Arrow IPC and CSV files.

Refusals follow the harness's contract. Values that do not conform to the public schema (text
in a numeric CSV column, malformed rows, text in one Parquet file's numeric column) are not
errors: they count as missing, and the case checks the released value (epsilon 1e9, so the
noise is 0) and that no planted value reaches any channel."""

from __future__ import annotations

from collections.abc import Callable
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

from ._harness import (
    BOUNDS,
    KEYS,
    SECRET_FLOAT,
    SECRET_INT,
    SECRET_TEXT,
    SECRET_UNIT,
    Case,
    E,
    PrivacyUnitError,
    as_float,
    expect_refusal,
    expect_release,
    frame,
    ledger_session,
    params,
)

V = dpf.ValidationError
#: The shared bounds (of x and n) on frames that may lack n: not a typo (strict=False).
LOOSE: dict[str, Any] = {"bounds": BOUNDS, "strict": False}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every input file of the module, each holding planted values."""
    d = tmp_path_factory.mktemp("scan-inputs")
    table = pa.Table.from_pandas(frame(), preserve_index=False)
    pq.write_table(table, d / "people.parquet")
    raw = (d / "people.parquet").read_bytes()
    (d / "truncated.parquet").write_bytes(raw[: len(raw) // 2])
    (d / "garbage.parquet").write_bytes(b"PAR1" + SECRET_TEXT.encode() * 50)
    (d / "garbage.arrow").write_bytes(b"ARROW1" + SECRET_TEXT.encode() * 50)
    (d / "text.parquet").write_text(f"x,g\n{SECRET_FLOAT},{SECRET_TEXT}\n")
    (d / "empty.csv").write_bytes(b"")
    (d / "people.xyz").write_bytes(raw)
    # text in numeric columns of a typed CSV; a malformed row; bytes that are not UTF-8
    (d / "typed.csv").write_text(
        "x,n,g,k,u\n"
        f"1.5,1,a,1,u1\n{SECRET_TEXT},2,b,2,u1\n2.5,{SECRET_TEXT},a,{SECRET_TEXT},{SECRET_UNIT}\n"
        f"3,4.5,b,1,{SECRET_UNIT}\n{SECRET_FLOAT},{SECRET_INT},a,2,u2\n")
    (d / "malformed.csv").write_text(f"x,n,g\n1.5,1,a\n2,2,b,{SECRET_TEXT}\n3,3,a\n")
    (d / "header.csv").write_text("x,n,g\n")
    (d / "badutf8.csv").write_bytes(b"x,g\n1,a\n2,\xff\xfe" + SECRET_TEXT.encode() + b"\n")
    two = d / "two"
    two.mkdir()
    (two / "a.csv").write_text("x,g\n1.5,a\n2.5,b\n")
    (two / "b.csv").write_text(f"x,g\n{SECRET_TEXT},a\n4,b\n{SECRET_FLOAT},a\n")
    mixed = d / "mixed"   # x is a number in the first file, text in the second
    mixed.mkdir()
    pq.write_table(pa.table({"x": [1.0, 2.0], "g": ["a", "b"]}), mixed / "part-0.parquet")
    pq.write_table(pa.table({"x": [SECRET_TEXT, "3.5", str(SECRET_FLOAT)], "g": ["a", "b", "a"]}),
                   mixed / "part-1.parquet")
    for part, text in (("n", "x,g\n1.5,a\n2.5,b\n"),
                       ("s", f"x,g\n{SECRET_TEXT},a\n4,b\n{SECRET_FLOAT},a\n")):
        (d / "hive" / f"region={part}").mkdir(parents=True)
        (d / "hive" / f"region={part}" / "part.csv").write_text(text)
        (d / "hivepq" / f"region={part}").mkdir(parents=True)
        pq.write_table(pa.table({"x": [1.5, SECRET_FLOAT] if part == "s" else [2.0],
                                 "g": [SECRET_TEXT, "a"] if part == "s" else ["b"]}),
                       d / "hivepq" / f"region={part}" / "part.parquet")
    textfirst = d / "textfirst"   # x is text in the first file: its public type is text
    textfirst.mkdir()
    pq.write_table(pa.table({"x": [SECRET_TEXT, "1"]}), textfirst / "part-0.parquet")
    pq.write_table(pa.table({"x": [1.0, 2.0]}), textfirst / "part-1.parquet")
    return d


TYPES = {"x": pa.float64(), "n": pa.int64(), "k": pa.int64(), "u": pa.string(),
         "g": pa.string()}


def _typed_format() -> ds.CsvFileFormat:
    return ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(column_types=TYPES))


def typed_csv(path: Path) -> dpf.Scan:
    return dpf.scan(path, format=_typed_format())


def table() -> pa.Table:
    return pa.Table.from_pandas(frame(), preserve_index=False)


def tdp(s: dpf.Session, **kw: Any) -> Any:
    opts: dict[str, Any] = {**LOOSE, "keys": KEYS}
    opts.update(kw)
    return dpf.scan(table()).dp(s, **opts)


def _dup_names() -> pa.Table:
    return pa.table([pa.array([SECRET_FLOAT, 1.0]), pa.array([2.0, 3.0])], names=["x", "x"])


def _dict_keys() -> pa.Table:
    g = pa.array([SECRET_TEXT, "a", "a", "b"]).dictionary_encode()
    return pa.table({"g": g, "x": [SECRET_FLOAT, 1.0, 2.0, 3.0]})


ScanRun = Callable[[dpf.Session, Path], Any]

SCAN_CASES: list[tuple[str, ScanRun, type[BaseException]]] = [
    ("table-unknown-column", lambda s, d: tdp(s).sum("nope", epsilon=1), V),
    ("table-text-column-sum", lambda s, d: tdp(s, bounds={"g": (0, 1)}).sum("g", epsilon=1), V),
    ("table-missing-bounds", lambda s, d: tdp(s, bounds={}).mean("x", epsilon=1),
     dpf.BoundsError),
    ("table-inverted-bounds", lambda s, d: tdp(s, bounds={"x": (1, 0)}).max("x", epsilon=1),
     dpf.BoundsError),
    ("table-undeclared-keys", lambda s, d: tdp(s, keys={}).groupby("g").count(epsilon=1),
     dpf.KeysError),
    ("table-text-keys-for-int-column",
     lambda s, d: tdp(s, keys={"k": ["1"]}).groupby("k").count(epsilon=1), dpf.KeysError),
    ("table-int-keys-for-dictionary-column",
     lambda s, d: dpf.scan(_dict_keys()).dp(s, keys={"g": [1, 2]}).groupby("g").count(
         epsilon=1), dpf.KeysError),
    ("table-missing-key-value",
     lambda s, d: tdp(s, keys={"g": ["a", None]}).groupby("g").count(epsilon=1), dpf.KeysError),
    ("table-duplicate-names", lambda s, d: dpf.scan(_dup_names()).dp(s).count(epsilon=1), V),
    ("table-unit-without-max-rows", lambda s, d: tdp(s, privacy_unit="u").count(epsilon=1), V),
    ("table-bad-epsilon", lambda s, d: tdp(s).groupby("g").sum("x", epsilon="1"), V),
    ("table-bad-q", lambda s, d: tdp(s).quantile("x", 2, epsilon=1), V),
    ("table-bad-bins", lambda s, d: tdp(s).histogram("x", [3, 2, 1], epsilon=1), V),
    ("table-private-keys-no-delta",
     lambda s, d: tdp(s).groupby("g", keys="private").count(epsilon=1), V),
    ("table-column-list", lambda s, d: tdp(s).sum(["x"], epsilon=1), V),
    ("columns-unknown", lambda s, d: dpf.scan(table(), columns=["nope"]).dp(s).count(epsilon=1),
     V),
    ("columns-hide-queried",
     lambda s, d: dpf.scan(table(), columns=["x"]).dp(s, **LOOSE).sum("n", epsilon=1), V),
    ("source-int", lambda s, d: dpf.scan(5).dp(s).count(epsilon=1), V),
    ("source-none", lambda s, d: dpf.scan(None).dp(s).count(epsilon=1), V),
    ("source-mixed-object-frame",
     lambda s, d: dpf.scan(pd.DataFrame({"g": [SECRET_TEXT, 1, 2.5]})).dp(s).count(epsilon=1),
     V),
    ("batch-size-zero", lambda s, d: dpf.scan(table(), batch_size=0).dp(s).count(epsilon=1), V),
    ("partitions-zero",
     lambda s, d: dpf.scan(table(), partitions=0).dp(s, privacy_unit="u",
                                                      max_rows_per_unit=2).count(epsilon=1), V),
    ("parquet-missing-file",
     lambda s, d: dpf.scan(d / "nope.parquet").dp(s).count(epsilon=1), V),
    ("parquet-glob-no-match",
     lambda s, d: dpf.scan(str(d / "nope-*.parquet")).dp(s).count(epsilon=1), V),
    ("unknown-extension", lambda s, d: dpf.scan(d / "people.xyz").dp(s).count(epsilon=1), V),
    ("unknown-format",
     lambda s, d: dpf.scan(d / "people.parquet", format="xls").dp(s).count(epsilon=1), V),
    ("parquet-garbage", lambda s, d: dpf.scan(d / "garbage.parquet").dp(s).count(epsilon=1), V),
    ("parquet-truncated",
     lambda s, d: dpf.scan(d / "truncated.parquet").dp(s).count(epsilon=1), V),
    ("parquet-holds-csv-text",
     lambda s, d: dpf.scan(d / "text.parquet").dp(s).count(epsilon=1), V),
    ("ipc-garbage", lambda s, d: dpf.scan(d / "garbage.arrow").dp(s).count(epsilon=1), V),
    ("csv-empty-file", lambda s, d: dpf.scan(d / "empty.csv").dp(s).count(epsilon=1), V),
    ("folder-and-file",
     lambda s, d: dpf.scan([d / "two", d / "people.parquet"]).dp(s).count(epsilon=1), V),
    ("parquet-text-typed-column-sum",
     lambda s, d: dpf.scan(d / "textfirst").dp(s, bounds={"x": (0, 10)}).sum("x", epsilon=1),
     V),
    ("csv-typed-missing-bounds",
     lambda s, d: typed_csv(d / "typed.csv").dp(s).sum("x", epsilon=1), dpf.BoundsError),
    # a CSV column a query reads has a declared type (here none), whatever the values
    ("csv-undeclared-sum",
     lambda s, d: dpf.scan(d / "two").dp(s, **LOOSE).sum("x", epsilon=1), V),
    ("csv-undeclared-sum-dry-run",
     lambda s, d: dpf.scan(d / "two").dp(s, **LOOSE).explain("sum", "x", epsilon=1),
     V),
    ("csv-undeclared-sum-accuracy",
     lambda s, d: dpf.scan(d / "two").dp(s, **LOOSE).sum("x", accuracy=5), V),
    ("csv-undeclared-count-of-column",
     lambda s, d: dpf.scan(d / "two").dp(s).count("x", epsilon=1), V),
    ("csv-undeclared-group-key",
     lambda s, d: dpf.scan(d / "two", types={"x": "float64"}).dp(
         s, **LOOSE, keys={"g": ["a", "b"]}).groupby("g").sum("x", epsilon=1), V),
    ("csv-undeclared-private-keys",
     lambda s, d: dpf.scan(d / "two").dp(s).groupby("g", keys="private").count(
         epsilon=1, delta=1e-6), V),
    ("csv-undeclared-unit",
     lambda s, d: dpf.scan(d / "typed.csv", types={"x": "float64"}).dp(
         s, privacy_unit="u", max_rows_per_unit=2).count(epsilon=1), V),
    ("csv-types-unknown-name",
     lambda s, d: dpf.scan(d / "two", types={"x": "float65"}).dp(s).count(epsilon=1), V),
    ("csv-types-no-csv-type",
     lambda s, d: dpf.scan(d / "two", types={"x": "null"}).dp(s).count(epsilon=1), V),
    ("csv-types-unknown-column",
     lambda s, d: dpf.scan(d / "two", types={"nope": "int64"}).dp(s).count(epsilon=1), V),
    ("csv-types-not-a-mapping",
     lambda s, d: dpf.scan(d / "two", types=["x"]).dp(s).count(epsilon=1), V),
    ("parquet-types",
     lambda s, d: dpf.scan(d / "people.parquet", types={"x": "float64"}).dp(s).count(
         epsilon=1), V),
    ("csv-typed-budget-exceeded",
     lambda s, d: typed_csv(d / "typed.csv").dp(s, **LOOSE).sum("x", epsilon=6),
     dpf.BudgetExceededError),
]


@pytest.mark.parametrize("case", params(Case(i, r, e) for i, r, e in SCAN_CASES))
def test_scan_bad_input(case: Case, data: Path, tmp_path: Path,
                        caplog: pytest.LogCaptureFixture,
                        capsys: pytest.CaptureFixture[str]) -> None:
    session = ledger_session(tmp_path)
    run: Any = case.run
    bound = Case(case.id, lambda s: run(s, data), case.expect)
    try:
        expect_refusal(bound, session, tmp_path / "budget.sqlite", caplog, capsys)
    finally:
        session.close()


def test_scan_unit_mismatch(data: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                            capsys: pytest.CaptureFixture[str]) -> None:
    session = ledger_session(tmp_path, privacy_unit="u")
    case = Case("scan-unit-mismatch",
                lambda s: typed_csv(data / "typed.csv").dp(s, **LOOSE).count(epsilon=1),
                PrivacyUnitError)
    try:
        expect_refusal(case, session, tmp_path / "budget.sqlite", caplog, capsys)
    finally:
        session.close()


# -- values that do not conform count as missing: a release, with the right value ------------------

ReleaseRun = Callable[[dpf.Session, Path], Any]

RELEASES: list[tuple[str, ReleaseRun, float | list[float]]] = [
    # typed.csv: x = 1.5, text, 2.5, 3, SECRET_FLOAT (clamped to 10)
    ("csv-text-in-float-sum",
     lambda s, d: typed_csv(d / "typed.csv").dp(s, **LOOSE).sum("x", epsilon=E), 17.0),
    ("csv-text-in-float-count",
     lambda s, d: typed_csv(d / "typed.csv").dp(s).count("x", epsilon=E), 4),
    # n = 1, 2, text, 4.5 (not an integer), SECRET_INT: 3 values
    ("csv-text-in-int-count",
     lambda s, d: typed_csv(d / "typed.csv").dp(s).count("n", epsilon=E), 3),
    ("csv-text-in-int-key",
     lambda s, d: typed_csv(d / "typed.csv").dp(s, keys={"k": [1, 2]}).groupby("k").count(
         epsilon=E).sum(), 4),
    ("csv-text-with-unit",
     lambda s, d: typed_csv(d / "typed.csv").dp(s, **LOOSE, privacy_unit="u",
                                                 max_rows_per_unit=5).sum("x", epsilon=E),
     17.0),
    ("csv-text-in-second-file",
     lambda s, d: dpf.scan(d / "two", format="csv", types={"x": "float64"}).dp(
         s, **LOOSE).sum("x", epsilon=E), 18.0),
    ("csv-malformed-row-skipped",
     lambda s, d: dpf.scan(d / "malformed.csv").dp(s).count(epsilon=E), 2),
    ("csv-header-only", lambda s, d: dpf.scan(d / "header.csv").dp(s).count(epsilon=E), 0),
    ("csv-invalid-utf8-rows", lambda s, d: dpf.scan(d / "badutf8.csv").dp(s).count(epsilon=E),
     2),
    # a hive-partitioned folder grouped by its partition column (in the paths, not the files;
    # 0.2 released 0 for every key): region n holds 1.5, 2.5; s holds text, 4, SECRET_FLOAT
    ("csv-hive-text-in-float-by-partition",
     lambda s, d: dpf.scan(d / "hive", format=_typed_format(), partitioning="hive").dp(
         s, **LOOSE, keys={"region": ["n", "s"]}).groupby("region").sum(
             "x", epsilon=E), [4.0, 14.0]),
    ("csv-hive-count-by-partition",
     lambda s, d: dpf.scan(d / "hive", format="csv", partitioning="hive").dp(
         s, keys={"region": ["n", "s"]}).groupby("region").count(epsilon=E), [2, 3]),
    ("parquet-hive-by-partition",
     lambda s, d: dpf.scan(d / "hivepq", partitioning="hive").dp(
         s, **LOOSE, keys={"region": ["n", "s"]}).groupby("region").sum(
             "x", epsilon=E), [2.0, 11.5]),
    ("parquet-text-in-second-file",
     lambda s, d: dpf.scan(d / "mixed").dp(s, **LOOSE).sum(
         "x", epsilon=E), 16.5),
    ("parquet-text-in-second-file-grouped",
     lambda s, d: dpf.scan(d / "mixed").dp(s, **LOOSE, keys={"g": ["a", "b"]}).groupby(
         "g").sum("x", epsilon=E).sum(), 16.5),
]


@pytest.mark.parametrize(("run", "expected"),
                         [pytest.param(r, v, id=i) for i, r, v in RELEASES])
def test_nonconforming_values_are_missing(run: ReleaseRun, expected: float | list[float],
                                          data: Path, tmp_path: Path,
                                          caplog: pytest.LogCaptureFixture,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    session = ledger_session(tmp_path, epsilon=1e10)
    try:
        result = expect_release(lambda: run(session, data), session,
                                tmp_path / "budget.sqlite", caplog, capsys)
        if isinstance(expected, list):
            assert list(result.index) == ["n", "s"]
            assert np.asarray(result, dtype=float).tolist() == pytest.approx(expected)
        else:
            assert as_float(result) == pytest.approx(expected, abs=1e-6)
        assert session.spent[0] > 0
    finally:
        session.close()
