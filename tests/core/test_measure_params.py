"""A measure's parameters are of its aggregate's own type and check themselves when built
(issue 46, item 3): a bad level, bad bins or a bad ``ddof`` is a ``ValidationError`` before any
query exists, and a measure whose params are of another type is refused before any charge."""

from __future__ import annotations

import dataclasses
import warnings
from fractions import Fraction
from typing import Any

import pandas as pd
import pytest

import dpframe as dpf
from dpframe.backends.pandas import PandasBackend
from dpframe.core.aggregates import AGGREGATES
from dpframe.core.aggregates.histogram import Bins
from dpframe.core.aggregates.quantile import QuantileParams
from dpframe.core.aggregates.variance import Moment
from dpframe.core.measure import BinLayout
from dpframe.core.query import NO_PARAMS, Measure, NoParams, Query
from dpframe.engine import release as engine
from dpframe.errors import ValidationError

QUANTILE, HISTOGRAM, VAR = AGGREGATES["quantile"], AGGREGATES["histogram"], AGGREGATES["var"]


@pytest.mark.parametrize(("build", "message"), [
    (lambda: QuantileParams(Fraction(3, 2)), "quantile level q must be in"),
    (lambda: QuantileParams(0.5), "a Fraction: use quantile_level"),  # type: ignore[arg-type]
    (lambda: QuantileParams(Fraction(1, 1001)), "denominator <= 1000"),
    (lambda: QuantileParams(Fraction(1, 2), grid=1), "resolution must be an integer"),
    (lambda: QuantileParams(Fraction(1, 2), grid=True), "resolution must be an integer"),
    (lambda: QuantileParams(Fraction(1, 2), grid=10**7), "resolution must be an integer"),
    (lambda: QuantileParams(Fraction(1, 2), levels=()), "between 1 and 64"),
    (lambda: QuantileParams(Fraction(1, 2), levels=(Fraction(1, 2), Fraction(2))),
     "each quantile level"),
    (lambda: QuantileParams(Fraction(1, 2), levels=(Fraction(1, 1000), Fraction(1, 999),
                                                    Fraction(1, 997))),
     "common denominator"),
    (lambda: QuantileParams(Fraction(1, 2), log_grid=True, levels=(Fraction(1, 2),)),
     "log-spaced grid"),
    (lambda: Bins((0.0, 5.0, 2.0)), "increasing edges"),
    (lambda: Bins((3.0,)), "increasing edges"),
    (lambda: Bins((0.0, float("nan"))), "increasing edges"),
    (lambda: Bins((0.0, True)), "increasing edges"),
    (lambda: Bins((0.0, 1.0), right="yes"), "right and include_lowest"),  # type: ignore[arg-type]
    (lambda: Bins((0.0, 1.0), include_lowest=1), "right and include_lowest"),  # type: ignore[arg-type]
    (lambda: Moment(2), "ddof must be 0"),
    (lambda: Moment(True), "ddof must be 0"),
    (lambda: Moment(1.0), "ddof must be 0"),  # type: ignore[arg-type]
    (lambda: VAR.measure("x", ddof=-1), "ddof must be 0"),
    (lambda: HISTOGRAM.measure("x", edges=(1.0, 1.0)), "increasing edges"),
    (lambda: QUANTILE.measure("x", q=Fraction(-1, 2)), "quantile level q must be in"),
])
def test_params_check_themselves_when_built(build: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        build()


def test_valid_params_are_kept_as_given() -> None:
    m = QUANTILE.measure("x", label="median", q=Fraction(1, 2), grid=64)
    assert (m.op, m.column, m.label, m.weight) == ("quantile", "x", "median", Fraction(1))
    assert m.params == QuantileParams(Fraction(1, 2), grid=64)
    assert HISTOGRAM.measure("x", edges=[0, 1, 2.5]).params.edges == (0, 1, 2.5)
    assert VAR.measure("x").params == Moment(1)
    # an aggregate without parameters shares one empty instance
    assert AGGREGATES["sum"].measure("x").params is NO_PARAMS
    assert Measure("count").params is NO_PARAMS


@pytest.mark.parametrize("op", sorted(AGGREGATES))
def test_every_aggregate_owns_a_frozen_params_type(op: str) -> None:
    kind = AGGREGATES[op].params_type
    assert dataclasses.is_dataclass(kind) and kind.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert [f.name for f in dataclasses.fields(Measure)] == [
        "op", "column", "label", "weight", "params"]


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"x": [float(i % 7) for i in range(40)]})


@pytest.mark.parametrize("measure", [
    Measure("var", "x"),                                          # NoParams for a Moment
    Measure("quantile", "x", params=Moment()),                    # another aggregate's
    Measure("histogram", "x", params=BinLayout((0.0, 1.0, 2.0))),  # a layout, never checked
    Measure("sum", "x", params=Moment()),                         # params where none are taken
    Measure("std", "x", params={"ddof": 5}),                      # not a params type at all
], ids=["var-no-params", "quantile-moment", "histogram-layout", "sum-moment", "std-dict"])
def test_a_measure_with_params_of_another_type_is_refused_before_any_charge(
        measure: Measure[Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = dpf.Session(10, seed=1)
    q = Query((measure,), Fraction(1), bounds={"x": (0.0, 10.0)})
    for run in (engine.run_release, engine.explain):
        with pytest.raises(ValidationError, match="takes parameters of type"):
            run(s, q, PandasBackend(_frame()))
    assert s.spent == (0.0, 0.0) and s.ledger.empty
    # the same measure built by its aggregate is released
    agg = AGGREGATES[measure.op]
    own: dict[str, dict[str, Any]] = {"quantile": {"q": Fraction(1, 2)},
                                      "histogram": {"edges": (0.0, 1.0, 2.0)}}
    args = own.get(measure.op, {})
    good = dataclasses.replace(q, measures=(agg.measure("x", **args),))
    engine.run_release(s, good, PandasBackend(_frame()))
    assert s.spent == (1.0, 0.0)


def test_no_params_is_the_default_type() -> None:
    assert AGGREGATES["count"].params_type is NoParams
    assert AGGREGATES["quantile"].params_type is QuantileParams
    assert AGGREGATES["histogram"].params_type is Bins
    assert AGGREGATES["std"].params_type is Moment
