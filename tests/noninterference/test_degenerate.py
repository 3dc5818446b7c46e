"""Degenerate and malformed data: answered like any other, never a failure after the charge
(docs/privacy.md, "Behaviour that does not depend on the data" and "Budget").

Every catalogued aggregate (count, count(col), sum, mean with bounds symmetric about 0, max,
min, median, quantile at q=1/3, histogram; grouped count/sum/mean/max/min/quantile/agg with
public and with private keys) on every backend, over: empty frames, all-missing value columns,
all-missing keys and units, lists / dicts / tuples in key and unit columns, -0.0 keys and units,
infinite and huge values, text whose bytes are not UTF-8 in Arrow-backed key and unit columns.

* ``test_no_failure_after_the_charge``: whatever happens, an exception is a ``DPError`` raised
  before the charge (``session.spent`` unchanged). A failure after the charge is a defect.
* ``test_answered_with_the_structure_of_ordinary_data``: per the spec these inputs are answered
  (no ValidationError any more), with the structure, provenance and charge of the same query on
  an ordinary frame of the same schema (private keys: the same index dtype and columns; which
  keys are released may differ).
* ``test_text_that_is_not_utf8_is_a_missing_value``: such a value anywhere (key, unit, the
  counted column) gives exactly what a missing value there gives, on every backend (issue 43,
  item 2: a private key or a distinct count over it raised after the charge).
"""

from __future__ import annotations

import functools
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.backends import contract

from ._harness import (
    ALL_QUERIES,
    BACKENDS,
    INF,
    MISSING_OBJECTS,
    NAN,
    NOT_UTF8,
    Outcome,
    Row,
    Spec,
    check_invariants,
    check_private_index,
    hsettings,
    observe,
    released,
    rows,
    run,
    same_number,
    specs,
)

#: Present keys (each held by two units) and distinct units, by kind.
_KEYS: dict[str, list[object]] = {
    "str": ["a", "b", "zz"], "objstr": ["a", "b", "zz"], "dict": ["a", "b", "zz"],
    "float": [1.5, 0.0, -2.0], "dictfloat": [1.5, 0.0, -2.0], "int": [7, 0, 2],
    "bool": [True, False], "mixed": ["a", 1, b"x"],
}
_UNITS: dict[str, list[object]] = {
    "int": [1, 2, 3, 4, 5, 6], "float": [1.0, 2.5, -3.0, 7.0, 0.0, 3.5],
    "str": ["u1", "u2", "u3", "u4", "u5", "u6"], "dict": ["u1", "u2", "u3", "u4", "u5", "u6"],
    "dictfloat": [1.0, 2.5, -3.0, 7.0, 0.0, 3.5], "mixed": ["u2", "u3", 1, 2, "1", b"u"],
}


def ordinary(key_kind: str, unit_kind: str | None) -> Spec:
    """An ordinary frame of the same schema: six rows, every key twice, values in bounds."""
    keys = _KEYS[key_kind]
    units = _UNITS[unit_kind] if unit_kind else [None] * 6
    body: list[Row] = [(keys[i % len(keys)], units[i], float(i) - 2.5, i) for i in range(6)]
    return Spec(key_kind, unit_kind, tuple(body))


def _with(spec: Spec, **cols: list[object]) -> Spec:
    names = ("g", "u", "x", "n")
    body = []
    for i, r in enumerate(spec.rows):
        row = list(r)
        for name, vals in cols.items():
            row[names.index(name)] = vals[i % len(vals)]
        body.append(tuple(row))
    return Spec(spec.key_kind, spec.unit_kind, tuple(body))  # type: ignore[arg-type]


LISTS = [[1], {"a": 1}, (1, 2), [None], complex(1, 0)]

DATASETS: dict[str, Spec] = {
    "empty-rows": Spec("str", None, ()),
    "empty-with-units": Spec("int", "int", ()),
    "empty-dictionaries": Spec("dict", "dict", ()),
    "empty-object-columns": Spec("mixed", "mixed", ()),
    "all-missing-x": _with(ordinary("str", None), x=[NAN, None]),
    "all-missing-x-with-units": _with(ordinary("float", "float"), x=[None, NAN]),
    "all-missing-keys-object": _with(ordinary("objstr", None), g=[None]),
    "all-missing-keys-str": _with(ordinary("str", "str"), g=[None]),
    "all-nan-float-keys": _with(ordinary("float", None), g=[NAN]),
    "all-missing-dictionary-keys": _with(ordinary("dictfloat", "dict"), g=[NAN]),
    "all-missing-units": _with(ordinary("str", "str"), u=[None]),
    "lists-in-keys": _with(ordinary("mixed", None), g=[*LISTS, "a"]),
    "only-lists-in-keys": _with(ordinary("mixed", None), g=LISTS),
    "missing-objects-in-keys": _with(ordinary("mixed", "int"), g=MISSING_OBJECTS),
    "lists-in-units": _with(ordinary("str", "mixed"), u=[*LISTS, "u2"]),
    "only-lists-in-units": _with(ordinary("str", "mixed"), u=LISTS),
    "negative-zero-keys-and-units": _with(ordinary("float", "float"), g=[-0.0, 0.0, -0.0],
                                          u=[-0.0, 0.0, 1.0, -0.0]),
    "infinite-and-huge-values": _with(ordinary("int", None), x=[INF, -INF, 1e308, -1e308],
                                      n=[2**62, -(2**62), 2**63 - 1]),
    "not-utf8-keys-and-units": _with(ordinary("str", "dict"), g=[*NOT_UTF8, "a"],
                                     u=["u1", NOT_UTF8[0], "u3"]),
    "not-utf8-dictionary-keys": _with(ordinary("dict", "str"), g=["a", NOT_UTF8[1]],
                                      u=[NOT_UTF8[2], "u2", "u3", "u4"]),
}
ARROW_SAFE = [name for name, s in DATASETS.items() if "mixed" not in (s.key_kind, s.unit_kind)]
#: Dask runs cost ~50 ms each: the cases that matter most for it.
DASK_CASES = ["empty-rows", "all-missing-x", "all-missing-keys-object", "only-lists-in-keys",
              "lists-in-units", "not-utf8-keys-and-units"]



def _datasets(backend: str) -> list[str]:
    """The datasets ``backend`` can hold (the registry's capabilities), Dask's within its cost."""
    b = contract.REGISTRY[backend]
    names = [n for n in DATASETS if b.can("objects") or n in ARROW_SAFE]
    return [n for n in names if n in DASK_CASES] if backend == "dask" else names


#: Every unmarked backend of the registry (Spark lacks "many_cases": 33 queries a dataset).
CASES = [(backend, name) for backend in contract.LOCAL for name in _datasets(backend)]


@functools.cache
def outcomes(backend: str, dataset: str) -> dict[str, Outcome]:
    spec = DATASETS[dataset]
    return {q.name: run(backend, spec, q) for q in ALL_QUERIES}


@functools.cache
def reference(key_kind: str, unit_kind: str | None) -> dict[str, Outcome]:
    spec = ordinary(key_kind, unit_kind)
    return {q.name: run("pandas", spec, q) for q in ALL_QUERIES}


@pytest.mark.parametrize(("backend", "dataset"), CASES, ids=[f"{b}-{d}" for b, d in CASES])
def test_no_failure_after_the_charge(backend: str, dataset: str) -> None:
    failures = []
    for out in outcomes(backend, dataset).values():
        try:
            check_invariants(out)
        except AssertionError as exc:
            failures.append(str(exc).splitlines()[0])
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(("backend", "dataset"), CASES, ids=[f"{b}-{d}" for b, d in CASES])
def test_answered_with_the_structure_of_ordinary_data(backend: str, dataset: str) -> None:
    spec = DATASETS[dataset]
    ref = reference(spec.key_kind, spec.unit_kind)
    failures = []
    for q in ALL_QUERIES:
        out, want = outcomes(backend, dataset)[q.name], ref[q.name]
        assert want.error is None, f"the ordinary frame is refused: {want.describe()}"
        if out.error is not None:
            failures.append(f"refused: {out.describe()}")
            continue
        if q.private:
            check_private_index(out, spec)
        got_fp = (observe(out.result, labels=not q.private), out.spent, out.provenance)
        want_fp = (observe(want.result, labels=not q.private), want.spent, want.provenance)
        if got_fp != want_fp:
            failures.append(f"structure differs from ordinary data: {out.describe()}\n"
                            f"    ordinary: {want.describe()}\n    {got_fp}\n    {want_fp}")
    assert not failures, "\n".join(failures)


@hsettings(10, shrink=False)  # four backends, Dask's runs ~60 ms each
@given(spec=specs(("str", "dict"), (None, "str", "dict"), scan_layout=True), data=st.data())
def test_text_that_is_not_utf8_is_a_missing_value(spec: Spec, data: st.DataObject) -> None:
    """One value whose bytes are not UTF-8, in a row of the frame or in a row added anywhere,
    in the key (grouped by, counted, distinct-counted) or the unit column: every backend
    answers exactly (structure, charge, provenance and the seeded noisy values) what it
    answers with a missing value there. Before, a private key or a distinct count over it
    raised pyarrow's error after the charge (pandas' ``str`` dtype, Dask) and a scan counted
    it as a distinct value of its own (issue 43, item 2)."""
    body = list(spec.rows)
    if not body or data.draw(st.booleans(), label="add a row"):
        row = data.draw(rows(spec.key_kind, spec.unit_kind), label="row")
        body.insert(data.draw(st.integers(0, len(body)), label="at"), row)
        at = body.index(row)
    else:
        at = data.draw(st.integers(0, len(body) - 1), label="at")
    column = data.draw(st.sampled_from([0, 1] if spec.unit_kind else [0]), label="column")
    bad = data.draw(st.sampled_from(NOT_UTF8), label="value")

    def with_value(v: object) -> Spec:
        changed = list(body)
        row = list(changed[at])
        row[column] = v
        changed[at] = tuple(row)  # type: ignore[assignment]
        return replace(spec, rows=tuple(changed))

    queries = data.draw(st.lists(st.sampled_from(ALL_QUERIES), min_size=3, max_size=3,
                                 unique_by=lambda q: q.name), label="queries")
    for backend in BACKENDS:
        for q in queries:
            got, want = run(backend, with_value(bad), q), run(backend, with_value(None), q)
            check_invariants(got)
            assert got.fingerprint() == want.fingerprint(), (
                f"\n  not UTF-8: {got.describe()}\n  missing: {want.describe()}")
            if got.error is None:
                a, b = released(got.result), released(want.result)
                assert len(a) == len(b) and all(map(same_number, a, b)), (
                    f"\n  not UTF-8: {got.describe()}\n  missing: {want.describe()}")
