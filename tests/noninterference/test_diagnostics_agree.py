"""``diagnostics=``'s exact counts are one law on every backend (issue 43, item 1; finding 63).

``rows_dropped`` is a sum of per-unit terms, each ``min(rows the unit had with a key - rows it
kept, D)``: a function of that unit's rows and its own randomness, whatever the batches, the
partitions or a pre-selection (a scan's heavy slices, Dask's partitions) did on the way. A
scan that pre-selected a heavy slice lost the slice's drops (a whole partition's count once one
unit made it heavy), and Dask counted only the final selection's drops.

The frames here make every count a function of the data alone: each unit's pairs (its rows of
one key) hold the same number of rows and its values are all inside or all outside the bounds,
so it keeps ``min(T, min(k, its groups) * min(R, its rows a pair))`` rows whichever pairs and
rows bounding picks, and its kept rows are clamped all or none. The exact counts (the exact half
of the release, no noise) of pandas, scans over several batch sizes and partition counts (a
heavy unit written first, and a margin of 0 that pre-selects almost every slice), and Dask over
1 to 4 partitions must then be equal, and equal to the oracle below.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpframe as dpf
from dpframe.backends.arrow import carried
from dpframe.engine.release import compute_exact

from ._harness import hsettings

KEYS = ["a", "b", "c", "d"]
BOUNDS = (0.0, 10.0)
INSIDE, OUTSIDE = 5.0, 50.0

#: (batch_size, partitions): each can make a slice heavy with the real margin (a batch past
#: ``parts * 256 / (parts - 2)`` rows), and the small ones with a margin of 0
SCANS = ((64, 2), (1024, 4), (512, 8), (200, 16))


@st.composite
def frames(draw: Any) -> tuple[pd.DataFrame, dict[str, Any], bool]:
    """A frame (``u`` unit, ``g`` key, ``x`` value), the contribution bounds and whether keys
    are private. Units: a heavy one first (up to 900 rows), then light ones; rows with a missing
    unit, and rows of a key no query keeps (undeclared, or missing for private keys)."""
    private = draw(st.booleans())
    units = []
    heavy = draw(st.integers(0, 900))
    if heavy:
        groups = draw(st.integers(1, 3))
        units.append((groups, max(1, heavy // groups), draw(st.booleans())))
    for _ in range(draw(st.integers(0, 40))):
        units.append((draw(st.integers(1, 4)), draw(st.integers(1, 6)), draw(st.booleans())))
    rows: list[tuple[object, object, float]] = []
    for uid, (groups, per_group, out) in enumerate(units):
        first = draw(st.integers(0, len(KEYS) - 1))
        for j in range(groups):
            key = KEYS[(first + j) % len(KEYS)]
            rows += [(uid, key, OUTSIDE if out else INSIDE)] * per_group
        if draw(st.integers(0, 5)) == 0:  # a row no query keeps (an undeclared / missing key)
            rows.append((uid, None if private else "zz", OUTSIDE if out else INSIDE))
    rows += [(None, "a", OUTSIDE)] * draw(st.integers(0, 3))  # a missing unit: dropped by all
    if draw(st.booleans()):  # light units' rows interleaved (the heavy unit's stay first)
        n_heavy = units[0][0] * units[0][1] if heavy else 0
        rest = rows[n_heavy:]
        order = draw(st.permutations(range(len(rest))))
        rows = rows[:n_heavy] + [rest[i] for i in order]
    df = pd.DataFrame(rows, columns=["u", "g", "x"]).astype(
        {"u": "Int64", "g": object, "x": np.float64})
    bounds: dict[str, Any] = {"max_rows_per_unit": draw(st.integers(1, 8))}
    if draw(st.booleans()):
        bounds["max_groups_per_unit"] = draw(st.integers(1, 3))
    if draw(st.booleans()):
        bounds["max_rows_per_group"] = draw(st.integers(1, 4))
    return df, bounds, private


def oracle(df: pd.DataFrame, bounds: dict[str, Any], private: bool, grouped: bool,
           cap: int) -> tuple[int, int]:
    """(rows clamped, rows dropped) as the law says, from the frame's structure."""
    t = bounds["max_rows_per_unit"]
    k = bounds.get("max_groups_per_unit", 1 << 30) if grouped else 1 << 30
    r = bounds.get("max_rows_per_group", 1 << 30)  # (ungrouped: R bounds the one group too)
    valid = df[df["u"].notna() & df["g"].isin(KEYS)] if grouped else df[df["u"].notna()]
    clamped = dropped = 0
    for _, rows in valid.groupby("u"):
        pairs = rows.groupby("g").size() if grouped else pd.Series([len(rows)])
        kept = min(t, min(k, len(pairs)) * min(r, int(pairs.iloc[0])))
        dropped += min(len(rows) - kept, cap)
        clamped += kept if float(rows["x"].iloc[0]) == OUTSIDE else 0
    return clamped, dropped


class _Polars:
    """A Polars LazyFrame whose ``.dp`` reads batches of 2,000 rows into 4 partitions."""

    def __init__(self, lf: pl.LazyFrame) -> None:
        self.lf = lf

    def dp(self, session: dpf.Session, **options: Any) -> Any:
        from dpframe.fronts.polars import private_frame

        return private_frame(self.lf, session, batch_size=2000, partitions=4, **options)


def exact_counts(obj: Any, bounds: dict[str, Any], private: bool, grouped: bool
                 ) -> tuple[tuple[int, int], int]:
    """The exact diagnostic counts of a (grouped) sum with ``diagnostics=`` on ``obj``, and
    the cap ``D`` of its plan."""
    s = dpf.Session(1e9, 0.5, privacy_unit="u", seed=7)
    keys = ({"g": "private"} if private else {"g": KEYS}) if grouped else {}
    priv = obj.dp(s, bounds={"x": BOUNDS}, privacy_unit="u", **bounds,
                  **({"keys": keys} if keys and not private else {}))
    extra: dict[str, Any] = {"delta": 1e-6} if private and grouped else {}
    q = priv.query("sum", "x", by="g" if grouped else None,
                   keys="private" if private and grouped else None, epsilon=1.0,
                   diagnostics=1.0, **extra)
    computed = compute_exact(s, q, priv._backend)
    assert computed.defect is None and computed.plan.diagnostics is not None
    diag = computed.exact.diagnostics
    assert diag is not None
    return (int(diag[0]), int(diag[1])), computed.plan.diagnostics.cap


@pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")
@given(frames(), st.booleans(), st.sampled_from(SCANS), st.booleans(), st.integers(1, 4))
@hsettings(40, shrink=False)
def test_exact_diagnostic_counts_agree_between_pandas_scans_and_dask(
        case: tuple[pd.DataFrame, dict[str, Any], bool], grouped: bool,
        scan: tuple[int, int], margin_zero: bool, dask_parts: int) -> None:
    df, bounds, private = case
    (pandas, cap) = exact_counts(df, bounds, private, grouped)
    assert pandas == oracle(df, bounds, private, grouped, cap)
    batch, parts = scan
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings(), \
            pytest.MonkeyPatch.context() as mp:
        warnings.simplefilter("ignore")
        if margin_zero:  # nearly every slice pre-selected
            mp.setattr(carried, "HEAVY_MARGIN", 0)
        path = Path(tmp) / "d.parquet"
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path,
                       row_group_size=max(1, batch))
        scanned, _ = exact_counts(dpf.scan(path, batch_size=batch, partitions=parts), bounds,
                                  private, grouped)
        dasked, _ = exact_counts(dd.from_pandas(df, npartitions=dask_parts), bounds, private,
                                 grouped)
    assert scanned == pandas, (scanned, pandas)
    assert dasked == pandas, (dasked, pandas)


def test_a_heavy_unit_written_first_keeps_every_partitions_drops(tmp_path: Path) -> None:
    """The review's case: 1,000 units of 3 rows (T = 1), then the same with one unit of 1,500
    rows written first (batches of 2,000, 4 partitions): 1,000 then 1,001 dropped rows (each
    unit's capped at 1) on pandas, the scan, Polars and Dask; the scan and Polars said 1,000
    then 750, Dask 2 then 0."""
    light = pd.DataFrame({"u": np.repeat(np.arange(1000), 3), "x": np.ones(3000)})
    heavy = pd.DataFrame({"u": np.full(1500, 10**6), "x": np.ones(1500)})
    for df, want in ((light, 1000), (pd.concat([heavy, light], ignore_index=True), 1001)):
        path = tmp_path / f"d{want}.parquet"
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)
        for obj in (df, dpf.scan(path, batch_size=2000, partitions=4),
                    _Polars(pl.from_pandas(df).lazy()), dd.from_pandas(df, npartitions=3)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got, cap = exact_counts(obj, {"max_rows_per_unit": 1}, False, False)
            assert cap == 1
            assert got == (0, want), (type(obj).__name__, got)
