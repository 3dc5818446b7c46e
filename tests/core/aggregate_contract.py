"""The contract every aggregate of the registry passes (as Tumult Core's ``MeasurementTests``).

:class:`AggregateContract` is parametrized over :data:`dpframe.core.aggregates.AGGREGATES`:
each aggregate gives one :class:`Example` (a front call and an oracle of the exact statistics
its noise protects), and the same tests run for all of them:

* **sensitivity**: the planned sensitivity of every noise part bounds, and under add/remove
  equals, the largest change a brute-force enumeration of neighbouring datasets makes to an
  oracle written here from docs/privacy.md#sensitivities (numpy, independent of the library);
* **interval coverage**: seeded releases' intervals cover the true value about as often as
  their level says (a loose, fast check; ``test_coverage.py`` has the tight ones);
* **non-interference**: for neighbouring datasets everything but the noisy values is the same
  (labels, dtypes, columns, provenance fields, the charge), on every backend;
* **bad input** is refused with a typed ``DPError`` before anything is charged;
* **provenance**: every result carries its release's fields;
* **every backend** of the registry (``tests/backends/contract.py``: pandas, scans of Arrow
  tables and Parquet, Polars, Dask, DuckDB, and Spark with its mark) answers with the same
  structure.

A new aggregate fails ``test_every_aggregate_has_an_example`` until its example is added here.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core.aggregates import AGGREGATES
from tests.backends.contract import Data, built, params

LO, HI = -4.0, 10.0  # declared bounds of x (dyadic: fixed point represents them exactly)
MID, H = (LO + HI) / 2, (HI - LO) / 2
R, K = 2, 2  # rows per unit and group, groups per unit
KEYS = ("a", "b")
EDGES = (-4.0, 0.0, 5.0, 10.0)
Q = (1, 4)  # the quantile example's level, a / b
GRID = np.linspace(LO, HI, 15)  # its candidates (resolution=15)
#: The mode example's declared candidates of x (keys=): values of BASE and VALUES, not HI + 5
MODE_VALUES = (LO, 1.0, 2.5, MID, 9.0, HI)
#: Values a new unit's rows take: the bounds, the midpoint, outside the bounds, and a value
#: of its own per row (a new distinct value).
VALUES = (LO, HI, MID, HI + 5, None)

Stat = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (group codes, x) -> statistic


# -- the oracles: exact statistics per group, from docs/privacy.md, in numpy ------------------

def _per_group(g: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.array([v[g == i].sum() for i in range(len(KEYS))], dtype=np.float64)


def _clip(x: np.ndarray) -> np.ndarray:
    return np.clip(x[~np.isnan(x)], LO, HI)


def _rows(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    return _per_group(g, np.ones(len(g)))


def _distinct(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.array([len(set(x[(g == i) & ~np.isnan(x)].tolist())) for i in range(len(KEYS))],
                    dtype=np.float64)


def _sum(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    return _per_group(g[~np.isnan(x)], _clip(x))


def _shifted_sum(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    return _per_group(g[~np.isnan(x)], _clip(x) - MID)


def _squares(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    return _per_group(g[~np.isnan(x)], (_clip(x) - MID) ** 2 - H * H / 2)


def _utilities(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Minus the rank error of each candidate, per group (flattened): a row below candidate
    ``j`` (its cell, the first candidate >= its clamped value, is before ``j``) counts
    ``b - a``, a row above counts ``a``."""
    a, b = Q
    cell = np.searchsorted(GRID, _clip(x), side="left")
    gg = g[~np.isnan(x)]
    out = []
    for i in range(len(KEYS)):
        c = cell[gg == i]
        below = np.array([(c < j).sum() for j in range(len(GRID))])
        above = np.array([(c > j).sum() for j in range(len(GRID))])
        out.append(-np.abs((b - a) * below - a * above))
    return np.concatenate(out).astype(np.float64)


def _candidate_counts(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The mode's utilities: rows equal to each declared candidate, per group (flattened)."""
    return np.concatenate([[((g == i) & (x == v)).sum() for v in MODE_VALUES]
                           for i in range(len(KEYS))]).astype(np.float64)


def _bins(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Rows per bin, pd.cut's bins (right-closed, the lowest edge excluded)."""
    v = x[~np.isnan(x)]
    return np.array([((v > lo) & (v <= hi)).sum() for lo, hi in itertools.pairwise(EDGES)],
                    dtype=np.float64)


# -- the examples -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Example:
    """One aggregate's example: its front call, the oracle of each noise part (the description
    field holding the part's planned sensitivity, the statistic, the norm), the true value of
    its released number for coverage (None: no interval) and arguments it must refuse."""

    call: Callable[..., Any]
    grouped: bool
    parts: Mapping[str, tuple[Stat, str]]
    truth: Callable[[pd.DataFrame], np.ndarray] | None
    bad: tuple[dict[str, Any], ...] = ()
    #: declared values (``keys=``) beside the group keys, for the aggregate's own use
    keys: Mapping[str, tuple[object, ...]] = field(default_factory=dict)

    @property
    def ci(self) -> dict[str, Any]:
        """``ci=`` where the aggregate releases an interval."""
        return {} if self.truth is None else {"ci": 0.9}


def _by_group(fn: Callable[[pd.Series], float]) -> Callable[[pd.DataFrame], np.ndarray]:
    def truth(df: pd.DataFrame) -> np.ndarray:
        return np.array([fn(df.loc[df["g"] == k, "x"]) for k in KEYS], dtype=np.float64)
    return truth


def _clipped(s: pd.Series) -> pd.Series:
    return s.dropna().clip(LO, HI)


EXAMPLES: dict[str, Example] = {
    "count": Example(lambda p, **kw: p.count(**kw), True, {"sensitivity": (_rows, "l1")},
                     _by_group(len), ({"mechanism": "uniform"},)),
    "count_distinct": Example(lambda p, **kw: p.count_distinct("x", **kw), True,
                              {"sensitivity": (_distinct, "l1")},
                              _by_group(lambda s: s.dropna().nunique()),
                              ({"column": "nope"},)),
    "sum": Example(lambda p, **kw: p.sum("x", **kw), True, {"sensitivity": (_sum, "l1")},
                   _by_group(lambda s: _clipped(s).sum()), ({"column": "g"},)),
    "mean": Example(lambda p, **kw: p.mean("x", **kw), True,
                    {"sensitivity": (_shifted_sum, "l1")},
                    _by_group(lambda s: _clipped(s).mean()), ({"ci": 1.5},)),
    "var": Example(lambda p, **kw: p.var("x", **kw), True,
                   {"sensitivity": (_shifted_sum, "l1"), "square_sensitivity": (_squares, "l1")},
                   _by_group(lambda s: _clipped(s).var()), ({"ddof": -1},)),
    "std": Example(lambda p, **kw: p.std("x", **kw), True,
                   {"sensitivity": (_shifted_sum, "l1"), "square_sensitivity": (_squares, "l1")},
                   _by_group(lambda s: _clipped(s).std()), ({"delta": -0.5},)),
    "quantile": Example(lambda p, **kw: p.quantile("x", Q[0] / Q[1], resolution=len(GRID),
                                                   **kw), True,
                        {"utility_sensitivity": (_utilities, "linf")}, None,
                        ({"accuracy": 5.0},)),  # a half-width in values: data-dependent
    "histogram": Example(lambda p, **kw: p.histogram("x", list(EDGES), **kw), False,
                         {"sensitivity": (_bins, "l1")},
                         lambda df: _bins(np.zeros(len(df), dtype=np.int64),
                                          df["x"].to_numpy(dtype=np.float64)),
                         ({"bins": [3.0, 1.0]},)),
    "mode": Example(lambda p, **kw: p.mode("x", **kw), True,
                    {"utility_sensitivity": (_candidate_counts, "linf")}, None,
                    ({"ci": 0.9},), keys={"x": MODE_VALUES}),
}


# -- datasets and their neighbours ------------------------------------------------------------

Unit = tuple[tuple[int, float], ...]  # one unit's rows: (group code, x)

#: The base dataset: every unit within the bounds (<= R rows per group, <= K groups, <= R rows
#: in all, so the ungrouped bound binds no more than the grouped one).
BASE: dict[int, Unit] = {1: ((0, 1.0), (1, 9.0)), 2: ((1, 2.5),), 3: ((0, 10.0), (0, -4.0))}


def new_units(grouped: bool) -> Iterator[Unit]:
    """Every unit of at most R rows per group in at most K groups (ungrouped: R rows in all)
    whose values are among :data:`VALUES` (``None``: a fresh value of its own)."""
    rows = [(gi, v) for gi in range(len(KEYS)) for v in VALUES]
    limit = R * K if grouped else R
    for n in range(1, limit + 1):
        for combo in itertools.combinations_with_replacement(rows, n):
            per_group = [sum(1 for gi, _ in combo if gi == i) for i in range(len(KEYS))]
            if max(per_group) > R:
                continue
            yield tuple((gi, LO + 0.37 * (j + 1) if v is None else v)
                        for j, (gi, v) in enumerate(combo))


def as_arrays(units: Mapping[int, Unit]) -> tuple[np.ndarray, np.ndarray]:
    rows = [r for u in units.values() for r in u]
    return (np.array([g for g, _ in rows], dtype=np.int64),
            np.array([x for _, x in rows], dtype=np.float64))


def neighbours(relation: str, grouped: bool) -> Iterator[dict[int, Unit]]:
    """Every neighbour of :data:`BASE` under ``relation`` within the enumerated units."""
    if relation == "add_remove":
        for uid in BASE:
            yield {u: rows for u, rows in BASE.items() if u != uid}
        for unit in new_units(grouped):
            yield {**BASE, 99: unit}
        return
    for uid in BASE:
        for unit in new_units(grouped):
            yield {**BASE, uid: unit}


def frame(units: Mapping[int, Unit]) -> pd.DataFrame:
    rows = [(uid, KEYS[g], x) for uid, u in units.items() for g, x in u]
    return pd.DataFrame(rows, columns=["uid", "g", "x"]).astype({"uid": "int64", "x": "float64"})


def coverage_frame(rows: int = 300) -> pd.DataFrame:
    """Groups of a few hundred rows (the intervals of ratios, var and std are calibrated by
    simulation around the estimate, for groups well above a handful of rows), some outside the
    bounds, some missing; one row per unit."""
    rng = np.random.default_rng(2024)
    x = rng.uniform(LO - 2, HI + 2, 2 * rows)
    x[::17] = np.nan
    return pd.DataFrame({"uid": np.arange(2 * rows), "g": np.repeat(KEYS, rows), "x": x})


def options(ex: Example | None = None, **extra: Any) -> dict[str, Any]:
    keys = {"g": list(KEYS), **({} if ex is None else {k: list(v) for k, v in ex.keys.items()})}
    return {"bounds": {"x": (LO, HI)}, "keys": keys, "privacy_unit": "uid",
            "max_rows_per_group": R, "max_groups_per_unit": K, **extra}


def backend_frame(backend: str, df: pd.DataFrame) -> AbstractContextManager[Any]:
    """The object whose ``.dp(...)`` answers on ``backend`` (the registry's factory; scans
    read batches of 2 rows)."""
    return built(backend, Data.of(df, batch_size=2))


BACKENDS = params()


def release(ex: Example, df: pd.DataFrame, session: dpf.Session, backend: str = "pandas",
            **kw: Any) -> Any:
    with backend_frame(backend, df) as data, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        priv = data.dp(session, **options(ex))
        return ex.call(priv.groupby("g") if ex.grouped else priv, **kw)


def structure(result: Any) -> tuple[object, ...]:
    """Everything of a result but its noisy values: type, labels, columns, dtypes, and the
    provenance's fields with their public values (ledger and session fields, and the digest of
    the noisy values, aside)."""
    prov = dict(getattr(result, "attrs", {}).get("dp", {}))
    for k in ("ledger_entry", "ledger_head", "session", "warnings", "values_digest",
              "derived_from"):
        prov.pop(k, None)
    shape: tuple[object, ...]
    if isinstance(result, pd.DataFrame):
        shape = (list(result.index), list(result.columns), [str(t) for t in result.dtypes])
    elif isinstance(result, pd.Series):
        shape = (list(result.index), result.name, str(result.dtype))
    else:
        shape = ()
    return (type(result).__name__, repr(shape), repr(sorted(prov.items(), key=lambda i: i[0])))


def values_of(result: Any) -> np.ndarray:
    if isinstance(result, pd.DataFrame):
        return result.iloc[:, 0].to_numpy(dtype=np.float64)
    return np.asarray(result, dtype=np.float64).reshape(-1)


def interval_of(result: Any) -> tuple[np.ndarray, np.ndarray]:
    return (result["lower"].to_numpy(dtype=np.float64),
            result["upper"].to_numpy(dtype=np.float64))


def session(seed: int | None = 0, relation: str = "add_remove") -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(epsilon=1e6, delta=1e-3, seed=seed, neighbouring=relation)


class AggregateContract:
    """The tests every aggregate passes; a subclass supplies the ``op`` fixture."""

    def test_every_aggregate_has_an_example(self) -> None:
        assert set(EXAMPLES) == set(AGGREGATES), "add the new aggregate's Example"

    @pytest.mark.parametrize("relation", ["add_remove", "change_one"])
    def test_sensitivity_bounds_every_neighbour(self, op: str, relation: str) -> None:
        ex = EXAMPLES[op]
        plan = ex.call(frame(BASE).dp(session(None, relation), **options(ex)).pipe(
            lambda p: p.groupby("g") if ex.grouped else p), epsilon=1, dry_run=True)
        (described,) = plan["measures"]
        base_g, base_x = as_arrays(BASE)
        for key, (stat, norm) in ex.parts.items():
            planned = float(described[key])
            base = stat(base_g, base_x)
            worst = 0.0
            for nb in neighbours(relation, ex.grouped):
                diff = np.abs(stat(*as_arrays(nb)) - base)
                worst = max(worst, float(diff.sum() if norm == "l1" else diff.max()))
            assert worst <= planned * (1 + 1e-9), f"{op} {key}: a neighbour moves it by {worst}"
            if relation == "add_remove":  # the worst case is among the enumerated neighbours
                assert worst == pytest.approx(planned, rel=1e-9), f"{op} {key} is not tight"

    def test_intervals_cover(self, op: str) -> None:
        ex = EXAMPLES[op]
        if ex.truth is None:
            r = release(ex, frame(BASE), session(), epsilon=1)
            assert "ci_half_width" not in r.attrs["dp"]["measures"][0]  # no interval claimed
            return
        df = coverage_frame()
        truth = ex.truth(df)
        n, level = 100, 0.9
        hits = total = 0
        for seed in range(n):
            lo, hi = interval_of(release(ex, df, session(seed), epsilon=2, ci=level))
            hits += int(((lo <= truth) & (truth <= hi)).sum())
            total += len(truth)
        # loose: 5 binomial standard deviations below the level (intervals may be conservative)
        assert hits / total >= level - 5 * np.sqrt(level * (1 - level) / total)

    @pytest.mark.parametrize("backend", BACKENDS)
    def test_neighbours_differ_only_in_noise(self, op: str, backend: str) -> None:
        ex = EXAMPLES[op]
        removed = {u: r for u, r in BASE.items() if u != 3}
        extreme = {**BASE, 99: ((0, HI + 5), (1, float("nan")))}
        seen = set()
        for units in (BASE, removed, extreme):
            s = session(7)
            result = release(ex, frame(units), s, backend, epsilon=1, **ex.ci)
            seen.add((structure(result), s.spent))
        assert len(seen) == 1, seen

    @pytest.mark.parametrize("which", [0, 1, 2])
    def test_bad_input_is_refused_before_the_charge(self, op: str, which: int) -> None:
        ex = EXAMPLES[op]
        generic: tuple[dict[str, Any], ...] = ({"epsilon": -1.0}, {"epsilon": float("nan")})
        cases = (*generic, *ex.bad)
        kw = {"epsilon": 1.0, **cases[which % len(cases)]}
        column = kw.pop("column", None)
        bins = kw.pop("bins", None)
        s = session(3)
        df = frame(BASE)
        priv = df.dp(s, **options(ex))
        target = priv.groupby("g") if ex.grouped else priv
        with pytest.raises(dpf.DPError) as info:
            if column is not None:
                getattr(target, op)(column, **kw)
            elif bins is not None:
                target.histogram("x", bins, **kw)
            else:
                ex.call(target, **kw)
        assert s.spent == (0.0, 0.0) and s.ledger.empty
        assert not any(repr(v) in str(info.value) for v in (2.5, 9.0))  # no private value

    def test_results_carry_provenance(self, op: str) -> None:
        r = release(EXAMPLES[op], frame(BASE), session(5), epsilon=1)
        prov = r.attrs["dp"]
        for key in ("epsilon", "delta", "relation", "privacy_unit", "ledger_entry", "session",
                    "library_version", "query", "measures"):
            assert key in prov, key
        (m,) = prov["measures"]
        assert m["aggregate"] in AGGREGATES[op].names and m["column"] in ("x", None)
        assert m["mechanism"] and m["epsilon"] == prov["epsilon"] == 1.0

    @pytest.mark.parametrize("backend", params(exclude=("pandas",)))
    def test_every_backend_answers_alike(self, op: str, backend: str) -> None:
        ex = EXAMPLES[op]
        shapes = {b: structure(release(ex, frame(BASE), session(11), b, epsilon=1))
                  for b in ("pandas", backend)}
        assert len(set(shapes.values())) == 1, shapes
