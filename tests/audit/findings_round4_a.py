"""Findings 63 and 64 (privacy round 4, issue 43 items 1 and 7): ``diagnostics=``'s
``rows_dropped`` on scans and Dask, and what its provenance states.

63. ``rows_dropped`` is a sum of per-unit terms, each ``min(rows dropped, D)``: one unit moves it
by at most ``D``. A scan pre-selects a partition's slice of a batch once one unit makes it heavy
(:mod:`dpframe.backends.arrow.carried`), and the rows that pre-selection (and pass 2's selection
by priority) dropped were never counted: adding one unit of 1,500 rows written first took the
count of 1,000 units of 3 rows (``T = 1``) from 1,000 to 750, a shift of 250 against a stated
sensitivity of 1. Dask pre-selects in every partition, and counted only the bucket's final drops
(0 where pandas counts 300): no leak (each unit's term stays below ``D``), but not the law the
count states. Both scenarios are exact: the exact half of the release (the real backends, no
noise), its integer noise scale ``t`` and the charge. The broken control hands no pre-selected
drops on (``carried_drops`` giving zeros), which is the old count.

64. The provenance states each count's epsilon, noise scale, sensitivity and the cap
``rows_dropped_cap`` (tested in tests/fronts/test_diagnostics.py; no privacy loss to measure).
"""

from __future__ import annotations

import contextlib
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpframe as dpf
from dpframe.engine.release import compute_exact

EPSILON, DIAGNOSTICS = 0.5, 0.5
BOUNDS = {"x": (0.0, 10.0)}


def _exact(obj: Any, by: str | None = None, keys: str | None = None,
           seed: int = 0) -> tuple[np.ndarray, float, float]:
    """The exact diagnostic counts of a sum of ``x`` with ``diagnostics=``, the noise's
    integer scale and the session's charge (``T = 1``, unit ``u``)."""
    s = dpf.Session(1e9, 0.5, privacy_unit="u", seed=seed)
    public = {"keys": {"g": ["a", "b", "c"]}} if by and keys is None else {}
    priv = obj.dp(s, bounds=BOUNDS, privacy_unit="u", max_rows_per_unit=1, **public)
    extra = {"delta": 1e-6} if keys == "private" else {}
    q = priv.query("sum", "x", by=by, keys=keys, epsilon=EPSILON, diagnostics=DIAGNOSTICS,
                   **extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        computed = compute_exact(s, q, priv._backend)
    assert computed.defect is None and computed.plan.diagnostics is not None
    diag = computed.exact.diagnostics
    assert diag is not None
    return (np.array(diag, dtype=np.int64), float(computed.plan.diagnostics.noise.int_scale),
            float(computed.plan.cost.epsilon))


def _heavy_first() -> tuple[pd.DataFrame, pd.DataFrame]:
    """D: 1,000 units of 3 rows; D': one more unit of 1,500 rows, written first."""
    d = pd.DataFrame({"u": np.repeat(np.arange(1000), 3), "x": np.ones(3000)})
    heavy = pd.DataFrame({"u": np.full(1500, 10**6), "x": np.ones(1500)})
    return d, pd.concat([heavy, d], ignore_index=True)


def finding_scan_heavy_slice_drops(seed: int) -> tuple[float, float, float, str]:
    """63 (scan). Privacy loss of the pair through the scan (batches of 2,000, 4 partitions):
    the query's epsilon plus the counts' L1 shift over ``t``, against the charge."""
    counts = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, df in enumerate(_heavy_first()):
            path = Path(tmp) / f"d{i}.parquet"
            pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)
            counts.append(_exact(dpf.scan(path, batch_size=2000, partitions=4), seed=seed))
    (c1, t, charged), (c2, _, _) = counts
    shift = float(np.abs(c2 - c1).sum())
    return EPSILON + shift / t, charged, 0.0, (
        f"scan counts (clamped, dropped) {c1.tolist()} -> {c2.tolist()}, integer scale {t:g}")


def _pairs_per_partition() -> pd.DataFrame:
    """300 units of 2 rows each, both rows in one Dask partition, in three keys."""
    n = 300
    return pd.DataFrame({"u": np.repeat(np.arange(n), 2),
                         "g": np.repeat(np.array(["a", "b", "c"])[np.arange(n) % 3], 2),
                         "x": np.ones(2 * n)})


def finding_dask_partition_drops(seed: int) -> tuple[float, float, float, str]:
    """63 (Dask). The same frame on pandas and on Dask (2 partitions: each unit's two rows
    meet in its partition's pre-selection), ungrouped, public keys (the bucket's group codes)
    and private keys (the pandas backend in the bucket): the counts' L1 shift over ``t``;
    claim 0 (one data set, one law: the difference of the exact counts is no noise's)."""
    df = _pairs_per_partition()
    shift, t, got = 0.0, 1.0, []
    for by, keys in ((None, None), ("g", None), ("g", "private")):
        base, t, _ = _exact(df, by, keys, seed)
        dask, _, _ = _exact(dd.from_pandas(df, npartitions=2, sort=False), by, keys, seed)
        shift += float(np.abs(dask - base).sum())
        got.append(f"{base[1]}/{dask[1]}")
    return shift / t, 0.0, 0.0, (
        f"rows dropped pandas/Dask (ungrouped, public, private): {', '.join(got)}; "
        f"integer scale {t:g}")


@contextlib.contextmanager
def drops_not_carried() -> Iterator[None]:
    """BROKEN on purpose: pre-selections hand no dropped rows on (zeros), the old count: a
    scan's heavy slice and a Dask partition lose their drops."""
    from dpframe.backends.arrow import carried
    from dpframe.backends.dask import exchange

    def zeros(units: np.ndarray, groups: np.ndarray, keep: np.ndarray,
              before: np.ndarray | None = None) -> np.ndarray:
        return np.zeros(int(np.count_nonzero(keep)), dtype=np.int64)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(carried, "carried_drops", zeros)
        mp.setattr(exchange, "carried_drops", zeros)
        yield


def _stated(df: pd.DataFrame, seed: int) -> tuple[np.ndarray, dict[str, Any], float, float]:
    """The release of finding 61's grouped sum with ``diagnostics=1`` on ``df``: its exact
    counts, what its provenance states of each released count (as a reader of the result
    sees it), the query's epsilon and the charge it states."""
    from .findings_diag import BOUNDS as DIAG_BOUNDS
    from .findings_diag import GROUPS, OPTIONS

    s = dpf.Session(1e9, privacy_unit="u", seed=seed)
    priv = df.dp(s, bounds={"x": DIAG_BOUNDS}, keys={"g": list(range(GROUPS))}, **OPTIONS)
    q = priv.query("sum", "x", by="g", epsilon=0.25, diagnostics=1.0)
    computed = compute_exact(s, q, priv._backend)
    assert computed.exact.diagnostics is not None
    r = priv.groupby("g").sum("x", epsilon=0.25, diagnostics=1.0)
    stated = {name: dict(v.attrs["dp"]) for name, v in r.attrs["dp"]["diagnostics"].items()}
    return (np.array(computed.exact.diagnostics, dtype=np.int64), stated,
            float(r.attrs["dp"]["epsilon"]), float(r.attrs["dp"]["charge_epsilon"]))


def finding_diagnostics_provenance(seed: int) -> tuple[float, float, float, str]:
    """64. The loss an auditor holding only the result can vouch for: the stated query
    epsilon plus each count's exact shift over its *stated* noise scale (finding 61's pair),
    against the stated charge; a count whose provenance states no noise scale, sensitivity,
    epsilon or (``rows_dropped``) cap vouches for nothing (infinite)."""
    from .findings_diag import _frames

    d, d2 = _frames()
    c1, stated, eps_query, charged = _stated(d, seed)
    c2, _, _, _ = _stated(d2, seed)
    loss = eps_query
    for i, name in enumerate(("rows_clamped", "rows_dropped")):
        s = stated[name]
        needed = ("noise_scale", "sensitivity", "epsilon",
                  *(("rows_dropped_cap",) if name == "rows_dropped" else ()))
        if any(k not in s for k in needed) or abs(int(c2[i] - c1[i])) > s["sensitivity"]:
            return float("inf"), charged, 0.0, f"{name}: provenance states {sorted(s)}"
        loss += abs(int(c2[i] - c1[i])) / float(s["noise_scale"])
    return loss, charged, 0.0, (
        f"stated noise scale {stated['rows_dropped']['noise_scale']:g}, cap "
        f"{stated['rows_dropped']['rows_dropped_cap']}; shift {np.abs(c2 - c1).tolist()}")


@contextlib.contextmanager
def provenance_without_noise() -> Iterator[None]:
    """BROKEN on purpose: each count's provenance states its value and interval only (the
    old provenance: no epsilon, noise scale, sensitivity or cap)."""
    from dpframe.core.diagnostics import DiagnosticsPlan

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DiagnosticsPlan, "count_description", lambda self, name, level=0.95: {})
        yield
