"""One table of invalid queries, refused alike by every entry point (issue 31, item 7).

Each case is one invalid query, spelled for each way in: the pandas-shaped front (over pandas,
an Arrow scan and Polars; a release and a dry run), a Query built by hand and sent to the engine
(``run_release``, ``explain`` and, for ``accuracy=``, ``epsilon_for``) and a ``dpframe run``
spec (a real run and a dry run). Every entry point must raise the same typed error class
before any charge: the session (or the spec's ledger) has spent nothing. The rules live in one
place on the path they all share (``dpframe/core/validate.py``, the registry,
``validate_query``), so an entry point cannot accept what another refuses.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sqlite3
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import dpframe as dpf
from dpframe.backends.pandas import PandasBackend
from dpframe.cli.runner import run_spec
from dpframe.cli.spec_errors import SpecError
from dpframe.core.aggregates import AGGREGATES
from dpframe.core.query import Measure, Query
from dpframe.engine import release as engine
from dpframe.errors import BoundsError, DPError, KeysError, UnknownColumnError, ValidationError
from tests.backends.contract import LOCAL, MARKED, Data, built, params

V, B, K, U = ValidationError, BoundsError, KeysError, UnknownColumnError
NAN, INF = float("nan"), float("inf")
E = Fraction(1)
BOUNDS: dict[str, tuple[float, float]] = {"x": (0.0, 10.0), "n": (0.0, 100.0)}
KEYS: dict[str, list[object]] = {"g": ["a", "b"]}
#: The query every hand-built case changes: a sum of x, valid.
BASE = Query((Measure("sum", "x"),), E, bounds={c: b for c, b in BOUNDS.items()},
             keys={"g": ("a", "b")})
QUANTILE, HISTOGRAM, VAR = AGGREGATES["quantile"], AGGREGATES["histogram"], AGGREGATES["var"]
MEDIAN = QUANTILE.measure("x", label="median", q=Fraction(1, 2))
MAX = QUANTILE.measure("x", label="max", q=Fraction(1))


def frame() -> pd.DataFrame:
    """Public shape: g (text keys), x (float), n (int), s (text), u (the privacy unit)."""
    rows = 60
    return pd.DataFrame({"g": ["a", "b", "c"] * (rows // 3),
                         "x": [float(i % 11) for i in range(rows)],
                         "n": list(range(rows)), "s": ["p", "q"] * (rows // 2),
                         "u": [f"u{i % 20}" for i in range(rows)]})


@dataclass(frozen=True)
class Case:
    """An invalid query for each entry point (None: that entry point cannot spell it).

    ``front(priv, **kw)`` makes the call on a private frame (``kw``: ``dry_run=True``);
    ``declare`` overrides the frame's declarations; ``query`` changes :data:`BASE`;
    ``spec`` is the ``[[query]]`` table and ``sections`` overrides spec tables. A measure
    whose own arguments are invalid is refused when built (its params check themselves), so
    ``query``'s ``"measures"`` may be a function building them, called on the way in."""

    name: str
    error: type[DPError]
    front: Callable[..., Any] | None
    query: Mapping[str, Any] | None
    spec: Mapping[str, Any] | None = None
    declare: Mapping[str, Any] = field(default_factory=dict)
    sections: Mapping[str, Any] = field(default_factory=dict)
    accuracy: tuple[float, int | None] | None = None  # the engine's epsilon_for arguments


def gb(p: Any, keys: str | None = None) -> Any:
    return p.groupby("g", keys=keys)


def sumq(**kw: Any) -> dict[str, Any]:
    return {"aggregate": "sum", "column": "x", "epsilon": 1.0, **kw}


CASES = [
    # mechanism= on the exponential mechanism (no other mechanism; ci= works: a rank interval)
    Case("max-mechanism", V, lambda p, **kw: p.max("x", epsilon=1, delta=1e-6,
                                                   mechanism="gaussian", **kw),
         {"measures": (MAX,), "mechanism": "gaussian", "delta": Fraction(1, 10**6)},
         {"aggregate": "max", "column": "x", "epsilon": 1.0, "delta": 1e-6,
          "mechanism": "gaussian"}),
    # the interval level
    Case("ci-above-one", V, lambda p, **kw: p.sum("x", epsilon=1, ci=1.5, **kw),
         {"ci": 1.5}, sumq(ci=1.5)),
    Case("ci-zero", V, lambda p, **kw: p.mean("x", epsilon=1, ci=0, **kw),
         {"measures": (Measure("mean", "x"),), "ci": 0.0},
         {"aggregate": "mean", "column": "x", "epsilon": 1.0, "ci": 0.0}),
    # the budget
    Case("epsilon-zero", V, lambda p, **kw: p.sum("x", epsilon=0, **kw),
         {"epsilon": Fraction(0)}, sumq(epsilon=0.0)),
    Case("epsilon-negative", V, lambda p, **kw: p.sum("x", epsilon=-1, **kw),
         {"epsilon": Fraction(-1)}, sumq(epsilon=-1.0)),
    Case("epsilon-nan", V, lambda p, **kw: p.sum("x", epsilon=NAN, **kw),
         {"epsilon": NAN}, sumq(epsilon=NAN)),
    Case("epsilon-inf", V, lambda p, **kw: p.sum("x", epsilon=INF, **kw),
         {"epsilon": INF}, sumq(epsilon=INF)),
    Case("epsilon-bool", V, lambda p, **kw: p.sum("x", epsilon=True, **kw),
         {"epsilon": True}, sumq(epsilon=True)),
    Case("epsilon-float-in-query", V, None, {"epsilon": 0.5}),
    Case("delta-one", V, lambda p, **kw: p.sum("x", epsilon=1, delta=1, **kw),
         {"delta": Fraction(1)}, sumq(delta=1.0)),
    Case("delta-negative", V, lambda p, **kw: p.sum("x", epsilon=1, delta=-0.1, **kw),
         {"delta": Fraction(-1, 10)}, sumq(delta=-0.1)),
    Case("gaussian-without-delta", V,
         lambda p, **kw: p.sum("x", epsilon=1, mechanism="gaussian", **kw),
         {"mechanism": "gaussian"}, sumq(mechanism="gaussian")),
    Case("unknown-mechanism", V, lambda p, **kw: p.sum("x", epsilon=1, mechanism="cauchy", **kw),
         {"mechanism": "cauchy"}, sumq(mechanism="cauchy")),
    # aggregate arguments
    Case("quantile-level-above-one", V, lambda p, **kw: p.quantile("x", 1.5, epsilon=1, **kw),
         {"measures": lambda: (QUANTILE.measure("x", label="median", q=Fraction(3, 2)),)},
         {"aggregate": "quantile", "column": "x", "q": 1.5, "epsilon": 1.0}),
    Case("resolution-one", V, lambda p, **kw: p.median("x", epsilon=1, resolution=1, **kw),
         {"measures": lambda: (QUANTILE.measure("x", label="median", q=Fraction(1, 2),
                                                grid=1),)},
         {"aggregate": "median", "column": "x", "epsilon": 1.0, "resolution": 1}),
    Case("resolution-huge", V, lambda p, **kw: p.max("x", epsilon=1, resolution=10**7, **kw),
         {"measures": lambda: (QUANTILE.measure("x", label="max", q=Fraction(1),
                                                grid=10**7),)},
         {"aggregate": "max", "column": "x", "epsilon": 1.0, "resolution": 10**7}),
    Case("histogram-bins-decreasing", V,
         lambda p, **kw: p.histogram("x", [0, 5, 2], epsilon=1, **kw),
         {"measures": lambda: (HISTOGRAM.measure("x", edges=(0.0, 5.0, 2.0)),)},
         {"aggregate": "histogram", "column": "x", "bins": [0, 5, 2], "epsilon": 1.0}),
    Case("histogram-one-edge", V, lambda p, **kw: p.histogram("x", [3], epsilon=1, **kw),
         {"measures": lambda: (HISTOGRAM.measure("x", edges=(3.0,)),)},
         {"aggregate": "histogram", "column": "x", "bins": [3], "epsilon": 1.0}),
    Case("histogram-right-not-bool", V,
         lambda p, **kw: p.histogram("x", [0, 5, 10], epsilon=1, right="yes", **kw),
         {"measures": lambda: (HISTOGRAM.measure("x", edges=(0.0, 5.0, 10.0), right="yes"),)},
         {"aggregate": "histogram", "column": "x", "bins": [0, 5, 10], "epsilon": 1.0,
          "right": "yes"}),
    Case("ddof-two", V, lambda p, **kw: p.var("x", epsilon=1, ddof=2, **kw),
         {"measures": lambda: (VAR.measure("x", ddof=2),)}),
    # declarations: bounds, columns, keys
    Case("bounds-reversed", B, lambda p, **kw: p.sum("x", epsilon=1, **kw),
         {"bounds": {"x": (10.0, 0.0)}}, sumq(),
         declare={"bounds": {"x": (10, 0)}}, sections={"bounds": {"x": [10, 0]}}),
    Case("bounds-infinite", B, lambda p, **kw: p.sum("x", epsilon=1, **kw),
         {"bounds": {"x": (0.0, INF)}}, sumq(),
         declare={"bounds": {"x": (0, INF)}}, sections={"bounds": {"x": [0, INF]}}),
    Case("bounds-missing", B, lambda p, **kw: p.sum("n", epsilon=1, **kw),
         {"measures": (Measure("sum", "n"),), "bounds": {}},
         {"aggregate": "sum", "column": "n", "epsilon": 1.0},
         declare={"bounds": {}}, sections={"bounds": {}}),
    Case("unknown-column", U, lambda p, **kw: p.sum("nope", epsilon=1, **kw),
         {"measures": (Measure("sum", "nope"),)}, sumq(column="nope")),
    Case("sum-of-text", V, lambda p, **kw: p.sum("s", epsilon=1, **kw),
         {"measures": (Measure("sum", "s"),)}, sumq(column="s")),
    Case("grouped-without-keys", K, lambda p, **kw: p.groupby("n").count(epsilon=1, **kw),
         {"measures": (Measure("count"),), "by": ("n",)},
         {"aggregate": "count", "by": ["n"], "epsilon": 1.0}),
    Case("grouped-twice", V,
         lambda p, **kw: p.groupby(["g", "g"]).count(epsilon=1, **kw),
         {"measures": (Measure("count"),), "by": ("g", "g")},
         {"aggregate": "count", "by": ["g", "g"], "epsilon": 1.0}),
    Case("keys-as-a-string", K, None,
         {"measures": (Measure("count"),), "by": ("g",), "keys": {"g": "categories"}}),
    Case("keys-twice", K, None,
         {"measures": (Measure("count"),), "by": ("g",), "keys": {"g": ("a", "a")}}),
    # key selection
    Case("private-keys-without-delta", V,
         lambda p, **kw: gb(p, "private").count(epsilon=1, **kw),
         {"measures": (Measure("count"),), "by": ("g",), "private_keys": True},
         {"aggregate": "count", "by": ["g"], "keys": "private", "epsilon": 1.0}),
    Case("selection-share-one", V,
         lambda p, **kw: gb(p, "private").count(epsilon=1, delta=1e-6, selection_share=1,
                                                **kw),
         {"measures": (Measure("count"),), "by": ("g",), "private_keys": True,
          "delta": Fraction(1, 10**6), "selection_share": Fraction(1)},
         {"aggregate": "count", "by": ["g"], "keys": "private", "epsilon": 1.0,
          "delta": 1e-6, "selection_share": 1.0}),
    Case("agg-weight-negative", V,
         lambda p, **kw: gb(p).agg({"x": ["sum", "count"]}, epsilon=1,
                                   weights={"x.sum": -1, "x.count": 1}, **kw),
         {"measures": (Measure("sum", "x", weight=Fraction(-1)), Measure("count", "x")),
          "by": ("g",)},
         {"aggregate": "agg", "aggregates": {"x": ["sum", "count"]}, "by": ["g"],
          "epsilon": 1.0, "weights": {"x.sum": -1, "x.count": 1}}),
    # the privacy unit and its contribution bounds
    Case("max-groups-zero", V, lambda p, **kw: gb(p).count(epsilon=1, **kw),
         {"measures": (Measure("count"),), "by": ("g",), "privacy_unit": "u",
          "max_rows_per_unit": 2, "max_groups_per_unit": 0},
         {"aggregate": "count", "by": ["g"], "epsilon": 1.0},
         declare={"privacy_unit": "u", "max_rows_per_unit": 2, "max_groups_per_unit": 0},
         sections={"privacy": {"unit": "u", "max_rows_per_unit": 2,
                               "max_groups_per_unit": 0}}),
    Case("max-rows-not-an-int", V, lambda p, **kw: p.count(epsilon=1, **kw),
         {"measures": (Measure("count"),), "privacy_unit": "u", "max_rows_per_unit": 2.5},
         {"aggregate": "count", "epsilon": 1.0},
         declare={"privacy_unit": "u", "max_rows_per_unit": 2.5},
         sections={"privacy": {"unit": "u", "max_rows_per_unit": 2.5}}),
    Case("max-rows-without-unit", V, lambda p, **kw: p.count(epsilon=1, **kw),
         {"measures": (Measure("count"),), "max_rows_per_unit": 3},
         {"aggregate": "count", "epsilon": 1.0},
         declare={"max_rows_per_unit": 3}, sections={"privacy": {"max_rows_per_unit": 3}}),
    Case("unknown-unit", U, lambda p, **kw: p.count(epsilon=1, **kw),
         {"measures": (Measure("count"),), "privacy_unit": "nobody", "max_rows_per_unit": 2},
         {"aggregate": "count", "epsilon": 1.0},
         declare={"privacy_unit": "nobody", "max_rows_per_unit": 2},
         sections={"privacy": {"unit": "nobody", "max_rows_per_unit": 2}}),
    Case("sample-rate-above-one", V, lambda p, **kw: p.sample(2).count(epsilon=1, **kw),
         {"measures": (Measure("count"),), "sample_rate": Fraction(2)}),
    Case("sample-rate-zero", V, lambda p, **kw: p.sample(0).count(epsilon=1, **kw),
         {"measures": (Measure("count"),), "sample_rate": Fraction(0)}),
    # accuracy= (the engine's epsilon_for; a spec has no accuracy=)
    Case("accuracy-and-epsilon", V, lambda p, **kw: p.sum("x", epsilon=1, accuracy=5, **kw),
         None),
    Case("accuracy-for-median", V, lambda p, **kw: p.median("x", accuracy=1, **kw),
         {"measures": (MEDIAN,)}, accuracy=(1.0, None)),
    Case("accuracy-for-var", V, lambda p, **kw: p.var("x", accuracy=1, **kw),
         {"measures": (VAR.measure("x"),)}, accuracy=(1.0, None)),
    Case("accuracy-negative", V, lambda p, **kw: p.count(accuracy=-3, **kw),
         {"measures": (Measure("count"),)}, accuracy=(-3.0, None)),
    Case("accuracy-nan", V, lambda p, **kw: p.count(accuracy=NAN, **kw),
         {"measures": (Measure("count"),)}, accuracy=(NAN, None)),
    Case("accuracy-of-agg", V,
         lambda p, **kw: gb(p).agg({"x": ["sum", "count"]}, accuracy=5, **kw),
         {"measures": (Measure("sum", "x"), Measure("count", "x")), "by": ("g",)},
         accuracy=(5.0, None)),
    Case("accuracy-min-rows-zero", V, lambda p, **kw: p.mean("x", accuracy=1, min_rows=0, **kw),
         {"measures": (Measure("mean", "x"),)}, accuracy=(1.0, 0)),
    Case("accuracy-with-median-ci", V,
         lambda p, **kw: p.median("x", accuracy=1, ci=0.9, **kw),
         {"measures": (MEDIAN,), "ci": 0.9}, accuracy=(1.0, None)),
]
IDS = [c.name for c in CASES]


def _session() -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(10, delta=1e-3, seed=3)


def _declarations(case: Case) -> dict[str, Any]:
    return {"bounds": BOUNDS, "keys": KEYS, **case.declare}


def _refused(call: Callable[[], Any], session: dpf.Session) -> DPError:
    """The typed error ``call`` raises, having charged nothing."""
    with pytest.raises(DPError) as info:
        call()
    assert session.spent == (0.0, 0.0), "a refused query was charged"
    assert session.ledger.empty, "a refused query left a ledger entry"
    return info.value


# -- the fronts: every local backend of the registry (each: a release and a dry run) ----------
def front_error(case: Case, front: str, dry_run: bool) -> type[DPError]:
    """The class the front raises for ``case`` (its declarations included), nothing charged;
    ``front`` a backend of ``tests/backends/contract.py``."""
    assert case.front is not None
    df, s = frame(), _session()
    kw = {"dry_run": True} if dry_run else {}
    with built(front, Data.of(df)) as data:
        return type(_refused(lambda: case.front(data.dp(s, **_declarations(case)), **kw), s))


@pytest.mark.parametrize("case", [c for c in CASES if c.front is not None], ids=lambda c: c.name)
def test_the_fronts_refuse_each_case_alike(case: Case) -> None:
    """pandas, scans of an Arrow table and of Parquet, Polars, Dask and DuckDB, released or
    dry-run: one typed error class, no charge."""
    seen = {(front, dry): front_error(case, front, dry) for front in LOCAL
            for dry in (False, True)}
    assert set(seen.values()) == {case.error}, seen


@pytest.mark.parametrize("front", params(*MARKED))
def test_the_marked_fronts_refuse_each_case_alike(front: str) -> None:
    """The registry's marked backends (Spark, with its marker), released and dry-run, on one
    frame built once (a JVM job each otherwise): every case's class, no charge."""
    with built(front, Data.of(frame())) as data:
        for case in CASES:
            if case.front is None:
                continue
            for kw in ({}, {"dry_run": True}):
                s = _session()
                got = _refused(lambda c=case, s=s, kw=kw: c.front(  # type: ignore[misc]
                    data.dp(s, **_declarations(c)), **kw), s)
                assert type(got) is case.error, (case.name, kw, type(got), str(got))


# -- the engine: a Query built by hand ---------------------------------------------------------
def hand_built(case: Case) -> Query:
    """:data:`BASE` changed as ``case.query`` says (its measures built now when given as a
    function: they may be refused when built)."""
    assert case.query is not None
    return dataclasses.replace(BASE, **{k: v() if callable(v) else v
                                        for k, v in case.query.items()})


@pytest.mark.parametrize("case", [c for c in CASES if c.query is not None], ids=lambda c: c.name)
def test_the_engine_refuses_a_hand_built_query_as_the_front_does(case: Case) -> None:
    """``run_release`` and ``explain`` on the hand-built Query (and ``epsilon_for`` for an
    ``accuracy=`` case) raise the class the front raises, before any charge."""
    df = frame()
    runs: dict[str, Callable[[dpf.Session], Any]] = {}
    if case.accuracy is not None:
        target, min_rows = case.accuracy
        epsilon_for = engine.epsilon_for  # type: ignore[attr-defined]
        runs["epsilon_for"] = lambda s: epsilon_for(s, hand_built(case), PandasBackend(df),
                                                    target, min_rows)
    else:
        runs["run_release"] = lambda s: engine.run_release(s, hand_built(case),
                                                           PandasBackend(df))
        runs["explain"] = lambda s: engine.explain(s, hand_built(case), PandasBackend(df))
    for name, run in runs.items():
        s = _session()
        err = _refused(lambda run=run, s=s: run(s), s)  # type: ignore[misc]
        assert type(err) is case.error, (name, type(err), str(err))
    if case.front is not None:
        assert front_error(case, "pandas", False) is case.error


# -- the CLI: a spec run (and a dry run) ------------------------------------------------------
def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    assert isinstance(v, Mapping)
    return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(x)}" for k, x in v.items()) + " }"


def _table(name: str, values: Mapping[str, Any], array: bool = False) -> str:
    head = f"[[{name}]]" if array else f"[{name}]"
    return "\n".join([head, *(f"{json.dumps(k)} = {_toml(x)}" for k, x in values.items())])


def write_spec(folder: Path, case: Case) -> Path:
    frame().to_parquet(folder / "data.parquet", index=False)
    sections: dict[str, Any] = {
        "release": {"epsilon": 10.0, "delta": 1e-3},
        "input": {"path": "data.parquet"},
        "bounds": {c: list(b) for c, b in BOUNDS.items()}, "keys": KEYS,
        "output": {"dir": "out"}, **case.sections}
    text = [_table(k, v) for k, v in sections.items() if v or k != "bounds"]
    assert case.spec is not None
    text.append(_table("query", {"name": "q", **case.spec}, array=True))
    path = folder / "spec.toml"
    path.write_text("\n\n".join(text) + "\n", encoding="utf-8")
    return path


def _ledger_entries(path: Path) -> int:
    if not path.exists():
        return 0
    with sqlite3.connect(path) as con:
        tables = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
        return sum(con.execute(f"select count(*) from {t}").fetchone()[0]
                   for t in tables if "entr" in t)


@pytest.mark.parametrize("case", [c for c in CASES if c.spec is not None], ids=lambda c: c.name)
def test_a_spec_run_refuses_each_case_as_the_front_does(case: Case, tmp_path: Path) -> None:
    """``dpframe run`` (``run_spec``), real and dry: the front's class (the spec's own schema
    may refuse a malformed field earlier, as a SpecError, also a ValidationError), nothing
    charged and nothing written."""
    spec = write_spec(tmp_path, case)
    ledger = tmp_path / "ledger.sqlite"
    expected = front_error(case, "pandas", False) if case.front is not None else case.error
    assert expected is case.error
    for dry in (False, True):
        with pytest.raises(DPError) as info:
            run_spec(spec, ledger=ledger, out_dir=tmp_path / "out", dry_run=dry, progress=False)
        err = info.value
        assert type(err) is case.error or (isinstance(err, SpecError) and isinstance(
            err, ValidationError) and issubclass(case.error, ValidationError)), (
            dry, type(err), str(err))
        assert _ledger_entries(ledger) == 0
        assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_the_harness_releases_valid_queries(tmp_path: Path) -> None:
    """Control: the valid query every case changes is released by each entry point (so each
    refusal above is the case's own, not the harness's)."""
    ok = Case("valid", V, lambda p, **kw: p.sum("x", epsilon=1, **kw), {}, sumq())
    for front in LOCAL:
        s = _session()
        with built(front, Data.of(frame())) as data:
            ok.front(data.dp(s, **_declarations(ok)))  # type: ignore[misc]
        assert s.spent == (1.0, 0.0), front
    s = _session()
    engine.run_release(s, hand_built(ok), PandasBackend(frame()))
    assert s.spent == (1.0, 0.0)
    report = run_spec(write_spec(tmp_path, ok), ledger=tmp_path / "ledger.sqlite",
                      out_dir=tmp_path / "out", progress=False)
    assert report.charged == (1.0, 0.0) and len(report.files) == 1


def test_the_query_a_front_builds_is_refused_by_the_engine_alike() -> None:
    """R1's test: ``priv.query(...)`` builds the Query a front call would release; sent to the
    engine with ``mechanism=`` (as a caller of ``engine.release`` may), the median is refused
    as the front refuses it."""
    df, s = frame(), _session()
    priv = df.dp(s, bounds=BOUNDS, keys=KEYS)
    with pytest.raises(ValidationError, match="mechanism= is not available"):
        priv.median("x", epsilon=1, delta=1e-6, mechanism="gaussian")
    query = dataclasses.replace(priv.query("median", "x", epsilon=1, delta=1e-6),
                                mechanism="gaussian")
    for run in (engine.explain, engine.run_release):
        with pytest.raises(ValidationError, match="mechanism= is not available"):
            run(s, query, priv._backend)
    assert s.spent == (0.0, 0.0)


def test_every_case_is_spelled_for_at_least_two_entry_points() -> None:
    """The table compares entry points: each case reaches two or more of them."""
    for c in CASES:
        reached = (c.front is not None) + (c.query is not None) + (c.spec is not None)
        # only a hand-built Query holds a float epsilon or unresolved keys; only a front
        # can pass both epsilon= and accuracy=
        assert reached >= 2 or c.name in ("epsilon-float-in-query", "keys-as-a-string",
                                          "keys-twice", "accuracy-and-epsilon"), c.name
    assert len(IDS) == len(set(IDS))


@pytest.mark.filterwarnings("ignore::dpframe.errors.NearZeroWarning")  # 20 rows a group
def test_ci_and_mechanism_still_apply_to_the_additive_measures_of_an_agg() -> None:
    """The exponential-only rule refuses ``ci=``/``mechanism=`` only when no measure uses
    them: an agg of a sum and a median keeps its interval and Gaussian noise on the sum."""
    s = _session()
    out = frame().dp(s, bounds=BOUNDS, keys=KEYS).groupby("g").agg(
        {"x": ["sum", "median"]}, epsilon=1, delta=1e-6, mechanism="gaussian", ci=0.9)
    assert ("x", "sum_lower") in out.columns and s.spent[0] > 0
    mechanisms = [m["mechanism"] for m in out.attrs["dp"]["measures"]]
    assert mechanisms[0] == "discrete gaussian" and mechanisms[1].startswith("exponential")


def test_engine_epsilon_for_is_the_fronts_accuracy_first_epsilon() -> None:
    """``accuracy=`` on a front and ``engine.release.epsilon_for`` on its Query agree, and
    neither charges anything."""
    s = _session()
    priv = frame().dp(s, bounds=BOUNDS, keys=KEYS)
    planned = priv.explain("mean", "x", accuracy=0.5, min_rows=50)
    query = priv.query("mean", "x", epsilon=1)
    eps = engine.epsilon_for(s, query, priv._backend, 0.5, 50)  # type: ignore[attr-defined]
    assert float(eps) == planned["epsilon"] and s.spent == (0.0, 0.0)
