"""The property suites over the registry of backends (``tests/backends/contract.py``).

A property suite (public structure, private keys) is one test parametrized over every backend
of the registry, Spark with its marker. What a backend is fed follows its capabilities (the
frames of mixed Python objects only where it has ``objects``); how many examples it draws
follows its cost per release, from a :class:`Budget` per suite (a backend the suite does not
name, a new one, gets :data:`NEW_BACKEND`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from tests.backends import contract

from ._harness import (
    ALL_KEY_KINDS,
    ALL_UNIT_KINDS,
    ARROW_KEY_KINDS,
    ARROW_UNIT_KINDS,
    Query,
    Spec,
    hsettings,
    neighbours,
    specs,
)


@dataclass(frozen=True)
class Budget:
    """``examples`` drawn frames; each runs ``queries`` drawn queries (None: every query).
    ``shrink`` is off where a run is expensive (a failing example is reported as found)."""

    examples: int
    queries: int | None = None
    shrink: bool = True


#: A backend a suite does not name (Polars, DuckDB, a new one): a few examples of 3 queries.
NEW_BACKEND = Budget(6, 3, shrink=False)


def kinds(backend: str) -> tuple[Sequence[str], Sequence[str | None]]:
    """The key and unit kinds ``backend`` is fed: every kind, or the Arrow-typed ones where it
    lacks columns of mixed Python objects (the registry's reason)."""
    if contract.REGISTRY[backend].can("objects"):
        return ALL_KEY_KINDS, ALL_UNIT_KINDS
    return ARROW_KEY_KINDS, ARROW_UNIT_KINDS


def pairs(backend: str) -> st.SearchStrategy[tuple[Spec, Spec]]:
    """A frame for ``backend`` and a neighbour of it, with a layout of batches and partitions
    (the backends that take no engine knobs ignore it)."""
    keys, units = kinds(backend)
    return specs(keys, units, scan_layout=True).flatmap(
        lambda s: st.tuples(st.just(s), neighbours(s)))


def check_over(backend: str, budget: dict[str, Budget], queries: Sequence[Query],
               check: Callable[[str, tuple[Spec, Spec], Sequence[Query]], None]) -> None:
    """Run ``check(backend, pair, some_queries)`` on ``backend``'s budget of drawn pairs."""
    b = budget.get(backend, NEW_BACKEND)
    k = b.queries
    chosen: st.SearchStrategy[list[Query]] = (
        st.just(list(queries)) if k is None else
        st.lists(st.sampled_from(list(queries)), min_size=k, max_size=k,
                 unique_by=lambda q: q.name))

    @hsettings(b.examples, shrink=b.shrink)
    @given(pair=pairs(backend), qs=chosen)
    def inner(pair: tuple[Spec, Spec], qs: list[Query]) -> None:
        check(backend, pair, qs)

    inner()
