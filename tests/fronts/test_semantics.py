"""Release semantics: clamping, parallel composition, public and private keys, user-level
contribution bounds, the missing-value policy, and EM-based max / min / quantiles.

"Exact after bounding" values are read from releases at a huge epsilon (noise scale far below
the tolerance used), which observes the exact aggregate the backend computed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf

from ._support import repeat, session

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")

HUGE = 1000.0  # geometric noise of scale <= 3/1000 is 0 except with probability ~1e-144


# -- clamping -------------------------------------------------------------------------------------

def test_sum_of_out_of_bound_values_is_the_clamped_sum():
    df = pd.DataFrame({"x": [1e12, -1e12, 5.0, 3.0, np.inf, -np.inf, np.nan]})
    s = session()
    got = df.dp(s, bounds={"x": (0, 10)}).sum("x", epsilon=1e4)
    assert got == pytest.approx(10 + 0 + 5 + 3 + 10 + 0, abs=0.05)
    mean = df.dp(s, bounds={"x": (0, 10)}).mean("x", epsilon=1e4)
    assert mean == pytest.approx(28 / 6, abs=0.01)


def test_integer_extremes_are_clamped_without_overflow():
    big = np.iinfo(np.int64)
    df = pd.DataFrame({"n": np.array([big.max, big.min, 5, big.max - 1], dtype=np.int64)})
    got = df.dp(session(), bounds={"n": (0, 10)}).sum("n", epsilon=HUGE)
    assert got == 10 + 0 + 5 + 10 and isinstance(got, int)


def test_clamping_is_per_row_not_per_total():
    """Many small in-bound values are not affected; one huge value counts as the bound."""
    df = pd.DataFrame({"x": [1.0] * 100 + [1e9]})
    got = df.dp(session(), bounds={"x": (0, 10)}).sum("x", epsilon=1e4)
    assert got == pytest.approx(110.0, abs=0.05)


# -- parallel composition --------------------------------------------------------------------------

def test_groupby_over_disjoint_groups_charges_epsilon_once():
    df = pd.DataFrame({"g": list("abcdeabcde"), "x": np.arange(10.0)})
    s = dpf.Session(epsilon=1.0, delta=1e-5, seed=1)
    p = df.dp(s, bounds={"x": (0, 10)}, keys={"g": list("abcde")})
    p.groupby("g").count(epsilon=0.3)
    assert s.spent == (0.3, 0.0) and len(s.ledger) == 1
    p.groupby("g").sum("x", epsilon=0.2)
    assert s.spent == (0.5, 0.0) and len(s.ledger) == 2
    p.groupby("g").agg({"x": ["sum", "mean", "max"]}, epsilon=0.25)  # one charge for three
    assert s.spent == (0.75, 0.0) and len(s.ledger) == 3
    p.groupby("g", keys="private").count(epsilon=0.25, delta=1e-5)
    assert s.spent_exact == (1, pytest.approx(1e-5)) and len(s.ledger) == 4
    assert list(s.ledger["epsilon"]) == [0.3, 0.2, 0.25, 0.25]


# -- public keys ----------------------------------------------------------------------------------

def key_frame() -> pd.DataFrame:
    return pd.DataFrame({"g": ["a"] * 5 + ["b"] * 3 + ["secret"] * 7,
                         "x": [1.0] * 5 + [2.0] * 3 + [100.0] * 7})


def test_absent_public_keys_are_output_with_noise():
    df = key_frame()

    def release(s):
        # the raw noisy counts (unbiased: postprocess=None, no projection onto >= 0)
        return df.dp(s, keys={"g": ["a", "b", "zz"]}).groupby("g").count(epsilon=1.0,
                                                                          postprocess=None)

    out = repeat(100, release, seed=3)
    assert all(list(r.index) == ["a", "b", "zz"] for r in out)
    zz = np.array([r["zz"] for r in out])
    assert np.unique(zz).size > 3          # noisy, not a constant 0
    # discrete Laplace of scale 1: std 1.36, so the mean of 100 draws is within 5 * 0.136
    assert abs(zz.mean()) < 5 * 1.36 / 10


def test_undeclared_keys_are_dropped():
    df = key_frame()
    s = session()
    p = df.dp(s, bounds={"x": (0, 10)}, keys={"g": ["a", "b"]})
    cnt = p.groupby("g").count(epsilon=HUGE)
    assert cnt.to_dict() == {"a": 5, "b": 3}
    sm = p.groupby("g").sum("x", epsilon=1e5)
    assert list(sm.index) == ["a", "b"]
    assert sm.to_numpy() == pytest.approx([5.0, 6.0], abs=1e-2)
    # ungrouped aggregates are over all rows: keys only restrict grouped releases
    assert p.count(epsilon=HUGE) == 15


def test_categorical_categories_are_the_public_keys():
    df = key_frame()
    df["g"] = pd.Categorical(df["g"].where(df["g"] != "secret"),  # missing key: dropped
                             categories=["b", "a", "unseen"])
    out = df.dp(session(), keys={"g": "categories"}).groupby("g").count(epsilon=HUGE)
    assert list(out.index) == ["b", "a", "unseen"]
    assert out.to_dict() == {"b": 3, "a": 5, "unseen": 0}


def test_categories_are_public_keys_only_on_opt_in():
    """``astype("category")`` takes its categories from the data: a city held by one person
    would appear exactly when that person is present. Without the explicit opt-in, grouping on
    a Categorical is refused before any charge, naming both ways out."""
    df = key_frame()
    df["g"] = df["g"].astype("category")
    s = session()
    with pytest.raises(dpf.KeysError, match="'categories'") as info:
        df.dp(s).groupby("g").count(epsilon=HUGE)
    assert "keys={'g': [...]}" in str(info.value)
    assert s.spent == (0.0, 0.0)
    assert "secret" not in str(info.value)
    with pytest.raises(dpf.KeysError, match="Categorical"):  # the opt-in needs a Categorical
        key_frame().dp(s, keys={"g": "categories"}).groupby("g").count(epsilon=HUGE)
    assert s.spent == (0.0, 0.0)


def test_declared_keys_override_categories():
    df = key_frame()
    df["g"] = pd.Categorical(df["g"])
    out = df.dp(session(), keys={"g": ["a"]}).groupby("g").count(epsilon=HUGE)
    assert out.to_dict() == {"a": 5}


# -- private keys (DP key selection) ---------------------------------------------------------------

def private_key_frame(solo_units: int = 1) -> pd.DataFrame:
    big = 3000
    g = ["big1"] * big + ["big2"] * big + ["solo"] * solo_units
    return pd.DataFrame({"g": g, "uid": np.arange(len(g)), "x": 1.0})


def released_keys(df: pd.DataFrame, relation: str, n: int, delta: float, seed: int,
                  chunk: int = 25, **opts) -> list[set]:
    def release(s):
        r = df.dp(s, **opts).groupby("g", keys="private").count(epsilon=1.0, delta=delta)
        return set(r.index)

    return repeat(n, release, neighbouring=relation, seed=seed, chunk=chunk)


@pytest.mark.parametrize("relation", ["add_remove", "change_one"])
def test_single_unit_key_is_never_released(relation):
    """P(release of a one-unit key) <= delta = 1e-6 per release: 0 of 150 expected."""
    out = released_keys(private_key_frame(), relation, 150, 1e-6, seed=4,
                        privacy_unit="uid", max_rows_per_unit=1)
    assert sum("solo" in k for k in out) == 0
    assert all({"big1", "big2"} <= k for k in out)  # thousands of units: always released
    assert all(k <= {"big1", "big2", "solo"} for k in out)


def test_single_unit_key_check_has_power():
    """Companions: the same count detects a release rule that is too lax (delta = 0.4 sets the
    threshold to 2, so a singleton passes with probability p / (1 + p) ~ 0.38) and a key that
    many units hold is released every time."""
    lax = released_keys(private_key_frame(), "add_remove", 60, 0.4, seed=5, chunk=1)
    assert sum("solo" in k for k in lax) > 5
    many = released_keys(private_key_frame(solo_units=200), "add_remove", 30, 1e-6, seed=6)
    assert all("solo" in k for k in many)


def test_private_keys_count_units_not_rows():
    """One unit with thousands of rows in a key of its own does not get it released."""
    df = private_key_frame()
    heavy = pd.DataFrame({"g": "whale", "uid": -1, "x": 1.0}, index=range(5000))
    df = pd.concat([df, heavy], ignore_index=True)
    out = released_keys(df, "add_remove", 60, 1e-6, seed=7, privacy_unit="uid",
                        max_rows_per_unit=100)
    assert not any("whale" in k for k in out)


def test_private_keys_ignore_missing_keys():
    df = private_key_frame(solo_units=0)
    df.loc[:1999, "g"] = None
    out = released_keys(df, "add_remove", 10, 1e-6, seed=8)
    assert all(k == {"big1", "big2"} for k in out)


# -- user-level contribution bounds ----------------------------------------------------------------

def whale_frame() -> pd.DataFrame:
    """Unit 0 has 5000 rows of x = 10; units 1..100 one row of x = 1 each."""
    return pd.DataFrame({"uid": np.r_[np.zeros(5000, dtype=int), np.arange(1, 101)],
                         "x": np.r_[np.full(5000, 10.0), np.ones(100)],
                         "g": np.r_[np.tile([f"k{i}" for i in range(10)], 500),
                                    np.tile([f"k{i}" for i in range(10)], 10)]})


def test_one_unit_with_thousands_of_rows_counts_at_most_r_rows():
    df = whale_frame()
    s = session()
    p = df.dp(s, bounds={"x": (0, 10)}, privacy_unit="uid", max_rows_per_unit=3)
    assert p.count(epsilon=HUGE) == 100 + 3
    assert p.sum("x", epsilon=1e5) == pytest.approx(100 + 3 * 10, abs=0.05)
    assert p.count("x", epsilon=HUGE) == 103
    assert p.mean("x", epsilon=1e5) == pytest.approx(130 / 103, abs=1e-3)


def test_one_unit_in_many_groups_is_limited_to_k_groups_of_r_rows():
    df = whale_frame()
    keys = [f"k{i}" for i in range(10)]

    def release(s):
        return df.dp(s, keys={"g": keys}, privacy_unit="uid", max_rows_per_group=3,
                     max_groups_per_unit=2).groupby("g").count(epsilon=HUGE)

    outs = repeat(40, release, seed=9)
    chosen = np.zeros(10)
    for r in outs:
        extra = r.to_numpy() - 10          # the other units give each key exactly 10 rows
        assert extra.sum() == 6            # 2 groups x 3 rows
        assert set(np.unique(extra)) <= {0, 3}
        chosen += extra > 0
    # groups are chosen uniformly at random: each of the 10 with probability 1/5
    assert chosen.sum() == 80 and chosen.min() >= 1
    assert chosen[:2].sum() < 80


def test_rows_kept_per_unit_are_random_not_first_k():
    """A unit's rows x = 0..4999 in order: keeping 3 uniformly at random gives a sum with mean
    3 * 2499.5 and std ~2500; "first 3" would always give 3, "last 3" 14994."""
    df = pd.DataFrame({"uid": 0, "x": np.arange(5000.0)})

    def release(s):
        return df.dp(s, bounds={"x": (0, 5000)}, privacy_unit="uid",
                     max_rows_per_unit=3).sum("x", epsilon=1e6)

    sums = np.array(repeat(40, release, seed=10))
    assert np.unique(np.round(sums)).size > 30
    sd = np.sqrt(3 * (5000**2 - 1) / 12 * (1 - 2 / 4999))
    assert abs(sums.mean() - 3 * 2499.5) < 5 * sd / np.sqrt(40)


def test_contribution_bounds_do_not_depend_on_row_order():
    df = whale_frame()
    shuffled = df.sample(frac=1.0, random_state=1)
    for frame in (df, shuffled):
        p = frame.dp(session(), bounds={"x": (0, 10)}, privacy_unit="uid", max_rows_per_unit=3)
        assert p.count(epsilon=HUGE) == 103


@pytest.mark.parametrize("relation", ["add_remove", "change_one"])
def test_neighbouring_sums_differ_by_at_most_the_planned_sensitivity(relation):
    """Exact (bounded) sums of neighbouring frames, observed at a huge epsilon, never differ by
    more than the planned sensitivity. Bounds [5, 10] exclude 0: three rows of 10 replaced by one
    row of 5 move the sum by 25 = W + 2 max(W, M), more than R (U - L) = 15."""
    base = pd.DataFrame({"uid": [1, 1, 1, 2], "x": [10.0, 10.0, 10.0, 7.0]})
    neighbours = {"add_remove": pd.DataFrame({"uid": [2], "x": [7.0]}),
                  "change_one": pd.DataFrame({"uid": [3, 2], "x": [5.0, 7.0]})}[relation]
    s = session(neighbouring=relation)
    opts = {"bounds": {"x": (5, 10)}, "privacy_unit": "uid", "max_rows_per_unit": 3}
    a = base.dp(s, **opts).sum("x", epsilon=1e5)
    b = neighbours.dp(s, **opts).sum("x", epsilon=1e5)
    sens = base.dp(s, **opts).explain("sum", "x", epsilon=1.0)["measures"][0]["sensitivity"]
    assert abs(a - b) == pytest.approx(30 if relation == "add_remove" else 25, abs=0.05)
    assert abs(a - b) <= sens + 0.05


# -- missing values -------------------------------------------------------------------------------

def nan_frame() -> pd.DataFrame:
    return pd.DataFrame({
        "x": [1.0, np.nan, 3.0, 5.0, np.nan, 7.0],
        "g": ["a", "a", None, "b", "b", "a"],
        "uid": pd.array([1, 2, 3, None, 5, 6], dtype="Int64"),
    })


def test_missing_value_policy():
    df = nan_frame()
    s = session()
    p = df.dp(s, bounds={"x": (0, 10)}, keys={"g": ["a", "b"]})
    assert p.count(epsilon=HUGE) == 6                       # rows
    assert p.count("x", epsilon=HUGE) == 4                  # non-missing values
    assert p.sum("x", epsilon=1e5) == pytest.approx(16.0, abs=1e-2)
    assert p.mean("x", epsilon=1e4) == pytest.approx(4.0, abs=1e-2)
    h = p.histogram("x", bins=[0, 4, 10], epsilon=HUGE)
    assert h.tolist() == [2, 2]
    g = p.groupby("g").count(epsilon=HUGE)                  # the row with no key is dropped
    assert g.to_dict() == {"a": 3, "b": 2}
    gx = p.groupby("g").count("x", epsilon=HUGE)
    assert gx.to_dict() == {"a": 2, "b": 1}
    gs = p.groupby("g").sum("x", epsilon=1e5)
    assert gs.to_numpy() == pytest.approx([8.0, 5.0], abs=1e-2)


def test_rows_with_missing_unit_are_dropped():
    df = nan_frame()
    p = df.dp(session(), bounds={"x": (0, 10)}, privacy_unit="uid", max_rows_per_unit=1)
    assert p.count(epsilon=HUGE) == 5
    assert p.sum("x", epsilon=1e5) == pytest.approx(11.0, abs=1e-2)


# -- mean and EM aggregates -----------------------------------------------------------------------

def test_mean_is_always_within_bounds():
    df = pd.DataFrame({"x": [2.0, 3.0, 9.0], "g": ["a", "a", "b"]})

    def release(s):
        p = df.dp(s, bounds={"x": (0, 10)}, keys={"g": ["a", "b", "empty"]})
        return [p.mean("x", epsilon=0.05), *p.groupby("g").mean("x", epsilon=0.05).tolist()]

    vals = np.array(repeat(100, release, seed=11))
    assert vals.min() >= 0.0 and vals.max() <= 10.0
    assert np.unique(vals).size > 50  # noisy, not constant


def ages(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": np.round(rng.uniform(18, 87.3, n), 1),
                         "g": rng.choice(["x", "y"], n)})


def test_max_and_min_land_near_the_true_extremes():
    df = ages()

    def release(s):
        p = df.dp(s, bounds={"age": (0, 120)})
        return p.max("age", epsilon=1.0), p.min("age", epsilon=1.0)

    for mx, mn in repeat(40, release, seed=12):
        # within a few ranks of the extremes (a value above the max, or below the min, is
        # chosen about 98% of the time; 10 ranks off has probability ~2e-4 a release)
        assert int((df["age"] > mx).sum()) <= 10 and mx <= 120
        assert int((df["age"] < mn).sum()) <= 10 and mn >= 0


def test_median_and_quantiles_are_accurate():
    df = ages(1001, seed=1)
    s = session(seed=13)
    p = df.dp(s, bounds={"age": (0, 120)})
    for q in (0.1, 0.5, 0.9):
        got = p.quantile("age", q, epsilon=2.0)
        assert got == pytest.approx(df["age"].quantile(q), abs=1.5)
    assert p.median("age", epsilon=2.0) == pytest.approx(df["age"].median(), abs=1.5)
    g = p.groupby("g", keys=None)
    with pytest.raises(dpf.KeysError):
        g.max("age", epsilon=1.0)
    res = df.dp(s, bounds={"age": (0, 120)}, keys={"g": ["x", "y"]}).groupby("g").max(
        "age", epsilon=2.0)
    truth = df.groupby("g")["age"].max()
    for k in ("x", "y"):
        assert truth[k] - 5 * 0.12 <= res[k] <= 120


def test_max_is_in_the_bounds():
    """max is a point of a cell of the bounds; never outside, never a Laplace draw (an
    integer column's max is one of its integers)."""
    df = ages(50)
    outs = np.array(repeat(60, lambda s: df.dp(s, bounds={"age": (0, 120)})
                           .max("age", epsilon=0.1), seed=14))
    assert outs.min() >= 0 and outs.max() <= 120
    df["age"] = df["age"].round().astype(int)
    outs = np.array(repeat(30, lambda s: df.dp(s, bounds={"age": (0, 120)})
                           .max("age", epsilon=0.1), seed=15))
    assert outs.min() >= 0 and outs.max() <= 120 and np.array_equal(outs, np.round(outs))



# -- very large epsilon ---------------------------------------------------------------------------

@pytest.mark.parametrize("eps", [1e5, 1e6])
def test_integer_release_at_very_large_epsilon(eps):
    """Regression: discrete_laplace used to raise ArithmeticError for scales below ~1/22710,
    after the release had been charged (budget lost, nothing returned)."""
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0], "g": ["a", "b", "a"]})
    s = session()
    p = df.dp(s, keys={"g": ["a", "b"]})
    assert p.count(epsilon=eps) == 3
    assert p.groupby("g").count(epsilon=eps).to_dict() == {"a": 2, "b": 1}
    assert (s.ledger["status"] == "released").all()


def test_count_of_rows_needs_no_pass_and_equals_the_general_path() -> None:
    """Without a unit, groups or sampling the count of rows is len(df) (no pass over the data);
    it equals what the general path computes (grouped by one public key holding every row)."""
    import warnings

    import dpframe as dpf

    df = pd.DataFrame({"x": [1.0, np.nan, 3.0, None, 5.0], "g": ["a"] * 5})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = dpf.Session(1e12, 0.5, seed=3)
        fast = int(df.dp(s).count(epsilon=1e6))
        general = df.dp(s, keys={"g": ["a"]}).groupby("g").count(epsilon=1e6)["a"]
        sampled = df.dp(s).sample(1.0).count(epsilon=1e6)
    assert fast == general == int(sampled) == 5


# -- per-release shortcuts ------------------------------------------------------------------------

def test_only_releases_that_bound_units_get_a_sampling_generator(monkeypatch):
    """The release path makes a sampling generator only for requests that draw at random."""
    from dpframe.backends.pandas import PandasBackend

    seen = []
    real = PandasBackend.exact

    def spy(self, request, gen):
        seen.append(gen)
        return real(self, request, gen)

    monkeypatch.setattr(PandasBackend, "exact", spy)
    df = pd.DataFrame({"g": ["a", "b"] * 20, "x": [1.0, 2.0] * 20, "u": np.arange(40) // 4})
    df.dp(session(), bounds={"x": (0, 5)}, keys={"g": ["a", "b"]}).groupby("g").sum("x", epsilon=1)
    s = dpf.Session(10, seed=3, privacy_unit="u")
    df.dp(s, bounds={"x": (0, 5)}, keys={"g": ["a", "b"]},
          privacy_unit="u", max_rows_per_unit=2).groupby("g").sum("x", epsilon=1)
    assert seen[0] is None and isinstance(seen[1], np.random.Generator)


@pytest.mark.parametrize("by", [("g",), ("g", "h")])
def test_remembered_declared_indexes_are_handed_out_as_new_objects(by):
    """Indexes of declared keys are remembered between releases (by the identity of the
    declared tuples, then by their fingerprint); each call hands out its own index object, so
    renaming one result's index (or its levels) cannot reach a later result's."""
    import itertools

    from dpframe.fronts.results import declared_index as _declared_index

    declared = (("a", "b"), (1, 2))[:len(by)]
    keys = list(itertools.product(*declared))
    seen = []
    for again in (declared, declared, tuple(tuple(d) for d in map(list, declared)), declared):
        index = _declared_index(again, by, keys)  # found by identity, by fingerprint, built
        assert all(index is not other for other in seen)
        assert list(index.names) == list(by)
        assert list(index) == ([k[0] for k in keys] if len(by) == 1 else keys)
        index.names = ["renamed"] * len(by)
        seen.append(index)
