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

from tests.backends.contract import params

from ._harness import (
    ALL_KEY_KINDS,
    ALL_UNIT_KINDS,
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
from ._registry import Budget, check_over

QUERIES = [*UNGROUPED, *PUBLIC]


def pairs(key_kinds: Sequence[str], unit_kinds: Sequence[str | None], *,
          scan_layout: bool = False) -> st.SearchStrategy[tuple[Spec, Spec]]:
    return specs(key_kinds, unit_kinds, scan_layout=scan_layout).flatmap(
        lambda s: st.tuples(st.just(s), neighbours(s)))


def check_pair(backend: str, pair: tuple[Spec, Spec], queries: Sequence[Query]) -> None:
    d, d2 = pair
    for q in queries:
        a, b = run(backend, d, q), run(backend, d2, q)
        check_invariants(a)
        check_invariants(b)
        assert a.fingerprint() == b.fingerprint(), (
            f"D and its neighbour differ beyond the noisy values:\n  D : {a.describe()}\n"
            f"  D': {b.describe()}\n  fingerprints:\n  {a.fingerprint()}\n  {b.fingerprint()}")


#: Examples per backend, by its cost per release (``_registry``).
BUDGET = {
    "pandas": Budget(20), "scan": Budget(10), "parquet": Budget(5),
    "dask": Budget(8, 3, shrink=False),  # each Dask run costs ~60 ms
    "spark": Budget(2, 2, shrink=False),  # each Spark run is a JVM job
}


@pytest.mark.parametrize("backend", params())
def test_every_backend(backend: str) -> None:
    """Every backend of the registry (Spark with its marker), on its budget of examples."""
    check_over(backend, BUDGET, QUERIES, check_pair)


@pytest.mark.slow
@hsettings(400)
@given(pair=pairs(ALL_KEY_KINDS, ALL_UNIT_KINDS, scan_layout=True))
def test_pandas_and_scans_many(pair: tuple[Spec, Spec]) -> None:
    for backend in ("pandas", "scan", "parquet"):
        if backend != "pandas" and "mixed" in (pair[0].key_kind, pair[0].unit_kind):
            continue
        check_pair(backend, pair, QUERIES)


@pytest.mark.slow
@hsettings(60, shrink=False)
@given(pair=pairs(ALL_KEY_KINDS, ALL_UNIT_KINDS))
def test_dask_many(pair: tuple[Spec, Spec]) -> None:
    check_pair("dask", pair, QUERIES)
