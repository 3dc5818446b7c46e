"""``diagnostics=eps`` (issue 32 f, API.md): noisy counts of the rows that clamping and
contribution bounding changed, in ``.attrs["dp"]["diagnostics"]`` as ``DPInt`` with
``.lower`` / ``.upper``, on every backend, charged with the query, refused before the charge
when invalid, shown by the HTML repr, the report, exports and the CLI."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.fronts.results import DPInt
from tests.backends.contract import Data, built, params

from ._support import mean_cost_spec

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning",
                                        "ignore::dpframe.errors.NearZeroWarning")

KEYS = ["a", "b", "c"]
BOUNDS = {"x": (0.0, 100.0)}
T = 8
HUGE = 1e7  # noise of scale cap / (HUGE / 2): zero, in practice


def data() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 6000
    return pd.DataFrame({"g": rng.choice(KEYS, n), "u": rng.integers(0, 500, n),
                         "x": rng.normal(50, 35, n)})


def truth_dropped(df: pd.DataFrame, cap: int) -> int:
    """Each unit's rows past T, counted up to ``cap`` (T bounds the unit: any T rows kept)."""
    extra = (df.groupby("u").size() - T).clip(lower=0)
    return int(np.minimum(extra, cap).sum())


def release(obj: object, **kw: object) -> pd.Series:
    s = dpf.Session(1e12, privacy_unit="u", seed=4)
    return obj.dp(s, bounds=BOUNDS, keys={"g": KEYS}, privacy_unit="u",  # type: ignore
                  max_rows_per_unit=T).groupby("g").sum("x", epsilon=1.0, diagnostics=HUGE,
                                                       **kw)


@pytest.mark.parametrize("backend", params())
def test_counts_are_the_clamped_and_dropped_rows_on_every_backend(backend: str) -> None:
    """Every backend of the registry (``tests/backends/contract.py``), scans in batches of
    1000 rows, Dask in 3 partitions."""
    df = data()
    with built(backend, Data.of(df, batch_size=1000, npartitions=3)) as obj:
        r = release(obj)
    diag = r.attrs["dp"]["diagnostics"]
    assert set(diag) == {"rows_clamped", "rows_dropped"}
    assert all(isinstance(v, DPInt) and v.lower <= v <= v.upper for v in diag.values())
    # a unit keeps T rows, so about T/rows of its out-of-bounds rows stay
    outside = (df["x"] < 0) | (df["x"] > 100)
    kept_share = min(1.0, T * df["u"].nunique() / len(df))
    assert abs(int(diag["rows_clamped"]) - outside.sum() * kept_share) < 0.1 * outside.sum()
    # every backend counts each unit's drops, pre-selected in partitions or not (finding 63)
    assert int(diag["rows_dropped"]) == truth_dropped(df, cap=T)


def test_row_level_counts_clamped_rows_exactly_and_drops_none() -> None:
    df = data()
    s = dpf.Session(1e12, seed=1)
    m = df.dp(s, bounds=BOUNDS).mean("x", epsilon=1.0, diagnostics=HUGE)
    d = m.attrs["dp"]["diagnostics"]
    assert int(d["rows_clamped"]) == int(((df["x"] < 0) | (df["x"] > 100)).sum())
    assert int(d["rows_dropped"]) == 0
    assert "rows clamped ~" in m._repr_html_()


def test_it_is_charged_with_the_query_and_noised_by_the_cap() -> None:
    df = data()
    s = dpf.Session(10, privacy_unit="u", seed=2)
    p = df.dp(s, bounds=BOUNDS, keys={"g": KEYS}, privacy_unit="u", max_rows_per_unit=T)
    plan = p.explain("mean", "x", by="g", epsilon=0.5, diagnostics=0.25)
    assert plan["charge_epsilon"] == 0.75
    assert plan["diagnostics"]["sensitivity"] == T  # min(T, k R) = T here
    assert plan["diagnostics"]["noise_scale"] == pytest.approx(T / 0.125)
    p.groupby("g").mean("x", epsilon=0.5, diagnostics=0.25)
    assert s.spent_exact[0] == Fraction(3, 4)
    assert "clamped" in s.report() and "dropped" in s.report()  # (wrapped in its cell)


@pytest.mark.parametrize("bad", [0, -0.1, float("nan"), float("inf"), True, "0.1", [0.1]])
def test_invalid_diagnostics_are_refused_before_the_charge(bad: object) -> None:
    df = data()
    s = dpf.Session(10, seed=3)
    with pytest.raises(dpf.ValidationError, match="diagnostics"):
        df.dp(s, bounds=BOUNDS).sum("x", epsilon=0.5, diagnostics=bad)
    assert s.spent_exact == (0, 0)


def test_the_counts_are_noisy_with_the_stated_scale() -> None:
    """Geometric noise of scale 1 / (eps / 2) at row level: over 400 releases the counts'
    spread matches it (variance 2 p / (1 - p)^2, p = e^(-eps/2)), within 5 standard errors."""
    df = data().head(300)
    true = int(((df["x"] < 0) | (df["x"] > 100)).sum())
    s = dpf.Session(1e12, seed=9)
    got = np.array([int(df.dp(s, bounds=BOUNDS).sum("x", epsilon=1.0, diagnostics=1.0)
                        .attrs["dp"]["diagnostics"]["rows_clamped"]) for _ in range(400)])
    p = np.exp(-0.5)
    var = 2 * p / (1 - p) ** 2
    z = (np.mean((got - true) ** 2) - var) / (np.sqrt(2 * var * var * 3) / np.sqrt(400))
    assert abs(z) < 5, (np.mean((got - true) ** 2), var)
    assert abs(np.mean(got) - true) < 5 * np.sqrt(var / 400)


def test_exports_carry_the_counts(tmp_path: Path) -> None:
    r = release(data())
    doc = dpf.read_provenance(dpf.to_parquet(r, tmp_path / "r.parquet"))
    d = r.attrs["dp"]["diagnostics"]
    for name in ("rows_clamped", "rows_dropped"):
        got = doc["diagnostics"][name]
        assert {k: got[k] for k in ("value", "lower", "upper")} == {
            "value": int(d[name]), "lower": int(d[name].lower), "upper": int(d[name].upper)}
        stated = d[name].attrs["dp"]
        for k in ("epsilon", "noise_scale", "sensitivity", "mechanism"):  # finding 64
            assert got[k] == stated[k], (name, k)
    assert doc["diagnostics"]["rows_dropped"]["rows_dropped_cap"] == T


@pytest.mark.parametrize("bounds", [{"max_rows_per_unit": T},
                                    {"max_rows_per_unit": 20, "max_groups_per_unit": 2,
                                     "max_rows_per_group": 3}])
def test_provenance_states_each_counts_epsilon_noise_scale_and_cap(
        bounds: dict[str, int], tmp_path: Path) -> None:
    """Finding 64 (issue 43, item 7): each released count states its epsilon (half of
    ``diagnostics=``), its noise scale ``D / (eps / 2)``, its sensitivity ``D = min(T, k R)``
    and, for ``rows_dropped``, the cap ``rows_dropped_cap`` by which it is a lower bound; in
    ``.attrs["dp"]`` of each count, in the export metadata and in the CLI's ``--json``, alike
    the dry run's plan. They were the two noisy values alone."""
    s = dpf.Session(1e6, privacy_unit="u", seed=4)
    p = data().dp(s, bounds=BOUNDS, keys={"g": KEYS}, privacy_unit="u", **bounds)
    plan = p.explain("sum", "x", by="g", epsilon=1.0, diagnostics=0.5)["diagnostics"]
    r = p.groupby("g").sum("x", epsilon=1.0, diagnostics=0.5)
    cap = min(bounds["max_rows_per_unit"],
              bounds.get("max_groups_per_unit", 99) * bounds.get("max_rows_per_group", 99))
    assert plan["rows_dropped_cap"] == plan["sensitivity"] == cap
    doc = dpf.read_provenance(dpf.to_parquet(r, tmp_path / "r.parquet"))
    for name, v in r.attrs["dp"]["diagnostics"].items():
        for stated in (v.attrs["dp"], doc["diagnostics"][name]):
            assert stated["epsilon"] == 0.25
            assert stated["sensitivity"] == cap
            assert stated["noise_scale"] == pytest.approx(cap / 0.25) == plan["noise_scale"]
            assert stated["mechanism"] == "geometric"
            assert stated.get("rows_dropped_cap") == (cap if name == "rows_dropped" else None)
            assert v.upper - v.lower == pytest.approx(2 * stated["ci_half_width"])


def test_the_cli_spec_takes_diagnostics(tmp_path: Path) -> None:
    spec = mean_cost_spec(tmp_path, "diag", 500, 'diagnostics = 0.1\n')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = subprocess.run([sys.executable, "-m", "dpframe", "run", str(spec), "--json"],
                             capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    (q,) = doc["queries"]
    assert set(q["diagnostics"]) == {"rows_clamped", "rows_dropped"}
    assert q["plan"]["diagnostics"]["epsilon"] == 0.1
    prov = dpf.read_provenance(tmp_path / "out" / "mean_cost.parquet")
    assert prov["charge_epsilon"] == pytest.approx(0.6)
    assert prov["diagnostics"] == q["diagnostics"]
    dropped = q["diagnostics"]["rows_dropped"]  # each count's noise and cap (finding 64)
    assert dropped["rows_dropped_cap"] == dropped["sensitivity"] == 3
    assert dropped["epsilon"] == pytest.approx(0.05)
    assert dropped["noise_scale"] == pytest.approx(3 / 0.05)


@pytest.mark.parametrize("call", ["median", "max", "quantile", "histogram", "agg", "selection",
                                  "count", "var"])
def test_every_aggregate_takes_diagnostics(call: str) -> None:
    """``median`` and ``max`` go through ``quantile``, ``priv.groupby(g)[x]`` through the
    group-by: each passes ``diagnostics=`` on. A count clamps nothing."""
    df = data()
    s = dpf.Session(1e12, seed=5)
    p = df.dp(s, bounds=BOUNDS, keys={"g": KEYS})
    kw = {"epsilon": HUGE, "diagnostics": HUGE}
    r = {"median": lambda: p.median("x", **kw), "max": lambda: p.max("x", **kw),
         "quantile": lambda: p.quantile("x", 0.9, **kw),
         "histogram": lambda: p.histogram("x", bins=[0, 50, 100], **kw),
         "agg": lambda: p.groupby("g").agg({"x": ["sum", "median"]}, **kw),
         "selection": lambda: p.groupby("g")["x"].mean(**kw),
         "count": lambda: p.count(**kw), "var": lambda: p.groupby("g").var("x", **kw)}[call]()
    outside = int(((df["x"] < 0) | (df["x"] > 100)).sum())
    d = r.attrs["dp"]["diagnostics"]
    assert int(d["rows_clamped"]) == (0 if call == "count" else outside)
    assert int(d["rows_dropped"]) == 0
    assert s.spent_exact[0] == 2 * Fraction(HUGE)


#: The positional arguments of each front method that declares ``diagnostics=``.
_ARGS: dict[str, tuple[object, ...]] = {
    "count": (), "count_distinct": ("x",), "sum": ("x",), "mean": ("x",), "var": ("x",),
    "std": ("x",), "quantile": ("x", 0.9), "max": ("x",), "min": ("x",), "median": ("x",),
    "histogram": ("x", [0, 50, 100]), "agg": ({"x": ["sum", "median"]},), "nunique": ("x",),
    "mode": ("x",),
}


def _declaring(cls: type) -> list[str]:
    return sorted(n for n, f in inspect.getmembers(cls, inspect.isfunction)
                  if not n.startswith("_") and "diagnostics" in inspect.signature(f).parameters)


def test_every_method_declaring_diagnostics_puts_it_in_its_query() -> None:
    """Each front method that declares ``diagnostics=`` hands it to the Query it builds, as a
    plain argument (frame, group-by, a selection, and through ``accuracy=``'s search), and
    leaves it out when not given."""
    from dpframe.fronts.frame import PrivateFrame
    from dpframe.fronts.groupby import PrivateGroupBy

    p = data().head(50).dp(dpf.Session(10, seed=5), bounds=BOUNDS, keys={"g": KEYS})
    frame, grouped = _declaring(PrivateFrame), _declaring(PrivateGroupBy)
    assert set(frame) | set(grouped) == set(_ARGS) and "agg" in grouped
    for name in frame:
        q = p.query(name, *_ARGS[name], epsilon=0.5, diagnostics=0.25)
        assert q.diagnostics == Fraction(1, 4), name
        assert p.query(name, *_ARGS[name], epsilon=0.5).diagnostics is None, name
    for name in grouped:
        q = p.query(name, *_ARGS[name], by="g", epsilon=0.5, diagnostics=0.25)
        assert q.diagnostics == Fraction(1, 4) and q.by == ("g",), name
    sel = p.groupby("g")["x"].mean(epsilon=0.5, diagnostics=0.25, dry_run=True)
    assert sel["diagnostics"]["epsilon"] == 0.25
    q = p.query("mean", "x", accuracy=5, min_rows=100, diagnostics=0.25)
    assert q.diagnostics == Fraction(1, 4)


def test_diagnostics_is_a_plain_argument_not_a_context_variable() -> None:
    """The query builder takes ``diagnostics`` as an argument, and no module of the fronts
    holds a context variable (no state outlives or crosses a call)."""
    import contextvars

    import dpframe.fronts as fronts

    p = data().head(10).dp(dpf.Session(10, seed=5), bounds=BOUNDS)
    from dpframe.core.query import Measure

    q = p._rel.query([Measure("count")], epsilon=0.5, diagnostics=0.25)
    assert q.diagnostics == Fraction(1, 4)
    assert p._rel.query([Measure("count")], epsilon=0.5).diagnostics is None
    for info in pkgutil.iter_modules(fronts.__path__, "dpframe.fronts."):
        module = importlib.import_module(info.name)
        held = [n for n, v in vars(module).items() if isinstance(v, contextvars.ContextVar)]
        assert not held, (info.name, held)
