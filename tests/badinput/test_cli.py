"""Bad input through the command line (typer's CliRunner, in process): ``dpframe run SPEC`` with
malformed specs, inputs, outputs and ledgers, ``dpframe demo`` and ``dpframe ledger show``.

Each case asserts the exit code documented in docs/cli.md (2 spec or usage error, 3 budget,
4 ledger), that no planted value is printed, logged or warned, that no ledger is created or
changed (its raw rows are compared) and that no output file or folder is created."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpframe as dpf

from ._harness import (
    SECRET_FLOAT,
    SECRET_INT,
    SECRET_TEXT,
    SECRET_UNIT,
    assert_clean,
    assert_ledger_clean,
    expect_exit,
    frame,
    invoke,
)

SPEC = """
[release]
name = "badinput"
epsilon = 5.0
delta = 1e-5
ledger = "budget.sqlite"

[input]
path = "{data}"

[bounds]
x = [0, 10]
n = [0, 10]

[keys]
g = ["a", "b"]

[output]
dir = "out"

[[query]]
name = "rows"
aggregate = "count"
epsilon = 0.5

[[query]]
name = "x_by_g"
aggregate = "sum"
column = "x"
by = ["g"]
epsilon = 0.5
"""

QUERY = """
[[query]]
name = "extra"
{body}
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Input files holding the planted values."""
    d = tmp_path_factory.mktemp("cli-inputs")
    pq.write_table(pa.Table.from_pandas(frame(), preserve_index=False), d / "people.parquet")
    (d / "garbage.parquet").write_bytes(b"PAR1" + SECRET_TEXT.encode() * 40)
    (d / "people.csv").write_text(
        "x,n,g,u\n"
        f"1.5,1,a,u1\n{SECRET_TEXT},2,b,u1\n2.5,{SECRET_TEXT},a,{SECRET_UNIT}\n"
        f"{SECRET_FLOAT},{SECRET_INT},b,u2\n3,4,{SECRET_TEXT},u3\n")
    return d


def spec_text(data: Path, *, path: str = "people.parquet", extra_query: str = "",
              replace: tuple[tuple[str, str], ...] = (), append: str = "") -> str:
    text = SPEC.format(data=(data / path).as_posix())
    for old, new in replace:
        assert old in text, old
        text = text.replace(old, new)
    if extra_query:
        text += QUERY.format(body=extra_query)
    return text + append


def spent_ledger(path: Path, epsilon: float = 5.0, delta: float = 1e-5, **kw: Any) -> Path:
    """A ledger that has released once, from the frame holding the planted values."""
    s = dpf.Session(epsilon, delta, ledger=str(path), name="badinput", **kw)
    frame().dp(s, bounds={"x": (0, 10)}).sum("x", epsilon=1.0)
    s.close()
    return path


# -- dpframe run: spec, input and output errors (exit 2) ------------------------------------------

SpecMaker = Callable[[Path, Path], list[str]]


def _spec(tmp: Path, text: str | bytes, name: str = "release.toml") -> Path:
    p = tmp / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


def run_spec(**kw: object) -> SpecMaker:
    """``dpframe run`` on a spec made by :func:`spec_text` with ``kw``."""
    return lambda tmp, d: ["run", str(_spec(tmp, spec_text(d, **kw)))]  # type: ignore[arg-type]


def run_raw(text: str | bytes) -> SpecMaker:
    return lambda tmp, d: ["run", str(_spec(tmp, text))]


def _q(body: str) -> SpecMaker:
    return run_spec(extra_query=body)


def _r(old: str, new: str) -> SpecMaker:
    return run_spec(replace=((old, new),))


def _folder_spec(tmp: Path, d: Path) -> list[str]:
    (tmp / "spec.toml").mkdir()
    return ["run", str(tmp / "spec.toml")]


def _out_is_file(tmp: Path, d: Path) -> list[str]:
    (tmp / "out").write_text(SECRET_TEXT)
    return ["run", str(_spec(tmp, spec_text(d)))]


def _target_is_folder(tmp: Path, d: Path) -> list[str]:
    (tmp / "out" / "rows.parquet").mkdir(parents=True)
    return ["run", str(_spec(tmp, spec_text(d)))]


def _big_spec(tmp: Path, d: Path) -> list[str]:
    pad = f"# {SECRET_TEXT} {SECRET_FLOAT}\n" * 60_000
    return ["run", str(_spec(tmp, spec_text(d) + pad))]


def _no_ledger(tmp: Path, d: Path) -> list[str]:
    return ["run", str(_spec(tmp, spec_text(d).replace('ledger = "budget.sqlite"\n', "")))]


#: (id, the command line, a fragment the error message must hold)
SPEC_ERRORS: list[tuple[str, SpecMaker, str]] = [
    ("spec-missing", lambda tmp, d: ["run", str(tmp / "nope.toml")], "no spec file"),
    ("spec-is-a-folder", _folder_spec, "is a folder, not a spec file"),
    ("spec-empty", run_raw(""), "is empty"),
    ("spec-not-utf8", run_raw(b"[release]\nname = \"caf\xe9 " + SECRET_TEXT.encode() + b"\"\n"),
     "not UTF-8"),
    ("spec-malformed-toml", run_raw(f'[release\nepsilon = 1\nname = "{SECRET_TEXT}"\n'),
     "not valid TOML"),
    ("spec-is-private-csv", run_raw(f"x,g\n{SECRET_FLOAT},{SECRET_TEXT}\n{SECRET_INT},a\n"),
     "not valid TOML"),
    ("spec-too-large", _big_spec, "larger than 1 MiB"),
    ("spec-unknown-section", run_spec(append="\n[outputs]\ndir = 'x'\n"),
     "unknown field 'outputs'"),
    ("spec-unknown-release-field", _r("epsilon = 5.0", "epsilom = 5.0"),
     "unknown field 'epsilom'"),
    ("spec-unknown-query-field", _q('aggregate = "count"\nepsilon = 0.1\ncolumnn = "x"'),
     "unknown field 'columnn'"),
    ("spec-epsilon-text", _r("epsilon = 5.0", 'epsilon = "5"'), "epsilon must be a number"),
    ("spec-epsilon-bool", _r("epsilon = 5.0", "epsilon = true"), "epsilon must be a number"),
    ("spec-epsilon-nan", _r("epsilon = 5.0", "epsilon = nan"), "must be a finite number"),
    ("spec-epsilon-negative", _r("epsilon = 5.0", "epsilon = -5.0"), "must be greater than 0"),
    ("spec-delta-above-one", _r("delta = 1e-5", "delta = 1.5"), "delta must be below 1"),
    ("spec-neighbouring-unknown",
     _r("delta = 1e-5", 'delta = 1e-5\nneighbouring = "swap"'), "neighbouring must be"),
    ("spec-bounds-text", _r("x = [0, 10]", 'x = [0, "10"]'), "[bounds] x must be [lo, hi]"),
    ("spec-bounds-inverted", _r("x = [0, 10]", "x = [10, 0]"), "must satisfy lo < hi"),
    ("spec-bounds-one-value", _r("x = [0, 10]", "x = [10]"), "[bounds] x must be [lo, hi]"),
    ("spec-bounds-inf", _r("x = [0, 10]", "x = [0, inf]"), "two finite numbers"),
    ("spec-keys-empty", _r('g = ["a", "b"]', "g = []"), "[keys] g must have at least 1"),
    ("spec-keys-not-a-list", _r('g = ["a", "b"]', 'g = "ab"'), "[keys] g must be a list"),
    ("spec-by-not-text", _r('by = ["g"]', "by = 1"), "by must be a list"),
    ("spec-query-no-epsilon", _q('aggregate = "count"'), "query 'extra' needs epsilon"),
    ("spec-query-epsilon-zero", _q('aggregate = "count"\nepsilon = 0'),
     "epsilon must be greater than 0"),
    ("spec-aggregate-unknown", _q('aggregate = "trimmed_mean"\ncolumn = "x"\nepsilon = 0.1'),
     "aggregate must be"),
    ("spec-query-names-duplicate", _r('name = "x_by_g"', 'name = "rows"'),
     "two queries are named 'rows'"),
    ("spec-query-name-path", _r('name = "x_by_g"', 'name = "../x"'), "usable as a file name"),
    ("spec-no-query", lambda tmp, d: ["run", str(_spec(tmp, spec_text(d).split("[[query]]")[0]))],
     "at least one [[query]]"),
    ("spec-sum-no-column", _q('aggregate = "sum"\nepsilon = 0.1'), "needs a column"),
    ("spec-quantile-q-above-one",
     _q('aggregate = "quantile"\ncolumn = "x"\nq = 1.5\nepsilon = 0.1'), "q must be at most 1"),
    ("spec-histogram-bins-unsorted",
     _q('aggregate = "histogram"\ncolumn = "x"\nbins = [5, 1, 10]\nepsilon = 0.1'),
     "increasing edges"),
    ("spec-histogram-bins-zero",
     _q('aggregate = "histogram"\ncolumn = "x"\nbins = 0\nepsilon = 0.1'),
     "bins"),
    ("spec-private-keys-no-delta",
     _q('aggregate = "count"\nby = ["g"]\nkeys = "private"\nepsilon = 0.1'),
     "keys='private' needs delta > 0"),
    ("spec-gaussian-no-delta",
     _q('aggregate = "sum"\ncolumn = "x"\nmechanism = "gaussian"\nepsilon = 0.1'),
     "mechanism='gaussian' needs delta > 0"),
    ("spec-ci-above-one", _q('aggregate = "mean"\ncolumn = "x"\nci = 1.5\nepsilon = 0.1'),
     "ci must be less than 1"),
    ("spec-resolution-one",
     _q('aggregate = "max"\ncolumn = "x"\nresolution = 1\nepsilon = 0.1'),
     "resolution must be at least 2"),
    ("spec-agg-unknown-op",
     _q('aggregate = "agg"\nby = ["g"]\naggregates = { x = "trimmed_mean" }\nepsilon = 0.1'),
     "unknown aggregate 'trimmed_mean'"),
    ("spec-agg-weights-negative",
     _q('aggregate = "agg"\nby = ["g"]\naggregates = { x = ["sum", "mean"] }\n'
        'weights = { "x.sum" = -1, "x.mean" = 1 }\nepsilon = 0.1'), "weight must be"),
    ("spec-unknown-column", _q('aggregate = "sum"\ncolumn = "nope"\nepsilon = 0.1'),
     "unknown column 'nope'"),
    ("spec-text-column-sum",
     run_spec(extra_query='aggregate = "sum"\ncolumn = "g"\nepsilon = 0.1',
              replace=(("n = [0, 10]", "n = [0, 10]\ng = [0, 1]"),)),
     "column 'g' is not numeric"),
    ("spec-missing-bounds", _q('aggregate = "mean"\ncolumn = "k"\nepsilon = 0.1'),
     "'k' has no declared bounds"),
    ("spec-undeclared-keys", _q('aggregate = "count"\nby = ["s"]\nepsilon = 0.1'),
     "grouping by 's' needs public keys"),
    ("spec-keys-wrong-type",
     run_spec(extra_query='aggregate = "count"\nby = ["k"]\nepsilon = 0.1',
              replace=(('g = ["a", "b"]', 'g = ["a", "b"]\nk = ["1", "2"]'),)),
     "declared keys are not all numbers"),
    ("spec-unit-without-max-rows", run_spec(append='\n[privacy]\nunit = "u"\n'),
     "unit needs max_rows_per_unit"),
    ("spec-max-rows-without-unit", run_spec(append="\n[privacy]\nmax_rows_per_unit = 2\n"),
     "need unit"),
    ("spec-unit-unknown-column",
     run_spec(append='\n[privacy]\nunit = "nope"\nmax_rows_per_unit = 2\n'),
     "unknown privacy_unit column 'nope'"),
    ("spec-max-rows-zero", run_spec(append='\n[privacy]\nunit = "u"\nmax_rows_per_unit = 0\n'),
     "max_rows_per_unit must be at least 1"),
    ("spec-input-missing", _r("[input]\npath", "[input]\npaths"), "unknown field 'paths'"),
    ("spec-input-file-missing", run_spec(path="nope.parquet"), "no such file or folder"),
    ("spec-input-glob-no-match", run_spec(path="nope-*.parquet"), "no file matches"),
    ("spec-input-garbage-parquet", run_spec(path="garbage.parquet"), "cannot open the input"),
    ("spec-input-unknown-type",
     run_spec(path="people.csv", replace=(('.csv"', '.csv"\ntypes = { x = "real" }'),)),
     "unknown Arrow type name"),
    ("spec-input-columns-unknown", _r('.parquet"', '.parquet"\ncolumns = ["nope"]'),
     "unknown column 'nope'"),
    ("spec-output-dir-placeholder", _r('dir = "out"', 'dir = "out/{user}"'),
     "may only use {date}"),
    ("spec-output-format-unknown", _r('dir = "out"', 'dir = "out"\nformat = "xlsx"'),
     "[output] format must be"),
    ("spec-output-dir-is-file", _out_is_file, "is a file, not a folder"),
    ("spec-output-target-is-folder", _target_is_folder, "a release file cannot replace it"),
    ("spec-no-ledger", _no_ledger, "needs a durable ledger"),
]


@pytest.mark.parametrize(("make", "says"),
                         [pytest.param(m, f, id=i) for i, m, f in SPEC_ERRORS])
def test_run_spec_error_exits_2(make: SpecMaker, says: str, data: Path, tmp_path: Path,
                                caplog: pytest.LogCaptureFixture) -> None:
    args = make(tmp_path, data)
    res = expect_exit(args, 2, tmp_path, caplog)
    assert says in res.text, res.text


@pytest.mark.parametrize("dry", [False, True], ids=["run", "dry-run"])
def test_run_unknown_column_dry_run_too(dry: bool, data: Path, tmp_path: Path,
                                        caplog: pytest.LogCaptureFixture) -> None:
    args = _q('aggregate = "mean"\ncolumn = "nope"\nepsilon = 0.1')(tmp_path, data)
    expect_exit(args + (["--dry-run"] if dry else []), 2, tmp_path, caplog)


# -- budget (exit 3) and ledger (exit 4) ---------------------------------------------------------

def _over_budget(tmp: Path, d: Path) -> list[str]:
    return ["run", str(_spec(tmp, spec_text(d).replace("epsilon = 5.0", "epsilon = 0.8")))]


def _over_spent_ledger(tmp: Path, d: Path) -> list[str]:
    spent_ledger(tmp / "budget.sqlite", epsilon=1.5)
    return ["run", str(_spec(tmp, spec_text(d).replace("epsilon = 5.0", "epsilon = 1.5")))]


def _dry_over_budget(tmp: Path, d: Path) -> list[str]:
    return [*_over_budget(tmp, d), "--dry-run"]


def _ledger_file(content: bytes) -> SpecMaker:
    def make(tmp: Path, d: Path) -> list[str]:
        (tmp / "budget.sqlite").write_bytes(content)
        return ["run", str(_spec(tmp, spec_text(d)))]
    return make


def _ledger_folder(tmp: Path, d: Path) -> list[str]:
    (tmp / "budget.sqlite").mkdir()
    return ["run", str(_spec(tmp, spec_text(d)))]


def _ledger_parent_missing(tmp: Path, d: Path) -> list[str]:
    return ["run", str(_spec(tmp, spec_text(d))), "--ledger", str(tmp / "no" / "l.sqlite")]


def _ledger_other_budget(tmp: Path, d: Path) -> list[str]:
    spent_ledger(tmp / "budget.sqlite", epsilon=4.0)
    return ["run", str(_spec(tmp, spec_text(d)))]


def _ledger_other_relation(tmp: Path, d: Path) -> list[str]:
    spent_ledger(tmp / "budget.sqlite", neighbouring="change_one")
    return ["run", str(_spec(tmp, spec_text(d)))]


def _ledger_foreign(tmp: Path, d: Path) -> list[str]:
    with sqlite3.connect(tmp / "budget.sqlite") as conn:
        conn.execute("CREATE TABLE people (name TEXT, income REAL)")
        conn.execute("INSERT INTO people VALUES (?, ?)", (SECRET_TEXT, SECRET_FLOAT))
    conn.close()
    return ["run", str(_spec(tmp, spec_text(d)))]


def _ledger_tampered(tmp: Path, d: Path) -> list[str]:
    path = spent_ledger(tmp / "budget.sqlite")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE entries SET epsilon = '1/1000', requested_epsilon = '1/1000'")
    conn.close()
    return ["run", str(_spec(tmp, spec_text(d)))]


def _ledger_unit_mismatch(tmp: Path, d: Path) -> list[str]:
    s = dpf.Session(5.0, 1e-5, ledger=str(tmp / "budget.sqlite"), privacy_unit="u")
    s.close()
    return ["run", str(_spec(tmp, spec_text(d)))]


LEDGER_ERRORS: dict[str, tuple[SpecMaker, int]] = {
    "budget-run-over-total": (_over_budget, 3),
    "budget-run-over-what-is-left": (_over_spent_ledger, 3),
    "budget-dry-run-over-total": (_dry_over_budget, 3),
    "ledger-garbage": (_ledger_file(SECRET_TEXT.encode() * 100), 4),
    "ledger-truncated-header": (_ledger_file(b"SQLite format 3\x00" + b"\x00" * 50), 4),
    "ledger-is-a-folder": (_ledger_folder, 4),
    "ledger-parent-missing": (_ledger_parent_missing, 4),
    "ledger-other-budget": (_ledger_other_budget, 4),
    "ledger-other-relation": (_ledger_other_relation, 4),
    "ledger-foreign-sqlite": (_ledger_foreign, 4),
    "ledger-tampered": (_ledger_tampered, 4),
    "ledger-other-unit": (_ledger_unit_mismatch, 2),
}


@pytest.mark.parametrize(("make", "code"),
                         [pytest.param(m, c, id=i) for i, (m, c) in LEDGER_ERRORS.items()])
def test_run_budget_and_ledger_errors(make: SpecMaker, code: int, data: Path, tmp_path: Path,
                                      caplog: pytest.LogCaptureFixture) -> None:
    args = make(tmp_path, data)
    expect_exit(args, code, tmp_path, caplog)


# -- a run over text in numeric CSV columns releases, quoting nothing ------------------------------

def test_run_csv_with_text_in_numeric_columns_releases(data: Path, tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    """``[input] types`` declares x and n numeric; their text values count as missing: the run
    releases (exit 0), prints, records and exports no planted value, and the sum is right."""
    text = spec_text(data, path="people.csv", replace=(
        ('.csv"', '.csv"\ntypes = { x = "float64", n = "int64", g = "string" }'),
        ("epsilon = 5.0", "epsilon = 1e10"),
        ('name = "rows"\naggregate = "count"\nepsilon = 0.5',
         'name = "rows"\naggregate = "count"\ncolumn = "x"\nepsilon = 1e9'),
        ('by = ["g"]\nepsilon = 0.5', 'by = ["g"]\nepsilon = 1e9')))
    spec = _spec(tmp_path, text)
    res = invoke(["run", str(spec)], caplog)
    assert res.code == 0, res.text
    ledger = tmp_path / "budget.sqlite"
    assert_ledger_clean(ledger)
    files = sorted((tmp_path / "out").glob("*.parquet"))
    assert [f.name for f in files] == ["rows.parquet", "x_by_g.parquet"]
    for f in files:
        assert_clean(repr(dpf.read_provenance(f)), f"the provenance of {f.name}")
        assert_clean(pq.read_table(f).to_pandas().to_string(), f"the release {f.name}")
    # x: 1.5 (a), text (missing), 2.5 (a), SECRET_FLOAT -> 10 (b), 3 (key not declared)
    rows = pq.read_table(tmp_path / "out" / "rows.parquet").to_pandas()
    assert rows["count"].tolist() == [4], rows
    by_g = pq.read_table(tmp_path / "out" / "x_by_g.parquet").to_pandas()
    assert by_g["g"].tolist() == ["a", "b"], by_g
    assert by_g["x"].round(6).tolist() == [4.0, 10.0], by_g


# -- dpframe demo ---------------------------------------------------------------------------------

def _demo_out_is_file(tmp: Path) -> list[str]:
    (tmp / "out").write_text("x")
    return ["demo", "--rows", "1000", "--out", str(tmp / "out")]


def _demo_ledger(content: bytes | None, epsilon: str = "1.0") -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        if content is None:
            (tmp / "l.sqlite").mkdir()
        else:
            (tmp / "l.sqlite").write_bytes(content)
        return ["demo", "--rows", "1000", "--out", str(tmp / "o"), "--ledger",
                str(tmp / "l.sqlite"), "--epsilon", epsilon]
    return make


def _demo_spent(tmp: Path) -> list[str]:
    spent_ledger(tmp / "l.sqlite", epsilon=1.0, delta=1e-6)
    return ["demo", "--rows", "1000", "--out", str(tmp / "o"), "--ledger",
            str(tmp / "l.sqlite"), "--epsilon", "1.0"]


DEMO_ERRORS: dict[str, tuple[Callable[[Path], list[str]], int]] = {
    "demo-out-is-file": (_demo_out_is_file, 2),
    "demo-rows-too-few": (lambda tmp: ["demo", "--rows", "10", "--out", str(tmp / "o")], 2),
    "demo-epsilon-text": (lambda tmp: ["demo", "--epsilon", "lots", "--out", str(tmp / "o")], 2),
    "demo-epsilon-negative": (lambda tmp: ["demo", "--rows", "1000", "--epsilon", "-1",
                                           "--out", str(tmp / "o")], 2),
    "demo-epsilon-nan": (lambda tmp: ["demo", "--rows", "1000", "--epsilon", "nan",
                                      "--out", str(tmp / "o")], 2),
    "demo-epsilon-too-small": (lambda tmp: ["demo", "--rows", "1000", "--epsilon", "0.5",
                                            "--out", str(tmp / "o")], 3),
    "demo-ledger-spent": (_demo_spent, 3),
    "demo-ledger-garbage": (_demo_ledger(SECRET_TEXT.encode() * 30), 4),
    "demo-ledger-folder": (_demo_ledger(None), 4),
}


@pytest.mark.parametrize(("make", "code"),
                         [pytest.param(m, c, id=i) for i, (m, c) in DEMO_ERRORS.items()])
def test_demo_errors(make: Callable[[Path], list[str]], code: int, tmp_path: Path,
                     caplog: pytest.LogCaptureFixture) -> None:
    expect_exit(make(tmp_path), code, tmp_path, caplog)
