"""One frame, every backend, one answer (docs/privacy.md, "One canonical value model": two rows that
name the same key or unit are the same key or unit in every backend, and their aggregates add
up, never overwrite).

The same typed frame is queried through every backend of the registry
(``tests/backends/contract.py``): pandas, ``dpf.scan`` of a pyarrow Table (real
``DictionaryArray`` columns with repeated entries; small batches; keyed-hash partitions), of a
Parquet file (small row groups), Polars, Dask (2 or 3 partitions), DuckDB, and Spark (marked, on
fewer examples), each in a fresh session with the same seed at a huge epsilon (the noise is 0).
Every backend must give:

* the same refusal (exception type) or the same structure, labels and provenance;
* the same charge;
* the same released values (integers exactly, floats to 1e-9) whenever contribution bounding
  cannot bind (when it binds, which rows are kept is random);
* on pandas, counts and integer sums equal to an oracle computed from the spec: rows match
  declared keys under Python ``==`` (a row's -0.0 matches a declared 0.0), missing keys and
  units are dropped, integers are clamped to the bounds.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.backends.contract import MARKED, params

from ._harness import (
    ALL_KEY_KINDS,
    ALL_QUERIES,
    ALL_UNIT_KINDS,
    ARROW_KEY_KINDS,
    ARROW_UNIT_KINDS,
    BACKENDS,
    DECLARED,
    MEASURED_KEY,
    N_BOUNDS,
    NAN,
    Outcome,
    Query,
    Spec,
    canon,
    check_invariants,
    hsettings,
    observe,
    released,
    run,
    same_number,
    specs,
)


def _valid_x(x: object) -> bool:
    return x is not None and not math.isnan(float(x))  # type: ignore[arg-type]


def oracle(spec: Spec, q: Query) -> list[object] | None:
    """Exact counts and integer sums from the spec (None: no oracle for this query)."""
    if q.private or spec.bounding_binds(q.grouped):
        return None
    units = spec.canonical_units()
    lo, hi = N_BOUNDS
    rows = [r for r, u in zip(spec.rows, units, strict=True) if u is not None]
    what = q.name.removeprefix("public.")
    if what not in ("count", "count(x)", "sum(n)"):
        return None

    def value(rs: list[tuple[object, ...]]) -> int:
        if what == "count":
            return len(rs)
        if what == "count(x)":
            return sum(1 for r in rs if _valid_x(r[2]))
        return sum(min(max(int(r[3]), lo), hi) for r in rs)  # type: ignore[call-overload]

    if not q.grouped:
        return [value(rows)]
    kind = spec.key_public_kind
    declared = [canon(k, "other") for k in DECLARED[spec.key_kind]]
    keyed = [(canon_key(r[0], kind), r) for r in rows]
    return [value([r for k, r in keyed if k is not None and k == d]) for d in declared]


def canon_key(v: object, kind: str) -> object | None:
    try:
        return canon(v, kind)
    except (TypeError, ValueError, OverflowError):
        return None


def check_agree(spec: Spec, q: Query, outs: dict[str, Outcome]) -> None:
    ref = outs["pandas"]
    for out in outs.values():
        check_invariants(out)
    for name, out in outs.items():
        msg = f"\n  pandas: {ref.describe()}\n  {name}: {out.describe()}"
        if ref.error is not None or out.error is not None:
            assert type(out.error).__name__ == type(ref.error).__name__, "refusals differ" + msg
            continue
        binds = spec.bounding_binds(q.grouped)  # then private keys are selected at random
        labels = not (q.private and binds)
        assert observe(out.result, labels=labels) == observe(ref.result, labels=labels), (
            "structures differ" + msg)
        assert out.spent == ref.spent, "charges differ" + msg
        assert out.provenance == ref.provenance, "provenance differs" + msg
        if not binds:
            a, b = released(ref.result), released(out.result)
            assert len(a) == len(b) and all(map(same_number, a, b)), "values differ" + msg
    want = oracle(spec, q)
    if want is not None and ref.error is None:
        got = released(ref.result)
        assert got == want, f"pandas {q.name} = {got}, oracle {want}: {ref.describe()}"


def some_queries(k: int) -> st.SearchStrategy[list[Query]]:
    return st.lists(st.sampled_from(ALL_QUERIES), min_size=k, max_size=k,
                    unique_by=lambda q: q.name)


@hsettings(14, shrink=False)  # Dask runs cost ~60 ms each
@given(spec=specs(ARROW_KEY_KINDS, ARROW_UNIT_KINDS, scan_layout=True), queries=some_queries(5))
def test_all_backends_agree(spec: Spec, queries: list[Query]) -> None:
    for q in queries:
        check_agree(spec, q, {b: run(b, spec, q) for b in BACKENDS})


@pytest.mark.parametrize("backend", params(*MARKED))
@hsettings(2, shrink=False)  # a Spark release costs about a second on local[2]: a subset
@given(spec=specs(("str", "int", "float", "dict"), (None, "int", "str"), scan_layout=True),
       queries=some_queries(4))
def test_marked_backends_agree(backend: str, spec: Spec, queries: list[Query]) -> None:
    """The registry's marked backends (Spark, with its marker) answer as pandas: the same
    refusals, structure, charges, provenance and (when bounding does not bind) values, on a few
    drawn frames and queries."""
    for q in queries:
        check_agree(spec, q, {b: run(b, spec, q) for b in ("pandas", backend)})


@hsettings(10, shrink=False)  # every example runs 33 queries x 3 backends (~1,000 checks)
@given(spec=specs(ARROW_KEY_KINDS, ARROW_UNIT_KINDS, scan_layout=True))
def test_pandas_and_scans_agree(spec: Spec) -> None:
    for q in ALL_QUERIES:
        check_agree(spec, q, {b: run(b, spec, q) for b in ("pandas", "scan", "parquet")})


@hsettings(12, shrink=False)  # Dask runs cost ~60 ms each
@given(spec=specs(ALL_KEY_KINDS, ALL_UNIT_KINDS), queries=some_queries(5))
def test_dask_partitions_typed_apart_agree(spec: Spec, queries: list[Query]) -> None:
    """A Dask frame whose partitions are typed apart from its meta (every other partition's
    columns Python objects, the others typed by pandas from their own values, as one person's
    value can type a partition) answers as the frame typed as a whole: partitions are read by
    the public schema, identities compared by value (findings 20 to 22 of docs/audit.md)."""
    for q in queries:
        check_agree(spec, q, {b: run(b, spec, q) for b in ("pandas", "dask", "dask-retyped")})


@hsettings(10, shrink=False)
@given(spec=specs(ALL_KEY_KINDS, ALL_UNIT_KINDS), queries=st.lists(
    st.sampled_from(MEASURED_KEY), min_size=3, max_size=3, unique_by=lambda q: q.name))
def test_dask_measured_keys_typed_apart_agree(spec: Spec, queries: list[Query]) -> None:
    """The same, for a key that is measured too (``sum("g")`` by ``g``): its values identify
    groups exactly and its numbers are read by the schema, whatever a partition's dtype
    (findings 23 to 25 of docs/audit.md)."""
    for q in queries:
        check_agree(spec, q, {b: run(b, spec, q) for b in ("pandas", "dask", "dask-retyped")})


@hsettings(12, shrink=False)
@given(spec=specs(ARROW_KEY_KINDS, ARROW_UNIT_KINDS, scan_layout=True), queries=st.lists(
    st.sampled_from(MEASURED_KEY), min_size=3, max_size=3, unique_by=lambda q: q.name))
def test_measured_keys_agree(spec: Spec, queries: list[Query]) -> None:
    """A key that is measured too, through every backend (scans of Arrow tables and Parquet,
    Dask): one answer."""
    for q in queries:
        check_agree(spec, q, {b: run(b, spec, q) for b in BACKENDS})


@pytest.mark.slow
@hsettings(150, shrink=False)
@given(spec=specs(ARROW_KEY_KINDS, ARROW_UNIT_KINDS, scan_layout=True))
def test_all_backends_agree_many(spec: Spec) -> None:
    for q in ALL_QUERIES:
        check_agree(spec, q, {b: run(b, spec, q) for b in BACKENDS})


def test_oracle_sees_negative_zero_as_declared_zero() -> None:
    """The oracle itself: a -0.0 row matches the declared 0.0, NaN matches nothing."""
    spec = Spec("float", None, ((-0.0, None, 1.0, 1), (NAN, None, 1.0, 1), (0.0, None, 2.0, 20)))
    from ._harness import QUERY

    assert oracle(spec, QUERY["public.count"]) == [0, 2, 0, 0]
    assert oracle(spec, QUERY["public.sum(n)"]) == [0, 11, 0, 0]
