"""Non-interference of everything but the noisy values, with public keys (docs/privacy.md,
"Behaviour that does not depend on the data").

A frame D and a neighbour D' (one unit's rows added, removed or replaced, anywhere in the row
order) with adversarial values (-0.0, NaN, None, +/-inf, huge numbers, True / 1 / 1.0 and lists,
dicts, tuples, bytes in object columns, Arrow dictionaries with repeated entries, empty frames,
all-missing columns, keys absent from the data) must give, for every aggregate and on every
backend:

* the same refusal or exception (type and message), raised before any charge;
* the same result structure: index type, dtype, names, every label with its exact type, in the
  same order; result name, columns and dtypes; the provenance in ``.attrs["dp"]`` (mechanism,
  epsilon, delta, noise scale, ...) or, for a scalar, its Python type and provenance;
* the same charge (``session.spent``).

Examples are few and derandomized (the same ones in every run); ``pytest -m slow`` runs more.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ._harness import (
    ALL_KEY_KINDS,
    ALL_UNIT_KINDS,
    ARROW_KEY_KINDS,
    ARROW_UNIT_KINDS,
    PUBLIC,
    UNGROUPED,
    Query,
    Spec,
    check_invariants,
    hsettings,
    neighbours,
    run,
    specs,
)

QUERIES = [*UNGROUPED, *PUBLIC]


def pairs(key_kinds: Sequence[str], unit_kinds: Sequence[str | None], *,
          scan_layout: bool = False) -> st.SearchStrategy[tuple[Spec, Spec]]:
    return specs(key_kinds, unit_kinds, scan_layout=scan_layout).flatmap(
        lambda s: st.tuples(st.just(s), neighbours(s)))


def some_queries(k: int) -> st.SearchStrategy[list[Query]]:
    return st.lists(st.sampled_from(QUERIES), min_size=k, max_size=k, unique_by=lambda q: q.name)


def check_pair(backend: str, pair: tuple[Spec, Spec], queries: Sequence[Query]) -> None:
    d, d2 = pair
    for q in queries:
        a, b = run(backend, d, q), run(backend, d2, q)
        check_invariants(a)
        check_invariants(b)
        assert a.fingerprint() == b.fingerprint(), (
            f"D and its neighbour differ beyond the noisy values:\n  D : {a.describe()}\n"
            f"  D': {b.describe()}\n  fingerprints:\n  {a.fingerprint()}\n  {b.fingerprint()}")


@hsettings(30)
@given(pair=pairs(ALL_KEY_KINDS, ALL_UNIT_KINDS))
def test_pandas(pair: tuple[Spec, Spec]) -> None:
    check_pair("pandas", pair, QUERIES)


@hsettings(15)
@given(pair=pairs(ARROW_KEY_KINDS, ARROW_UNIT_KINDS, scan_layout=True))
def test_scan_arrow_table(pair: tuple[Spec, Spec]) -> None:
    check_pair("arrow", pair, QUERIES)


@hsettings(6)
@given(pair=pairs(ARROW_KEY_KINDS, ARROW_UNIT_KINDS, scan_layout=True))
def test_scan_parquet(pair: tuple[Spec, Spec]) -> None:
    check_pair("parquet", pair, QUERIES)


@hsettings(8, shrink=False)  # each Dask run costs ~60 ms
@given(pair=pairs(ALL_KEY_KINDS, ALL_UNIT_KINDS), queries=some_queries(3))
def test_dask(pair: tuple[Spec, Spec], queries: list[Query]) -> None:
    check_pair("dask", pair, queries)


@pytest.mark.slow
@hsettings(400)
@given(pair=pairs(ALL_KEY_KINDS, ALL_UNIT_KINDS, scan_layout=True))
def test_pandas_and_scans_many(pair: tuple[Spec, Spec]) -> None:
    for backend in ("pandas", "arrow", "parquet"):
        if backend != "pandas" and "mixed" in (pair[0].key_kind, pair[0].unit_kind):
            continue
        check_pair(backend, pair, QUERIES)


@pytest.mark.slow
@hsettings(60, shrink=False)
@given(pair=pairs(ALL_KEY_KINDS, ALL_UNIT_KINDS))
def test_dask_many(pair: tuple[Spec, Spec]) -> None:
    check_pair("dask", pair, QUERIES)
