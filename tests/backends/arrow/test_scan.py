"""dpf.scan: the Arrow batch backend has the pandas backend's semantics, batch by batch."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import dpframe as dpf
from dpframe.backends.arrow import ArrowBackend, DatasetSource, add_into, factorize, unit_hash
from dpframe.backends.arrow import backend as arrow_backend
from dpframe.backends.pandas import PandasBackend
from dpframe.fronts.frame import PrivateFrame
from tests.backends._exact_support import plan as _plan
from tests.backends._exact_support import same_exact as _same_exact
from tests.engine._releases import recording

BOUNDS = {"income": (0.0, 200_000.0), "age": (0, 100), "visits": (0, 20)}
KEYS = {"state": ["CA", "NY", "TX", "WA", "ZZ"]}  # ZZ never occurs: released as noise on zero


def _session(**kw: Any) -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(1000.0, 1e-3, **kw)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    n = 24_000
    uid = rng.zipf(1.6, n) % 3000  # a few heavy units, many light ones
    df = pd.DataFrame({
        "uid": uid.astype(np.int64),
        "user": pd.array([f"u{u:05d}" for u in uid], dtype="str"),
        "state": pd.array(rng.choice(["CA", "NY", "TX", "WA", "OR"], n), dtype="str"),
        "city": pd.array(rng.choice([f"c{i}" for i in range(60)], n), dtype="str"),
        "income": rng.lognormal(10.5, 1.0, n),
        "age": rng.integers(0, 100, n).astype(np.int64),
        "visits": rng.poisson(3, n).astype(np.int64),
    })
    df.loc[rng.random(n) < 0.05, "income"] = np.nan
    df.loc[rng.random(n) < 0.02, "state"] = None
    df.loc[rng.random(n) < 0.02, "city"] = None
    df.loc[rng.random(n) < 0.01, "user"] = None
    return df


@pytest.fixture(scope="module")
def parquet_dir(frame: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("events")
    for i, part in enumerate(np.array_split(np.arange(len(frame)), 4)):
        pq.write_table(pa.Table.from_pandas(frame.iloc[part], preserve_index=False),
                       d / f"part-{i}.parquet", row_group_size=2500)
    return d


def _compare(frame: pd.DataFrame, scan: dpf.Scan, opts: dict[str, Any],
             call: Callable[[PrivateFrame], Any]) -> None:
    s = _session()
    pp = _plan(PandasBackend(frame), s, opts, call)
    pa_ = _plan(scan.backend, s, opts, call)
    assert pp.describe() == pa_.describe()  # same sensitivity, scale, charge
    assert pp.cost == pa_.cost
    _same_exact(PandasBackend(frame).exact(pp.compute, np.random.default_rng(1)),
                scan.backend.exact(pa_.compute, np.random.default_rng(2)))


ROW_QUERIES: list[Callable[[PrivateFrame], Any]] = [
    lambda p: p.count(epsilon=1),
    lambda p: p.count("income", epsilon=1),
    lambda p: p.sum("income", epsilon=1),
    lambda p: p.sum("age", epsilon=1),
    lambda p: p.mean("income", epsilon=1),
    lambda p: p.max("age", epsilon=1),
    lambda p: p.histogram("age", [0, 18, 65, 100], epsilon=1),
    lambda p: p.groupby("state").sum("income", epsilon=1),
    lambda p: p.groupby(["state", "visits"]).count(epsilon=1),
    lambda p: p.groupby("state").agg({"income": ["sum", "mean"], "age": "median"}, epsilon=1),
    lambda p: p.groupby("city", keys="private").count(epsilon=1, delta=1e-6),
    lambda p: p.groupby(["state", "city"], keys="private").sum("age", epsilon=1, delta=1e-6),
]


@pytest.mark.parametrize("i", range(len(ROW_QUERIES)))
def test_row_level_exact_equals_pandas(frame: pd.DataFrame, parquet_dir: Path, i: int) -> None:
    opts = {"bounds": BOUNDS, "keys": KEYS | {"visits": list(range(10))}}
    _compare(frame, dpf.scan(parquet_dir / "*.parquet", batch_size=1700), opts, ROW_QUERIES[i])


UNIT_QUERIES: list[Callable[[PrivateFrame], Any]] = [
    lambda p: p.count(epsilon=1),
    lambda p: p.groupby("state").count(epsilon=1),
    lambda p: p.groupby("city", keys="private").count(epsilon=1, delta=1e-6),
]


@pytest.mark.parametrize("unit", ["uid", "user"])
@pytest.mark.parametrize("partitions", [1, 7])
@pytest.mark.parametrize("i", range(len(UNIT_QUERIES)))
def test_unit_level_counts_equal_pandas(frame: pd.DataFrame, parquet_dir: Path, unit: str,
                                        partitions: int, i: int) -> None:
    """Counts after bounding are deterministic when each unit is in one group: the keyed-hash
    partitions must keep every unit whole (a split unit would keep too many rows)."""
    df = frame.copy()
    first_state = df.groupby(unit)["state"].transform("first")
    df["state"] = first_state  # each unit in one state
    df["city"] = df.groupby(unit)["city"].transform("first")
    d = parquet_dir.parent / f"units-{unit}-{partitions}-{i}"
    d.mkdir(exist_ok=True)
    for j, part in enumerate(np.array_split(np.arange(len(df)), 3)):
        pq.write_table(pa.Table.from_pandas(df.iloc[part], preserve_index=False),
                       d / f"p{j}.parquet", row_group_size=3000)
    opts = {"bounds": BOUNDS, "keys": KEYS, "privacy_unit": unit, "max_rows_per_unit": 3}
    _compare(df, dpf.scan(d, batch_size=2000, partitions=partitions), opts, UNIT_QUERIES[i])


@pytest.mark.parametrize("partitions", [1, 5])
def test_unit_level_without_bounding_equals_pandas(frame: pd.DataFrame, parquet_dir: Path,
                                                   partitions: int) -> None:
    """With bounds no unit exceeds, bounding keeps everything: sums and private-key unit
    counts match pandas exactly."""
    opts = {"bounds": BOUNDS, "keys": KEYS, "privacy_unit": "uid", "max_rows_per_unit": 100_000,
            "max_groups_per_unit": 60}
    scan = dpf.scan(parquet_dir, batch_size=3000, partitions=partitions)
    for call in (lambda p: p.groupby("state").agg({"income": "sum", "age": "mean"}, epsilon=1),
                 lambda p: p.groupby("city", keys="private").sum("visits", epsilon=1,
                                                                delta=1e-6)):
        _compare(frame, scan, opts, call)


def test_bounding_is_enforced_across_batches(frame: pd.DataFrame, parquet_dir: Path) -> None:
    """A unit spread over every batch still contributes at most max_rows_per_unit rows."""
    s = _session()
    scan = dpf.scan(parquet_dir, batch_size=500, partitions=3)
    opts = {"bounds": BOUNDS, "privacy_unit": "uid", "max_rows_per_unit": 2}
    plan = _plan(scan.backend, s, opts, lambda p: p.count(epsilon=1))
    agg = scan.backend.exact(plan.compute, np.random.default_rng(0))
    per_unit = frame.groupby("uid").size()
    assert int(next(iter(agg.values.values()))[0]) == int(np.minimum(per_unit, 2).sum())


@pytest.mark.parametrize("keys", ["public", "private"])
def test_bounded_scan_is_the_same_on_one_thread_or_two(parquet_dir: Path, keys: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Pass 2 seeds each partition's generator in partition order, so the rows bounding keeps
    (hence the exact aggregates) do not depend on how many threads reduce the partitions;
    bounds that bind make the selection random."""
    from dpframe.backends.arrow import backend as arrow_backend

    opts = {"bounds": BOUNDS, "keys": KEYS, "privacy_unit": "uid", "max_rows_per_unit": 2}

    def call(p: PrivateFrame) -> Any:
        if keys == "public":
            return p.groupby("state").sum("income", epsilon=1)
        return p.groupby("city", keys="private").sum("visits", epsilon=1, delta=1e-6)
    results = []
    for workers in (1, 2, 2):
        monkeypatch.setattr(arrow_backend, "WORKERS", workers)
        scan = dpf.scan(parquet_dir, batch_size=700, partitions=5)
        plan = _plan(scan.backend, _session(), opts, call)
        results.append(scan.backend.exact(plan.compute, np.random.default_rng(3)))
    for other in results[1:]:
        _same_exact(results[0], other)
    # a different seed bounds differently (so the comparison above can fail)
    scan = dpf.scan(parquet_dir, batch_size=700, partitions=5)
    plan = _plan(scan.backend, _session(), opts, call)
    other = scan.backend.exact(plan.compute, np.random.default_rng(4))
    with pytest.raises(AssertionError):
        _same_exact(results[0], other)


def test_release_same_charge_and_scale_as_pandas(frame: pd.DataFrame, parquet_dir: Path
                                                 ) -> None:
    s1, s2 = _session(), _session()
    opts = {"bounds": BOUNDS, "keys": KEYS, "privacy_unit": "uid", "max_rows_per_unit": 4}
    a = frame.dp(s1, **opts).groupby("state").sum("income", epsilon=0.5, ci=0.9)
    b = dpf.scan(parquet_dir).dp(s2, **opts).groupby("state").sum("income", epsilon=0.5, ci=0.9)
    assert list(a.index) == list(b.index) == KEYS["state"]
    for key in ("relation", "charge_epsilon", "charge_delta", "measures", "max_rows_per_unit"):
        assert a.attrs["dp"][key] == b.attrs["dp"][key]
    assert s1.spent == s2.spent
    la, lb = s1.ledger, s2.ledger
    assert la["noise_scale"].tolist() == lb["noise_scale"].tolist()
    assert la["epsilon"].tolist() == lb["epsilon"].tolist()


def test_spill_files_removed(parquet_dir: Path, tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    spill.mkdir()
    s = _session()
    scan = dpf.scan(parquet_dir, batch_size=2000, partitions=6, spill_dir=spill)
    scan.dp(s, bounds=BOUNDS, keys=KEYS, privacy_unit="user", max_rows_per_unit=2) \
        .groupby("state").mean("income", epsilon=1)
    assert list(spill.iterdir()) == []


def test_interrupt_mid_scan_cleans_up_and_charges_nothing(parquet_dir: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    spill = tmp_path / "spill"
    spill.mkdir()
    calls = {"n": 0}
    real = arrow_backend.compute_exact

    def flaky(*args: Any, **kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            assert any(spill.iterdir())  # the spill folder exists mid-scan
            raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr(arrow_backend, "compute_exact", flaky)
    s = _session()
    scan = dpf.scan(parquet_dir, batch_size=2000, partitions=4, spill_dir=spill)
    with pytest.raises(KeyboardInterrupt), recording() as published:
        scan.dp(s, bounds=BOUNDS, privacy_unit="uid", max_rows_per_unit=2).sum("age", epsilon=1)
    assert list(spill.iterdir()) == []
    # the data is read before the charge, the noise drawn after it: nothing was charged
    assert s.ledger.empty and s.spent[0] == 0.0
    assert published.last(s) is None


def test_empty_and_all_missing_data_release_noise_and_bad_arguments_are_refused(
        tmp_path: Path) -> None:
    """Whether a query is answered never depends on the data (docs/privacy.md): an empty dataset or
    an all-null column is released with noise like any other; bad arguments are refused before
    any charge."""
    t = pa.table({"x": pa.array([], pa.float64()), "k": pa.array([], pa.string())})
    pq.write_table(t, tmp_path / "empty.parquet")
    s = _session()
    out = dpf.scan(tmp_path / "empty.parquet").dp(s, bounds={"x": (0, 1)}).sum("x", epsilon=1)
    assert isinstance(out, float)
    grouped = dpf.scan(tmp_path / "empty.parquet").dp(
        s, bounds={"x": (0, 1)}, keys={"k": ["a", "b"]}).groupby("k").mean("x", epsilon=1)
    assert list(grouped.index) == ["a", "b"]
    nulls = pa.table({"x": pa.array([None, None], pa.float64())})
    pq.write_table(nulls, tmp_path / "nulls.parquet")
    q = dpf.scan(tmp_path / "nulls.parquet").dp(s, bounds={"x": (0, 1)}).quantile("x", 0.5,
                                                                                   epsilon=1)
    assert 0 <= q <= 1
    assert s.spent == (3.0, 0.0)
    with pytest.raises(dpf.BoundsError):
        dpf.scan(tmp_path / "nulls.parquet").dp(s).sum("x", epsilon=1)
    with pytest.raises(dpf.ValidationError, match="not a column of this frame"):
        dpf.scan(tmp_path / "nulls.parquet").dp(s, bounds={"y": (0, 1)})
    with pytest.raises(dpf.ValidationError, match="unknown column"):
        dpf.scan(tmp_path / "nulls.parquet").dp(s, bounds={"y": (0, 1)}, strict=False).sum(
            "y", epsilon=1)
    assert s.spent == (3.0, 0.0) and len(s.ledger) == 3
    with pytest.raises(dpf.ValidationError, match="no file matches"):
        dpf.scan(tmp_path / "*.csv")
    with pytest.raises(dpf.ValidationError, match="no such file"):
        dpf.scan(tmp_path / "missing.parquet")
    with pytest.raises(dpf.ValidationError, match="format"):
        (tmp_path / "data.txt").write_text("x\n1\n")
        dpf.scan(tmp_path / "data.txt")
    with pytest.raises(dpf.ValidationError, match="unknown column"):
        dpf.scan(tmp_path / "nulls.parquet", columns=["nope"])


def test_sources(frame: pd.DataFrame, parquet_dir: Path, tmp_path: Path) -> None:
    small = frame.head(3000)
    small.to_csv(tmp_path / "a.csv", index=False)
    table = pa.Table.from_pandas(small, preserve_index=False)
    with pa.OSFile(str(tmp_path / "a.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema
                                                                           ) as w:
        w.write_table(table)
    files = sorted(str(p) for p in parquet_dir.glob("*.parquet"))
    sources: list[Any] = [
        parquet_dir, str(parquet_dir / "*.parquet"), files, ds.dataset(files),
        pa.Table.from_pandas(frame, preserve_index=False),
    ]
    counts = set()
    for src in sources:
        sc = dpf.scan(src, batch_size=4000)
        plan = _plan(sc.backend, _session(), {}, lambda p: p.count(epsilon=1))
        counts.add(int(next(iter(sc.backend.exact(plan.compute, np.random.default_rng()).values
                                  .values()))[0]))
    assert counts == {len(frame)}
    for src in (tmp_path / "a.csv", tmp_path / "a.arrow"):
        csv = src.suffix == ".csv"  # a CSV's types are declared; an Arrow file carries its own
        sc = dpf.scan(src, columns=["age", "state"],
                      types={"age": "int64", "state": "string"} if csv else None)
        assert sc.columns == ["age", "state"]
        plan = _plan(sc.backend, _session(), {"bounds": BOUNDS},
                     lambda p: p.sum("age", epsilon=1))
        got = next(iter(sc.backend.exact(plan.compute, np.random.default_rng()).values.values()))[0]
        assert int(got) == int(small["age"].sum())
    assert "Scan(" in repr(dpf.scan(parquet_dir))


def test_factorize_and_unit_hash() -> None:
    arr = pa.array(["b", None, "a", "b", "a"])
    codes, uniq = factorize(arr)
    assert [uniq[c] if c >= 0 else None for c in codes] == ["b", None, "a", "b", "a"]
    # an unused dictionary entry and a NaN get no code
    d = pa.DictionaryArray.from_arrays(pa.array([0, 0, 2]), pa.array(["x", "unused", "y"]))
    codes, uniq = factorize(d)
    assert uniq == ["x", "y"] and codes.tolist() == [0, 0, 1]
    codes, uniq = factorize(pa.array([1.0, float("nan"), 1.0]))
    assert codes.tolist() == [0, -1, 0]
    key = (123, 456)
    h1 = unit_hash(pa.array(["u1", "u2", "u1"]), key)
    h2 = unit_hash(pa.array(["u2", "u1"]).dictionary_encode(), key)
    assert h1[0] == h1[2] == h2[1] and h1[1] == h2[0] and h1[0] != h1[1]
    assert unit_hash(pa.array(["u1"]), (1, 2))[0] != h1[0]  # keyed
    hi = unit_hash(pa.array([5, 7, 5], pa.int64()), key)
    assert hi[0] == hi[2] != hi[1]
    hf = unit_hash(pa.array([0.0, -0.0]), key)
    assert hf[0] == hf[1]


def test_exact_accumulation_never_overflows() -> None:
    big = np.array([1 << 62, -(1 << 62)], dtype=np.int64)
    acc = add_into(None, big, None, 2)
    acc = add_into(acc, big, None, 2)
    assert acc.tolist() == [1 << 63, -(1 << 63)]
    acc = add_into(acc, np.array([5], dtype=np.int64), np.array([1]), 3)
    assert acc.tolist() == [1 << 63, -(1 << 63) + 5, 0]


def test_partition_count_and_progress(parquet_dir: Path, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    sc = dpf.scan(parquet_dir, partition_rows=5000)
    # 24,000 rows: 5 partitions of 5,000 rows at most, rounded up to a power of two
    assert sc.backend.n_partitions() == 8
    assert dpf.scan(parquet_dir, partition_rows=3000).backend.n_partitions() == 8
    assert dpf.scan(parquet_dir, partition_rows=2999).backend.n_partitions() == 16
    assert dpf.scan(parquet_dir).backend.n_partitions() == 1
    src = DatasetSource(parquet_dir)
    be = ArrowBackend(src, batch_size=5000, progress=True)
    plan = _plan(be, _session(), {}, lambda p: p.count(epsilon=1))
    be.exact(plan.compute, np.random.default_rng())
    shown = capsys.readouterr().err
    assert "%" in shown and "dpframe scan" in shown
    # a percentage and times only: no count of rows (the data's size is private)
    assert "24000" not in shown and "24.0k" not in shown and "rows" not in shown
    be.progress = None  # default: only on a terminal (pytest's stderr is not one)
    be.exact(plan.compute, np.random.default_rng())
    assert capsys.readouterr().err == ""
    with pytest.raises(dpf.ValidationError):
        dpf.scan(parquet_dir, partitions=0)
    assert os.environ.get("DPFRAME_NO_SUCH_VAR") is None


def _big_session() -> dpf.Session:
    """A budget for releases at epsilon 1e6, whose geometric noise is 0 but with probability
    ~e^-1e5: the released values are the exact aggregates."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(1e9, 1e-3, seed=5)


# -- values that do not conform to the schema are missing, never raised on after the charge --------

def test_text_far_down_a_numeric_csv_column_is_missing_not_an_error(tmp_path: Path) -> None:
    """0.1 raised pyarrow's ArrowInvalid quoting the private value, after charging."""
    lines = ["cost,g,flag"] + [f"{i % 10},a,true" for i in range(200_000)]
    lines += ["SECRET-987654,b,maybe", "1,2,3,4", "5,a,false"]
    path = tmp_path / "x.csv"
    path.write_text("\n".join(lines) + "\n")
    s = _big_session()
    scan = dpf.scan(path, types={"cost": "int64", "g": "string", "flag": "bool"})
    assert scan.schema.field("cost").type == pa.int64()
    total = scan.dp(s, bounds={"cost": (0, 10)}).sum("cost", epsilon=1e6)
    assert total == sum(i % 10 for i in range(200_000)) + 5
    assert scan.dp(s).count("cost", epsilon=1e6) == 200_001
    assert scan.dp(s, bounds={"flag": (0, 1)}).sum("flag", epsilon=1e6) == 200_000
    out = scan.dp(s, keys={"g": ["a", "b"]}).groupby("g").count(epsilon=1e6)
    assert out.to_dict() == {"a": 200_001, "b": 1}


def test_parquet_files_with_differing_column_types_conform_to_the_schema(tmp_path: Path) -> None:
    """0.1 read a text ``cost`` column of a second file as zeros (the mean came out half)."""
    pq.write_table(pa.table({"cost": pa.array([4.0, 6.0])}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"cost": pa.array(["4", "SECRET-987654", " 6 "])}),
                   tmp_path / "b.parquet")
    pq.write_table(pa.table({"cost": pa.array([5, 2**70 // 2**20], pa.int64())}),
                   tmp_path / "c.parquet")
    pq.write_table(pa.table({"other": pa.array([1, 2])}), tmp_path / "d.parquet")  # no cost
    s = _big_session()
    scan = dpf.scan(sorted(tmp_path.glob("*.parquet")))
    assert scan.dp(s).count(epsilon=1e6) == 9
    assert scan.dp(s).count("cost", epsilon=1e6) == 6
    mean = scan.dp(s, bounds={"cost": (0, 10)}).mean("cost", epsilon=1e6)
    assert abs(mean - (4 + 6 + 4 + 6 + 5 + 10) / 6) < 1e-3


def test_conform_array_never_wraps_truncates_or_raises() -> None:
    from dpframe.backends.arrow import conform_array

    ints = conform_array(pa.array([1.0, 2.5, float("nan"), 3e30, -4.0]), pa.int64())
    assert ints.to_pylist() == [1, None, None, None, -4]
    text = conform_array(pa.array(["1e3", "x", None, "-inf", ""]), pa.float64())
    assert text.to_pylist() == [1000.0, None, None, float("-inf"), None]
    flags = conform_array(pa.array([" TRUE", "0", "yes"]), pa.bool_())
    assert flags.to_pylist() == [True, False, None]
    assert conform_array(pa.array([[1], [2]]), pa.float64()).null_count == 2
    assert conform_array(pa.array([1, 2]), pa.string()).to_pylist() == ["1", "2"]


def test_nested_key_and_unit_columns_count_as_missing() -> None:
    """Lists and structs conform to no key or unit kind: missing, like lists in a pandas object
    column (found by the Polars front: a List key raised ArrowNotImplementedError after the
    charge)."""
    t = pa.table({"k": pa.array([[1], [2], None, [1]]),
                  "s": pa.array([{"a": 1}, {"a": 2}, None, {"a": 1}]),
                  "u": pa.array([[1], [2], [3], [4]]), "x": [1.0, 2.0, 3.0, 4.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for col in ("k", "s"):
            s = dpf.Session(1e9, 0.5, seed=1)
            out = dpf.scan(t).dp(s).groupby(col, keys="private").count(epsilon=1e6, delta=0.1)
            assert len(out) == 0 and s.spent == (1e6, 0.1)
        s = dpf.Session(1e9, 0.5, seed=1)
        n = dpf.scan(t).dp(s, privacy_unit="u", max_rows_per_unit=1).count(epsilon=1e6)
        assert n == 0


@pytest.mark.parametrize("declared", [127, 129, 40_000])
def test_spilled_group_codes_fit_any_number_of_declared_keys(parquet_dir: Path,
                                                             declared: int) -> None:
    """Spill files carry group codes in the narrowest integer type (int8 up to 127 declared
    groups, int16 up to 32767, then int32): the last declared key's rows still land in their
    own group, and the counts equal pandas'."""
    n = 600
    uid = np.arange(n) // 2  # each unit in one group: the counts are deterministic
    df = pd.DataFrame({"k": uid % 3 + (declared - 3), "uid": uid,
                       "x": 1.0})
    d = parquet_dir.parent / f"codes-{declared}"
    d.mkdir(exist_ok=True)
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), d / "p.parquet")
    opts = {"bounds": {"x": (0, 1)}, "keys": {"k": list(range(declared))},
            "privacy_unit": "uid", "max_rows_per_unit": 2}
    _compare(df, dpf.scan(d, batch_size=200, partitions=3), opts,
             lambda p: p.groupby("k").count(epsilon=1))


@pytest.mark.parametrize("parts", [1, 7, 256, 257, 4096])
def test_spill_partitions_are_uniform_and_follow_the_unit(parts: int) -> None:
    """Multiply-shift partitions: every value below ``parts`` (uint8 up to 256), equal units
    in one partition, and counts within 6 binomial standard deviations of uniform."""
    from dpframe.backends.arrow.backend import _partitions

    ids = np.arange(200_000) % 50_000  # each unit 4 times
    p = _partitions(pa.array(ids), (123, 456), parts)
    assert p.dtype == (np.uint8 if parts <= 256 else np.uint16)
    assert int(p.max()) < parts
    assert (p[:50_000] == p[50_000:100_000]).all()
    counts = np.bincount(p[:50_000], minlength=parts)
    mean = 50_000 / parts
    assert np.all(np.abs(counts - mean) <= 6 * np.sqrt(mean * (1 - 1 / parts)) + 1e-9)


@pytest.mark.parametrize("dtype", ["int64", "uint64", "int16"])
@pytest.mark.parametrize("partitions", [2, 3, 8])
def test_integer_ids_at_their_limits_stay_whole_units(tmp_path: Path, dtype: str,
                                                      partitions: int) -> None:
    """Integer ids are spilled as their block (``block_partition``): ids at the dtype's limits,
    negative ids, and ids one block apart stay distinct whole units in every partition count
    (a merged pair would keep 3 rows for two units, a split unit 3 rows more)."""
    info = np.iinfo(dtype)
    near = [int(info.min), int(info.min) + 1, -1, 0, 1, 2, 3, int(info.max) - 1, int(info.max)]
    ids = sorted({v for v in near if info.min <= v <= info.max}
                 | {v * partitions for v in range(-5, 6) if info.min <= v * partitions}
                 | {v * partitions + 1 for v in range(0, 5)})
    rng = np.random.default_rng(5)
    rows = rng.integers(1, 7, len(ids))  # 1 to 6 rows a unit, bounded to 3
    unit = np.repeat(np.array(ids, dtype=dtype), rows)
    state = np.repeat(rng.choice(KEYS["state"], len(ids)), rows)  # each unit in one state
    order = rng.permutation(unit.size)
    df = pd.DataFrame({"u": unit[order], "state": state[order],
                       "income": rng.random(unit.size)})
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "ids.parquet",
                   row_group_size=7)
    opts = {"bounds": BOUNDS, "keys": KEYS, "privacy_unit": "u", "max_rows_per_unit": 3}
    for call in UNIT_QUERIES[:2]:
        _compare(df, dpf.scan(tmp_path, batch_size=5, partitions=partitions), opts, call)


@pytest.mark.parametrize("partitions", [1, 3, 4])
def test_the_unit_column_as_a_key_or_a_measure_keeps_its_values(tmp_path: Path,
                                                                 partitions: int) -> None:
    """Integer ids are partitioned by block; the ids themselves must still be the released
    private keys and the summed values when the unit column is also grouped by or measured."""
    rng = np.random.default_rng(8)
    df = pd.DataFrame({"u": rng.integers(-40, 40, 3000), "x": rng.random(3000)})
    df["k"] = df["u"] % 7
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "u.parquet",
                   row_group_size=500)
    opts = {"bounds": {"u": (-40, 40), "x": (0.0, 1.0)}, "privacy_unit": "u",
            "max_rows_per_unit": 10_000, "max_groups_per_unit": 100}
    scan = dpf.scan(tmp_path, batch_size=400, partitions=partitions)
    for call in (lambda p: p.groupby("u", keys="private").count(epsilon=1, delta=1e-6),
                 lambda p: p.sum("u", epsilon=1),
                 lambda p: p.groupby("k", keys="private").sum("u", epsilon=1, delta=1e-6)):
        _compare(df, scan, opts, call)


@pytest.mark.parametrize("partitions", [1, 4])
def test_no_unit_left_releases_noise_in_the_spilled_schema(tmp_path: Path,
                                                           partitions: int) -> None:
    """Every unit id missing: no row is spilled, and the release still runs on the schema
    pass 2 would have read (the unit's block, and the ids where the query reads them)."""
    t = pa.table({"u": pa.array([None] * 50, pa.int64()), "x": pa.array([0.5] * 50),
                  "k": pa.array(["a"] * 50)})
    pq.write_table(t, tmp_path / "t.parquet")
    s = _session()
    opts: dict[str, Any] = {"bounds": {"x": (0, 1), "u": (0, 10)}, "privacy_unit": "u",
                            "max_rows_per_unit": 2}
    scan = dpf.scan(tmp_path, partitions=partitions)
    assert isinstance(scan.dp(s, **opts).sum("u", epsilon=1), int)  # an integer column
    assert isinstance(scan.dp(s, **opts).sum("x", epsilon=1), float)
    grouped = scan.dp(s, **opts, keys={"k": ["a", "b"]}).groupby("k").sum("x", epsilon=1)
    assert list(grouped.index) == ["a", "b"]
    assert len(scan.dp(s, **opts).groupby("u", keys="private").count(epsilon=1,
                                                                      delta=1e-6)) == 0


def test_reserved_column_names_are_refused(tmp_path: Path) -> None:
    """The spill's own columns cannot be confused with the data's: a dataset with one of their
    names is refused before any charge (a measured column named like the group codes was
    summed as codes)."""
    from dpframe.backends.arrow.backend import RESERVED

    for name in RESERVED:
        pq.write_table(pa.table({name: [1.0, 2.0], "u": [1, 2]}), tmp_path / "r.parquet")
        with pytest.raises(dpf.ValidationError, match="reserved"):
            dpf.scan(tmp_path / "r.parquet")
