"""Issue 44 items 4 and 5: a result says what it covers, and ``describe`` takes ``ci=``.

* Every measure of ``.attrs["dp"]["measures"]`` states ``"bounds"``: the declared ``[lo, hi]``
  its column's values are clamped to, or ``None`` where the aggregate clamps nothing (count,
  count_distinct; a histogram drops values outside its edges, pd.cut's semantics). The key is
  always present, so the provenance has one shape whatever the aggregate.
* The HTML, ``session.report()``, the session's HTML and a scalar's ``.covers`` (and
  ``.attrs["dp"]["covers"]`` of every result) say it in words, with T, k and R at the unit
  level: "values clamped to [-60, 240]; at most 200 rows per unit".
* ``describe(ci=0.9)`` adds ``<stat>_lower`` / ``<stat>_upper`` rows.

The table is heavy-tailed like the issue's: 400 units with 1 to 600 rows each (Zipf-like), a
delay-like column with a long right tail; T = 200 drops a share of the rows.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf

from ._support import mean_cost_spec

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning",
                                        "ignore::dpframe.errors.NearZeroWarning")

BOUNDS = (-60, 240)
T = 200


def heavy_tailed() -> pd.DataFrame:
    """Units with 1 to 600 rows (Zipf-like: rows ~ 600 / rank), a delay-like column."""
    rng = np.random.default_rng(44)
    units = 400
    rows = np.clip((600 / np.arange(1, units + 1) ** 0.8).astype(int), 1, 600)
    uid = np.repeat(np.arange(units), rows)
    n = uid.size
    delay = rng.gumbel(5, 25, n).round(1)  # a right tail beyond the bounds
    g = rng.choice(["JFK", "LGA", "EWR"], n)
    return pd.DataFrame({"uid": uid, "delay": delay, "origin": g,
                         "minutes": rng.integers(0, 30, n)})


def unit_frame(session: dpf.Session | None = None, **options: Any) -> Any:
    s = session or dpf.Session(1e9, 1e-3, seed=5)
    return heavy_tailed().dp(s, bounds={"delay": BOUNDS, "minutes": (0, 29)},
                             keys={"origin": ["EWR", "JFK", "LGA"]}, privacy_unit="uid",
                             max_rows_per_unit=T, **options)


# -- "bounds" in every measure ---------------------------------------------------------------

CLAMPED = {"sum": [-60.0, 240.0], "mean": [-60.0, 240.0], "var": [-60.0, 240.0],
           "std": [-60.0, 240.0], "median": [-60.0, 240.0], "max": [-60.0, 240.0]}


@pytest.mark.parametrize("aggregate", sorted(CLAMPED))
def test_every_clamping_aggregate_states_its_bounds(aggregate: str) -> None:
    r = getattr(unit_frame(), aggregate)("delay", epsilon=1.0)
    (m,) = r.attrs["dp"]["measures"]
    assert m["bounds"] == CLAMPED[aggregate]
    grouped = getattr(unit_frame().groupby("origin"), aggregate)("delay", epsilon=1.0)
    assert grouped.attrs["dp"]["measures"][0]["bounds"] == CLAMPED[aggregate]


def test_an_integer_quantiles_bounds_are_the_declared_ones_not_its_cells() -> None:
    """An integer column's quantile cells span half a unit beyond the bounds; the measure
    states the declared bounds."""
    (m,) = unit_frame().median("minutes", epsilon=1.0).attrs["dp"]["measures"]
    assert m["grid"] == "integers" and m["bounds"] == [0.0, 29.0]


@pytest.mark.parametrize("call", ["count", "count_distinct", "histogram"])
def test_aggregates_that_clamp_nothing_state_bounds_none(call: str) -> None:
    priv = unit_frame()
    r = (priv.count(epsilon=1.0) if call == "count"
         else priv.count_distinct("minutes", epsilon=1.0) if call == "count_distinct"
         else priv.histogram("delay", [-60, 0, 60, 240], epsilon=1.0))
    (m,) = r.attrs["dp"]["measures"]
    assert "bounds" in m and m["bounds"] is None


def test_agg_dry_runs_the_ledger_and_exports_state_the_bounds(tmp_path: Path) -> None:
    s = dpf.Session(1e9, 1e-3, seed=5)
    priv = unit_frame(s)
    plan = priv.explain("agg", {"delay": ["mean", "count"]}, by="origin", epsilon=1.0)
    assert [m["bounds"] for m in plan["measures"]] == [[-60.0, 240.0], None]
    out = priv.groupby("origin").agg({"delay": ["mean", "count"]}, epsilon=1.0)
    assert [m["bounds"] for m in out.attrs["dp"]["measures"]] == [[-60.0, 240.0], None]
    # the ledger records the plan the release states
    (entry,) = [e for e in s._store.entries() if e["status"] == "released"]
    assert [m["bounds"] for m in entry["details"]["plan"]["measures"]] == [
        [-60.0, 240.0], None]
    # the Arrow export's document and the value column's field metadata
    pa = pytest.importorskip("pyarrow")
    from dpframe.export import to_arrow

    table = to_arrow(priv.mean("delay", epsilon=1.0))
    assert isinstance(table, pa.Table)
    doc = json.loads(table.schema.metadata[b"dpframe"])
    assert doc["measures"][0]["bounds"] == [-60.0, 240.0]
    assert doc["covers"] == "values clamped to [-60, 240]; at most 200 rows per unit"
    field = json.loads(table.schema.field(0).metadata[b"dpframe"])
    assert field["bounds"] == [-60.0, 240.0]


# -- in words: HTML, report(), .covers -------------------------------------------------------

def test_a_unit_level_result_says_what_it_covers_in_words() -> None:
    s = dpf.Session(1e9, 1e-3, seed=5)
    priv = unit_frame(s, max_groups_per_unit=2, max_rows_per_group=150)
    r = priv.mean("delay", epsilon=1.0, ci=0.9)
    # ungrouped, one group: min(T, R) rows per unit are kept
    assert r.covers == r.attrs["dp"]["covers"] == ("values clamped to [-60, 240]; at most 150 "
                                                   "rows per unit")
    assert f"covers {r.covers}" in r._repr_html_()
    words = ("values clamped to [-60, 240]; at most 200 rows per unit, in at most 2 groups, "
             "at most 150 rows per group")
    grouped = priv.groupby("origin").sum("delay", epsilon=1.0)
    assert grouped.attrs["dp"]["covers"] == words
    # rich wraps (and folds) a cell's text: compared without spaces
    shown = query_cells(s.report())[-1].replace(" ", "")
    assert shown == f"groupby(origin).sum(delay) (covers {words})".replace(" ", "")
    assert f"(covers {words})" in s._repr_html_()


def query_cells(report: str) -> list[str]:
    """The ``query`` cells of the report's table, each cell's wrapped lines joined."""
    cells: list[str] = []
    for line in report.splitlines():
        parts = line.split("│")
        if len(parts) < 4:
            continue
        if parts[1].strip():  # a new entry (its id)
            cells.append("")
        cells[-1] = " ".join(filter(None, (cells[-1], parts[3].strip())))
    return cells


def test_a_count_states_the_contribution_bound_and_no_clamp() -> None:
    r = unit_frame().count(epsilon=1.0)
    assert r.covers == "at most 200 rows per unit"
    assert "covers at most 200 rows per unit" in r._repr_html_()


def test_a_row_level_count_has_nothing_to_cover_and_a_sum_its_clamp() -> None:
    df = heavy_tailed()
    priv = df.dp(dpf.Session(1e9, seed=5), bounds={"delay": BOUNDS, "minutes": (0, 29)})
    assert priv.count(epsilon=1.0).covers == ""
    assert "covers" not in priv.count(epsilon=1.0)._repr_html_()
    out = priv.agg({"delay": ["sum"], "minutes": ["sum"]}, epsilon=1.0) if hasattr(
        priv, "agg") else None
    s = priv.sum("delay", epsilon=1.0)
    assert s.covers == "values clamped to [-60, 240]"
    if out is not None:  # two clamped columns: each named
        assert out.attrs["dp"]["covers"] == ("delay clamped to [-60, 240], minutes clamped "
                                             "to [0, 29]")


def test_the_words_are_what_diagnostics_measures() -> None:
    """The interval covers the clamped, T-bounded count, not the raw one: on this table T = 200
    drops a share of the rows, which ``diagnostics=`` counts (the docs' page shows it)."""
    df = heavy_tailed()
    beyond = (df.groupby("uid").size() - T).clip(lower=0)
    dropped = int(beyond.sum())
    assert dropped / len(df) > 0.05  # heavy-tailed: T = 200 drops rows
    r = unit_frame().count(epsilon=10.0, ci=0.95, diagnostics=10.0)
    assert r.covers == "at most 200 rows per unit"
    # the count's interval is about the kept rows: the raw count is outside it
    assert r.lower <= len(df) - dropped <= r.upper < len(df)
    # diagnostics counts each unit's dropped rows up to rows_dropped_cap (a lower bound)
    d = r.attrs["dp"]["diagnostics"]["rows_dropped"]
    cap = d.attrs["dp"]["rows_dropped_cap"]
    assert d.lower <= int(beyond.clip(upper=cap).sum()) <= d.upper


# -- describe(ci=) ---------------------------------------------------------------------------

def test_describe_takes_ci_and_shows_each_statistics_interval() -> None:
    priv = unit_frame()
    out = priv.describe(epsilon=50.0, columns=["delay"], percentiles=[0.5], ci=0.9)
    assert list(out.index) == ["count", "count_lower", "count_upper", "mean", "mean_lower",
                               "mean_upper", "std", "std_lower", "std_upper", "50%",
                               "50%_lower", "50%_upper"]
    x = out["delay"]
    for stat in ("count", "mean", "std", "50%"):
        assert math.isfinite(x[f"{stat}_lower"]) and math.isfinite(x[f"{stat}_upper"])
        assert x[f"{stat}_lower"] <= x[stat] <= x[f"{stat}_upper"], stat
    assert all(m["ci_level"] == 0.9 for m in out.attrs["dp"]["measures"])
    assert out.attrs["dp"]["covers"] == ("values clamped to [-60, 240]; at most 200 rows "
                                         "per unit")


def test_describe_without_ci_keeps_pandas_rows_and_a_dry_run_takes_ci() -> None:
    priv = unit_frame()
    out = priv.describe(epsilon=1.0, columns=["delay"])
    assert list(out.index) == ["count", "mean", "std", "25%", "50%", "75%"]
    plan = priv.explain("describe", epsilon=1.0, columns=["delay"], ci=0.8)
    assert {m["ci_level"] for m in plan["measures"]} == {0.8}


def test_describe_refuses_a_bad_ci_before_the_charge() -> None:
    s = dpf.Session(10.0, seed=5)
    priv = unit_frame(s)
    with warnings.catch_warnings(), pytest.raises(dpf.DPError):
        priv.describe(epsilon=1.0, columns=["delay"], ci=1.5)
    assert s.spent == (0.0, 0.0)


def test_a_dry_run_states_what_the_release_will_cover() -> None:
    priv = unit_frame(max_groups_per_unit=2, max_rows_per_group=150)
    plan = priv.explain("mean", "delay", by="origin", epsilon=1.0)
    out = priv.groupby("origin").mean("delay", epsilon=1.0)
    assert plan["covers"] == out.attrs["dp"]["covers"] == (
        "values clamped to [-60, 240]; at most 200 rows per unit, in at most 2 groups, at most "
        "150 rows per group")


def test_what_a_result_covers_does_not_depend_on_the_data() -> None:
    """Declared numbers only: a neighbour without the heaviest unit, or with every value beyond
    the bounds, states the same bounds and words."""
    df = heavy_tailed()
    variants = [df, df[df["uid"] != 0], df.assign(delay=df["delay"] * 100)]
    stated = set()
    for data in variants:
        priv = data.dp(dpf.Session(1e9, 1e-3, seed=5), bounds={"delay": BOUNDS},
                       keys={"origin": ["EWR", "JFK", "LGA"]}, privacy_unit="uid",
                       max_rows_per_unit=T)
        r = priv.groupby("origin").agg({"delay": ["mean", "count"]}, epsilon=1.0)
        stated.add((r.attrs["dp"]["covers"],
                    tuple(str(m["bounds"]) for m in r.attrs["dp"]["measures"])))
    assert len(stated) == 1


def test_dpframe_run_states_what_each_release_covers(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    spec = mean_cost_spec(tmp_path, "covers", 300)
    words = "values clamped to [0, 200]; at most 3 rows per unit"
    out = subprocess.run([sys.executable, "-m", "dpframe", "run", str(spec)],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "COLUMNS": "400", "PYTHONWARNINGS": "ignore"})
    shown = " ".join(line.split("│")[1].strip() for line in out.stdout.splitlines()
                     if line.startswith("│"))  # the query cell's wrapped lines
    assert shown == f"mean_cost (covers {words})"
    prov = dpf.read_provenance(tmp_path / "out" / "mean_cost.parquet")
    assert prov["covers"] == words and prov["measures"][0]["bounds"] == [0.0, 200.0]
