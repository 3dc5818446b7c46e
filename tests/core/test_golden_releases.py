"""Golden releases: every aggregate, released with a fixed seed, gives the numbers, intervals,
provenance, ledger entries, reprs, dry runs, CLI rows and Arrow exports recorded in
``golden_releases.json``, byte for byte (key order included).

A refactoring of the plan and release types (review R2) must change none of them: same random
draws, same descriptions, same ledger. The file was written from the code before that
refactoring; a change that is *meant* to change a release (a new sampler with the same law but
other draws, a new description field) rewrites it with

    PYTHONPATH=. python -m tests.core.test_golden_releases --write

and says so in its commit. Seeded sessions are insecure (tests only).
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import warnings
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.cli.render import release_rows
from dpframe.export import to_arrow
from tests.engine._releases import recording

GOLDEN = Path(__file__).with_name("golden_releases.json")
Frame = Any  # a PrivateFrame


def _data() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 240
    df = pd.DataFrame({"g": rng.choice(["a", "b", "c"], n), "x": rng.normal(5, 4, n),
                       "i": rng.integers(0, 20, n), "uid": rng.integers(0, 60, n)})
    df.loc[::17, "x"] = np.nan
    return df


def _public(s: dpf.Session) -> Frame:
    return _data().dp(s, bounds={"x": (-5.0, 15.0), "i": (0, 19)}, keys={"g": ["a", "b", "c"]})


def _units(s: dpf.Session) -> Frame:
    return _data().dp(s, bounds={"x": (-5.0, 15.0), "i": (0, 19)}, keys={"g": ["a", "b", "c"]},
                      privacy_unit="uid", max_rows_per_unit=6, max_groups_per_unit=2)


def _private(s: dpf.Session) -> Frame:
    return _data().dp(s, bounds={"x": (-5.0, 15.0)}, privacy_unit="uid", max_rows_per_unit=3)


G = {"mechanism": "gaussian", "delta": 1e-6}
EDGES = [-5.0, 0.0, 2.5, 5.0, 15.0]

#: name -> (frame builder, the call). Every aggregate, ungrouped and grouped, each mechanism,
#: with and without ci=, in agg, with private keys, with diagnostics=, and dry runs.
CASES: dict[str, tuple[Callable[[dpf.Session], Frame], Callable[[Frame], Any]]] = {
    "count": (_public, lambda p: p.count(epsilon=0.5, ci=0.9)),
    "count_column": (_public, lambda p: p.count("x", epsilon=0.5)),
    "count_distinct": (_public, lambda p: p.count_distinct("i", epsilon=0.5)),
    "sum": (_public, lambda p: p.sum("x", epsilon=0.5, ci=0.9)),
    "sum_int": (_public, lambda p: p.sum("i", epsilon=0.5)),
    "sum_gaussian": (_public, lambda p: p.sum("x", epsilon=0.5, **G)),
    "mean": (_public, lambda p: p.mean("x", epsilon=0.5, ci=0.9)),
    "mean_gaussian": (_public, lambda p: p.mean("x", epsilon=0.5, ci=0.9, **G)),
    "var": (_public, lambda p: p.var("x", epsilon=0.5, ci=0.9)),
    "std": (_public, lambda p: p.std("x", epsilon=0.5, ddof=0)),
    "std_gaussian": (_public, lambda p: p.std("x", epsilon=0.5, ci=0.9, **G)),
    "median": (_public, lambda p: p.median("x", epsilon=0.5)),
    "quantile_ci": (_public, lambda p: p.quantile("x", 0.25, epsilon=0.5, ci=0.9)),
    "max_int": (_public, lambda p: p.max("i", epsilon=0.5, ci=0.9)),
    "min": (_public, lambda p: p.min("x", epsilon=0.5, resolution=1000)),
    "bounds": (_public, lambda p: p.bounds("x", epsilon=0.5)),
    "histogram": (_public, lambda p: p.histogram("x", EDGES, epsilon=0.5, ci=0.9)),
    "histogram_left": (_public, lambda p: p.histogram("x", 4, epsilon=0.5, right=False,
                                                      include_lowest=True)),
    "histogram_gaussian": (_public, lambda p: p.histogram("x", EDGES, epsilon=0.5, **G)),
    "grouped_count": (_units, lambda p: p.groupby("g").count(epsilon=0.5, ci=0.9)),
    "grouped_sum": (_units, lambda p: p.groupby("g").sum("x", epsilon=0.5)),
    "grouped_mean": (_units, lambda p: p.groupby("g").mean("x", epsilon=0.5, ci=0.9)),
    "grouped_var": (_units, lambda p: p.groupby("g").var("x", epsilon=0.5, ci=0.9)),
    "grouped_median_ci": (_units, lambda p: p.groupby("g").median("x", epsilon=0.5, ci=0.9)),
    "grouped_histogram": (_units, lambda p: p.groupby("g").histogram("x", EDGES, epsilon=0.5,
                                                                      ci=0.9)),
    "grouped_agg": (_units, lambda p: p.groupby("g").agg(
        {"x": ["count", "sum", "mean", "std", "median"], "i": ["count_distinct", "max"]},
        epsilon=1.0, ci=0.9)),
    "grouped_agg_gaussian": (_units, lambda p: p.groupby("g").agg(
        {"x": ["sum", "mean", "var", "min"]}, epsilon=1.0, ci=0.9, **G)),
    "diagnostics": (_units, lambda p: p.groupby("g").mean("x", epsilon=0.5, diagnostics=0.1)),
    "private_count": (_private, lambda p: p.groupby("g", keys="private").count(
        epsilon=8.0, delta=1e-6)),
    "private_sum": (_private, lambda p: p.groupby("g", keys="private").sum(
        "x", epsilon=8.0, delta=1e-6, ci=0.9)),
    "private_median": (_private, lambda p: p.groupby("g", keys="private").median(
        "x", epsilon=8.0, delta=1e-6)),
    "describe": (_public, lambda p: p.describe(epsilon=1.0)),
    "dry_count": (_units, lambda p: p.groupby("g").count(epsilon=0.5, dry_run=True)),
    "dry_mean": (_public, lambda p: p.mean("x", epsilon=0.5, dry_run=True, **G)),
    "dry_var": (_units, lambda p: p.groupby("g").var("x", epsilon=0.5, dry_run=True)),
    "dry_quantile": (_public, lambda p: p.quantile("x", 0.9, epsilon=0.5, ci=0.8,
                                                   dry_run=True)),
    "dry_bounds": (_public, lambda p: p.bounds("x", epsilon=0.5, dry_run=True)),
    "dry_histogram": (_public, lambda p: p.histogram("x", EDGES, epsilon=0.5, dry_run=True)),
    "dry_agg": (_units, lambda p: p.groupby("g").agg({"x": ["sum", "mean", "max"]},
                                                     epsilon=1.0, dry_run=True, **G)),
}


def plain(v: Any) -> Any:
    """JSON-able, exact: floats by their shortest repr (round trip), Fractions as text,
    non-finite floats as text, dict order kept."""
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [plain(x) for x in v]
    if isinstance(v, np.ndarray):
        return plain(v.tolist())
    if isinstance(v, bool | str) or v is None:
        return v
    if isinstance(v, np.generic):
        return plain(v.item())
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else repr(v)
    if isinstance(v, Fraction):
        return f"Fraction({v})"
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return f"{type(v).__name__}:{v}"


def _result(r: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type(r).__name__, "repr": repr(r)}
    if isinstance(r, pd.DataFrame | pd.Series):
        out["values"] = r.reset_index().to_dict(orient="split")
        out["attrs"] = r.attrs.get("dp")
    elif isinstance(r, tuple):
        out["values"] = [(float(v), getattr(v, "provenance", None)) for v in r]
    elif isinstance(r, dict):
        out["values"] = r
    else:
        out["values"] = float(r)
        out["attrs"] = getattr(r, "provenance", None)
        out["interval"] = [getattr(r, "lower", None), getattr(r, "upper", None)]
    return out


def record(name: str) -> dict[str, Any]:
    """Run case ``name`` on a fresh seeded session: everything a release shows."""
    frame, call = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = dpf.Session(20.0, 1e-3, seed=11)
        with recording() as published:
            r = call(frame(session))
    out = _result(r)
    core = published.last(session)
    if core is not None:
        out["cli_rows"] = release_rows(core)
        table = to_arrow(r if not isinstance(r, tuple) else r[0], provenance=core)
        # the export's metadata repeats the provenance in its own layout: its digest
        out["arrow"] = {"schema": str(table.schema).split("-- schema metadata --")[0],
                        "data": table.to_pydict(),
                        "metadata": digest(_document(table.schema.metadata)),
                        "fields": digest([dict(f.metadata or {}) for f in table.schema])}
    out["ledger"] = [_entry(e) for e in session.ledger_store.entries()]
    return plain(out)


def digest(v: Any) -> str:
    """The sha256 of ``v``'s exact JSON text (key order included)."""
    return hashlib.sha256(json.dumps(plain(v)).encode()).hexdigest()


def _document(metadata: dict[bytes, bytes] | None) -> dict[str, Any]:
    """An export's document without the time it was written."""
    doc: dict[str, Any] = json.loads((metadata or {})[b"dpframe"])
    doc.pop("exported_at", None)
    return doc


def _entry(e: dict[str, Any]) -> dict[str, Any]:
    """A ledger entry without its time; the plan it records (the provenance again) by digest."""
    out = {k: v for k, v in e.items() if k != "time"}
    details = dict(out.get("details") or {})
    if "plan" in details:
        details["plan"] = digest(details["plan"])
    out["details"] = details
    return out


def _golden() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return loaded


def test_every_aggregate_has_a_golden_release() -> None:
    from dpframe.core.aggregates import NAMES

    called = " ".join(CASES)
    assert set(CASES) == set(_golden())
    assert all(n in called or n in {"quantile", "max", "min"} for n in NAMES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_release_is_unchanged(name: str) -> None:
    fresh = json.dumps(record(name), indent=1)
    assert fresh == json.dumps(_golden()[name], indent=1)


def _write() -> Iterator[str]:
    out = {name: record(name) for name in CASES}
    GOLDEN.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    yield f"wrote {GOLDEN} ({GOLDEN.stat().st_size:,} bytes, {len(out)} releases)"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python -m tests.core.test_golden_releases --write")
    print(*_write())
