"""Each aggregate owns its plan's types (review R2): a plan holds named mechanisms and the
aggregate's own params, a release a layout the aggregate fills, and the generic plumbing
(planning, the Gaussian block, applying, describing, the ledger, dry runs) works for an
aggregate whose mechanisms and params it has never seen."""

from __future__ import annotations

import dataclasses
import warnings
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core.aggregates import AGGREGATES
from dpframe.core.exact.compute import fixed_point_request
from dpframe.core.measure import Aggregate, MeasurePlan, MeasureRelease, PlanContext, Rows
from dpframe.core.noise.rng import RandomSource

if TYPE_CHECKING:
    from dpframe.core.query import Measure


def test_a_plan_holds_named_mechanisms_and_the_aggregates_params() -> None:
    assert [f.name for f in dataclasses.fields(MeasurePlan)] == [
        "measure", "epsilon", "delta", "requests", "mechanisms", "params", "form"]
    assert [f.name for f in dataclasses.fields(MeasureRelease)] == [
        "name", "column", "values", "lower", "upper", "description", "layout"]


@dataclasses.dataclass(frozen=True)
class Halves:
    """The toy aggregate's own params (nothing outside its module reads them)."""

    label: str
    shares: tuple[Fraction, Fraction]


class TwoHalfSums(Aggregate[Halves]):
    """A toy aggregate no generic module knows: a sum released twice at half the budget each
    (two named mechanisms, ``"first"`` and ``"second"``), averaged; its own params."""

    op = "sum"
    names = ("sum",)
    summary = "a toy: the sum released twice"
    main = "first"

    def plan(self, ctx: PlanContext, m: Measure, eps: Fraction, delta: Fraction,
             rho: Fraction | None) -> MeasurePlan[Halves]:
        assert m.column is not None
        lo, hi = ctx.query.bounds_of(m.column)
        req = fixed_point_request(m.column, lo, hi, Fraction(0), False)
        s = ctx.sum_sensitivity(req)
        half = rho / 2 if rho is not None else None
        parts = {name: ctx.additive(s, eps / 2, delta, half, False, req.unit)
                 for name in ("first", "second")}
        return MeasurePlan(m, eps, delta, [req], parts, Halves("toy", (eps / 2, eps / 2)))

    def release(self, mp: MeasurePlan[Halves], rows: Rows, rng: RandomSource, level: float,
                want_ci: bool) -> MeasureRelease:
        req = mp.requests[0]
        draws = [mp.additive(n).add_noise(rows.values(req), req.unit, rng).astype(np.float64)
                 for n in ("first", "second")]
        value = (draws[0] + draws[1]) / 2
        nan = np.full(value.shape, np.nan)
        return MeasureRelease(mp.measure.name, mp.measure.column, value, nan, nan,
                              self.describe(mp, level))

    def mechanism(self, mp: MeasurePlan[Halves]) -> str:
        return f"{mp.params.label} ({len(mp.mechanisms)} draws)"

    def describe_parts(self, mp: MeasurePlan[Halves], level: float) -> dict[str, object]:
        return {"shares": [float(s) for s in mp.params.shares],
                "second_noise_scale": mp.additive("second").scale}


def _frame(session: dpf.Session) -> Any:
    df = pd.DataFrame({"x": np.arange(50, dtype=np.float64) % 10, "g": ["a", "b"] * 25})
    return df.dp(session, bounds={"x": (0.0, 10.0)}, keys={"g": ["a", "b"]})


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_the_plumbing_serves_an_aggregate_it_does_not_know(
        monkeypatch: pytest.MonkeyPatch, mechanism: str) -> None:
    monkeypatch.setitem(AGGREGATES, "sum", TwoHalfSums())
    delta = 1e-6 if mechanism == "gaussian" else 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = dpf.Session(10.0, 1e-3, seed=5)
        priv = _frame(session)
        dry = priv.explain("sum", "x", by="g", epsilon=1.0, delta=delta, mechanism=mechanism)
        out = priv.groupby("g").sum("x", epsilon=1.0, delta=delta,
                                    mechanism=mechanism)
    described = out.attrs["dp"]["measures"][0]
    name = "toy (2 draws)"
    assert described["mechanism"] == name and dry["measures"][0]["mechanism"] == name
    first, second = described["shares"]  # the toy's params, described by the toy only
    assert first == second > 0
    assert described["second_noise_scale"] == described["noise_scale"] > 0
    entry = session.ledger_store.entries()[-1]
    assert entry["mechanism"] == name and entry["status"] == "released"
    assert entry["details"]["noise_scale"] == described["noise_scale"]
    if mechanism == "gaussian":  # both draws are in the block: rho of the two halves
        assert "rho" in described
        assert entry["rho"] is not None
    assert list(out.index) == ["a", "b"]
