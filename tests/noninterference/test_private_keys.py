"""Private keys at a huge epsilon (docs/privacy.md, "One canonical value model").

With ``keys="private"`` the released *set* of keys may differ between D and a neighbour D' (DP
key selection decides it), but nothing else may:

* the same refusals and exceptions, raised before any charge, and the same charge;
* the same structure apart from the labels: index type and dtype (from the key column's public
  kind: int -> int64, float -> float64, bool -> bool, else object, also when no key is
  released), names, columns, dtypes, provenance;
* every released label in canonical form (float column: a float, never -0.0; object column:
  no bool, integral numbers as ints, never the spelling of the first row) and the labels sorted
  by the spec's total order (numbers < str < bytes < other, then value): a function of the
  released set alone;
* at a huge epsilon the noise is 0, so the released set is exactly the canonical keys held by
  at least ``threshold`` units (read from the provenance), and a key's count is its number of
  rows (checked when contribution bounding cannot bind).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from tests.backends.contract import params

from ._harness import (
    ALL_KEY_KINDS,
    ALL_UNIT_KINDS,
    PRIVATE,
    Outcome,
    Query,
    Spec,
    check_invariants,
    check_private_index,
    hsettings,
    label,
    neighbours,
    observe,
    order_key,
    run,
    specs,
)
from ._registry import Budget, check_over


def pairs(key_kinds: Sequence[str], unit_kinds: Sequence[str | None], *,
          scan_layout: bool = False) -> st.SearchStrategy[tuple[Spec, Spec]]:
    return specs(key_kinds, unit_kinds, scan_layout=scan_layout).flatmap(
        lambda s: st.tuples(st.just(s), neighbours(s)))


def expected_keys(out: Outcome, spec: Spec) -> list[object] | None:
    """The keys DP selection releases when the noise is 0, or None when unknown (contribution
    bounding binds, so which units count is random)."""
    if out.error is not None or spec.bounding_binds(grouped=True):
        return None
    sel = out.result.attrs["dp"]["key_selection"]
    # the truncated-geometric rule keeps a key of n units with probability pi_n: at a huge
    # epsilon pi_1 = delta and pi_n is within 2**-64 of 1 from the half-probability count on
    threshold = sel.get("half_probability_count", sel["threshold"])
    keys = [k for k, c in spec.units_per_key().items() if c >= threshold]
    return sorted(keys, key=order_key)


def rows_per_key(spec: Spec) -> dict[object, int]:
    out: dict[object, int] = {}
    for k, u in zip(spec.canonical_keys(), spec.canonical_units(), strict=True):
        if k is not None and u is not None:
            out[k] = out.get(k, 0) + 1
    return out


def check_released(out: Outcome, spec: Spec) -> None:
    check_private_index(out, spec)
    if out.error is None:
        event(f"{spec.key_kind} keys: {min(len(out.result), 3)}+ released")
    want = expected_keys(out, spec)
    if want is None:
        return
    got = out.result.index.tolist()
    assert [label(v) for v in got] == [label(v) for v in want], (
        f"released keys {got!r}, expected {want!r} (noise is 0 at this epsilon): "
        f"{out.describe()}")
    if out.query.endswith(".count"):
        counts = rows_per_key(spec)
        assert out.result.tolist() == [counts[k] for k in want], out.describe()


def check_pair(backend: str, pair: tuple[Spec, Spec], queries: Sequence[Query]) -> None:
    d, d2 = pair
    for q in queries:
        a, b = run(backend, d, q), run(backend, d2, q)
        for out, spec in ((a, d), (b, d2)):
            check_invariants(out)
            check_released(out, spec)
        fa = (observe(a.value, labels=False), a.spent)
        fb = (observe(b.value, labels=False), b.spent)
        assert fa == fb, (
            f"D and its neighbour differ beyond the released key set:\n  D : {a.describe()}\n"
            f"  D': {b.describe()}\n  {fa}\n  {fb}")


#: Examples per backend, by its cost per release (``_registry``).
BUDGET = {
    "pandas": Budget(25), "scan": Budget(15), "parquet": Budget(6),
    "dask": Budget(8, 3, shrink=False),  # each Dask run costs ~60 ms
    "spark": Budget(2, 2, shrink=False),  # each Spark run is a JVM job
}


@pytest.mark.parametrize("backend", params())
def test_every_backend(backend: str) -> None:
    """Every backend of the registry (Spark with its marker), on its budget of examples."""
    check_over(backend, BUDGET, PRIVATE, check_pair)


@pytest.mark.slow
@hsettings(400)
@given(pair=pairs(ALL_KEY_KINDS, ALL_UNIT_KINDS, scan_layout=True))
def test_pandas_and_scans_many(pair: tuple[Spec, Spec]) -> None:
    for backend in ("pandas", "scan", "parquet"):
        if backend != "pandas" and "mixed" in (pair[0].key_kind, pair[0].unit_kind):
            continue
        check_pair(backend, pair, PRIVATE)


@pytest.mark.slow
@hsettings(60, shrink=False)
@given(pair=pairs(ALL_KEY_KINDS, ALL_UNIT_KINDS))
def test_dask_many(pair: tuple[Spec, Spec]) -> None:
    check_pair("dask", pair, PRIVATE)
