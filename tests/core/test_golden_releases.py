"""Golden releases: every aggregate, released with a fixed seed, gives the numbers, intervals,
provenance, ledger entries, reprs, dry runs, CLI rows and Arrow exports recorded in
``golden_releases.json``, byte for byte (key order included), except the figures derived with
``exp`` and ``log``.

What a seed makes exact is pinned exactly: released values (granular noise on an exact grid,
then IEEE ``+ - * / sqrt``, which are correctly rounded on every platform), keys, order,
dtypes, reprs, CLI rows, budgets. Half-widths and rank errors (and the interval ends computed
from them) go through numpy's elementwise ``exp``/``log`` kernels, whose last bits differ with
the CPU's SIMD path and the library build (issue 48: 130.7025280881149 on one machine,
...1145 on another). Those are compared to :data:`RELATIVE_TOLERANCE`, and the digests that pin
the Arrow metadata and the ledger's plan are computed with them masked, the masked figures
recorded beside the digest and compared with the same tolerance. A real change of an exact
interval (a rank-based one moves by a grid step) is far above that tolerance.

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
    "nunique": (_public, lambda p: p.nunique("i", epsilon=0.5)),
    "mode": (_public, lambda p: p.mode("i", epsilon=0.5)),
    "grouped_mode": (_units, lambda p: p.groupby("g").mode("i", epsilon=0.5)),
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
    "dry_count": (_units, lambda p: p.explain("count", by="g", epsilon=0.5)),
    "dry_mean": (_public, lambda p: p.explain("mean", "x", epsilon=0.5, **G)),
    "dry_var": (_units, lambda p: p.explain("var", "x", by="g", epsilon=0.5)),
    "dry_quantile": (_public, lambda p: p.explain("quantile", "x", 0.9, epsilon=0.5, ci=0.8)),
    "dry_bounds": (_public, lambda p: p.explain("bounds", "x", epsilon=0.5)),
    "dry_histogram": (_public, lambda p: p.explain("histogram", "x", EDGES, epsilon=0.5)),
    "dry_agg": (_units, lambda p: p.explain("agg", {"x": ["sum", "mean", "max"]}, by="g",
                                            epsilon=1.0, **G)),
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


#: The relative tolerance of a derived figure: a few ulps of its last bits, a million times
#: below any change of the release it describes.
RELATIVE_TOLERANCE = 1e-12
#: The placeholder of a derived figure inside a digested document.
MASK = "<derived>"


def is_derived(key: str) -> bool:
    """Whether a figure recorded under ``key`` (a dict key or a column name) is derived with
    ``exp``/``log``: a half-width, a rank error, an interval end, or a list of masked figures."""
    return ("half_width" in key or key in {"rank_error", "lower", "upper", "interval"}
            or key.endswith(("_lower", "_upper", "_derived")))


def mask(v: Any, derived: bool = False) -> tuple[Any, list[float]]:
    """``v`` with its derived floats replaced by :data:`MASK` (JSON text values parsed first),
    and those floats in order: a digest of the first pins everything exact."""
    found: list[float] = []

    def walk(x: Any, under: bool) -> Any:
        if isinstance(x, dict):
            return {k: walk(y, under or is_derived(str(k))) for k, y in x.items()}
        if isinstance(x, list):
            return [walk(y, under) for y in x]
        if isinstance(x, str) and x.startswith("{"):
            return walk(json.loads(x), under)
        if under and isinstance(x, float):
            found.append(x)
            return MASK
        return x

    return walk(plain(v), derived), found


def _column_name(c: Any) -> str:
    return str(c[-1] if isinstance(c, list) else c)


def mismatches(fresh: Any, golden: Any, path: str = "", derived: bool = False) -> Iterator[str]:
    """Where ``fresh`` differs from ``golden`` (both JSON-loaded): exact everywhere (key order
    too), derived floats within :data:`RELATIVE_TOLERANCE`. In a ``split`` frame, each cell is
    judged by its column's name."""
    if isinstance(golden, dict) and isinstance(fresh, dict):
        if list(fresh) != list(golden):
            yield f"{path}: keys {list(fresh)} != {list(golden)}"
            return
        if isinstance(golden.get("columns"), list) and isinstance(golden.get("data"), list):
            names = [_column_name(c) for c in golden["columns"]]
            rows_f, rows_g = fresh["data"], golden["data"]
            yield from mismatches(fresh["columns"], golden["columns"], f"{path}/columns")
            yield from mismatches(len(rows_f), len(rows_g), f"{path}/data rows")
            for i, (rf, rg) in enumerate(zip(rows_f, rows_g, strict=False)):
                for name, a, b in zip(names, rf, rg, strict=False):
                    yield from mismatches(a, b, f"{path}/data[{i}]/{name}",
                                          derived or is_derived(name))
            rest = {k for k in golden if k not in ("columns", "data")}
            for k in sorted(rest):
                yield from mismatches(fresh[k], golden[k], f"{path}/{k}", derived)
            return
        for k in golden:
            yield from mismatches(fresh[k], golden[k], f"{path}/{k}", derived or is_derived(k))
    elif isinstance(golden, list) and isinstance(fresh, list):
        if len(fresh) != len(golden):
            yield f"{path}: length {len(fresh)} != {len(golden)}"
        for i, (a, b) in enumerate(zip(fresh, golden, strict=False)):
            yield from mismatches(a, b, f"{path}[{i}]", derived)
    elif (derived and isinstance(golden, float) and isinstance(fresh, float)
          and type(fresh) is type(golden)):
        if not math.isclose(fresh, golden, rel_tol=RELATIVE_TOLERANCE, abs_tol=0.0):
            yield f"{path}: {fresh!r} != {golden!r} (derived, rel. tol. {RELATIVE_TOLERANCE})"
    elif type(fresh) is not type(golden) or fresh != golden:
        yield f"{path}: {fresh!r} != {golden!r}"


def _result(r: Any) -> dict[str, Any]:
    # a dict (a dry run) is compared field by field below: its repr would pin the last bits of
    # its derived figures (half-widths, rank errors) as text
    out: dict[str, Any] = {"type": type(r).__name__,
                           "repr": None if isinstance(r, dict) else repr(r)}
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
        document, document_derived = mask(_document(table.schema.metadata))
        fields, fields_derived = mask([dict(f.metadata or {}) for f in table.schema])
        out["arrow"] = {"schema": str(table.schema).split("-- schema metadata --")[0],
                        "data": table.to_pydict(),
                        "metadata": digest(document), "metadata_derived": document_derived,
                        "fields": digest(fields), "fields_derived": fields_derived}
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
        plan, details["plan_derived"] = mask(details["plan"])
        details["plan"] = digest(plan)
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
    fresh = json.loads(json.dumps(record(name)))
    wrong = list(mismatches(fresh, _golden()[name]))
    assert not wrong, "\n".join(wrong[:20])


def test_the_comparison_fails_on_a_real_change() -> None:
    """Derived figures may move in their last bits, nothing else: one ulp of a released value,
    a derived figure moved by 1e-9, a digest or a key order each fail."""
    golden = _golden()["mean"]

    def changed(edit: Callable[[dict[str, Any]], None]) -> list[str]:
        fresh = json.loads(json.dumps(golden))
        edit(fresh)
        return list(mismatches(fresh, golden))

    measure = "ci_half_width_times_rows"
    base = golden["attrs"]["measures"][0][measure]
    assert not changed(lambda f: f["attrs"]["measures"][0].update(
        {measure: math.nextafter(math.nextafter(base, math.inf), math.inf)}))
    assert changed(lambda f: f["attrs"]["measures"][0].update({measure: base * (1 + 1e-9)}))
    assert changed(lambda f: f.update(values=math.nextafter(golden["values"], math.inf)))
    assert changed(lambda f: f["arrow"].update(metadata="0" * 64))
    assert changed(lambda f: f.update(attrs=dict(reversed(list(golden["attrs"].items())))))
    # an interval end is derived; a split frame's cell is judged by its column
    lower = golden["arrow"]["data"]["lower"][0]
    assert not changed(lambda f: f["arrow"]["data"]["lower"].__setitem__(
        0, math.nextafter(lower, math.inf)))
    grouped = _golden()["grouped_mean"]["values"]
    col = [c[-1] if isinstance(c, list) else c for c in grouped["columns"]].index("x")

    def bump(f: dict[str, Any]) -> None:
        f["data"][0][col] = math.nextafter(f["data"][0][col], math.inf)

    fresh = json.loads(json.dumps(grouped))
    bump(fresh)
    assert list(mismatches(fresh, grouped))


def test_masked_digests_ignore_only_derived_figures() -> None:
    doc = {"noise_scale": 4.0, "measures": [{"ci_half_width": 1.5, "value": 2.0}]}
    masked, derived = mask(doc)
    assert derived == [1.5]
    assert digest(masked) == digest(mask({**doc, "measures": [{"ci_half_width": 1.5000000001,
                                                                "value": 2.0}]})[0])
    assert digest(masked) != digest(mask({**doc, "noise_scale": 4.000000001})[0])


def _write() -> Iterator[str]:
    out = {name: record(name) for name in CASES}
    GOLDEN.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    yield f"wrote {GOLDEN} ({GOLDEN.stat().st_size:,} bytes, {len(out)} releases)"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python -m tests.core.test_golden_releases --write")
    print(*_write())
