"""Heavy units in a two-pass scan: pass 1 pre-selects a slice past its limit, pass 2 selects
again by the carried priorities (dpframe/backends/arrow/carried.py). Memory stays bounded
whatever one unit's row count, and the selection is the same uniform one."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpframe as dpf
from dpframe.backends.arrow import backend as arrow_backend
from dpframe.backends.arrow import carried
from dpframe.backends.pandas import PandasBackend
from dpframe.core.exact.bounding import KeyedPairs, select_by_priority
from dpframe.core.exact.compute import AggregateRequest, ComputeRequest
from tests.backends._exact_support import plan as _plan
from tests.backends._exact_support import same_exact as _same_exact

BOUNDS = {"x": (0.0, 10.0)}
KEYS = {"g": ["a", "b", "c"]}


def _session() -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(1000.0, 1e-3)


def _request(rows_per_group: int, groups_per_unit: int = 1,
             by: tuple[str, ...] = ()) -> ComputeRequest:
    req = AggregateRequest(kind="rows", column=None)
    return ComputeRequest((req,), by=by, keys={c: tuple(KEYS[c]) for c in by},
                          privacy_unit="u", rows_per_group=rows_per_group,
                          groups_per_unit=groups_per_unit)


def _light_row_kept_rate(trials: int, redraw_carried: bool) -> float:
    """How often a plainly spilled row of a pair is kept beside 100 rows of that pair which pass
    1 pre-selected (``rows_per_group=1``): the uniform choice keeps it with probability 1/101.
    ``redraw_carried``: the wrong rule that forgets the carried priorities (1/2)."""
    req = _request(rows_per_group=1)
    heavy = pa.record_batch({"u": pa.array(np.zeros(100, dtype=np.int64)),
                             "x": pa.array(np.zeros(100))})
    light = pa.table({"u": pa.array([0], pa.int64()), "x": pa.array([1.0]),
                      carried.ROW_PRIORITY: pa.nulls(1, pa.uint64())})
    kept = 0
    for t in range(trials):
        gen = np.random.default_rng(t)
        salt = int(gen.integers(0, 2**63))
        pre = carried.preselect(heavy, req, "u", None, salt, gen)
        assert pre.num_rows == 1  # one unit, one group, one row: the smallest priority
        table = pa.concat_tables([light, pa.Table.from_batches([pre])])
        if redraw_carried:
            table = table.set_column(2, carried.ROW_PRIORITY, pa.nulls(2, pa.uint64()))
        rows, _ = carried.bound_by_priority(table, req, "u", None, salt, gen)
        assert rows.size == 1
        kept += int(rows[0] == 0)
    return kept / trials


def test_a_light_row_beside_carried_rows_is_kept_uniformly() -> None:
    """The deferred-decision argument, measured: 1/101, within 4.5 binomial standard
    deviations; the rule that re-draws the carried priorities (1/2) is far outside."""
    trials = 6000
    p = 1 / 101
    tol = 4.5 * math.sqrt(p * (1 - p) / trials)
    assert abs(_light_row_kept_rate(trials, redraw_carried=False) - p) < tol
    assert abs(_light_row_kept_rate(600, redraw_carried=True) - p) > 10 * tol


def test_preselect_keeps_each_units_bound_and_its_own_rows() -> None:
    """Per unit at most groups_per_unit groups and rows_per_group rows per group, all rows of
    a light unit kept, a unit with a missing id dropped; the kept rows are rows of the slice."""
    rng = np.random.default_rng(5)
    n = 5000
    u = rng.integers(0, 40, n)
    u[:3000] = 7  # one heavy unit
    g = rng.integers(0, 3, n).astype(np.int8)
    batch = pa.record_batch({"u": pa.array(u.astype(float)), "__dpframe_group__": pa.array(g),
                             "i": pa.array(np.arange(n))})
    batch = batch.set_column(0, "u", pa.array(np.where(np.arange(n) == 10, np.nan, u)))
    req = _request(rows_per_group=4, groups_per_unit=2, by=("g",))
    out = carried.preselect(batch, req, "u", "__dpframe_group__", 3, rng).to_pandas()
    assert 10 not in set(out["i"])  # NaN: a missing unit
    sizes = out.groupby(["u", "__dpframe_group__"]).size()
    assert sizes.max() <= 4
    assert out.groupby("u")["__dpframe_group__"].nunique().max() <= 2
    assert set(out["i"]) <= set(range(n))
    light = pd.Series(u[3000:]).value_counts()  # ~50 rows each over 3 groups: bounded too
    assert len(out) < 3000 and len(out) <= 40 * 2 * 4
    assert light.size > 0


@pytest.fixture
def heavy_dir(tmp_path: Path) -> Path:
    """60,000 rows: one unit (id 5, text "u5") has 48,000 of them, all in group "a" with
    x = 1; 12,000 light units have one row each, spread over the groups."""
    rng = np.random.default_rng(2)
    light = 12_000
    uid = np.concatenate([np.full(48_000, 5), np.arange(1_000, 1_000 + light)])
    g = np.concatenate([np.full(48_000, "a"), rng.choice(["a", "b", "c"], light)])
    x = np.concatenate([np.ones(48_000), rng.uniform(0, 10, light)])
    order = rng.permutation(uid.size)  # the heavy unit's rows in every batch
    df = pd.DataFrame({"u": uid[order], "t": [f"u{i}" for i in uid[order]], "g": g[order],
                       "x": x[order]})
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "d.parquet",
                   row_group_size=6_000)
    return tmp_path


def _partition_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Rows of each partition pass 2 loads (recorded as it reduces them)."""
    sizes: list[int] = []
    reduce_one = arrow_backend.ArrowBackend._reduce_one

    def recording(self: Any, run: Any, block: pa.Table) -> Any:
        sizes.append(block.num_rows)
        return reduce_one(self, run, block)

    monkeypatch.setattr(arrow_backend.ArrowBackend, "_reduce_one", recording)
    return sizes


@pytest.mark.parametrize("keys", ["public", "private"])
@pytest.mark.parametrize("unit", ["u", "t"])  # integer ids (blocks) and text ids (words)
def test_a_heavy_unit_never_reaches_pass_2_whole(heavy_dir: Path, unit: str, keys: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The heavy unit's 48,000 rows arrive in pass 2 as at most rows_per_group rows per batch,
    and the exact aggregates equal pandas' (each light unit keeps its row, the heavy one
    rows_per_group rows of x = 1)."""
    sizes = _partition_sizes(monkeypatch)
    df = pd.read_parquet(heavy_dir)
    opts = {"bounds": BOUNDS, "keys": KEYS, "privacy_unit": unit, "max_rows_per_unit": 3}
    scan = dpf.scan(heavy_dir, batch_size=6_000, partitions=4)
    s = _session()
    grouped = ((lambda p: p.groupby("g").sum("x", epsilon=1)) if keys == "public" else
               (lambda p: p.groupby("g", keys="private").sum("x", epsilon=1, delta=1e-6)))
    for call in (grouped, lambda p: p.count(epsilon=1)):
        sizes.clear()
        pp = _plan(PandasBackend(df), s, opts, call)
        pa_ = _plan(scan.backend, s, opts, call)
        _same_exact(PandasBackend(df).exact(pp.compute, np.random.default_rng(1)),
                    scan.backend.exact(pa_.compute, np.random.default_rng(2)))
        batches = 10
        # light rows spread over 4 partitions, the heavy unit's carried rows in one
        assert max(sizes) <= 12_000 // 4 + 400 + batches * 3
        assert sum(sizes) < 12_000 + batches * 3 + 1_500  # its slices' light rows too


def test_the_selection_is_the_uniform_one_end_to_end(tmp_path: Path) -> None:
    """A heavy unit with rows in two groups (10 in "b", 990 in "a") keeps one group, chosen
    uniformly among its distinct groups: "b" in half of the releases (4.5 sigma), although
    99% of its rows are in "a"; with pre-selection on every batch."""
    rng = np.random.default_rng(4)
    g = np.array(["a"] * 990 + ["b"] * 10)
    df = pd.DataFrame({"u": np.zeros(1000, dtype=np.int64), "g": rng.permutation(g),
                       "x": np.ones(1000)})
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "d.parquet")
    req = _request(rows_per_group=1, by=("g",))
    backend = dpf.scan(tmp_path, batch_size=100, partitions=2).backend
    trials = 300
    picks_b = 0
    for t in range(trials):
        agg = backend.exact(req, np.random.default_rng(t))
        counts = np.asarray(next(iter(agg.values.values())))
        assert counts.sum() == 1
        picks_b += int(counts[1])
    tol = 4.5 * math.sqrt(0.25 / trials)
    assert abs(picks_b / trials - 0.5) < tol


def test_no_heavy_slice_writes_no_carried_rows(heavy_dir: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Slices within their limit are spilled plainly (no pre-selection, no carried file); a
    heavy one is pre-selected, with public or private keys."""
    calls: list[int] = []
    real = carried.preselect

    def counting(block: pa.RecordBatch, *args: Any) -> pa.RecordBatch:
        calls.append(block.num_rows)
        return real(block, *args)

    monkeypatch.setattr(arrow_backend, "preselect", counting)
    df = pd.read_parquet(heavy_dir)
    light = df[df["u"] != 5]
    pq.write_table(pa.Table.from_pandas(light, preserve_index=False), heavy_dir / "d.parquet")
    backend = dpf.scan(heavy_dir, batch_size=6_000, partitions=4).backend
    backend.exact(_request(rows_per_group=3, by=("g",)), np.random.default_rng(0))
    assert calls == []
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), heavy_dir / "d.parquet")
    # a scan reads the snapshot it opened (a rewritten file is refused): open it again
    backend = dpf.scan(heavy_dir, batch_size=6_000, partitions=4).backend
    backend.exact(_request(rows_per_group=3, by=("g",)), np.random.default_rng(0))
    assert calls  # every batch holds about 4,800 heavy rows: over its limit of 3,256
    calls.clear()
    private = ComputeRequest((AggregateRequest(kind="rows", column=None),), by=("g",),
                             privacy_unit="u", rows_per_group=3, private_keys=True)
    backend.exact(private, np.random.default_rng(0))
    assert calls  # private keys too, ranked in the canonical order of keys


def test_seeded_scans_with_heavy_slices_repeat(heavy_dir: Path) -> None:
    """The same generator gives the same release: heavy slices draw from a child of the
    release's generator, seeded per batch in batch order (whatever the threads)."""
    backend = dpf.scan(heavy_dir, batch_size=6_000, partitions=4).backend
    opts = {"bounds": BOUNDS, "keys": KEYS, "privacy_unit": "u", "max_rows_per_unit": 2}
    req = _plan(backend, _session(), opts, lambda p: p.groupby("g").sum("x", epsilon=1)).compute
    runs = [backend.exact(req, np.random.default_rng(9)) for _ in range(2)]
    _same_exact(runs[0], runs[1])


def test_heavy_limit() -> None:
    assert carried.heavy_limit(1000, 4) == 2 * 250 + carried.HEAVY_MARGIN
    assert carried.heavy_limit(1001, 4) == 2 * 251 + carried.HEAVY_MARGIN


def test_selecting_again_over_carried_rows_is_selecting_over_all_rows() -> None:
    """Two blocks pre-selected (pass 1) and one spilled plainly, selected again in pass 2:
    exactly the selection over every row by the same priorities (the pre-selected rows' from
    pass 1, the plain rows' drawn in pass 2) and the same pair salt."""
    rng = np.random.default_rng(8)
    n = 3000
    u = rng.integers(0, 60, n)
    g = rng.integers(0, 4, n).astype(np.int8)
    req = _request(rows_per_group=3, groups_per_unit=2, by=("g",))
    salt = 12345

    def block(rows: np.ndarray) -> pa.RecordBatch:
        return pa.record_batch({"u": pa.array(u[rows]), "__dpframe_group__": pa.array(g[rows]),
                                "i": pa.array(rows)})

    parts = np.array_split(np.arange(n), 3)
    pre = [carried.preselect(block(p), req, "u", "__dpframe_group__", salt,
                             np.random.default_rng(s))
           for p, s in zip(parts[:2], (1, 2), strict=True)]
    plain = pa.Table.from_batches([block(parts[2])])
    table = arrow_backend._read_with_carried(lambda: plain, lambda: pa.Table.from_batches(pre))
    kept = table.column("i").to_numpy()[carried.bound_by_priority(
        table, req, "u", "__dpframe_group__", salt, np.random.default_rng(3))[0]]
    prio = np.concatenate([np.random.default_rng(s).integers(0, 2**64, p.size, dtype=np.uint64)
                           for p, s in zip(parts, (1, 2, 3), strict=True)])
    words = u.astype(np.int64)
    expected = np.flatnonzero(select_by_priority(u, g, KeyedPairs(words, salt), prio, 2, 3))
    assert sorted(kept) == list(expected)
    other = np.flatnonzero(select_by_priority(u, g, KeyedPairs(words, salt + 1), prio, 2, 3))
    assert sorted(kept) != list(other)  # the check can fail: another salt, another choice


def test_both_passes_share_the_pair_salt(heavy_dir: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Pass 1's pre-selection and pass 2's selection key pairs with one salt per release."""
    salts: list[tuple[str, int]] = []
    real_pre, real_bound = carried.preselect, carried.bound_by_priority

    def pre(*args: Any) -> Any:
        salts.append(("pre", args[4]))
        return real_pre(*args)

    def bound(*args: Any) -> Any:
        salts.append(("bound", args[4]))
        return real_bound(*args)

    monkeypatch.setattr(arrow_backend, "preselect", pre)
    monkeypatch.setattr(arrow_backend, "bound_by_priority", bound)
    backend = dpf.scan(heavy_dir, batch_size=6_000, partitions=4).backend
    backend.exact(_request(rows_per_group=3, by=("g",)), np.random.default_rng(0))
    assert {"pre", "bound"} == {kind for kind, _ in salts}
    assert len({salt for _, salt in salts}) == 1
    backend.exact(_request(rows_per_group=3, by=("g",)), np.random.default_rng(1))
    assert len({salt for _, salt in salts}) == 2  # fresh per release


@pytest.mark.parametrize("ties", [False, True])
def test_private_keys_preselect_by_one_order_in_every_block(ties: bool,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """Private keys: two blocks pre-selected and one spilled plainly, selected again, is the
    selection over every row by one order of each unit's pairs: the top bits of the priority
    keyed on the key's word, then the key's canonical rank. With every priority tied (``ties``:
    as if every key's word collided) the rank alone decides, alike in every block, although
    each block's keys (and their local codes) differ."""
    from dpframe.core.exact import bounding
    if ties:  # the priority of private keys' pairs (bounding.pair_priorities)
        monkeypatch.setattr(bounding, "keyed_priority",
                            lambda a, b, salt: np.zeros(np.size(a), dtype=np.uint64))
    rng = np.random.default_rng(3)
    n = 3000
    u = rng.integers(0, 50, n)
    labels = np.array([f"k{i:02d}" for i in range(30)], dtype=object)
    g = labels[rng.integers(0, 30, n)]
    req = ComputeRequest((AggregateRequest(kind="rows", column=None),), by=("g",),
                         privacy_unit="u", rows_per_group=2, groups_per_unit=2, private_keys=True)
    salt = 99

    def block(rows: np.ndarray) -> pa.RecordBatch:
        return pa.record_batch({"u": pa.array(u[rows]), "g": pa.array(list(g[rows])),
                                "i": pa.array(rows)})

    parts = [np.flatnonzero(np.arange(n) % 3 == k) for k in range(3)]  # interleaved blocks
    pre = [carried.preselect(block(p), req, "u", None, salt, np.random.default_rng(s))
           for p, s in zip(parts[:2], (1, 2), strict=True)]
    plain = pa.Table.from_batches([block(parts[2])])
    table = arrow_backend._read_with_carried(lambda: plain, lambda: pa.Table.from_batches(pre))
    kept = table.column("i").to_numpy()[carried.bound_by_priority(
        table, req, "u", None, salt, np.random.default_rng(3))[0]]
    # the reference: every row at once, with the priorities each row was given
    everything = pa.Table.from_batches([block(np.concatenate(parts))])
    prio = np.concatenate([np.random.default_rng(s).integers(0, 2**64, p.size, dtype=np.uint64)
                           for p, s in zip(parts, (1, 2, 3), strict=True)])
    ref = carried._pairs(everything, req, "u", None, salt)
    order = everything.column("i").to_numpy()
    expected = order[ref.rows[select_by_priority(ref.units, ref.groups, ref.priority,
                                                 prio[ref.rows], 2, 2)]]
    assert sorted(kept) == sorted(expected)
    per_unit = pd.DataFrame({"u": u[kept], "g": g[kept]})
    assert per_unit.groupby("u")["g"].nunique().max() <= 2
    assert per_unit.groupby(["u", "g"]).size().max() <= 2
