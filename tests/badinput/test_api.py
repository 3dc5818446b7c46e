"""Bad input through the Python API (the pandas ``.dp`` accessor): wrong argument types and
values for every aggregate, malformed bounds, keys, columns and contribution bounds, a budget
that does not fit and a privacy unit the session does not protect. Each case runs on a fresh
session with a SQLite ledger; see ``_harness`` for what is asserted."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from contextvars import ContextVar
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from tests.backends.contract import MARKED, Data, built
from tests.backends.contract import params as backends

from ._harness import (
    BOUNDS,
    KEYS,
    Case,
    PrivacyUnitError,
    expect_refusal,
    expect_release,
    frame,
    ledger_session,
    params,
)

V = dpf.ValidationError
B = dpf.BoundsError
K = dpf.KeysError
NAN = float("nan")
INF = float("inf")


#: The frame ``dp`` queries when none is given: pandas' ``frame()``, or, in
#: :func:`test_api_bad_input_on_every_backend`, the same values on a backend of the registry
#: (``{"frame": ..., "used": bool}``: whether a case queried it).
FRONT: ContextVar[dict[str, Any] | None] = ContextVar("FRONT", default=None)


def dp(s: dpf.Session, df: pd.DataFrame | None = None, **kw: Any) -> Any:
    """``frame().dp(s, bounds=BOUNDS, keys=KEYS)`` with options overridden by ``kw``."""
    opts: dict[str, Any] = {"bounds": BOUNDS, "keys": KEYS}
    opts.update(kw)
    target: Any = df
    if df is None:
        front = FRONT.get()
        if front is not None:
            front["used"] = True
        target = frame() if front is None else front["frame"]
    return target.dp(s, **opts)


#: One call per aggregate (and grouped aggregate); ``kw`` holds epsilon and any bad argument.
AGGREGATES: dict[str, Callable[..., Any]] = {
    "count": lambda p, **kw: p.count(**kw),
    "count_col": lambda p, **kw: p.count("x", **kw),
    "sum": lambda p, **kw: p.sum("x", **kw),
    "mean": lambda p, **kw: p.mean("n", **kw),
    "max": lambda p, **kw: p.max("x", **kw),
    "min": lambda p, **kw: p.min("n", **kw),
    "median": lambda p, **kw: p.median("x", **kw),
    "quantile": lambda p, **kw: p.quantile("x", 0.25, **kw),
    "histogram": lambda p, **kw: p.histogram("x", [0, 1, 5, 10], **kw),
    "gb_count": lambda p, **kw: p.groupby("g").count(**kw),
    "gb_sum": lambda p, **kw: p.groupby("g").sum("x", **kw),
    "gb_mean": lambda p, **kw: p.groupby(["g", "k"]).mean("n", **kw),
    "gb_max": lambda p, **kw: p.groupby("s").max("x", **kw),
    "gb_quantile": lambda p, **kw: p.groupby("g").quantile("x", 0.9, **kw),
    "gb_agg": lambda p, **kw: p.groupby("g").agg({"x": ["sum", "mean"], "n": "median"}, **kw),
    "gb_private": lambda p, **kw: p.groupby("g", keys="private").count(delta=1e-6, **kw),
}


def _agg(name: str, **kw: Any) -> Callable[[dpf.Session], Any]:
    return lambda s: AGGREGATES[name](dp(s), **kw)


# -- epsilon: every aggregate refuses every kind of bad epsilon ------------------------------------

BAD_EPSILONS: dict[str, object] = {"str": "0.5", "negative": -1.0, "nan": NAN, "bool": True}

CASES: list[Case] = [
    Case(f"epsilon-{kind}-{agg}", _agg(agg, epsilon=eps), V)
    for kind, eps in BAD_EPSILONS.items() for agg in AGGREGATES
]

CASES += [
    Case("epsilon-zero-sum", _agg("sum", epsilon=0), V),
    Case("epsilon-inf-mean", _agg("mean", epsilon=INF), V),
    Case("epsilon-none-count", _agg("count", epsilon=None), V),
    Case("epsilon-list-gb_sum", _agg("gb_sum", epsilon=[0.5]), V),
    Case("epsilon-complex-max", _agg("max", epsilon=complex(1, 0)), V),
    Case("epsilon-decimal-nan-histogram", _agg("histogram", epsilon=Decimal("NaN")), V),
    Case("epsilon-fraction-negative-gb_agg", _agg("gb_agg", epsilon=Fraction(-1, 2)), V),
    Case("epsilon-np-nan-quantile", _agg("quantile", epsilon=np.float64("nan")), V),
    Case("epsilon-np-bool-gb_count", _agg("gb_count", epsilon=np.bool_(True)), V),
    Case("epsilon-str-inf-median", _agg("median", epsilon="inf"), V),
]

# -- delta -----------------------------------------------------------------------------------------

CASES += [
    Case("delta-one-count", _agg("count", epsilon=1, delta=1.0), V),
    Case("delta-negative-sum", _agg("sum", epsilon=1, delta=-1e-9), V),
    Case("delta-two-gb_sum", _agg("gb_sum", epsilon=1, delta=2), V),
    Case("delta-nan-mean", _agg("mean", epsilon=1, delta=NAN), V),
    Case("delta-str-histogram", _agg("histogram", epsilon=1, delta="1e-6"), V),
    Case("delta-inf-gb_count", _agg("gb_count", epsilon=1, delta=INF), V),
    Case("delta-one-gb_private",
         lambda s: dp(s).groupby("g", keys="private").count(epsilon=1, delta=1.0), V),
    Case("delta-zero-gb_private",
         lambda s: dp(s).groupby("g", keys="private").count(epsilon=1), V),
    Case("delta-zero-gaussian-sum", _agg("sum", epsilon=1, mechanism="gaussian"), V),
    # a release calibrated to delta 1e-3 fits a (5, 1e-5) budget under PLD (its epsilon at
    # delta 1e-5 is about 1.5, as in memory): one at delta 0.5 fits no composition
    Case("delta-over-session-budget",
         lambda s: dp(s).sum("x", epsilon=1, delta=0.5, mechanism="gaussian"),
         dpf.BudgetExceededError),
]

# -- bounds ----------------------------------------------------------------------------------------

CASES += [
    Case("bounds-missing-sum", lambda s: dp(s, bounds={}).sum("x", epsilon=1), B),
    Case("bounds-missing-mean", lambda s: dp(s, bounds={}).mean("n", epsilon=1), B),
    Case("bounds-missing-max", lambda s: dp(s, bounds={}).max("x", epsilon=1), B),
    Case("bounds-missing-gb_quantile",
         lambda s: dp(s, bounds={}).groupby("g").quantile("x", 0.5, epsilon=1), B),
    Case("bounds-missing-one-gb_agg",
         lambda s: dp(s, bounds={"n": (0, 1)}).groupby("g").agg(
             {"n": "sum", "x": "mean"}, epsilon=1), B),
    Case("bounds-inverted-sum", lambda s: dp(s, bounds={"x": (10, 0)}).sum("x", epsilon=1), B),
    Case("bounds-equal-mean", lambda s: dp(s, bounds={"x": (5, 5)}).mean("x", epsilon=1), B),
    Case("bounds-nan-sum", lambda s: dp(s, bounds={"x": (0, NAN)}).sum("x", epsilon=1), B),
    Case("bounds-inf-gb_sum",
         lambda s: dp(s, bounds={"x": (0, INF)}).groupby("g").sum("x", epsilon=1), B),
    Case("bounds-neg-inf-median",
         lambda s: dp(s, bounds={"x": (-INF, 0)}).median("x", epsilon=1), B),
    Case("bounds-str-sum", lambda s: dp(s, bounds={"x": ("0", "10")}).sum("x", epsilon=1), B),
    Case("bounds-none-max", lambda s: dp(s, bounds={"x": (None, 10)}).max("x", epsilon=1), B),
    Case("bounds-three-values-mean",
         lambda s: dp(s, bounds={"x": (0, 5, 10)}).mean("x", epsilon=1), B),
    Case("bounds-scalar-sum", lambda s: dp(s, bounds={"x": 10}).sum("x", epsilon=1), B),
    Case("bounds-too-large-sum",
         lambda s: dp(s, bounds={"x": (0, 2.0**60)}).sum("x", epsilon=1), B),
    Case("bounds-bool-quantile",
         lambda s: dp(s, bounds={"x": (False, True)}).quantile("x", 0.5, epsilon=1), B),
    Case("bounds-too-narrow-sum",
         lambda s: dp(s, bounds={"x": (0, 1e-300)}).sum("x", epsilon=1), B),
    Case("bounds-too-narrow-fraction-mean",
         lambda s: dp(s, bounds={"x": (1, 1 + Fraction(1, 10**300))}).mean("x", epsilon=1), B),
    Case("bounds-not-a-mapping", lambda s: dp(s, bounds=[("x", 0, 10)]).sum("x", epsilon=1), V),
]

# -- columns ---------------------------------------------------------------------------------------

CASES += [
    Case("column-unknown-sum", lambda s: dp(s).sum("nope", epsilon=1), V),
    Case("column-unknown-count", lambda s: dp(s).count("nope", epsilon=1), V),
    Case("column-unknown-max", lambda s: dp(s).max("nope", epsilon=1), V),
    Case("column-unknown-histogram", lambda s: dp(s).histogram("nope", [0, 1], epsilon=1), V),
    Case("column-unknown-groupby",
         lambda s: dp(s, keys={"nope": ["a"]}, strict=False).groupby("nope").count(epsilon=1),
         V),
    Case("declared-keys-typo", lambda s: dp(s, keys={"gg": ["a"]}).count(epsilon=1), V),
    Case("declared-bounds-typo", lambda s: dp(s, bounds={"xx": (0, 1)}).count(epsilon=1), V),
    Case("column-unknown-gb_agg",
         lambda s: dp(s).groupby("g").agg({"nope": "sum"}, epsilon=1), V),
    Case("column-unknown-privacy_unit",
         lambda s: dp(s, privacy_unit="nope", max_rows_per_unit=2).count(epsilon=1), V),
    Case("column-list-sum", lambda s: dp(s).sum(["x"], epsilon=1), V),
    Case("column-list-mean", lambda s: dp(s).mean(["x", "n"], epsilon=1), V),
    Case("column-int-sum", lambda s: dp(s).sum(0, epsilon=1), V),
    Case("column-list-count", lambda s: dp(s).count(["x"], epsilon=1), V),
    Case("column-none-sum", lambda s: dp(s).sum(None, epsilon=1), V),
    Case("column-list-gb_sum", lambda s: dp(s).groupby("g").sum(["x"], epsilon=1), V),
    Case("column-nested-groupby", lambda s: dp(s).groupby([["g"]]).count(epsilon=1), V),
    Case("column-int-groupby", lambda s: dp(s).groupby(1).count(epsilon=1), V),
    Case("column-empty-groupby", lambda s: dp(s).groupby([]).count(epsilon=1), V),
    Case("column-tuple-key-gb_agg",
         lambda s: dp(s).groupby("g").agg({("x",): "sum"}, epsilon=1), V),
    Case("column-list-privacy_unit",
         lambda s: dp(s, privacy_unit=["u"], max_rows_per_unit=2).count(epsilon=1), V),
    Case("column-text-sum", lambda s: dp(s, bounds={"g": (0, 1)}).sum("g", epsilon=1), V),
    Case("column-text-mean", lambda s: dp(s, bounds={"s": (0, 1)}).mean("s", epsilon=1), V),
    Case("column-text-histogram", lambda s: dp(s).histogram("u", [0, 1], epsilon=1), V),
    Case("column-text-gb_max",
         lambda s: dp(s, bounds={"u": (0, 1)}).groupby("g").max("u", epsilon=1), V),
]

# -- ci, q, bins, mechanism, resolution ------------------------------------------------------------

CASES += [
    Case("ci-zero-count", _agg("count", epsilon=1, ci=0), V),
    Case("ci-one-sum", _agg("sum", epsilon=1, ci=1), V),
    Case("ci-above-one-mean", _agg("mean", epsilon=1, ci=1.5), V),
    Case("ci-negative-gb_mean", _agg("gb_mean", epsilon=1, ci=-0.1), V),
    Case("ci-nan-histogram", _agg("histogram", epsilon=1, ci=NAN), V),
    Case("ci-str-gb_agg", _agg("gb_agg", epsilon=1, ci="0.95"), V),
    Case("ci-percent-gb_count", _agg("gb_count", epsilon=1, ci=95), V),
    Case("ci-rounds-to-one-mean", _agg("mean", epsilon=1, ci=1 - 1e-16), V),
    Case("q-negative", lambda s: dp(s).quantile("x", -0.1, epsilon=1), V),
    Case("q-above-one", lambda s: dp(s).quantile("x", 1.5, epsilon=1), V),
    Case("q-nan", lambda s: dp(s).quantile("x", NAN, epsilon=1), V),
    Case("q-str", lambda s: dp(s).quantile("x", "0.5", epsilon=1), V),
    Case("q-none", lambda s: dp(s).quantile("x", None, epsilon=1), V),
    Case("q-percent-gb_quantile", lambda s: dp(s).groupby("g").quantile("x", 90, epsilon=1), V),
    Case("q-list-empty", lambda s: dp(s).quantile("x", [], epsilon=1), V),
    Case("q-list-above-one", lambda s: dp(s).quantile("x", [0.1, 1.5], epsilon=1), V),
    Case("q-list-ci", lambda s: dp(s).quantile("x", [0.1, 0.9], epsilon=1, ci=0.9), V),
    Case("bins-unsorted", lambda s: dp(s).histogram("x", [0, 5, 1, 10], epsilon=1), V),
    Case("bins-empty", lambda s: dp(s).histogram("x", [], epsilon=1), V),
    Case("bins-one-edge", lambda s: dp(s).histogram("x", [1], epsilon=1), V),
    Case("bins-repeated-edge", lambda s: dp(s).histogram("x", [0, 1, 1, 2], epsilon=1), V),
    Case("bins-nan-edge", lambda s: dp(s).histogram("x", [0, NAN, 2], epsilon=1), V),
    Case("bins-inf-edge", lambda s: dp(s).histogram("x", [0, INF, 2], epsilon=1), V),
    Case("bins-inf-first-edge", lambda s: dp(s).histogram("x", [INF, 1, 2], epsilon=1), V),
    Case("bins-text", lambda s: dp(s).histogram("x", ["a", "b"], epsilon=1), V),
    Case("bins-scalar", lambda s: dp(s).histogram("x", 2.5, epsilon=1), V),
    Case("bins-count-zero", lambda s: dp(s).histogram("x", 0, epsilon=1), V),
    Case("bins-none", lambda s: dp(s).histogram("x", None, epsilon=1), V),
    Case("epsilon-below-sampler-sum", _agg("sum", epsilon=1e-300), V),
    Case("epsilon-below-sampler-max", _agg("max", epsilon=1e-300), V),
    Case("epsilon-below-sampler-gb_private", _agg("gb_private", epsilon=1e-300), V),
    Case("gaussian-noise-beyond-sampler",
         lambda s: dp(s, bounds={"x": (-2**52, 2**52)}).sum(
             "x", epsilon=1e-10, delta=1e-10, mechanism="gaussian"), V),
    Case("gaussian-epsilon-share-rounds-to-zero",
         _agg("sum", epsilon=1e-300, delta=0.4, mechanism="gaussian"), V),
    Case("mechanism-unknown-sum", _agg("sum", epsilon=1, mechanism="laplce"), V),
    Case("mechanism-uppercase-count", _agg("count", epsilon=1, mechanism="GAUSSIAN"), V),
    Case("mechanism-int-gb_sum", _agg("gb_sum", epsilon=1, mechanism=1), V),
    Case("mechanism-exponential-mean", _agg("mean", epsilon=1, mechanism="exponential"), V),
    Case("mechanism-unknown-gb_agg", _agg("gb_agg", epsilon=1, mechanism="laplace2"), V),
    Case("resolution-one-max", _agg("max", epsilon=1, resolution=1), V),
    Case("resolution-float-median", _agg("median", epsilon=1, resolution=10.5), V),
    Case("resolution-bool-gb_max", _agg("gb_max", epsilon=1, resolution=True), V),
    Case("resolution-huge-quantile", _agg("quantile", epsilon=1, resolution=10**7), V),
    Case("resolution-grid-too-large-gb",
         lambda s: dp(s, keys={"k": list(range(100_000))}).groupby("k").max(
             "x", epsilon=1, resolution=1_000_000), V),
]

# -- agg specs, weights, selection share, sampling -------------------------------------------------

CASES += [
    Case("agg-unknown-op", lambda s: dp(s).groupby("g").agg({"x": "trimmed_mean"}, epsilon=1), V),
    Case("agg-empty", lambda s: dp(s).groupby("g").agg({}, epsilon=1), V),
    Case("agg-not-mapping", lambda s: dp(s).groupby("g").agg(["x"], epsilon=1), V),
    Case("agg-op-not-text", lambda s: dp(s).groupby("g").agg({"x": [len]}, epsilon=1), V),
    Case("weights-negative",
         lambda s: dp(s).groupby("g").agg({"x": ["sum", "mean"]}, epsilon=1,
                                          weights=[1, -1]), V),
    Case("weights-count",
         lambda s: dp(s).groupby("g").agg({"x": ["sum", "mean"]}, epsilon=1, weights=[1]), V),
    Case("weights-missing-label",
         lambda s: dp(s).groupby("g").agg({"x": ["sum", "mean"]}, epsilon=1,
                                          weights={"x.sum": 1}), V),
    Case("weights-nan",
         lambda s: dp(s).groupby("g").agg({"x": ["sum", "mean"]}, epsilon=1,
                                          weights=[1, NAN]), V),
    Case("selection_share-one",
         lambda s: dp(s).groupby("g", keys="private").count(epsilon=1, delta=1e-6,
                                                              selection_share=1), V),
    Case("selection_share-nan",
         lambda s: dp(s).groupby("g", keys="private").sum("x", epsilon=1, delta=1e-6,
                                                            selection_share=NAN), V),
    Case("sample-rate-zero", lambda s: dp(s).sample(0).count(epsilon=1), V),
    Case("sample-rate-above-one", lambda s: dp(s).sample(1.5).count(epsilon=1), V),
    Case("sample-rate-str", lambda s: dp(s).sample("0.5").count(epsilon=1), V),
]

# -- keys ------------------------------------------------------------------------------------------

CASES += [
    Case("keys-undeclared-groupby", lambda s: dp(s, keys={}).groupby("g").count(epsilon=1), K),
    Case("keys-empty-list", lambda s: dp(s, keys={"g": []}).groupby("g").count(epsilon=1), K),
    Case("keys-text-for-int-column",
         lambda s: dp(s, keys={"k": ["1", "2"]}).groupby("k").sum("x", epsilon=1), K),
    Case("keys-int-for-string-column",
         lambda s: dp(s, keys={"s": [1, 2]}).groupby("s").count(epsilon=1), K),
    Case("keys-none-value",
         lambda s: dp(s, keys={"g": ["a", None]}).groupby("g").count(epsilon=1), K),
    Case("keys-nan-value",
         lambda s: dp(s, keys={"k": [1, NAN]}).groupby("k").count(epsilon=1), K),
    Case("keys-pd-na-value",
         lambda s: dp(s, keys={"s": ["p", pd.NA]}).groupby("s").count(epsilon=1), K),
    Case("keys-nat-value",
         lambda s: dp(s, keys={"g": ["a", pd.NaT]}).groupby("g").count(epsilon=1), K),
    Case("keys-lone-surrogate",  # was a UnicodeEncodeError after the charge
         lambda s: dp(s, keys={"g": ["a", "\ud800"]}).groupby("g").count(epsilon=1), K),
    Case("keys-a-string", lambda s: dp(s, keys={"g": "ab"}).groupby("g").count(epsilon=1), K),
    Case("keys-unhashable",
         lambda s: dp(s, keys={"g": [["a"], ["b"]]}).groupby("g").count(epsilon=1), K),
    Case("keys-scalar", lambda s: dp(s, keys={"k": 1}).groupby("k").count(epsilon=1), K),
    Case("keys-categories-not-categorical",
         lambda s: dp(s, keys={"g": "categories"}).groupby("g").count(epsilon=1), K),
    Case("keys-too-many-groups",
         lambda s: dp(s, keys={"g": [f"g{i}" for i in range(6000)],
                                "k": list(range(6000))}).groupby(["g", "k"]).count(epsilon=1),
         V),
    Case("keys-not-a-mapping", lambda s: dp(s, keys=["g"]).groupby("g").count(epsilon=1), V),
    Case("keys-mode-typo", lambda s: dp(s).groupby("g", keys="privat").count(epsilon=1), V),
    Case("keys-mode-true", lambda s: dp(s).groupby("g", keys=True).count(epsilon=1), V),
    Case("keys-one-of-two-undeclared",
         lambda s: dp(s, keys={"g": ["a"]}).groupby(["g", "u"]).count(epsilon=1), K),
]

# -- the frame's own structure ---------------------------------------------------------------------


def _dup_columns() -> pd.DataFrame:
    df = frame()[["x", "n", "g"]]
    df.columns = ["x", "x", "g"]
    return df


def _multiindex_columns() -> pd.DataFrame:
    df = frame()[["x", "g"]]
    df.columns = pd.MultiIndex.from_tuples([("v", "x"), ("k", "g")])
    return df


def _int_and_str_names() -> pd.DataFrame:
    df = frame()[["x", "n", "g"]]
    df.columns = [0, "0", "g"]
    return df


CASES += [
    Case("frame-duplicate-columns",
         lambda s: _dup_columns().dp(s, bounds=BOUNDS).sum("x", epsilon=1), V),
    Case("frame-duplicate-columns-count",
         lambda s: _dup_columns().dp(s).count(epsilon=1), V),
    Case("frame-multiindex-columns",
         lambda s: _multiindex_columns().dp(s, bounds=BOUNDS).count(epsilon=1), V),
    Case("frame-int-and-str-name",
         lambda s: _int_and_str_names().dp(s, bounds={"0": (0, 1)}).sum("0", epsilon=1), V),
    Case("frame-int-name-groupby",
         lambda s: frame().rename(columns={"g": 7}).dp(s, keys={7: ["a"]}).groupby(
             7).count(epsilon=1), V),
    Case("frame-not-a-session", lambda s: frame().dp("session").count(epsilon=1), V),
    Case("frame-no-active-session", lambda s: frame().dp.count(epsilon=1), V),
    Case("frame-schema-not-pandera",
         lambda s: frame().dp(s, schema={"x": (0, 1)}).sum("x", epsilon=1), V),
]

# -- contribution bounds and the privacy unit ------------------------------------------------------

CASES += [
    Case("unit-max_rows-without-unit",
         lambda s: dp(s, max_rows_per_unit=2).count(epsilon=1), V),
    Case("unit-max_groups-without-unit",
         lambda s: dp(s, max_groups_per_unit=2).groupby("g").count(epsilon=1), V),
    Case("unit-without-max_rows", lambda s: dp(s, privacy_unit="u").count(epsilon=1), V),
    Case("unit-max_rows-zero",
         lambda s: dp(s, privacy_unit="u", max_rows_per_unit=0).count(epsilon=1), V),
    Case("unit-max_rows-negative",
         lambda s: dp(s, privacy_unit="u", max_rows_per_unit=-3).sum("x", epsilon=1), V),
    Case("unit-max_rows-float",
         lambda s: dp(s, privacy_unit="u", max_rows_per_unit=2.5).count(epsilon=1), V),
    Case("unit-max_rows-bool",
         lambda s: dp(s, privacy_unit="u", max_rows_per_unit=True).count(epsilon=1), V),
    Case("unit-max_rows-str",
         lambda s: dp(s, privacy_unit="u", max_rows_per_unit="2").count(epsilon=1), V),
    Case("unit-max_groups-zero",
         lambda s: dp(s, privacy_unit="u", max_rows_per_unit=2,
                      max_groups_per_unit=0).groupby("g").count(epsilon=1), V),
    Case("unit-int-name", lambda s: dp(s, privacy_unit=5, max_rows_per_unit=2).count(epsilon=1),
         V),
]


# -- why each case is refused: its message must say so (an error for another reason would hide a
# missing check). The first prefix of the case id that matches wins.

REASONS: list[tuple[str, str]] = [
    ("epsilon-below-sampler", "too small"), ("epsilon-", "epsilon"),
    ("delta-over", "budget exceeded"), ("delta-zero", r"needs delta > 0"), ("delta-", "delta"),
    ("bounds-not-a-mapping", "bounds must be a mapping"), ("bounds-", "bounds"),
    ("column-text", "not numeric"), ("column-empty", "at least one column"),
    ("column-none", "needs a column"), ("column-unknown", "unknown (privacy_unit )?column"),
    ("declared-", "not a column of this frame.*strict=False"),
    ("column-", "named by strings|column name"), ("ci-", "ci must be"), ("q-", r"\bq\b"),
    ("bins-", "bins"), ("gaussian-", "too small"), ("mechanism-", "mechanism"),
    ("resolution-grid", "cells"), ("resolution-", "resolution"), ("agg-", "agg"),
    ("weights-", "weight"), ("selection_share", "selection_share"), ("sample-", "rate"),
    ("keys-too-many", "groups x"), ("keys-mode", "keys must be"), ("keys-not", "keys must be"),
    ("keys-", "keys"), ("frame-no-active", "no active session"), ("frame-not-a", "Session"),
    ("frame-schema", "pandera"), ("frame-multiindex", "MultiIndex"),
    ("frame-int-name", "named by strings"), ("frame-", "more than once"),
    ("unit-mismatch", "protects"), ("unit-declared", "protects"),
    ("unit-", "max_rows_per_unit|max_groups_per_unit|privacy_unit"),
    ("budget-exceeded-and-bad-bins", "bins"), ("budget-", "budget exceeded"),
]


def assert_reason(case_id: str, exc: BaseException) -> None:
    pattern = next(p for prefix, p in REASONS if case_id.startswith(prefix))
    assert re.search(pattern, str(exc)), f"{case_id}: refused for another reason: {exc}"


# -- runner ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", params(CASES))
def test_api_bad_input(case: Case, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                       capsys: pytest.CaptureFixture[str]) -> None:
    session = ledger_session(tmp_path)
    try:
        exc = expect_refusal(case, session, tmp_path / "budget.sqlite", caplog, capsys)
    finally:
        session.close()
    assert_reason(case.id, exc)


# -- the same bad input on every backend of the registry ------------------------------------------

def _first(cases: list[Case], per_family: int) -> list[Case]:
    """The first ``per_family`` cases of each family (the id's first word) that query the
    shared frame (``frame-*`` cases build pandas frames of their own)."""
    seen: dict[str, int] = {}
    out = []
    for c in cases:
        family = c.id.split("-")[0]
        if family != "frame" and seen.get(family, 0) < per_family:
            seen[family] = seen.get(family, 0) + 1
            out.append(c)
    return out


#: One case of each family on every backend but pandas (which runs the whole corpus): the
#: suite's time (each case builds a frame; on Spark in the JVM).
FEW = _first(CASES, 1)


def _on_backend(backend: str, case: Case, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                capsys: pytest.CaptureFixture[str]) -> None:
    session = ledger_session(tmp_path)
    with built(backend, Data.of(frame())) as front:
        holder = {"frame": front, "used": False}
        token = FRONT.set(holder)
        try:
            exc = expect_refusal(case, session, tmp_path / "budget.sqlite", caplog, capsys)
        finally:
            FRONT.reset(token)
            session.close()
    assert holder["used"], f"{case.id} never queried the {backend} frame"
    assert_reason(case.id, exc)


@pytest.mark.parametrize("case", params(FEW))
@pytest.mark.parametrize("backend", backends(exclude=(*MARKED, "pandas")))
def test_api_bad_input_on_every_backend(backend: str, case: Case, tmp_path: Path,
                                        caplog: pytest.LogCaptureFixture,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The pandas corpus's cases on the same values through each backend of the registry
    (``tests/backends/contract.py``): the same class, nothing charged, nothing leaked."""
    _on_backend(backend, case, tmp_path, caplog, capsys)


@pytest.mark.parametrize("case", params(FEW))
@pytest.mark.parametrize("backend", backends(*MARKED))
def test_api_bad_input_on_marked_backends(backend: str, case: Case, tmp_path: Path,
                                          caplog: pytest.LogCaptureFixture,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The same, one case of each family, on the registry's marked backends (Spark)."""
    _on_backend(backend, case, tmp_path, caplog, capsys)


# -- budget and privacy unit: on a session that has already spent ---------------------------------

def _spent_session(tmp: Path, unit: str | None = None, epsilon: float = 1.0) -> dpf.Session:
    """A SQLite session that has released once (under ``unit``: None for rows)."""
    s = ledger_session(tmp, epsilon=epsilon, delta=1e-6)
    if unit is None:
        dp(s).count(epsilon=0.5)
    else:
        dp(s, privacy_unit=unit, max_rows_per_unit=2).count(epsilon=0.5)
    return s


SPENT_CASES: list[tuple[str | None, Case]] = [
    (None, Case("budget-exceeded-sum", lambda s: dp(s).sum("x", epsilon=0.6),
                dpf.BudgetExceededError)),
    (None, Case("budget-exceeded-gb_agg",
                lambda s: dp(s).groupby("g").agg({"x": "sum", "n": "max"}, epsilon=0.51),
                dpf.BudgetExceededError)),
    (None, Case("budget-exceeded-delta-private",
                lambda s: dp(s).groupby("g", keys="private").count(epsilon=0.1, delta=1e-5),
                dpf.BudgetExceededError)),
    (None, Case("budget-exceeded-histogram-ci",
                lambda s: dp(s).histogram("x", [0, 5, 10], epsilon=1, ci=0.9),
                dpf.BudgetExceededError)),
    (None, Case("budget-exceeded-and-bad-bins",  # the argument error wins: checked first
                lambda s: dp(s).histogram("x", [5, 0], epsilon=10), V)),
    (None, Case("unit-mismatch-rows-then-unit",
                lambda s: dp(s, privacy_unit="u", max_rows_per_unit=2).count(epsilon=0.1),
                PrivacyUnitError)),
    ("u", Case("unit-mismatch-unit-then-rows", lambda s: dp(s).sum("x", epsilon=0.1),
               PrivacyUnitError)),
    ("u", Case("unit-mismatch-other-unit",
               lambda s: dp(s, privacy_unit="g", max_rows_per_unit=2).groupby("k").count(
                   epsilon=0.1), PrivacyUnitError)),
    ("u", Case("budget-exceeded-unit-gb_mean",
               lambda s: dp(s, privacy_unit="u", max_rows_per_unit=2).groupby("g").mean(
                   "x", epsilon=0.7), dpf.BudgetExceededError)),
]


@pytest.mark.parametrize(("unit", "case"),
                         [pytest.param(u, c, id=c.id) for u, c in SPENT_CASES])
def test_spent_session_bad_input(unit: str | None, case: Case, tmp_path: Path,
                                 caplog: pytest.LogCaptureFixture,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    session = _spent_session(tmp_path, unit)
    assert session.spent[0] == pytest.approx(0.5)
    try:
        exc = expect_refusal(case, session, tmp_path / "budget.sqlite", caplog, capsys)
    finally:
        session.close()
    assert_reason(case.id, exc)


def test_declared_unit_refuses_rows_in_another_process_session(
        tmp_path: Path, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The unit bound by one session holds for the next session on the same ledger file."""
    first = dpf.Session(1.0, 1e-6, ledger=str(tmp_path / "budget.sqlite"), privacy_unit="u")
    first.close()
    second = ledger_session(tmp_path, epsilon=1.0, delta=1e-6)
    case = Case("unit-declared-by-other-session", lambda s: dp(s).count(epsilon=0.1),
                PrivacyUnitError)
    try:
        exc = expect_refusal(case, second, tmp_path / "budget.sqlite", caplog, capsys)
    finally:
        second.close()
    assert_reason(case.id, exc)


# -- extreme but valid arguments: released, with nothing wrong ---------------------------------

EXTREME: list[tuple[str, Callable[[dpf.Session], Any], Callable[[Any], bool]]] = [
    # a sensitivity so large that the noise lattice step overflows int64 (0.2 crashed after the
    # charge): noise of that size, a finite float
    ("max_rows-2**60-sum",
     lambda s: dp(s, privacy_unit="u", max_rows_per_unit=2**60).sum("x", epsilon=1),
     lambda r: math.isfinite(r)),
    ("epsilon-1e300-count", lambda s: dp(s).count(epsilon=1e300), lambda r: r == 6),
    ("histogram-edges-1e308",
     lambda s: dp(s).histogram("x", [-1e308, 0, 1e308], epsilon=1e300),
     lambda r: r.tolist() == [1, 4]),
    ("ci-1e-300-sum", lambda s: dp(s).sum("n", epsilon=1e300, ci=1e-300),
     lambda r: r == 10 + 1 + 2 + 3 + 4 + 5),
]


@pytest.mark.parametrize(("run", "check"),
                         [pytest.param(r, c, id=i) for i, r, c in EXTREME])
def test_extreme_valid_arguments_release(run: Callable[[dpf.Session], Any],
                                         check: Callable[[Any], bool], tmp_path: Path,
                                         caplog: pytest.LogCaptureFixture,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    session = ledger_session(tmp_path, epsilon=1e305)
    try:
        result = expect_release(lambda: run(session), session, tmp_path / "budget.sqlite",
                                caplog, capsys)
        assert check(result), result
        assert [e["status"] for e in session.ledger_store.entries()] == ["released"]
    finally:
        session.close()
