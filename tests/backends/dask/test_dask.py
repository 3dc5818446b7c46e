"""The Dask backend against the pandas reference, on a real 2-process LocalCluster.

Same charges, same provenance (sensitivity, scale, granularity), identical noisy values under a
seeded session (exact partials merge to the pandas exact aggregates and the client draws the
same noise), user-level bounds when a unit's rows span every partition, private key selection
that never releases a singleton key, and ``import dpframe`` that never imports dask.
"""

from __future__ import annotations

import datetime as dt
import math
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")

distributed = pytest.importorskip("dask.distributed")

import dpframe as dpf  # noqa: E402
import dpframe.fronts.dask  # noqa: E402
from dpframe.backends.dask import DaskBackend, merge_partials, unit_hash  # noqa: E402
from dpframe.core.exact.compute import ExactAggregates  # noqa: E402
from dpframe.core.query import Measure, Query  # noqa: E402
from dpframe.engine.release import prepare  # noqa: E402
from dpframe.fronts.frame import PrivateFrame  # noqa: E402

pytestmark = [pytest.mark.dask, pytest.mark.filterwarnings("ignore::UserWarning")]

BOUNDS = {"x": (0.0, 10.0), "n": (0, 5)}
KEYS = {"g": ["a", "b", "c", "zz"]}


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0")
    cl = distributed.Client(cluster)
    try:
        yield cl
    finally:
        cl.close()
        cluster.close()


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 6000
    return pd.DataFrame({
        "g": rng.choice(["a", "b", "c"], n),
        "x": rng.uniform(-2, 12, n),           # some values outside the bounds: clamped
        "n": rng.integers(0, 8, n),
        "u": rng.integers(0, 500, n),
    })


def _session(seed: int = 11) -> dpf.Session:
    return dpf.Session(epsilon=1000, delta=1e-3, seed=seed)


def _both(df: pd.DataFrame, nparts: int, query: Any, **opts: Any
          ) -> tuple[Any, Any, dpf.Session, dpf.Session]:
    sp, sd = _session(), _session()
    rp = query(df.dp(sp, **opts))
    rd = query(dd.from_pandas(df, npartitions=nparts).dp(sd, **opts))
    return rp, rd, sp, sd


QUERIES = {
    "count": lambda f: f.count(epsilon=1),
    "sum_float": lambda f: f.sum("x", epsilon=1),
    "sum_int": lambda f: f.sum("n", epsilon=1),
    "mean": lambda f: f.mean("x", epsilon=1),
    "max": lambda f: f.max("x", epsilon=1),
    "histogram": lambda f: f.histogram("x", bins=[0, 2.5, 5, 10], epsilon=1, ci=0.95),
    "g_sum": lambda f: f.groupby("g").sum("x", epsilon=1, ci=0.95),
    "g_count": lambda f: f.groupby("g").count(epsilon=1),
    "g_mean": lambda f: f.groupby("g").mean("x", epsilon=1, ci=0.95),
    "g_max": lambda f: f.groupby("g").max("x", epsilon=1),
    "g_agg": lambda f: f.groupby("g").agg({"x": ["sum", "mean", "median"], "n": "sum"},
                                          epsilon=2),
    "g_gauss": lambda f: f.groupby("g").sum("x", epsilon=1, delta=1e-6, mechanism="gaussian"),
    "private": lambda f: f.groupby("g", keys="private").sum("x", epsilon=1, delta=1e-6),
}


def _same(rp: Any, rd: Any) -> None:
    if isinstance(rp, pd.DataFrame):
        pd.testing.assert_frame_equal(rp, rd)
    elif isinstance(rp, pd.Series):
        pd.testing.assert_series_equal(rp, rd)
    else:
        assert type(rp) is type(rd) and rp == rd


def _ledger(s: dpf.Session) -> pd.DataFrame:
    return s.ledger.drop(columns=["time"])


@pytest.mark.parametrize("name", list(QUERIES))
def test_row_level_matches_pandas(client: Any, data: pd.DataFrame, name: str) -> None:
    rp, rd, sp, sd = _both(data, 7, QUERIES[name], bounds=BOUNDS, keys=KEYS)
    assert sd.spent == sp.spent and sd.spent[0] > 0
    if isinstance(rp, pd.Series | pd.DataFrame):
        assert rd.attrs["dp"] == rp.attrs["dp"]
    _same(rp, rd)  # same exact aggregates + same seeded noise on the client => identical
    pd.testing.assert_frame_equal(_ledger(sd), _ledger(sp))


def test_values_within_stated_intervals(client: Any, data: pd.DataFrame) -> None:
    s = _session(5)
    ddf = dd.from_pandas(data, npartitions=5)
    out = ddf.dp(s, bounds=BOUNDS, keys=KEYS).groupby("g").sum("x", epsilon=0.5, ci=0.999)
    prov = out.attrs["dp"]["measures"][0]
    assert prov["sensitivity"] == 10.0 and prov["ci_level"] == 0.999
    truth = data.assign(x=data.x.clip(0, 10)).groupby("g").x.sum().reindex(KEYS["g"],
                                                                          fill_value=0.0)
    assert ((out["lower"] <= truth) & (truth <= out["upper"])).all()
    assert np.allclose(out["upper"] - out["x"], prov["ci_half_width"])
    cnt = ddf.dp(s).count(epsilon=0.5)
    assert abs(cnt - len(data)) <= 30  # geometric noise of scale 2: P(|Z| > 30) < 1e-6


@pytest.mark.parametrize("unit_query", ["g_count", "g_sum", "private", "count", "g_max"])
def test_unit_level_matches_pandas_without_truncation(client: Any, data: pd.DataFrame,
                                                      unit_query: str) -> None:
    """Bounds that truncate nothing: bounding keeps every row, so results are identical."""
    rows = int(data.groupby("u").size().max())
    groups = int(data.groupby("u").g.nunique().max())
    opts = dict(bounds=BOUNDS, keys=KEYS, privacy_unit="u", max_rows_per_unit=rows,
                max_groups_per_unit=groups)
    rp, rd, sp, sd = _both(data, 6, QUERIES[unit_query], **opts)
    assert sd.spent == sp.spent
    if isinstance(rp, pd.Series | pd.DataFrame):
        assert rd.attrs["dp"] == rp.attrs["dp"]
        assert rd.attrs["dp"]["max_rows_per_unit"] == rows
    _same(rp, rd)


def test_missing_units_are_dropped_like_pandas(client: Any, data: pd.DataFrame) -> None:
    df = data.assign(u=data.u.where(data.index % 7 != 0).astype("float64"))  # some NaN units
    rows = int(df.groupby("u").size().max())
    opts = dict(bounds=BOUNDS, keys=KEYS, privacy_unit="u", max_rows_per_unit=rows,
                max_groups_per_unit=3)
    rp, rd, sp, sd = _both(df, 4, QUERIES["g_count"], **opts)
    _same(rp, rd)
    assert sd.spent == sp.spent


def _exact(ddf: Any, session: dpf.Session, query: Query, seed: int = 0) -> ExactAggregates:
    backend = DaskBackend(ddf)
    plan = prepare(session, query, backend)
    return backend.exact(plan.compute, np.random.default_rng(seed))


def _clamped_sum(agg: ExactAggregates, group: int = 0) -> float:
    """The clamped sum of the (only) fixed-point request: its integers times the unit, plus
    the shift times the count (a sum released jointly with a count is centred on the bounds'
    midpoint, dpframe/core/joint.py)."""
    key = next(k for k in agg.values if k[0] == "fixed_sum")
    shift = float(key[4])  # type: ignore[arg-type]
    total = float(agg.values[key][group] * key[5])  # type: ignore[operator]
    return total + (shift * float(agg.counts[key][group]) if shift else 0.0)


def _nonnull_all(agg: ExactAggregates) -> np.ndarray:
    """Non-missing values of the measured column per group: a ``nonnull`` request's, or the
    fixed-point sum's own count where a joint release reads it from there."""
    found = next((v for k, v in agg.values.items() if k[0] == "nonnull"), None)
    if found is None:
        key = next(k for k in agg.values if k[0] == "fixed_sum")
        found = agg.counts[key]
    return np.asarray(found)


def _nonnull(agg: ExactAggregates) -> int:
    """:func:`_nonnull_all` of the first group."""
    return int(_nonnull_all(agg)[0])


def _spread(units: np.ndarray, nparts: int) -> Any:
    """Rows in the given order, split in ``nparts`` contiguous partitions."""
    n = len(units)
    df = pd.DataFrame({"u": units, "g": np.where(np.arange(n) % 2 == 0, "a", "b"),
                       "x": np.ones(n)})
    return dd.from_pandas(df, npartitions=nparts, sort=False)


def test_user_bounds_hold_when_a_unit_spans_all_partitions(client: Any) -> None:
    nparts = 8
    ddf = _spread(np.zeros(800, dtype=np.int64), nparts)  # one unit, 100 rows per partition
    per_part = ddf.map_partitions(lambda p: p.u.eq(0).sum()).compute()
    assert (np.asarray(per_part) > 0).all() and len(per_part) == nparts
    s = _session()
    keys = {"g": ("a", "b")}
    for seed, (rows, groups) in enumerate([(1, 1), (3, 1), (5, 2)]):
        q = Query((Measure("count"), Measure("sum", "x")), Fraction(1), by=("g",), keys=keys,
                  bounds={"x": (0, 1)}, privacy_unit="u", max_rows_per_group=rows,
                  max_groups_per_unit=groups)
        agg = _exact(ddf, s, q, seed)
        counts = next(v for k, v in agg.values.items() if k[0] == "rows")
        assert counts.sum() == rows * groups  # all-partitions unit, bounded once, globally
        assert (counts <= rows).all() and (counts > 0).sum() == groups
    # ungrouped: at most max_rows_per_unit rows in total
    q = Query((Measure("count"),), Fraction(1), privacy_unit="u", max_rows_per_unit=4)
    backend = DaskBackend(ddf)
    agg = backend.exact(prepare(s, q, backend).compute, np.random.default_rng(7))
    assert int(next(iter(agg.values.values()))[0]) == 4


@pytest.mark.parametrize("per_bucket", [1, 5, 100])
def test_user_bounds_many_units_interleaved(client: Any, per_bucket: int,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Bounds hold whatever the number of buckets (6, 2 or 1 for the 6 partitions)."""
    from dpframe.backends.dask import backend as dask_backend

    monkeypatch.setattr(dask_backend, "PARTITIONS_PER_BUCKET", per_bucket)
    rng = np.random.default_rng(1)
    units = np.repeat(np.arange(40), 30)
    rng.shuffle(units)  # every unit's 30 rows scattered over the 6 partitions
    ddf = _spread(units, 6)
    q = Query((Measure("count"),), Fraction(1), by=("g",), keys={"g": ("a", "b")},
              privacy_unit="u", max_rows_per_unit=2, max_groups_per_unit=1)
    s = _session()
    agg = _exact(ddf, s, q)
    assert next(iter(agg.values.values())).sum() == 40 * 2
    # the released count uses the same bound: sensitivity is 2 (rows) x 1 (group)
    out = ddf.dp(s, privacy_unit="u", max_rows_per_unit=2, keys={"g": ["a", "b"]}) \
        .groupby("g").count(epsilon=1)
    assert out.attrs["dp"]["measures"][0]["sensitivity"] == 2.0


def test_pre_selection_chooses_a_units_groups_uniformly() -> None:
    """One unit: three rows of group "a" in the first partition, one row each of "b", "c" and
    "d" in the second. Bounding to one group must keep each of the four groups with
    probability 1/4 (a choice per partition first, then between partitions, would keep "a"
    half the time: 80 of 160 against 40, 5.8 standard deviations). Binomial tolerance, 5
    standard deviations, over 160 releases."""
    df = pd.DataFrame({"u": [7] * 6, "g": ["a", "a", "a", "b", "c", "d"], "x": np.ones(6)})
    ddf = dd.from_pandas(df, npartitions=2, sort=False)
    assert ddf.map_partitions(len).compute().tolist() == [3, 3]
    q = Query((Measure("count"),), Fraction(1), by=("g",), keys={"g": ("a", "b", "c", "d")},
              privacy_unit="u", max_rows_per_group=1, max_groups_per_unit=1)
    backend = DaskBackend(ddf)
    compute = prepare(_session(), q, backend).compute
    gen = np.random.default_rng(3)
    kept = np.zeros(4)
    trials = 160
    with dask.config.set(scheduler="sync"):
        for _ in range(trials):
            kept += next(iter(backend.exact(compute, gen).values.values()))
    assert kept.sum() == trials  # one row of one group each time
    sd = math.sqrt(trials * 0.25 * 0.75)
    assert np.all(np.abs(kept - trials / 4) < 5 * sd), kept


def test_unit_hash_is_dtype_canonical() -> None:
    h = unit_hash(pd.Series([1, 2, 3]))
    assert (unit_hash(pd.Series([1.0, 2.0, 3.0])) == h).all()
    assert (unit_hash(pd.Series([1, 2.0, np.int32(3)], dtype=object)) == h).all()
    assert (unit_hash(pd.Series([True])) == unit_hash(pd.Series([1]))).all()
    assert unit_hash(pd.Series([0.0]))[0] == unit_hash(pd.Series([-0.0]))[0]
    strs = unit_hash(pd.Series(["p", "q"], dtype="str"))
    assert (unit_hash(pd.Series(["p", "q"], dtype=object)) == strs).all()
    assert (unit_hash(pd.Series(["p", "q"], dtype="category")) == strs).all()
    assert (unit_hash(pd.Series(["p", "q"], dtype="string[python]")) == strs).all()
    assert unit_hash(pd.Series(["1"]))[0] != h[0]
    days = pd.Series(pd.to_datetime(["2024-01-01", "2024-01-02"]))
    assert (unit_hash(days) == unit_hash(days.copy())).all()
    odd = pd.Series([Decimal(1), np.True_, Fraction(2), complex(3, 0), 10**400, None, (1, 2)],
                    dtype=object)
    ho = unit_hash(odd)
    assert (ho[:4] == unit_hash(pd.Series([1, 1, 2, 3]))).all()
    assert ho[4] == ho[5] == ho[6]  # other objects share one bucket (conservative)
    # keyed: the key moves every hash, equal values stay equal
    k = unit_hash(pd.Series([1, 2, 3]), (5, 9))
    assert (k != h).all() and (unit_hash(pd.Series([1.0, 2.0, 3.0]), (5, 9)) == k).all()


@pytest.mark.parametrize("values,dtype", [
    (["z", "b", "a", "b", "c", "a", "b"], "str"),
    (["z", "b", "a", "b", "c", "a", "b"], "string[python]"),
    (["z", 1, True, 1.0, "x", 2, "x", np.int8(2)], object),
    ([9, 3, 1, 3, 2, 1], np.int64),
    ([9.5, 0.0, -0.0, 1.0, 0.0], np.float64),
    (["z", "b", "a", "b"], "category"),
])
def test_unit_hash_by_codes_is_the_unit_hash_of_every_row(values: list[Any], dtype: Any,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """Pre-selection and buckets hash text and object ids once per unit, through one row of
    each: every row must still get its own value's hash, also when a unit's rows were all
    dropped (its code then has no row: the first unit, "z" or 9.5, below)."""
    from dpframe.backends.blocks.frames import unit_codes
    from dpframe.backends.dask import words as dask_backend

    s = pd.Series(values, dtype=dtype)
    codes = unit_codes(s)
    assert (codes >= 0).all()
    words, hashed = dask_backend.unit_words, []

    def counted(v: pd.Series) -> np.ndarray:
        hashed.append(len(v))
        return words(v)

    for rows in (np.arange(len(s)), np.arange(1, len(s))):
        want = unit_hash(s.iloc[rows], (3, 4))
        hashed.clear()
        monkeypatch.setattr(dask_backend, "unit_words", counted)
        got = dask_backend.unit_hash_by_codes(s.iloc[rows], codes[rows], (3, 4))
        monkeypatch.setattr(dask_backend, "unit_words", words)
        assert np.array_equal(got, want)
        per_unit = dtype in ("str", "string[python]", object)
        assert hashed[0] == (int(codes.max()) + 1 if per_unit else rows.size)


@pytest.mark.parametrize("first,second", [
    (pd.Series([7] * 50, dtype=np.int64), pd.Series([7.0] * 50 + [np.nan])),
    (pd.Series(["id7"] * 50, dtype="str"), pd.Series(["id7"] * 50 + [None], dtype=object)),
])
def test_units_with_mixed_partition_dtypes_are_not_split(client: Any, first: pd.Series,
                                                         second: pd.Series) -> None:
    """A unit stored as int64 in one partition and float64 in another (text as Arrow strings
    and as objects) is still one unit: buckets compare exact ids under the canonical value
    model, whatever dtype each partition gave them."""
    p0 = pd.DataFrame({"u": first, "x": np.ones(50)})
    p1 = pd.DataFrame({"u": second, "x": np.ones(51)})
    ddf = dd.from_map(lambda p: p, [p0, p1], meta=p0.iloc[:0],
                      divisions=[None, None, None], enforce_metadata=False)
    q = Query((Measure("count"),), Fraction(1), privacy_unit="u", max_rows_per_unit=3)
    agg = _exact(ddf, _session(), q)
    assert int(next(iter(agg.values.values()))[0]) == 3


def test_private_keys_never_release_a_singleton(client: Any) -> None:
    rng = np.random.default_rng(2)
    parts = 6
    # 300 units spread over the big keys; one heavy unit owns key "solo" with rows in every
    # partition; 200 singleton keys, each from one unit
    big = pd.DataFrame({"u": rng.integers(0, 300, 3000),
                        "g": rng.choice(["big1", "big2"], 3000)})
    solo = pd.DataFrame({"u": np.full(600, 10_000), "g": "solo"})
    singles = pd.DataFrame({"u": 20_000 + np.arange(200), "g": [f"s{i}" for i in range(200)]})
    df = pd.concat([big, solo, singles]).sample(frac=1, random_state=4).reset_index(drop=True)
    df["x"] = 1.0
    ddf = dd.from_pandas(df, npartitions=parts, sort=False)
    solo_parts = ddf.map_partitions(lambda p: (p.g == "solo").sum()).compute()
    assert (np.asarray(solo_parts) > 0).all()
    for seed in range(2):
        s = dpf.Session(epsilon=100, delta=1e-3, seed=seed)
        f = ddf.dp(s, bounds={"x": (0, 1)}, privacy_unit="u", max_rows_per_unit=50,
                   max_groups_per_unit=2)
        out = f.groupby("g", keys="private").count(epsilon=20, delta=1e-6)
        assert set(out.index) == {"big1", "big2"}
        out2 = f.groupby("g", keys="private").agg({"x": ["sum"]}, epsilon=20, delta=1e-6)
        assert set(out2.index) == {"big1", "big2"}
        # row level: a key with one row is a singleton too
        rows = dpf.Session(epsilon=100, delta=1e-3, seed=seed)  # one privacy unit per session
        r = dd.from_pandas(df, npartitions=parts).dp(rows).groupby("g", keys="private") \
            .count(epsilon=20, delta=1e-6)
        assert set(r.index) <= {"big1", "big2", "solo"}
        assert "solo" in r.index  # 600 rows: released at row level, never at user level


def test_degenerate_data_is_released_like_any_other(client: Any, data: pd.DataFrame) -> None:
    """No refusal depends on the data (docs/privacy.md): an empty frame, an all-missing column or
    empty first partitions are released with noise, with the same charge as any release."""
    s = _session()
    empty = dd.from_pandas(data.iloc[:0], npartitions=1)
    assert isinstance(empty.dp(s, bounds=BOUNDS).sum("x", epsilon=1), float)
    missing = dd.from_pandas(data.assign(x=np.nan), npartitions=3)
    m = missing.dp(s, bounds=BOUNDS).mean("x", epsilon=1)
    assert BOUNDS["x"][0] <= m <= BOUNDS["x"][1]
    assert s.spent == (2.0, 0.0) and len(s.ledger) == 2
    with pytest.raises(dpf.BoundsError):
        dd.from_pandas(data, npartitions=2).dp(s).sum("x", epsilon=1)
    assert s.spent == (2.0, 0.0) and len(s.ledger) == 2
    late = data.copy()
    late.loc[: len(late) // 2, "x"] = np.nan
    ddf = dd.from_pandas(late, npartitions=4, sort=False)
    assert ddf.dp(s, bounds=BOUNDS).sum("x", epsilon=1) > 0
    filtered = dd.from_pandas(data, npartitions=4, sort=False)
    filtered = filtered.map_partitions(lambda p: p[p.index >= 3000])  # first partitions empty
    assert len(filtered.partitions[0].compute()) == 0
    assert filtered.dp(s, bounds=BOUNDS).count(epsilon=1) > 0


def test_accessor_and_api_surface(client: Any, data: pd.DataFrame) -> None:
    ddf = dd.from_pandas(data, npartitions=3)
    assert isinstance(ddf.dp, dpframe.fronts.dask.DaskDPAccessor)
    s = _session()
    assert isinstance(ddf.dp(s, bounds=BOUNDS), PrivateFrame)
    with s:
        n = ddf.dp.count(epsilon=1)  # the active session
    assert isinstance(n, int) and s.spent[0] == 1.0
    # known categories give public keys on opt-in, as in pandas; unknown ones never do
    cat = data.assign(g=pd.Categorical(data.g, categories=["a", "b", "c", "d"]))
    with pytest.raises(dpf.KeysError, match="'categories'"):
        dd.from_pandas(cat, npartitions=3).dp(s, bounds=BOUNDS).groupby("g").count(epsilon=1)
    out = dd.from_pandas(cat, npartitions=3).dp(s, bounds=BOUNDS, keys={"g": "categories"}
                                                ).groupby("g").count(epsilon=1)
    assert list(out.index) == ["a", "b", "c", "d"]
    unknown = dd.from_pandas(cat, npartitions=3)
    unknown = unknown.assign(g=unknown.g.cat.as_unknown())
    with pytest.raises(dpf.KeysError):
        unknown.dp(s, keys={"g": "categories"}).groupby("g").count(epsilon=1)
    dry = ddf.dp(s, bounds=BOUNDS).explain("sum", "x", by="g", keys="private", epsilon=1,
                                           delta=1e-6)
    assert isinstance(dry, dict) and "fits_budget" in dry
    with pytest.raises(dpf.ValidationError):
        dpframe.fronts.dask.private_frame(ddf, s, split_every=1)
    spent = s.spent
    with pytest.raises(dpf.BudgetExceededError):
        ddf.dp(s, bounds=BOUNDS).sum("x", epsilon=10_000)
    assert s.spent == spent


def test_session_never_leaves_the_client(client: Any, data: pd.DataFrame,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Shipping the session (ledger, budget, noise generator) to a worker would pickle it."""

    def refuse(self: Any) -> Any:
        raise AssertionError("a Session was serialized")

    monkeypatch.setattr(dpf.Session, "__reduce_ex__", refuse, raising=False)
    s = _session()
    out = dd.from_pandas(data, npartitions=4).dp(
        s, bounds=BOUNDS, keys=KEYS, privacy_unit="u", max_rows_per_unit=3
    ).groupby("g").agg({"x": ["sum", "max"]}, epsilon=1)
    assert len(s.ledger) == 1 and s.ledger["status"].iloc[0] == "released"
    assert out.attrs["dp"]["ledger_entry"] == s.ledger["id"].iloc[0]


def test_local_scheduler_without_cluster(data: pd.DataFrame) -> None:
    """No distributed client needed: Dask's threaded scheduler gives the same release."""
    import dask

    with dask.config.set(scheduler="threads"):
        rp, rd, sp, sd = _both(data, 5, QUERIES["g_agg"], bounds=BOUNDS, keys=KEYS)
    _same(rp, rd)
    assert sd.spent == sp.spent


def test_merge_never_overflows() -> None:
    key = ("fixed_sum",)
    big = np.array([(1 << 62) - 1], dtype=np.int64)
    parts = [ExactAggregates([("a",)], {key: big.copy()}, {key: np.array([1])})
             for _ in range(5)]
    out = merge_partials(*parts)
    assert int(out.values[key][0]) == 5 * ((1 << 62) - 1)
    assert int(out.counts[key][0]) == 5


def test_import_dpframe_does_not_import_dask() -> None:
    code = ("import sys, dpframe, pandas as pd; "
            "assert not [m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')];"
            "assert not hasattr(pd.DataFrame, 'dask')")
    subprocess.run([sys.executable, "-c", code], check=True)
    # dask imported first: importing dpframe registers ddf.dp too
    code = ("import dask.dataframe as dd, pandas as pd, dpframe; "
            "dd.from_pandas(pd.DataFrame({'a': [1]}), npartitions=1).dp")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_private_keys_are_canonical_whatever_partition_holds_which_spelling(
        client: Any) -> None:
    """0.1 released the spelling of the first partition that held a key (``-0.0`` or ``0.0``;
    ``True`` or ``1``): the merge kept the first seen. Partitions now label keys canonically."""
    outs = []
    for first in ([-0.0, True], [0.0, 1]):
        second = [0.0 if first[0] == 0 else -0.0, 1.0]
        df = pd.DataFrame({"f": [first[0]] * 3 + [second[0]] * 3,
                           "o": pd.Series([first[1]] * 3 + [second[1]] * 3, dtype=object)})
        with dask.config.set({"dataframe.convert-string": False}):  # keep the object column
            ddf = dd.from_pandas(df, npartitions=2, sort=False)
        s = dpf.Session(1e9, 0.5, seed=1)
        f = ddf.dp(s).groupby("f", keys="private").count(epsilon=1e6, delta=1e-3)
        o = ddf.dp(s).groupby("o", keys="private").count(epsilon=1e6, delta=1e-3)
        outs.append(([(type(k), repr(k)) for k in f.index], f.tolist(),
                     [(type(k), repr(k)) for k in o.index], o.tolist(), str(o.index.dtype)))
    assert outs[0] == outs[1] == ([(float, "0.0")], [6], [(int, "1")], [6], "object")


@pytest.mark.parametrize("declared", [127, 129, 40_000])
def test_pre_selection_ships_group_codes_of_any_width(declared: int) -> None:
    """The exchange carries group codes in the narrowest type (int8 up to 127 declared groups,
    int16 up to 32767): rows of the last declared keys still count in their own groups."""
    uid = np.arange(300) // 3  # each unit in one group: counts are deterministic
    df = pd.DataFrame({"u": uid, "k": uid % 3 + (declared - 3), "x": 1.0})
    ddf = dd.from_pandas(df, npartitions=3, sort=False)
    q = Query((Measure("count"),), Fraction(1), by=("k",), keys={"k": tuple(range(declared))},
              privacy_unit="u", max_rows_per_unit=3)
    backend = DaskBackend(ddf)
    compute = prepare(_session(), q, backend).compute
    with dask.config.set(scheduler="sync"):
        counts = next(iter(backend.exact(compute, np.random.default_rng(1)).values.values()))
    expected = np.bincount(df["k"] - (declared - 3), minlength=3)
    assert counts[-3:].tolist() == expected.tolist() and counts.sum() == 300


@pytest.mark.parametrize("unit_ids", [["alice", "mallory"], [3, 5], [3.0, 2**60]])
def test_units_whose_words_collide_stay_two_units(unit_ids: list[Any],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Text ids get a public 64-bit digest as their word, and someone choosing an id can make
    it collide with another's; numeric words collide under a keyed hash with probability
    below N / 2**64. Two such units must still be bounded as two: pre-selection's buckets
    compare the units' exact ids, the hash only routes rows (before 2026-11-25 buckets told
    units apart by hash and merged them: one row kept of two). The test makes every word
    collide and checks that the release takes pre-selection."""
    from dpframe.backends.dask import backend as backend_module
    from dpframe.backends.dask import words

    monkeypatch.setattr(words, "unit_words",
                        lambda s: np.zeros(len(s), dtype=np.uint64))  # every id: one word
    calls = []
    real = backend_module.preselect_buckets

    def spy(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(backend_module, "preselect_buckets", spy)
    df = pd.DataFrame({"u": pd.Series(unit_ids), "g": ["a", "b"], "x": [1.0, 1.0]})
    ddf = dd.from_pandas(df, npartitions=2, sort=False)
    q = Query((Measure("count"),), Fraction(1), by=("g",), keys={"g": ("a", "b")},
              privacy_unit="u", max_rows_per_unit=1, max_groups_per_unit=1)
    backend = DaskBackend(ddf)
    compute = prepare(_session(), q, backend).compute
    with dask.config.set(scheduler="sync"):
        counts = next(iter(backend.exact(compute, np.random.default_rng(1)).values.values()))
    assert calls  # pre-selected, not shuffled
    assert counts.tolist() == [1, 1]  # two units, one row each: both kept


def _bounded_request(rows_per_group: int) -> Any:
    """A unit-level count and sum of ``x`` in [0, 1] over one public group ``g = "a"``."""
    q = Query((Measure("count"), Measure("sum", "x")), Fraction(1), by=("g",),
              keys={"g": ("a",)}, bounds={"x": (0, 1)}, privacy_unit="u",
              max_rows_per_unit=rows_per_group, max_groups_per_unit=1)
    frame = pd.DataFrame({"u": [0], "g": ["a"], "x": [0]})
    return prepare(_session(), q, DaskBackend(dd.from_pandas(frame, npartitions=1))).compute


def test_pre_selection_ships_row_priorities_only_where_it_read_them() -> None:
    """Row priorities are drawn only for rows of pairs holding more than ``rows_per_group`` rows in
    the partition (the only ones read); a partition with none ships no priority column, one
    with some ships them exact (UInt64, missing for the rows of lighter pairs), and a bucket
    of both kinds of frames keeps them exact."""
    from dpframe.backends.dask import exchange as dask_backend

    col = dask_backend.ROW_PRIORITY_COLUMN
    request = _bounded_request(3)
    light = pd.DataFrame({"u": np.repeat(np.arange(50), 3), "g": "a", "x": 1})
    pieces = dask_backend.preselect_buckets(light, request, (1, 2), 5, 6, 3)
    assert all(col not in p.columns for p in pieces) and sum(map(len, pieces)) == 150
    # unit 0 has 5 rows (heavy), unit 1 has 2: only unit 0's 3 kept rows carry a priority
    mixed = pd.DataFrame({"u": [0, 1, 0, 0, 1, 0, 0], "g": "a", "x": 1})
    shipped = pd.concat(dask_backend.preselect_buckets(mixed, request, (1, 2), 5, 6, 2))
    assert str(shipped[col].dtype) == "UInt64" and len(shipped) == 5
    carried = shipped[col].notna().to_numpy()
    assert (shipped["__dpframe_unit__"].to_numpy()[carried] == 0).all() and carried.sum() == 3
    # the bucket reads carried priorities exactly (the largest 64-bit value included) and
    # draws only the missing ones
    values = pd.array([2**64 - 1, None, 5, None], dtype="UInt64")
    read = dask_backend.drawing_for(values, np.random.default_rng(9))(np.array([0, 1, 2, 3]))
    fresh = np.random.default_rng(9).integers(0, 2**64, 2, dtype=np.uint64)
    assert read.dtype == np.uint64
    assert read.tolist() == [2**64 - 1, int(fresh[0]), 5, int(fresh[1])]


def test_pre_selected_rows_keep_the_priorities_their_partition_drew() -> None:
    """Deferred row priorities must be drawn once: a pair of 20 rows in partition A
    (pre-selected to 10) and 1 row in partition B, ``rows_per_group`` 10, keeps B's row with
    probability 10/21, as bounding over all 21 rows does. Drawing again at the bucket for A's
    survivors would keep it with probability 10/11 (they are the least of 20 draws). Through
    the Dask helpers, 1000 seeded releases; binomial tolerance, 4.5 standard deviations (the
    wrong rule is about 27 away)."""
    from dpframe.backends.dask import exchange as dask_backend

    request = _bounded_request(10)
    a = pd.DataFrame({"u": [7] * 20, "g": "a", "x": 0})
    b = pd.DataFrame({"u": [7], "g": "a", "x": 1})  # only B's row adds to the sum
    rng = np.random.default_rng(20)
    trials, kept = 1000, 0
    for _ in range(trials):
        salt, sa, sb, sbucket = (int(s) for s in rng.integers(0, 2**63, 4))
        (pa,) = dask_backend.preselect_buckets(a, request, (1, 2), salt, sa, 1)
        (pb,) = dask_backend.preselect_buckets(b, request, (1, 2), salt, sb, 1)
        assert len(pa) == 10 and dask_backend.ROW_PRIORITY_COLUMN not in pb.columns
        agg = dask_backend.bucket_exact([pa, pb], request, [("a",)], (1, 2), salt, sbucket)
        count = int(next(v for k, v in agg.values.items() if k[0] == "rows")[0])
        total = round(_clamped_sum(agg))
        assert count == 10
        kept += total
    p = 10 / 21
    assert abs(kept - trials * p) < 4.5 * math.sqrt(trials * p * (1 - p)), kept


def _mixed_dtype_ids() -> Any:
    """Two partitions: 20 int64 ids from 2**53, and one float64 id, 1.5 (one person's odd
    value types their partition float64)."""
    import dask

    def part(ids: list[Any], dtype: Any) -> pd.DataFrame:
        return pd.DataFrame({"u": np.array(ids, dtype=dtype),
                             "g": pd.array(["a"] * len(ids), dtype="str"),
                             "x": np.ones(len(ids))})

    parts = [dask.delayed(part)([2**53 + i for i in range(20)], np.int64),
             dask.delayed(part)([1.5], float)]
    return dd.from_delayed(parts, meta=part([], np.int64), verify_meta=False)


@pytest.mark.parametrize("how", ["public", "private", "sample"])
def test_unit_ids_stay_exact_across_partition_dtypes(client: Any, how: str) -> None:
    """Partitions may give the unit column different dtypes. pandas' concat (buckets, Dask's
    task shuffle) would make int64 beside float64 float64, where 2**53 + 2k and 2**53 + 2k + 1
    are one number: units merged, one person's id 1.5 deciding it; Dask's P2P shuffle refused
    the mix after the charge. Each of the 21 units keeps its own row at max_rows_per_unit=1
    (public keys: pre-selection and buckets; private keys and sampling: the exchange)."""
    keys: dict[str, Any] = {"by": ("g",), "keys": {"g": ("a",)}}
    if how == "private":
        keys = {"by": ("g",), "keys": {}, "private_keys": True, "delta": Fraction(1, 10**6)}
    sample = {"sample_rate": Fraction(1)} if how == "sample" else {}
    q = Query((Measure("count"),), Fraction(1), bounds={}, privacy_unit="u",
              max_rows_per_unit=1, **keys, **sample)
    ddf = _mixed_dtype_ids()
    for seed in range(3):
        agg = _exact(ddf, _session(), q, seed)
        assert int(next(iter(agg.values.values()))[0]) == 21


def test_shuffle_method_is_deprecated_and_changes_nothing() -> None:
    ddf = dd.from_pandas(pd.DataFrame({"u": [1, 2], "x": [1.0, 2.0]}), npartitions=1)
    with pytest.warns(DeprecationWarning, match="shuffle_method has no effect"):
        DaskBackend(ddf, shuffle_method="tasks")


@pytest.mark.parametrize("how", ["public", "private", "sample"])
def test_measured_values_survive_partition_dtypes(client: Any, how: str) -> None:
    """A measured column int64 in one partition and float64 in another is read as numbers in
    every bucket (pandas' common dtype): an object column, as identities travel, would be
    read as no number at all. Five units of one row: the exact sum is 10."""
    import dask

    def part(ids: list[int], xs: list[Any], dtype: Any) -> pd.DataFrame:
        return pd.DataFrame({"u": np.array(ids, dtype=np.int64),
                             "g": pd.array(["a"] * len(ids), dtype="str"),
                             "x": np.array(xs, dtype=dtype)})

    ddf = dd.from_delayed([dask.delayed(part)([1, 2, 3], [1, 2, 3], np.int64),
                           dask.delayed(part)([4, 5], [1.5, 2.5], float)],
                          meta=part([], [], float), verify_meta=False)
    keys: dict[str, Any] = {"by": ("g",), "keys": {"g": ("a",)}}
    if how == "private":
        keys = {"by": ("g",), "keys": {}, "private_keys": True, "delta": Fraction(1, 10**6)}
    sample = {"sample_rate": Fraction(1)} if how == "sample" else {}
    q = Query((Measure("sum", "x"),), Fraction(1), bounds={"x": (0, 10)}, privacy_unit="u",
              max_rows_per_unit=1, **keys, **sample)
    agg = _exact(ddf, _session(), q)
    assert _clamped_sum(agg) == pytest.approx(10.0, abs=1e-6)


@pytest.mark.parametrize("unit", [None, "u"])
def test_text_in_a_numeric_partition_is_missing_not_the_whole_column(client: Any,
                                                                     unit: str | None) -> None:
    """A partition whose measured column is object because of one person's text (the meta
    says float64): that value is missing, the partition's numbers are read (4 + 5), as
    docs/privacy.md says of a value that does not conform. Read as it came, the column was not
    numeric and every value of the partition vanished (sum 6 instead of 15)."""
    import dask

    p1 = pd.DataFrame({"u": [1, 2, 3], "x": np.array([1.0, 2.0, 3.0])})
    p2 = pd.DataFrame({"u": [4, 5, 6], "x": pd.Series([4.0, 5, "abc"], dtype=object)})
    ddf = dd.from_delayed([dask.delayed(p1), dask.delayed(p2)], meta=p1.iloc[:0],
                          verify_meta=False)
    q = Query((Measure("sum", "x"), Measure("count", "x")), Fraction(1), bounds={"x": (0, 10)},
              privacy_unit=unit,
              max_rows_per_unit=1 if unit else None)
    agg = _exact(ddf, _session(), q)
    assert _clamped_sum(agg) == pytest.approx(15.0, abs=1e-6)
    assert _nonnull(agg) == 5  # "abc" is missing


def _parts(*parts: pd.DataFrame) -> Any:
    """A Dask frame of ``parts`` as they are (dtypes may differ), with the first one's meta."""
    import dask

    return dd.from_delayed([dask.delayed(p) for p in parts], meta=parts[0].iloc[:0],
                           verify_meta=False)


def _keyed_counts(agg: ExactAggregates) -> dict[Any, int]:
    """The non-missing count of each observed key, by its label."""
    return {k[0]: int(c) for k, c in zip(agg.keys, _nonnull_all(agg), strict=True)}


@pytest.mark.parametrize("how", ["private", "sample"])
def test_a_measured_key_of_mixed_dtypes_keeps_its_keys_apart(how: str) -> None:
    """A key that is also measured (``count("k")`` grouped by ``k``) is gathered in the buckets
    as exactly as a key, and read as numbers apart: one person's 1.5 in a float64 partition
    made the int64 keys 2**53 and 2**53 + 1 one key (finding 23 of docs/audit.md: a count of
    6 under one key instead of 3 and 3)."""
    import dask

    keys = np.array([2**53] * 3 + [2**53 + 1] * 3, dtype=np.int64)
    ddf = _parts(pd.DataFrame({"u": np.arange(6), "k": keys}),
                 pd.DataFrame({"u": np.array([100]), "k": np.array([1.5])}))
    grouping: dict[str, Any] = ({"keys": {}, "private_keys": True, "delta": Fraction(1, 10**6)}
                                if how == "private" else
                                {"keys": {"k": (2**53, 2**53 + 1)}, "sample_rate": Fraction(1)})
    q = Query((Measure("count", "k"),), Fraction(1), by=("k",), bounds={"k": (0, 2**54)},
              privacy_unit="u", max_rows_per_unit=1, **grouping)
    with dask.config.set(scheduler="sync"):
        counts = _keyed_counts(_exact(ddf, _session(), q))
    assert counts[2**53] == 3 and counts[2**53 + 1] == 3
    assert all(type(k) is not float or k == 1.5 for k in counts)


def test_distinct_values_of_mixed_dtypes_stay_apart() -> None:
    """A unit-level ``count_distinct``: the counted column is gathered in the buckets exactly
    (its values' hashes are read), so int64 values 2**53 + k beside a float64 partition stay 6
    values, not 3 (finding 24 of docs/audit.md). The values it counts are identities, as keys
    are, but only those that conform to the schema (int64, the meta's) count: the 1.5 is
    missing, as ``count("v")`` and sums read it, in every partition alike (finding 55; it was
    counted as one more value)."""
    import dask

    ddf = _parts(pd.DataFrame({"u": np.arange(6), "v": 2**53 + np.arange(6, dtype=np.int64)}),
                 pd.DataFrame({"u": np.array([100]), "v": np.array([1.5])}))
    q = Query((Measure("count_distinct", "v"),), Fraction(1), bounds={"v": (0, 2**54)},
              privacy_unit="u", max_rows_per_unit=1)
    with dask.config.set(scheduler="sync"):
        agg = _exact(ddf, _session(), q)
    _groups, hashes = next(iter(agg.distinct.values()))
    assert len(hashes) == 6  # six ints apart; 1.5 is no int: missing (finding 55)


@pytest.mark.parametrize("unit", [None, "u"])
def test_text_in_a_measured_key_keeps_the_partitions_numbers(unit: str | None) -> None:
    """Finding 22 in a column that is both a key and measured (``sum("k")`` by ``k``): the
    partition typed object by one person's text key keeps its numbers (5 rows at 5: 25),
    while its keys are read as they are ("abc" is not a declared key). Keys were left
    unconformed for their values, so the partition read no number at all (15; finding 25)."""
    import dask

    ddf = _parts(pd.DataFrame({"u": [1, 2, 3], "k": np.full(3, 5.0)}),
                 pd.DataFrame({"u": [4, 5, 6], "k": pd.Series([5.0, 5.0, "abc"], dtype=object)}))
    q = Query((Measure("sum", "k"), Measure("count", "k")), Fraction(1), by=("k",),
              keys={"k": (5.0,)}, bounds={"k": (0, 10)}, privacy_unit=unit,
              max_rows_per_unit=1 if unit else None)
    with dask.config.set(scheduler="sync"):
        agg = _exact(ddf, _session(), q)
    assert _clamped_sum(agg) == pytest.approx(25.0, abs=1e-6)
    assert _keyed_counts(agg) == {5.0: 5}


def test_bool_beside_numbers_is_read_as_numbers_in_buckets() -> None:
    """A measured bool column whose partitions a person's text typed apart (bool in one,
    object read as float64 in the other): the bucket reads both as numbers (sum 5). pandas'
    concatenation of bool beside float64 gives an object column, which read no number at all
    (0; finding 26 of docs/audit.md)."""
    import dask

    ddf = _parts(pd.DataFrame({"u": [1, 2, 3], "b": np.ones(3, dtype=bool)}),
                 pd.DataFrame({"u": [4, 5, 6], "b": pd.Series([True, True, "abc"], dtype=object)}))
    q = Query((Measure("sum", "b"),), Fraction(1), bounds={"b": (0, 1)}, privacy_unit="u",
              max_rows_per_unit=1)
    with dask.config.set(scheduler="sync"):
        agg = _exact(ddf, _session(), q)
    key = next(k for k in agg.values if k[0] == "fixed_sum")
    assert int(agg.values[key][0]) == 5


def test_numbers_apart_are_reserved_names() -> None:
    ddf = dd.from_pandas(pd.DataFrame({"__dpframe_numbers_0__": [1.0]}), npartitions=1)
    with pytest.raises(dpf.ValidationError, match="reserved"):
        DaskBackend(ddf)


def test_numbers_only_keeps_each_kind_exactly() -> None:
    from dpframe.backends.dask.conform import numbers_only

    s = pd.Series([1, 2.5, True, "7", None, 2**53 + 1, np.int8(3), [1]], dtype=object)
    f = numbers_only(s, "float").tolist()
    assert f[:3] == [1.0, 2.5, 1.0] and f[6] == 3.0 and f[5] == float(2**53 + 1)
    assert all(math.isnan(f[i]) for i in (3, 4, 7))  # text, None, a list
    i = numbers_only(s, "int").tolist()
    assert i[0] == 1.0 and math.isnan(i[1]) and i[2] == 1.0  # a fraction in an int column
    b = numbers_only(s, "bool").tolist()  # 0 and 1 of any number type, as typed partitions
    assert b[2] == 1.0 and b[0] == 1.0 and all(math.isnan(b[i]) for i in (1, 3, 5))


def test_private_keys_choose_a_units_groups_uniformly() -> None:
    """Private keys through pre-selection: a unit with 990 rows under "a" and 10 under "b",
    spread over 4 partitions, keeps one group (max_groups_per_unit=1) chosen uniformly among
    its distinct keys: "b" in half of the releases (4.5 sigma), whatever the row counts; its
    kept rows stay within max_rows_per_group."""
    import dask

    rng = np.random.default_rng(6)
    g = rng.permutation(np.array(["a"] * 990 + ["b"] * 10, dtype=object))
    df = pd.DataFrame({"u": np.zeros(1000, dtype=np.int64), "g": g, "x": np.ones(1000)})
    ddf = dd.from_pandas(df, npartitions=4, sort=False)
    q = Query((Measure("count"),), Fraction(1), by=("g",), keys={}, private_keys=True,
              delta=Fraction(1, 10**6), bounds={}, privacy_unit="u", max_rows_per_group=2)
    trials, picks_b = 80, 0  # a choice weighted by rows (b: 1%) is 8.8 sigma off
    with dask.config.set(scheduler="sync"):
        for seed in range(trials):
            agg = _exact(ddf, _session(), q, seed)
            counts = dict(zip(agg.keys, next(iter(agg.values.values())), strict=True))
            assert sum(counts.values()) == 2 and len(counts) == 1
            picks_b += int(("b",) in counts)
    assert abs(picks_b / trials - 0.5) < 4.5 * math.sqrt(0.25 / trials)


def test_unit_sampling_keeps_or_drops_whole_units_across_partitions() -> None:
    """sample() with a privacy unit, through pre-selection: each unit's 3 rows sit in 3
    different partitions, and a release keeps all of them or none (counts are multiples of 3);
    about half of the 200 units are kept at rate 1/2 (mean over 20 releases, 4.5 sigma)."""
    import dask

    units = np.repeat(np.arange(200), 3)
    df = pd.DataFrame({"u": units, "g": pd.array(["a"] * units.size, dtype="str")})
    df = df.iloc[np.argsort(np.tile(np.arange(3), 200), kind="stable")].reset_index(drop=True)
    ddf = dd.from_pandas(df, npartitions=3, sort=False)
    q = Query((Measure("count"),), Fraction(1), by=("g",), keys={"g": ("a",)}, bounds={},
              privacy_unit="u", max_rows_per_unit=3, sample_rate=Fraction(1, 2))
    kept = []
    with dask.config.set(scheduler="sync"):
        for seed in range(20):
            rows = int(next(iter(_exact(ddf, _session(), q, seed).values.values()))[0])
            assert rows % 3 == 0  # whole units
            kept.append(rows // 3)
    assert abs(np.mean(kept) - 100) < 4.5 * math.sqrt(200 * 0.25 / 20)


def test_a_fraction_in_an_int_column_is_missing_not_rounded() -> None:
    """A partition typing an int column (the meta's) float64: 2.5 is not an int, so it is
    missing there, as in scans (never rounded to 2 or 3); 4.0 is the int 4. Bools alike."""
    import dask

    from dpframe.backends.dask.conform import numbers_only

    p1 = pd.DataFrame({"n": np.array([1, 2], dtype=np.int64)})
    p2 = pd.DataFrame({"n": np.array([2.5, 4.0])})
    ddf = dd.from_delayed([dask.delayed(p1), dask.delayed(p2)], meta=p1.iloc[:0],
                          verify_meta=False)
    q = Query((Measure("sum", "n"), Measure("count", "n")), Fraction(1), bounds={"n": (0, 10)})
    with dask.config.set(scheduler="sync"):
        agg = _exact(ddf, _session(), q)
    assert _clamped_sum(agg) == 7.0
    assert _nonnull(agg) == 3
    b = numbers_only(pd.Series([0.0, 1.0, 2.0, np.nan]), "bool").tolist()
    assert b[:2] == [0.0, 1.0] and math.isnan(b[2]) and math.isnan(b[3])
    i = numbers_only(pd.Series([1.0, 2.5, 2.0**70, np.inf]), "int").tolist()
    assert i[0] == 1.0 and all(math.isnan(v) for v in i[1:])


def _equal_values_in_every_dtype() -> dict[str, tuple[list[Any], list[str]]]:
    """Values of each family, and dtypes (numpy, pandas, Arrow) that hold them exactly."""
    import datetime

    ts = [pd.Timestamp("2020-01-01 00:00:01.5"), pd.Timestamp("1900-03-01")]
    return {
        "int": ([1, 2**62 + 1, -5], ["int64", "Int64", "int64[pyarrow]"]),
        "float": ([1.5, -0.25], ["float64", "Float64", "double[pyarrow]"]),
        "str": (["a", "b\u00e9"], ["str", "string", "string[pyarrow]"]),
        "datetime": (ts, ["datetime64[ns]", "datetime64[us]", "timestamp[us][pyarrow]"]),
        "aware": ([t.tz_localize("Europe/Paris") for t in ts],
                  ["datetime64[ns, Europe/Paris]", "datetime64[us, UTC]",
                   "timestamp[us, tz=UTC][pyarrow]"]),
        "timedelta": ([pd.Timedelta(3, "s"), pd.Timedelta(-7, "us")],
                      ["timedelta64[ns]", "timedelta64[us]", "duration[us][pyarrow]"]),
        "date": ([datetime.date(2020, 1, 5), datetime.date(1969, 12, 1)],
                 ["date32[pyarrow]", "date64[pyarrow]"]),
        "time": ([datetime.time(1, 2, 3, 4), datetime.time(23, 0)], ["time64[us][pyarrow]"]),
    }


@pytest.mark.parametrize("family", list(_equal_values_in_every_dtype()))
def test_unit_words_of_equal_values_agree_in_every_dtype(family: str) -> None:
    """A unit's word (which bucket its rows go to) is a function of its value: typed,
    Arrow, categorical and object columns give equal values one word, also the other
    spellings of an object column (``datetime``, ``np.datetime64``, an aware one in another
    zone, ``timedelta``, ``np.timedelta64``). Typed date-times were their nanoseconds and the
    same values in an object column 0, so a unit spanning both was bounded in two buckets."""
    from dpframe.backends.dask.words import unit_words

    values, dtypes = _equal_values_in_every_dtype()[family]
    want = unit_words(pd.Series(values, dtype=object))
    columns = [pd.Series(values).astype(d) for d in dtypes]
    columns += [c.astype("category") for c in columns]
    columns.append(pd.Series([*values, "zzz"], dtype=object).iloc[:len(values)])  # with text
    if family in ("datetime", "aware", "timedelta"):
        columns.append(pd.Series([v.to_pytimedelta() if family == "timedelta" else
                                  v.to_pydatetime() for v in values], dtype=object))
        columns.append(pd.Series([v.to_timedelta64() if family == "timedelta" else
                                  v.to_datetime64() for v in values], dtype=object))
    if family == "aware":
        columns.append(pd.Series([v.tz_convert("Asia/Tokyo") for v in values], dtype=object))
    for c in columns:
        assert unit_words(c).tolist() == want.tolist(), c.dtype


def test_a_datetime_unit_in_typed_and_object_partitions_is_bounded_once() -> None:
    """Units spanning ten partitions, one of them object (one person's text id): each unit
    keeps one row (max_rows_per_unit=1), 40 units and the text one: 41 (58 to 64 before)."""
    import dask

    units = pd.Series(pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(40), "s"))
    typed = pd.DataFrame({"u": units})
    odd = pd.DataFrame({"u": pd.Series([*units, "zzz"], dtype=object)})
    ddf = _parts(*[typed] * 9, odd)
    q = Query((Measure("count"),), Fraction(1), bounds={}, privacy_unit="u",
              max_rows_per_unit=1)
    with dask.config.set(scheduler="sync"):
        for seed in range(3):
            assert int(next(iter(_exact(ddf, _session(), q, seed).values.values()))[0]) == 41


@pytest.mark.parametrize("unit", [None, "u"])
def test_big_integers_of_an_object_partition_are_read_as_in_an_int_partition(
        unit: str | None) -> None:
    """A measured int64 column (the meta's) with values past 2**53, in a partition typed
    object by one person's text: they are read as an int64 partition reads them (clamped to
    [0, 10]), never made missing: the sum is 400 with or without the text (200 before)."""
    import dask

    big = pd.Series([2**53 + 2 * i + 1 for i in range(20)], dtype=np.int64)
    p0 = pd.DataFrame({"u": np.arange(20), "x": big})
    odd = pd.DataFrame({"u": np.arange(20, 41), "x": pd.Series([*big, "abc"], dtype=object)})
    q = Query((Measure("sum", "x"), Measure("count", "x")), Fraction(1),
              bounds={"x": (0, 10)}, privacy_unit=unit,
              max_rows_per_unit=1 if unit else None)
    with dask.config.set(scheduler="sync"):
        agg = _exact(_parts(p0, odd), _session(), q)
    assert _clamped_sum(agg) == 400.0
    assert _nonnull(agg) == 40


def test_dates_and_spans_are_no_numbers_and_never_raise() -> None:
    """``numbers_only`` of an object column: dates, times and spans are missing in every
    kind (``np.timedelta64`` is a numpy integer, whose float() raised TypeError after the
    charge), and a value whose conversion raises is missing."""
    import datetime

    from dpframe.backends.dask.conform import numbers_only

    class Odd(int):
        def __int__(self) -> int:
            raise RuntimeError("no")

    values = [np.timedelta64(3, "s"), np.datetime64("2020-01-01"), datetime.date(2020, 1, 1),
              datetime.timedelta(1), pd.Timestamp(0), datetime.time(1), Odd(3), 2**64, 7]
    for kind in ("int", "float", "bool"):
        column = pd.Series(values, dtype=object)
        out = numbers_only(column, kind).tolist()  # type: ignore[arg-type]
        assert all(math.isnan(v) for v in out[:-1])
        assert out[-1] == 7.0 or (kind == "bool" and math.isnan(out[-1]))


@pytest.mark.parametrize("measure", ["sum", "mean", "count", "var", "median"])
def test_a_span_in_a_measured_int_column_is_missing_not_an_error(measure: str) -> None:
    """One person's ``np.timedelta64`` in an object partition of a measured int column: the
    release succeeds (it raised TypeError after the charge), the span missing."""
    import dask

    p0 = pd.DataFrame({"x": np.arange(20, dtype=np.int64)})
    odd = pd.DataFrame({"x": pd.Series([*range(20), np.timedelta64(3, "s")], dtype=object)})
    s = dpf.Session(epsilon=10, delta=1e-6, seed=1)
    with dask.config.set(scheduler="sync"):
        f = _parts(p0, odd).dp(s, bounds={"x": (0, 10)})
        out = getattr(f, measure)("x", epsilon=1.0)
    assert np.isfinite(float(out)) and s.ledger["status"].tolist() == ["released"]


@pytest.mark.parametrize("unit", [None, "u"])
def test_distinct_values_of_an_object_partition_stay_exact(unit: str | None) -> None:
    """A ``count_distinct`` of an int64 column (the meta's) whose values pass 2**53, one
    partition typed object by one person's text: its values are counted exactly (they were
    replaced by their float64 numbers, so odd ones vanished: 30 of 40), row-level and
    unit-level alike; the text is no int: missing, as every aggregate reads it (it was one
    more value until finding 55)."""
    import dask

    v = [2**53 + i for i in range(40)]
    p0 = pd.DataFrame({"u": np.arange(20), "v": pd.Series(v[:20], dtype=np.int64)})
    odd = pd.DataFrame({"u": np.arange(20, 41), "v": pd.Series([*v[20:], "abc"], dtype=object)})
    q = Query((Measure("count_distinct", "v"),), Fraction(1), bounds={}, privacy_unit=unit,
              max_rows_per_unit=1 if unit else None)
    with dask.config.set(scheduler="sync"):
        agg = _exact(_parts(p0, odd), _session(), q)
    _groups, hashes = next(iter(agg.distinct.values()))
    assert len(hashes) == 40


@pytest.mark.parametrize("unit", [None, "u"])
@pytest.mark.parametrize("first", ["bool", "float"])
@pytest.mark.parametrize("text", [False, True])
def test_private_key_labels_follow_the_schema_not_the_partitions(
        unit: str | None, first: str, text: bool) -> None:
    """An object key column (the meta's) whose partitions are typed bool or float64, and one
    person's text row in an object partition or not: released keys are labelled as an object
    column labels them (``1``, not ``True`` or ``1.0``), as pandas does, whatever the
    partitions' dtypes. They were the first block's (row-level) or the buckets' (with a unit:
    object once any partition was), so the text row turned True into 1."""
    import dask

    one, two = (True, False) if first == "bool" else (1.0, 0.0)
    parts = [pd.DataFrame({"k": [one, two] * 30}) for _ in range(6)]
    obj = pd.DataFrame({"k": pd.Series(["y"], dtype=object)})  # one person's text
    if text:
        parts.append(obj)
    if unit:
        parts = [p.assign(u=np.arange(len(p)) + 1000 * i) for i, p in enumerate(parts)]
        obj = obj.assign(u=np.zeros(1, dtype=np.int64))  # the meta's columns
    q = Query((Measure("count"),), Fraction(1), by=("k",), keys={}, private_keys=True,
              delta=Fraction(1, 10**6), bounds={}, privacy_unit=unit,
              max_rows_per_unit=1 if unit else None)
    with dask.config.set({"scheduler": "sync", "dataframe.convert-string": False}):
        ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=obj.iloc[:0],
                              verify_meta=False)  # the object partition's meta
        for seed in range(2):
            agg = _exact(ddf, _session(), q, seed)
            want = {0: int, 1: int, **({"y": str} if text else {})}
            assert {k[0]: type(k[0]) for k in agg.keys} == want


def test_merge_keeps_the_preferred_spelling_whatever_the_order() -> None:
    """Equal private keys spelled apart in two blocks merge under one spelling, the value
    model's preference, not the first block's."""
    a = ExactAggregates([(True,)], {("rows",): np.array([1])}, {})
    b = ExactAggregates([(1,)], {("rows",): np.array([2])}, {})
    assert [type(k[0]) for k in a.merge(b).keys] == [type(k[0]) for k in b.merge(a).keys]
    assert a.merge(b).values[("rows",)].tolist() == [3]


def _parts_frame(parts: list[pd.DataFrame], meta: pd.DataFrame) -> Any:
    """A Dask frame of ``parts`` as they are (dtypes that differ from ``meta`` kept)."""
    return dd.from_delayed([dask.delayed(p) for p in parts], meta=meta, verify_meta=False)


def test_ones_of_an_object_partition_under_a_bool_schema_are_read() -> None:
    """Under a bool schema, an int partition's 1s are True; one person's text making that
    partition object read every 1 there as missing (a sum of 60 fell to 10)."""
    meta = pd.DataFrame({"b": pd.Series([], dtype=bool)})
    ones = pd.DataFrame({"b": pd.Series([1] * 50, dtype="int64")})
    trues = pd.DataFrame({"b": pd.Series([True] * 10)})
    odd = pd.DataFrame({"b": pd.Series([*[1] * 50, "x"], dtype=object)})
    sums = []
    with dask.config.set({"scheduler": "sync", "dataframe.convert-string": False}):
        for parts in ([ones, trues], [odd, trues]):
            s = dpf.Session(1e9, seed=1)
            f = _parts_frame(parts, meta).dp(s, bounds={"b": (0, 1)})
            sums.append(round(float(f.sum("b", epsilon=1e6))))
    assert sums == [60, 60]


def test_a_time_of_day_in_two_zones_is_one_unit_and_one_label() -> None:
    """An aware time of day equals the same instant spelled in another zone (Python compares
    them in UTC): one unit, one bucket word (two words made its rows bounded twice); a time
    whose zone gives no offset is the naive time, one label whatever row or partition came
    first."""
    from zoneinfo import ZoneInfo

    utc, plus1 = dt.UTC, dt.timezone(dt.timedelta(hours=1))
    units = [dt.time(h, m, tzinfo=utc) for h in range(2) for m in range(0, 60, 3)]
    shifted = [dt.time((t.hour + 1) % 24, t.minute, tzinfo=plus1) for t in units]
    meta = pd.DataFrame({"u": pd.Series([], dtype=object)})
    parts = [pd.DataFrame({"u": pd.Series(units, dtype=object)})] * 5 + [
        pd.DataFrame({"u": pd.Series(shifted, dtype=object)})] * 5
    with dask.config.set({"scheduler": "sync", "dataframe.convert-string": False}):
        s = dpf.Session(1e9, seed=1, privacy_unit="u")
        c = _parts_frame(parts, meta).dp(s, privacy_unit="u", max_rows_per_unit=1).count(
            epsilon=1e6)
        assert round(float(c)) == len(units)
        paris, naive = dt.time(1, tzinfo=ZoneInfo("Europe/Paris")), dt.time(1)
        a = pd.DataFrame({"k": pd.Series([paris] * 3, dtype=object)})
        b = pd.DataFrame({"k": pd.Series([naive] * 3, dtype=object)})
        labels = []
        for order in ([a, b], [b, a]):
            s = dpf.Session(1e9, 1e-3, seed=1)
            out = _parts_frame(order, pd.DataFrame({"k": pd.Series([], dtype=object)})).dp(
                s).groupby("k", keys="private").count(epsilon=1e6, delta=1e-4)
            labels.append([repr(k) for k in out.index])
        assert labels == [[repr(naive)]] * 2


def test_keys_of_a_bool_schema_that_are_not_bools_keep_their_labels() -> None:
    """Released keys of a bool column that a partition made object ('x', 2) are not shown as
    True: the index is bool only when every label is a bool."""
    meta = pd.DataFrame({"k": pd.Series([], dtype=bool)})
    part = pd.DataFrame({"k": pd.Series([True] * 40 + ["x"] * 20 + [2] * 20, dtype=object)})
    with dask.config.set({"scheduler": "sync", "dataframe.convert-string": False}):
        s = dpf.Session(1e9, 1e-3, seed=1)
        out = _parts_frame([part], meta).dp(s).groupby("k", keys="private").count(
            epsilon=1e6, delta=1e-4)
    assert [(type(k).__name__, k) for k in out.index] == [("bool", True), ("int", 2),
                                                          ("str", "x")]


#: One person's value that is no float, in a column the schema types float64.
_NOT_FLOATS = {"text": "zzz", "Timestamp": pd.Timestamp("2020-01-01"), "list": [1, 2],
               "Decimal": Decimal("1.5"), "bytes": b"x", "complex": complex(1, 0)}


@pytest.mark.parametrize("unit", [None, "u"])
@pytest.mark.parametrize("odd", list(_NOT_FLOATS))
def test_count_distinct_reads_the_schemas_values_on_every_backend(unit: str | None,
                                                                 odd: str) -> None:
    """Finding 55: under a float64 meta, one person's ``"zzz"`` typing the second partition
    object was one more distinct value (3 -> 4), while ``count("v")`` and the keys read it as
    missing. A value that does not conform to the schema is missing for every aggregate: the
    distinct count and the count of the column are those of pandas, an Arrow scan and Polars
    on the float column without the odd row (noise 0 at this epsilon)."""
    import polars as pl
    import pyarrow as pa

    values = [1.0, 2.0, 3.0, 2.0, math.nan, -0.0, 0.0]
    typed = pd.DataFrame({"u": np.arange(len(values)), "v": values})
    odd_part = pd.DataFrame({"u": np.arange(100, 104),
                             "v": pd.Series([3.0, 1.0, _NOT_FLOATS[odd], None], dtype=object)})
    opts: dict[str, Any] = {"privacy_unit": unit, "max_rows_per_unit": 1} if unit else {}

    def both(f: Any) -> tuple[float, float]:
        return (float(f.count_distinct("v", epsilon=1e7)), float(f.count("v", epsilon=1e7)))

    with dask.config.set({"scheduler": "sync", "dataframe.convert-string": False}):
        got = both(_parts(typed, odd_part).dp(dpf.Session(1e9, seed=3), **opts))
    whole = pd.concat([typed, odd_part.iloc[:2].astype({"v": float})], ignore_index=True)
    table = pa.Table.from_pandas(whole, preserve_index=False)
    expected = {
        "pandas": both(whole.dp(dpf.Session(1e9, seed=3), **opts)),
        "arrow": both(dpf.scan(table).dp(dpf.Session(1e9, seed=3), **opts)),
        "polars": both(pl.from_pandas(whole).dp(dpf.Session(1e9, seed=3), **opts)),
    }
    assert expected == dict.fromkeys(expected, (4.0, 8.0))  # 0.0 and -0.0 are one value
    assert got == (4.0, 8.0)
