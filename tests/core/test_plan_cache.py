"""plan_release remembers plans only for inputs it can tell apart exactly.

A remembered plan must be the plan a fresh computation would give, so two queries that a
planner could treat differently (``-0.0`` against ``0.0`` in declared keys, ``True`` against
``1``, a reordered key list, another epsilon) must never share an entry, and a query that fails
validation must fail every time (never be remembered).
"""
from __future__ import annotations

from fractions import Fraction

import pytest

from dpframe.core import plan as plan_module
from dpframe.core.exact.memo import RecentCache
from dpframe.core.plan import plan_query, plan_release
from dpframe.core.query import Measure, Query
from dpframe.errors import ValidationError

KINDS = {"g": "float", "x": "float", "b": "bool"}


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_module, "_PLANS", RecentCache(plan_module.PLAN_CACHE_SIZE))


def grouped_sum(keys: tuple[object, ...], by: str = "g", epsilon: Fraction = Fraction(1)) -> Query:
    return Query(measures=(Measure("sum", "x"),), epsilon=epsilon, bounds={"x": (0.0, 10.0)},
                 by=(by,), keys={by: keys})


def test_same_inputs_share_one_plan_equal_to_a_fresh_one() -> None:
    first = plan_release(grouped_sum((0.0, 1.0)), "add_remove", KINDS)
    again = plan_release(grouped_sum((0.0, 1.0)), "add_remove", KINDS)
    assert again is first
    assert first == plan_query(grouped_sum((0.0, 1.0)), "add_remove", dict(KINDS))


@pytest.mark.parametrize(("a", "b", "by"), [
    ((0.0, 1.0), (-0.0, 1.0), "g"),      # the sign of zero
    ((True, False), (1, 0), "b"),         # bool against int
    ((1.0, 2.0), (1, 2), "g"),            # float against int
    ((0.0, 1.0), (1.0, 0.0), "g"),        # declared order is the release order
])
def test_inputs_a_planner_could_tell_apart_get_their_own_plan(a: tuple[object, ...],
                                                               b: tuple[object, ...],
                                                               by: str) -> None:
    plan_a = plan_release(grouped_sum(a, by), "add_remove", KINDS)
    plan_b = plan_release(grouped_sum(b, by), "add_remove", KINDS)
    assert plan_b is not plan_a
    assert [repr(k) for k in plan_b.query.keys[by]] == [repr(k) for k in b]
    assert len(plan_module._PLANS) == 2


def test_epsilon_relation_and_schema_are_part_of_the_key() -> None:
    base = plan_release(grouped_sum((0.0,)), "add_remove", KINDS)
    assert plan_release(grouped_sum((0.0,), epsilon=Fraction(1, 2)), "add_remove", KINDS) \
        is not base
    changed = plan_release(grouped_sum((0.0,)), "change_one", KINDS)
    assert changed is not base and changed.relation == "change_one"
    assert plan_release(grouped_sum((0.0,)), "add_remove", {**KINDS, "x": "int"}) is not base
    assert base.cost != plan_release(grouped_sum((0.0,), epsilon=Fraction(1, 2)),
                                     "add_remove", KINDS).cost


def test_a_failing_query_is_never_remembered_and_fails_again() -> None:
    bad = grouped_sum((0.0,), by="missing")
    for _ in range(2):
        with pytest.raises(ValidationError, match="unknown column"):
            plan_release(bad, "add_remove", KINDS)
    assert len(plan_module._PLANS) == 0


def test_keys_of_unfamiliar_types_are_planned_afresh_each_time() -> None:
    class Key(str):  # a key dpframe reads (as text), of a type whose pickle it cannot vouch for
        def __eq__(self, other: object) -> bool:
            return isinstance(other, Key)

        def __hash__(self) -> int:
            return 0

    query = Query(measures=(Measure("count"),), epsilon=Fraction(1), by=("g",),
                  keys={"g": (Key("k"),)})
    kinds = {"g": "other"}
    first = plan_release(query, "add_remove", kinds)
    assert plan_release(query, "add_remove", kinds) is not first
    assert len(plan_module._PLANS) == 0


def test_the_cache_keeps_only_the_most_recent_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_module, "_PLANS", RecentCache(3))
    plans = [plan_release(grouped_sum((float(i),)), "add_remove", KINDS) for i in range(3)]
    plan_release(grouped_sum((0.0,)), "add_remove", KINDS)        # 0 is now the most recent
    plan_release(grouped_sum((9.0,)), "add_remove", KINDS)        # evicts 1, the oldest
    assert len(plan_module._PLANS) == 3
    assert plan_release(grouped_sum((0.0,)), "add_remove", KINDS) is plans[0]
    assert plan_release(grouped_sum((1.0,)), "add_remove", KINDS) is not plans[1]


def test_huge_inputs_are_planned_afresh_each_time() -> None:
    """A query declaring 100,000 keys pickles to more than MAX_FINGERPRINT_BYTES: it is not
    remembered (256 of them would hold hundreds of MB), and is planned like any other."""
    keys = tuple(float(i) for i in range(100_000))
    first = plan_release(grouped_sum(keys), "add_remove", KINDS)
    assert len(plan_module._PLANS) == 0
    again = plan_release(grouped_sum(keys), "add_remove", KINDS)
    assert again is not first and again == first
