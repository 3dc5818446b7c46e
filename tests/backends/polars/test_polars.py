"""The Polars front against the pandas reference: ``pl_df.dp(...)`` and ``lazy.dp(...)``.

The same queries on the same data through pandas, a Polars DataFrame and a Polars LazyFrame,
with sessions seeded alike, give identical answers, labels, index dtypes, provenance, charges
and ledger rows (the Arrow backend's exact aggregates equal the pandas backend's, and the
noise is drawn from the same generator). Errors are the same typed errors, before any charge.
A LazyFrame is streamed in batches and never collected whole; ``import dpframe`` never imports
polars, and ``.dp`` exists whatever the import order.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

pl = pytest.importorskip("polars")

import dpframe as dpf  # noqa: E402
import dpframe.fronts.polars  # noqa: E402
from dpframe.backends.arrow import backend as arrow_backend  # noqa: E402
from dpframe.fronts.frame import PrivateFrame  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # seeded sessions warn

N = 6000
BOUNDS = {"x": (0.0, 10.0), "n": (0, 5), "m": (0, 5)}
KEYS = {"g": ["a", "b", "c", "zz"], "b": [False, True], "n": list(range(8))}
ENUM = ["p", "q", "r", "s"]  # "s" never occurs: released as noise on zero
BATCH = 997  # several batches per release, none aligned with anything


@pytest.fixture(scope="module")
def frames() -> tuple[pd.DataFrame, Any]:
    """One data set as pandas and as Polars: string keys with nulls, floats with NaN (pandas)
    that are NaN *or* null in Polars, integers with and without nulls, booleans, an Enum (a
    pandas Categorical with the same categories), datetimes, an integer unit and a text unit."""
    rng = np.random.default_rng(3)
    i = np.arange(N)
    g = rng.choice(["a", "b", "c"], N).astype(object)
    g[i % 31 == 0] = None
    x = rng.uniform(-2, 12, N)  # some values outside the bounds: clamped
    x_nan = i % 17 == 0
    x_null = i % 13 == 0
    x[x_nan | x_null] = np.nan
    m = rng.integers(0, 8, N).astype(float)
    m[i % 11 == 0] = np.nan
    e = rng.choice(ENUM[:3], N)
    t = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 3, N), unit="D")
    u = rng.integers(0, 400, N)
    pdf = pd.DataFrame({
        "g": pd.array(g, dtype="str"),
        "x": x,
        "n": rng.integers(0, 8, N),
        "m": pd.array(m, dtype="Int64"),
        "b": rng.random(N) < 0.3,
        "e": pd.Categorical(e, categories=ENUM),
        "t": t,
        "u": u,
        "w": pd.array([f"user{v:04d}" for v in u], dtype="str"),
    })
    x_pl = np.where(x_null, 0.0, x)  # NaN where pandas has NaN; null below
    pldf = pl.DataFrame({
        "g": pl.Series(list(g), dtype=pl.String),
        "x": pl.Series(x_pl, dtype=pl.Float64),
        "n": pdf["n"].to_numpy(),
        "m": pl.Series([None if np.isnan(v) else int(v) for v in m], dtype=pl.Int64),
        "b": pdf["b"].to_numpy(),
        "e": pl.Series(e, dtype=pl.Enum(ENUM)),
        "t": pl.Series(pdf["t"].to_numpy()).cast(pl.Datetime("us")),
        "u": u,
        "w": pl.Series(list(pdf["w"]), dtype=pl.String),
    }).with_columns(x=pl.when(pl.Series(x_null)).then(None).otherwise(pl.col("x")))
    assert pldf["x"].is_nan().sum() == int((x_nan & ~x_null).sum()) > 0
    assert pldf["x"].null_count() == int(x_null.sum()) > 0
    assert pldf["g"].null_count() > 0 and pldf["m"].null_count() > 0
    return pdf, pldf


def _session(seed: int = 1) -> dpf.Session:
    return dpf.Session(1e9, 0.5, seed=seed)


def _fronts(pdf: pd.DataFrame, pldf: Any) -> dict[str, Callable[..., PrivateFrame]]:
    return {
        "pandas": lambda s, **o: pdf.dp(s, **o),
        "polars": lambda s, **o: pldf.dp(s, batch_size=BATCH, **o),
        "lazy": lambda s, **o: pldf.lazy().dp(s, batch_size=BATCH, **o),
    }


E = 1e6
T1, T2 = pd.Timestamp("2024-01-01"), pd.Timestamp("2024-01-02")
QUERIES: dict[str, Callable[[PrivateFrame], Any]] = {
    "count": lambda f: f.count(epsilon=E),
    "count_col": lambda f: f.count("x", epsilon=E),
    "count_time": lambda f: f.count("t", epsilon=E),
    "sum_float": lambda f: f.sum("x", epsilon=E, ci=0.95),
    "sum_int": lambda f: f.sum("n", epsilon=E),
    "sum_int_nulls": lambda f: f.sum("m", epsilon=E),
    "mean": lambda f: f.mean("x", epsilon=E, ci=0.95),
    "max": lambda f: f.max("x", epsilon=E),
    "min": lambda f: f.min("n", epsilon=E),
    "median": lambda f: f.median("x", epsilon=E),
    "quantile": lambda f: f.quantile("x", 0.9, epsilon=E),
    "histogram": lambda f: f.histogram("x", bins=[0, 2.5, 5, 10], epsilon=E, ci=0.95),
    "g_count": lambda f: f.groupby("g").count(epsilon=E),
    "g_sum": lambda f: f.groupby("g").sum("x", epsilon=E, ci=0.95),
    "g_mean": lambda f: f.groupby("g").mean("x", epsilon=E, ci=0.95),
    "g_max": lambda f: f.groupby("g").max("x", epsilon=E),
    "g_agg": lambda f: f.groupby("g").agg({"x": ["sum", "mean", "median"], "n": "sum"},
                                          epsilon=E),
    "g_gauss": lambda f: f.groupby("g").sum("x", epsilon=E, delta=1e-6, mechanism="gaussian"),
    "g_sum_int_nulls": lambda f: f.groupby("g").sum("m", epsilon=E),
    "g_two_keys": lambda f: f.groupby(["g", "b"]).mean("n", epsilon=E),
    "g_int_key": lambda f: f.groupby("n").count(epsilon=E),
    "g_enum": lambda f: f.groupby("e").sum("x", epsilon=E),
    "g_time": lambda f: f.groupby("t").sum("n", epsilon=E),
    "private": lambda f: f.groupby("g", keys="private").sum("x", epsilon=E, delta=1e-6),
    "private_two": lambda f: f.groupby(["g", "b"], keys="private").count(epsilon=E,
                                                                          delta=1e-6),
    "private_time": lambda f: f.groupby("t", keys="private").count(epsilon=E, delta=1e-6),
}
OPTS = {"bounds": BOUNDS, "keys": KEYS | {"e": "categories", "t": [T1, T2]}}


def _same(a: Any, b: Any) -> None:
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b)
    elif isinstance(a, pd.Series):
        pd.testing.assert_series_equal(a, b)
    else:
        assert type(a) is type(b) and a == b
        assert (a.lower, a.upper) == (b.lower, b.upper)
    assert a.attrs["dp"] == b.attrs["dp"]


def _ledger(s: dpf.Session) -> pd.DataFrame:
    return s.ledger.drop(columns=["time"])


def _run_all(frames: tuple[pd.DataFrame, Any], query: Callable[[PrivateFrame], Any],
             **opts: Any) -> dict[str, tuple[Any, dpf.Session]]:
    out = {}
    for name, front in _fronts(*frames).items():
        s = _session()
        out[name] = query(front(s, **opts)), s
    return out


def _check_parity(out: dict[str, tuple[Any, dpf.Session]]) -> Any:
    ref, sp = out["pandas"]
    assert sp.spent[0] > 0
    for name in ("polars", "lazy"):
        got, s = out[name]
        _same(ref, got)  # identical values, labels, index dtypes, provenance
        assert s.spent == sp.spent
        pd.testing.assert_frame_equal(_ledger(s), _ledger(sp))
    return ref


@pytest.mark.parametrize("name", list(QUERIES))
def test_row_level_matches_pandas(frames: tuple[pd.DataFrame, Any], name: str) -> None:
    ref = _check_parity(_run_all(frames, QUERIES[name], **OPTS))
    pdf = frames[0]
    if name == "count_col":  # NaN and null are both missing, as in pandas
        assert abs(int(ref) - int(pdf["x"].notna().sum())) <= 1
    if name == "g_count":
        truth = pdf.groupby("g").size().reindex(KEYS["g"], fill_value=0)
        assert list(ref.index) == KEYS["g"] and np.abs(ref - truth).max() <= 1
    if name == "g_enum":
        assert list(ref.index) == ENUM
    if name == "private":
        assert set(ref.index) == {"a", "b", "c"}  # a missing key is never released


@pytest.mark.parametrize("name", ["count", "g_count", "g_sum", "g_agg", "private", "max"])
@pytest.mark.parametrize("unit", ["u", "w"])
def test_unit_level_without_truncation_matches_pandas(frames: tuple[pd.DataFrame, Any],
                                                      name: str, unit: str) -> None:
    """Bounds that truncate nothing: bounding keeps every row, so results are identical (the
    LazyFrame spills to 3 keyed-hash partitions, the DataFrame keeps one in memory)."""
    pdf = frames[0]
    rows = int(pdf.groupby(unit).size().max())
    groups = int(pdf.groupby(unit)["g"].nunique().max()) + 1
    opts = OPTS | {"privacy_unit": unit, "max_rows_per_unit": rows,
                   "max_groups_per_unit": groups}
    out = _run_all(frames, QUERIES[name], **opts)
    ref = _check_parity(out)
    if isinstance(ref, pd.Series | pd.DataFrame):
        assert ref.attrs["dp"]["max_rows_per_unit"] == rows


@pytest.mark.parametrize("partitions", [1, 4])
def test_unit_level_truncation_matches_pandas(frames: tuple[pd.DataFrame, Any],
                                              partitions: int) -> None:
    """Truncating bounds: the ungrouped count after keeping <= 2 rows per unit is exact
    whichever rows are kept, and equals pandas'."""
    pdf, pldf = frames
    truth = int(np.minimum(pdf.groupby("u").size(), 2).sum())
    opts = {"privacy_unit": "u", "max_rows_per_unit": 2}
    counts = []
    for f in (pdf.dp(_session(), **opts),
              pldf.dp(_session(), batch_size=BATCH, partitions=partitions, **opts),
              pldf.lazy().dp(_session(), batch_size=BATCH, partitions=partitions, **opts)):
        counts.append(int(f.count(epsilon=E)))
    assert counts == [truth] * 3 and truth < N


ERRORS: list[tuple[dict[str, Any], Callable[[PrivateFrame], Any], type[Exception]]] = [
    ({"bounds": BOUNDS}, lambda f: f.sum("nope", epsilon=1), dpf.UnknownColumnError),
    ({"bounds": {"nope": (0, 1)}}, lambda f: f.sum("nope", epsilon=1), dpf.ValidationError),
    ({}, lambda f: f.sum("x", epsilon=1), dpf.BoundsError),
    ({"bounds": BOUNDS}, lambda f: f.groupby("g").sum("x", epsilon=1), dpf.KeysError),
    ({"bounds": BOUNDS}, lambda f: f.groupby("e").count(epsilon=1), dpf.KeysError),
    ({"keys": {"g": "categories"}}, lambda f: f.groupby("g").count(epsilon=1), dpf.KeysError),
    ({"bounds": BOUNDS}, lambda f: f.groupby("nope", keys="private").count(
        epsilon=1, delta=1e-6), dpf.UnknownColumnError),
    ({"privacy_unit": "nope", "max_rows_per_unit": 2}, lambda f: f.count(epsilon=1),
     dpf.UnknownColumnError),
    ({"bounds": BOUNDS}, lambda f: f.sum("x", epsilon=2e9), dpf.BudgetExceededError),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_are_the_same_typed_errors_before_any_charge(frames: tuple[pd.DataFrame, Any],
                                                            i: int) -> None:
    opts, query, expected = ERRORS[i]
    raised = {}
    for name, front in _fronts(*frames).items():
        s = _session()
        with pytest.raises(dpf.DPError) as info:
            query(front(s, **opts))
        raised[name] = type(info.value)
        assert s.spent == (0.0, 0.0) and len(s.ledger) == 0
    assert set(raised.values()) == {expected}


def test_categories_are_public_keys_only_on_opt_in_and_only_for_an_enum() -> None:
    df = pl.DataFrame({"e": pl.Series(["p", "q", "p"], dtype=pl.Enum(ENUM)),
                       "c": pl.Series(["p", "q", "p"], dtype=pl.Categorical)})
    s = _session()
    out = df.dp(s, keys={"e": "categories"}).groupby("e").count(epsilon=E)
    assert list(out.index) == ENUM and out.tolist() == [2, 1, 0, 0]
    with pytest.raises(dpf.KeysError):
        df.dp(s).groupby("e").count(epsilon=E)
    # a Categorical's categories are whatever strings were seen: never declared keys
    with pytest.raises(dpf.KeysError, match="'categories'"):
        df.lazy().dp(s, keys={"c": "categories"}).groupby("c").count(epsilon=E)
    out = df.lazy().dp(s, keys={"c": ["p", "q", "z"]}).groupby("c").count(epsilon=E)
    assert out.to_dict() == {"p": 2, "q": 1, "z": 0}
    assert len(s.ledger) == 2


def test_lazyframe_is_streamed_in_batches_never_collected(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    n = 20_000
    lf = pl.LazyFrame({"k": ["a", "b"] * (n // 2), "x": np.ones(n), "u": np.arange(n) % 500})

    def refuse(*args: Any, **kw: Any) -> Any:
        raise AssertionError("the LazyFrame was collected whole")

    monkeypatch.setattr(pl.LazyFrame, "collect", refuse)
    chunks: list[int] = []
    real_collect_batches = pl.LazyFrame.collect_batches

    def counting(self: Any, *args: Any, **kw: Any) -> Any:
        for chunk in real_collect_batches(self, *args, **kw):
            chunks.append(chunk.height)
            yield chunk

    monkeypatch.setattr(pl.LazyFrame, "collect_batches", counting)
    blocks: list[int] = []
    real_compute = arrow_backend.compute_exact

    def compute(plan: Any, codes: Any, *args: Any, **kw: Any) -> Any:
        blocks.append(len(codes))
        return real_compute(plan, codes, *args, **kw)

    monkeypatch.setattr(arrow_backend, "compute_exact", compute)
    s = _session()
    out = lf.dp(s, bounds={"x": (0, 1)}, keys={"k": ["a", "b"]}, batch_size=2000) \
        .groupby("k").sum("x", epsilon=E)
    assert out.to_dict() == {"a": n // 2, "b": n // 2}
    assert sum(chunks) == n and len(chunks) >= 5 and max(chunks) <= 2 * 2000
    assert sum(blocks) == n and len(blocks) == len(chunks)  # one exact block per batch
    # a privacy-unit release reads the frame again (one more stream), spilled by unit
    chunks.clear()
    c = lf.dp(_session(), privacy_unit="u", max_rows_per_unit=3, partitions=4,
              batch_size=2000).count(epsilon=E)
    assert int(c) == 500 * 3 and sum(chunks) == n and len(chunks) >= 5


def test_a_lazyframe_failing_mid_stream_quotes_no_value() -> None:
    """Polars messages quote values (a failed cast names the text): the error is typed and
    quotes nothing; the charge stands, as for a scan that fails after it (docs/scan.md)."""
    lf = pl.LazyFrame({"s": ["1", "2", "secret-42"]}).select(pl.col("s").cast(pl.Int64))
    s = _session()
    with pytest.raises(dpf.ValidationError, match="LazyFrame failed") as info:
        lf.dp(s, bounds={"s": (0, 5)}).sum("s", epsilon=1)
    assert "secret" not in str(info.value) and info.value.__cause__ is None
    assert s.ledger["status"].tolist() == ["failed"]


def test_namespace_surface_and_engine_options() -> None:
    df = pl.DataFrame({"x": [1.0, 2.0, 3.0], "d": [dt.date(2024, 1, 1)] * 3})
    assert isinstance(df.dp, dpframe.fronts.polars.PolarsDPNamespace)
    assert isinstance(df.lazy().dp, dpframe.fronts.polars.PolarsDPNamespace)
    s = _session()
    assert isinstance(df.dp(s, bounds={"x": (0, 5)}), PrivateFrame)
    with s:
        assert int(df.dp.count(epsilon=E)) == 3  # the active session
        assert int(df.lazy().dp.count("d", epsilon=E)) == 3
    out = df.dp(s, keys={"d": [dt.date(2024, 1, 1), dt.date(2024, 1, 2)]}) \
        .groupby("d").count(epsilon=E)
    assert out.tolist() == [3, 0]
    dry = df.lazy().dp(s, bounds={"x": (0, 5)}).explain("sum", "x", epsilon=1)
    assert isinstance(dry, dict) and "fits_budget" in dry
    spent = s.spent
    with pytest.raises(dpf.ValidationError, match="batch_size"):
        df.dp(s, batch_size=0)
    for frame in (df, df.to_pandas()):  # the pandas accessor's options, nothing else
        with pytest.raises(TypeError, match="nope"):
            frame.dp(s, nope=1)
    with pytest.raises(dpf.ValidationError, match="polars DataFrame or LazyFrame"):
        dpframe.fronts.polars.private_frame(pd.DataFrame({"x": [1]}), s)  # type: ignore[arg-type]
    obj = pl.DataFrame({"o": pl.Series([object()], dtype=pl.Object)})
    with pytest.raises(dpf.ValidationError, match="'o'"):
        obj.dp(s)
    assert s.spent == spent
    empty = pl.LazyFrame({"x": pl.Series([], dtype=pl.Float64)})
    assert 0 <= empty.dp(s, bounds={"x": (0, 5)}).mean("x", epsilon=E) <= 5


_CHECK = """
import warnings
warnings.simplefilter("ignore")
import dpframe as dpf
df = pl.DataFrame({"x": [1.0, 2.0, 3.0]})
s = dpf.Session(epsilon=1e7, seed=1)
assert int(df.dp(s).count(epsilon=1e6)) == 3
assert int(df.lazy().dp(s).count(epsilon=1e6)) == 3
from dpframe.fronts.hooks import AfterImport
assert not any(isinstance(f, AfterImport) and f.name == "polars" for f in sys.meta_path)
print("ok")
"""


@pytest.mark.parametrize("prelude", [
    "import sys, dpframe\nassert 'polars' not in sys.modules\n"
    "from dpframe.fronts.hooks import AfterImport\n"
    "assert [f for f in sys.meta_path if isinstance(f, AfterImport) and f.name == 'polars']\n"
    "import polars as pl",
    "import sys\nimport polars as pl\nimport dpframe",
    "import sys\nimport dpframe.fronts.polars\nimport polars as pl",
])
def test_namespace_whatever_the_import_order(prelude: str) -> None:
    code = textwrap.dedent(prelude) + "\n" + _CHECK
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")


@pytest.mark.filterwarnings("ignore::polars.exceptions.PolarsInefficientMapWarning")
def test_a_lazyframe_whose_python_function_raises_quotes_no_value() -> None:
    """A Python function the query maps (``map_elements``) raising on a value (a KeyError
    naming it) is a typed error naming only the exception's type, like a Polars error: it
    escaped untyped, with the value in its message."""
    lookup = {"a": 1, "b": 2}
    lf = pl.LazyFrame({"s": ["a", "b", "secret-4711"]}).select(
        pl.col("s").map_elements(lambda v: lookup[v], return_dtype=pl.Int64))
    s = _session()
    with pytest.raises(dpf.ValidationError, match="LazyFrame failed") as info:
        lf.dp(s, bounds={"s": (0, 5)}).sum("s", epsilon=1)
    assert "secret" not in str(info.value) and "KeyError" in str(info.value)
    assert info.value.__cause__ is None
