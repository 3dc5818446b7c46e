"""Regression tests for the ten findings of the attacker's review of 0.1 (issue 11).

Each test fails on the 0.1 code: it checks that one person's rows change nothing but the noisy
values and the DP-selected keys (labels, their spelling and order, refusals, charges), on the
pandas, Arrow-scan and (where the finding was Dask's) Dask backends.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import dpframe as dpf
from dpframe.core.accounting import zcdp_to_approx_dp

HUGE = 1e6  # geometric noise of scale <= 1e-5: zero except with probability ~e^-1e5
#: A key of one unit is released with probability about delta whatever epsilon (the threshold's
#: boundary coin, or pi_1 = delta): private keys here use a delta that makes it negligible.
TINY = 1e-12


def session(epsilon: float = 1e9, delta: float = 0.5, **kw: Any) -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(epsilon, delta, seed=11, **kw)


def scan_of(df: pd.DataFrame) -> dpf.Scan:
    return dpf.scan(pa.Table.from_pandas(df, preserve_index=False))


# -- 1. repeated dictionary entries and 0.0 / -0.0 add up, never overwrite -------------------------

def _dict_table(dictionary: list[object], indices: list[int]) -> pa.Table:
    keys = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(dictionary))
    return pa.table({"k": keys, "x": pa.array([1.0] * len(indices))})


@pytest.mark.parametrize(("dictionary", "want"), [
    (["a", "a", "b"], {"a": 3, "b": 1}),
    ([0.0, -0.0, 1.0], {0.0: 3, 1.0: 1}),
])
def test_scan_merges_equal_dictionary_entries(dictionary, want):
    table = _dict_table(dictionary, [0, 0, 1, 2])
    s = session()
    private = dpf.scan(table).dp(s).groupby("k", keys="private").count(epsilon=HUGE,
                                                                       delta=TINY)
    public = dpf.scan(table).dp(s, keys={"k": list(want)}).groupby("k").count(epsilon=HUGE)
    assert public.to_dict() == want
    # private keys: selection at huge epsilon keeps keys with >= 2 units
    assert private.to_dict() == {k: v for k, v in want.items() if v >= 2}


def test_scan_blocks_mapping_to_one_key_add_up():
    """The streaming accumulator adds rows of one key from every block (0.1 kept the last)."""
    parts = [_dict_table(["a", "a"], [0, 1]), _dict_table(["a", "b"], [0, 0, 1])]
    table = pa.concat_tables(parts)
    s = session()
    out = dpf.scan(table, batch_size=2).dp(s).groupby("k", keys="private").count(
        epsilon=HUGE, delta=TINY)
    assert out.to_dict() == {"a": 4}


# -- 2. released private keys in canonical form -----------------------------------------------

def _labels(out: pd.Series) -> list[tuple[type, str]]:
    return [(type(k), repr(k)) for k in out.index]


def test_private_float_keys_are_released_as_canonical_zero():
    first_negative = pd.DataFrame({"k": [-0.0, 0.0, 0.0, 2.0, 2.0], "x": 1.0})
    first_positive = first_negative.iloc[::-1].reset_index(drop=True)
    outs = []
    for df in (first_negative, first_positive):
        for front in (df, scan_of(df)):
            out = front.dp(session()).groupby("k", keys="private").count(epsilon=HUGE,
                                                                          delta=TINY)
            assert math.copysign(1.0, out.index[0]) == 1.0
            outs.append(_labels(out))
    assert all(o == outs[0] for o in outs)


def test_private_object_keys_true_and_one_are_one_key_labelled_one():
    df = pd.DataFrame({"k": pd.Series([True, 1, 1.0, "a", "a"], dtype=object)})
    out = df.dp(session()).groupby("k", keys="private").count(epsilon=HUGE, delta=TINY)
    assert _labels(out) == [(int, "1"), (str, "'a'")]
    assert out.index.dtype == object
    assert out.tolist() == [3, 2]


def test_private_key_index_dtype_follows_the_column_kind():
    df = pd.DataFrame({"i": [1, 1, 2, 2], "f": [0.5, 0.5, 1.0, 1.0], "b": [True] * 4})
    s = session()
    for col, dtype in (("i", "int64"), ("f", "float64"), ("b", "bool")):
        for front in (df, scan_of(df)):
            out = front.dp(s).groupby(col, keys="private").count(epsilon=HUGE, delta=1e-3)
            assert out.index.dtype == dtype
            none = front.dp(s).groupby(col, keys="private").count(epsilon=1e-3, delta=1e-12)
            assert none.index.dtype == dtype and len(none) == 0


# -- 3. order of released private keys: a function of the released set alone ----------------------

def test_an_unreleased_key_cannot_reorder_the_released_ones():
    base = pd.DataFrame({"k": pd.Series([1] * 5 + [2] * 5 + [10] * 5, dtype=object)})
    with_z = pd.concat([base, pd.DataFrame({"k": pd.Series(["z"], dtype=object)})],
                       ignore_index=True)
    outs = [df.dp(session()).groupby("k", keys="private").count(epsilon=HUGE, delta=TINY)
            for df in (base, with_z)]
    assert [list(o.index) for o in outs] == [[1, 2, 10], [1, 2, 10]]  # "z" has one unit


# -- 4. Gaussian queries mixing additive and exponential-mechanism measures ------------------------

def _analytic_delta(eps: float, mu2: float) -> float:
    """The Gaussian's exact delta at ``eps`` for mu^2 = sum (Delta / sigma)^2 (Balle and Wang
    2018, Thm 8; Gaussian noise composes exactly in mu^2)."""
    mu = math.sqrt(mu2)

    def phi(z: float) -> float:
        return 0.5 * math.erfc(-z / math.sqrt(2))

    return phi(mu / 2 - eps / mu) - math.exp(eps) * phi(-mu / 2 - eps / mu)


def _mu2(m: dict[str, Any]) -> float:
    """mu^2 of a Gaussian measure's noise from its provenance (a mean's count has L2
    sensitivity 1 here: row-level, one group per row)."""
    mu2 = (m["sensitivity"] / m["noise_scale"]) ** 2
    if "count_noise_scale" in m:
        mu2 += (1 / m["count_noise_scale"]) ** 2
    return float(mu2)


def test_mixed_gaussian_agg_is_charged_with_a_valid_proof_and_true_provenance():
    df = pd.DataFrame({"g": ["a", "b"] * 50, "x": np.linspace(0, 10, 100)})
    s = session(epsilon=10, delta=1e-3)
    out = df.dp(s, bounds={"x": (0, 10)}, keys={"g": ["a", "b"]}).groupby("g").agg(
        {"x": ["sum", "mean", "max"]}, epsilon=1, delta=1e-6, mechanism="gaussian")
    measures = out.attrs["dp"]["measures"]
    gauss = [m for m in measures if m["mechanism"] == "discrete gaussian"]
    pure = sum(Fraction(m["epsilon"]) for m in measures if m not in gauss)
    # the whole query's guarantee: the Gaussian block is (1 - pure, 1e-6)-DP on the analytic
    # curve (core/noise/gaussian.py proves it for the discrete noise), the pure measures add theirs
    assert _analytic_delta(float(1 - pure), sum(_mu2(m) for m in gauss)) <= 1e-6
    # each Gaussian measure's stated (epsilon, delta) is true of its own noise, and at most
    # what its own rho gives in zCDP (a measure's rho here is its sum part's)
    for m in gauss:
        assert _analytic_delta(m["epsilon"], _mu2(m)) <= m["delta"] * (1 + 1e-9)
        if m["aggregate"] == "sum":
            assert m["epsilon"] <= float(zcdp_to_approx_dp(Fraction(m["rho"]),
                                                           Fraction(m["delta"])))
    assert s.spent == (1.0, 1e-6)


# -- 5. change_one ungrouped sum ------------------------------------------------------------------

def test_change_one_sum_sensitivity_covers_rows_entering_a_filtered_frame():
    df = pd.DataFrame({"x": [100.5] * 10, "u": range(10)})
    s = session(neighbouring="change_one")
    dry = df.dp(s, bounds={"x": (100, 101)}).explain("sum", "x", epsilon=1)
    assert dry["measures"][0]["sensitivity"] >= 101
    s2 = session(neighbouring="change_one")
    dry = df.dp(s2, bounds={"x": (100, 101)}, privacy_unit="u", max_rows_per_unit=3).explain(
        "sum", "x", epsilon=1)
    assert dry["measures"][0]["sensitivity"] >= 3 * 101


# -- 6. a unit spelled 0.0 and -0.0 is one unit in scans ------------------------------------------

@pytest.mark.parametrize("partitions", [1, 3])
def test_scan_counts_a_float_unit_spelled_two_ways_once(partitions):
    df = pd.DataFrame({"u": [0.0, -0.0, 1.0], "x": 1.0})
    table = pa.Table.from_pandas(df, preserve_index=False)
    for front in (df, dpf.scan(table, partitions=partitions)):
        n = front.dp(session(), privacy_unit="u", max_rows_per_unit=1).count(epsilon=HUGE)
        assert n == 2


# -- 7. degenerate data is released, the same way on every backend -------------------------------

def test_empty_and_all_missing_data_give_the_same_structure_on_pandas_and_scans():
    full = pd.DataFrame({"k": ["a", "b"], "x": [1.0, 2.0]})
    for df in (full.iloc[:0], full.assign(x=np.nan)):
        for front in (df, scan_of(df)):
            s = session()
            p = front.dp(s, bounds={"x": (0, 3)}, keys={"k": ["a", "b"]})
            assert isinstance(p.mean("x", epsilon=1), float)
            assert isinstance(p.median("x", epsilon=1), float)
            out = p.groupby("k").agg({"x": ["sum", "mean", "max"]}, epsilon=1)
            assert list(out.index) == ["a", "b"]
            assert s.spent == (3.0, 0.0)


# -- 8. nothing raises after the charge ------------------------------------------------------

def test_mean_with_bounds_symmetric_about_zero():
    df = pd.DataFrame({"x": [-5.0, 5.0, 1.0], "g": ["a", "a", "b"], "n": [-3, 2, 9]})
    for front in (df, scan_of(df)):
        s = session()
        p = front.dp(s, bounds={"x": (-10, 10), "n": (-10, 10)}, keys={"g": ["a", "b"]})
        assert abs(p.mean("x", epsilon=HUGE) - 1 / 3) < 1e-3
        assert abs(p.mean("n", epsilon=HUGE) - 8 / 3) < 1e-3
        assert p.groupby("g").mean("x", epsilon=HUGE).round(3).tolist() == [0.0, 1.0]


@pytest.mark.parametrize("q", [1 / 3, 0.1, 0.999, 2 / 7])
def test_quantile_levels_never_overflow_the_sampler(q):
    df = pd.DataFrame({"x": np.arange(300.0)})
    s = session(epsilon=100)
    v = df.dp(s, bounds={"x": (0, 300)}).quantile("x", q, epsilon=50)
    assert abs(v - q * 300) < 15
    prov = df.dp(s, bounds={"x": (0, 300)}).explain("quantile", "x", q, epsilon=1)
    assert prov["measures"][0]["candidates"] == 1 << 16


def test_tiny_epsilon_for_the_exponential_mechanism_is_refused_before_the_charge():
    df = pd.DataFrame({"x": np.arange(30.0), "u": np.arange(30)})
    s = session()
    with pytest.raises(dpf.ValidationError, match="too small"):
        df.dp(s, bounds={"x": (0, 30)}, privacy_unit="u", max_rows_per_unit=10**6).quantile(
            "x", 0.999, epsilon=1e-9)
    assert s.spent == (0.0, 0.0)


def test_lists_and_dicts_in_key_and_unit_columns_count_as_missing():
    df = pd.DataFrame({"k": pd.Series(["a", ["a"], "b", {"x": 1}, "a"], dtype=object),
                       "u": pd.Series([1, 2, [3], 4, 5], dtype=object), "x": 1.0})
    s = session()
    p = df.dp(s, keys={"k": ["a", "b"]}, privacy_unit="u", max_rows_per_unit=1)
    assert p.groupby("k").count(epsilon=HUGE).to_dict() == {"a": 2, "b": 0}
    assert p.count(epsilon=HUGE) == 4
    out = df.dp(session()).groupby("k", keys="private").count(epsilon=HUGE, delta=TINY)
    assert out.to_dict() == {"a": 2}


def test_a_huge_public_key_product_is_refused_before_the_charge():
    df = pd.DataFrame({"a": [1], "b": [2], "x": [1.0]})
    s = session()
    keys = {"a": list(range(20_000)), "b": list(range(20_000))}
    with pytest.raises(dpf.ValidationError, match="groups"):
        df.dp(s, keys=keys).groupby(["a", "b"]).count(epsilon=1)
    with pytest.raises(dpf.ValidationError, match="cells"):
        df.dp(s, keys={"a": list(range(1000))}, bounds={"x": (0, 1)}).groupby("a").quantile(
            "x", 0.5, epsilon=1, resolution=100_000)
    assert s.spent == (0.0, 0.0)


def test_numeric_column_with_non_numeric_declared_keys_is_refused():
    df = pd.DataFrame({"a": [1, 2], "x": [1.0, 2.0]})
    s = session()
    with pytest.raises(dpf.KeysError, match="numeric"):
        df.dp(s, keys={"a": ["1", "2"]}).groupby("a").count(epsilon=1)
    with pytest.raises(dpf.KeysError, match="missing"):
        df.dp(s, keys={"a": [1, float("nan")]}).groupby("a").count(epsilon=1)
    assert s.spent == (0.0, 0.0)


def test_public_keys_match_rows_under_python_equality_on_every_backend():
    df = pd.DataFrame({"k": [-0.0, 0.0, 1.0], "x": 1.0})
    for front in (df, scan_of(df), pd.DataFrame({"k": pd.array([-0.0, 0.0, 1.0],
                                                               dtype="float64[pyarrow]")})):
        out = front.dp(session(), keys={"k": [0.0, 1.0]}).groupby("k").count(epsilon=HUGE)
        assert out.to_dict() == {0.0: 2, 1.0: 1}


def test_uint64_values_beyond_int64_are_clamped_not_wrapped():
    df = pd.DataFrame({"x": np.array([2**63 + 5, 50, 100], dtype=np.uint64)})
    for front in (df, scan_of(df)):
        assert front.dp(session(), bounds={"x": (0, 2500)}).sum("x", epsilon=HUGE) == 2650


# -- one number rule (docs/privacy.md, Budget) ------------------------------------------------

def test_numbers_are_read_by_one_rule_in_sessions_queries_and_bounds():
    """np.float32(0.1) is 1/10 in a Session and in a query alike (0.1 refused a 0.1 query with
    "needs 0.1 but only 0.1 remain"); Decimal and Fraction work everywhere."""
    from decimal import Decimal

    df = pd.DataFrame({"x": [0.05, 0.1, 0.2]})
    s = dpf.Session(np.float32(0.1))
    df.dp(s).count(epsilon=np.float32(0.1))
    assert s.remaining == (0.0, 0.0)
    s = dpf.Session(Decimal("0.3"))
    for eps in (Decimal("0.1"), Fraction(1, 10), 0.1):
        df.dp(s, bounds={"x": (Decimal("0"), np.float32(0.1))}).sum("x", epsilon=eps)
    assert s.remaining == (0.0, 0.0)
    dry = df.dp(s, bounds={"x": (np.float32(-0.1), np.float32(0.1))}).explain("sum", "x", epsilon=1)
    assert dry["measures"][0]["sensitivity"] == pytest.approx(0.1, abs=1e-9)


# -- bad inputs get a typed error before any charge (issue 12) -----------------------------

def test_column_names_that_no_query_name_could_address_are_refused():
    s = session()
    dup = pd.DataFrame([[1.0, 2.0]], columns=["x", "x"])
    with pytest.raises(dpf.ValidationError, match="more than once"):
        dup.dp(s, bounds={"x": (0, 3)}).sum("x", epsilon=1)
    mixed = pd.DataFrame([[1.0, 2.0]], columns=[0, "0"])
    with pytest.raises(dpf.ValidationError, match="more than once"):
        mixed.dp(s)
    multi = pd.DataFrame([[1.0]], columns=pd.MultiIndex.from_tuples([("a", "b")]))
    with pytest.raises(dpf.ValidationError, match="MultiIndex"):
        multi.dp(s)
    with pytest.raises(dpf.ValidationError, match="more than once"):
        dpf.scan(pa.Table.from_arrays([pa.array([1.0]), pa.array([2.0])], names=["x", "x"]))
    assert s.spent == (0.0, 0.0)


def test_integer_column_labels_are_addressed_by_their_string_name():
    df = pd.DataFrame({0: [1.0, 2.0, 3.0], 1: ["a", "a", "b"]})
    s = session()
    assert df.dp(s, bounds={"0": (0, 5)}).sum("0", epsilon=HUGE) == pytest.approx(6.0)
    out = df.dp(s, keys={"1": ["a", "b"]}).groupby("1").count(epsilon=HUGE)
    assert out.to_dict() == {"a": 2, "b": 1}


def test_columns_must_be_named_by_strings():
    df = pd.DataFrame({"x": [1.0], "g": ["a"]})
    s = session()
    with pytest.raises(dpf.ValidationError, match="strings"):
        df.dp(s, bounds={"x": (0, 1)}).sum(["x"], epsilon=1)  # type: ignore[arg-type]
    with pytest.raises(dpf.ValidationError, match="strings"):
        df.dp(s, keys={"g": ["a"]}).groupby([["g"]]).count(epsilon=1)  # type: ignore[list-item]
    with pytest.raises(dpf.ValidationError, match="string"):
        df.dp(s, privacy_unit=["g"], max_rows_per_unit=1)  # type: ignore[arg-type]
    assert s.spent == (0.0, 0.0)


def test_contribution_bounds_without_a_privacy_unit_are_refused_not_ignored():
    df = pd.DataFrame({"x": [1.0]})
    with pytest.raises(dpf.ValidationError, match="privacy_unit"):
        df.dp(session(), max_rows_per_unit=5)
    with pytest.raises(dpf.ValidationError, match="privacy_unit"):
        df.dp(session(), max_groups_per_unit=2)


def test_text_columns_refuse_declared_keys_that_are_not_strings():
    df = pd.DataFrame({"g": pd.array(["1", "2"], dtype="string")})
    s = session()
    with pytest.raises(dpf.KeysError, match="strings"):
        df.dp(s, keys={"g": [1, 2]}).groupby("g").count(epsilon=1)
    with pytest.raises(dpf.KeysError, match="strings"):
        scan_of(df).dp(s, keys={"g": [1, 2]}).groupby("g").count(epsilon=1)
    assert s.spent == (0.0, 0.0)


@pytest.mark.parametrize("op", ["sum", "mean"])
def test_extreme_values_raise_no_warning_in_the_one_pass_sum(op: str) -> None:
    """A value near the float limit overflows when scaled to fixed point, before it is clamped:
    numpy would warn, and a warning that appears only for some data tells of the data. The
    release stays silent (and the value counts as its bound)."""
    df = pd.DataFrame({"x": [1e308, -1e308, 5.0] * 100})
    priv = df.dp(dpf.Session(1e9), bounds={"x": (0, 10)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = getattr(priv, op)("x", epsilon=1e6)
    expected = {"sum": 1500.0, "mean": 5.0}[op]
    assert abs(value - expected) < 1.0
