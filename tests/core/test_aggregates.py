"""Every aggregate of the registry passes the shared contract (``aggregate_contract.py``)."""

from __future__ import annotations

import pytest

from dpframe.core.aggregates import AGGREGATES

from ..audit._controls import HalvedSum
from .aggregate_contract import AggregateContract

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")


@pytest.fixture(params=sorted(AGGREGATES))
def op(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


class TestEveryAggregate(AggregateContract):
    """The registry's aggregates, one parameter each."""


def test_the_contract_catches_a_broken_aggregate(monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit's broken sum (half its sensitivity), injected through the registry, fails the
    contract's sensitivity test: the oracle is not the planner checking itself. (Under
    change_one the grouped bound, ``R k max(U - L, 2M)``, has room the enumeration does not
    reach, so only add/remove is tight enough to catch a halving.)"""
    monkeypatch.setitem(AGGREGATES, "sum", HalvedSum())
    with pytest.raises(AssertionError, match="a neighbour moves it"):
        TestEveryAggregate().test_sensitivity_bounds_every_neighbour("sum", "add_remove")
