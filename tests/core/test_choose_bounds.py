"""``priv.contribution_bounds(epsilon=)``: a DP choice of T, k and R (issue 32 b).

One charge on the release path (budget checked first, every refusal before it), a plain dict
that plugs into ``df.dp(...)`` with provenance, reproducible with a seeded session, the same
exact histograms on every backend, and each histogram moved by one unit in one bin."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core.choose_bounds import BOUND_NAMES, BoundsRequest, exact_histograms, ladder
from dpframe.errors import BudgetExceededError, UnknownColumnError, ValidationError

KEYS = {"g": list(range(20))}


def spread(seed: int = 0, users: int = 2000) -> pd.DataFrame:
    """Users with 1-10 rows, each row in one of 20 groups."""
    rng = np.random.default_rng(seed)
    uid = np.repeat(np.arange(users), rng.integers(1, 11, users))
    return pd.DataFrame({"uid": uid, "g": rng.integers(0, 20, uid.size),
                         "x": rng.uniform(0, 100, uid.size)})


def heavy(seed: int = 1, users: int = 2000) -> pd.DataFrame:
    """Users with 1-50 rows, all in one group each."""
    rng = np.random.default_rng(seed)
    uid = np.repeat(np.arange(users), rng.integers(1, 51, users))
    return pd.DataFrame({"uid": uid, "g": rng.integers(0, 20, users)[uid],
                         "x": rng.uniform(0, 100, uid.size)})


def session(eps: float = 1.0, seed: int | None = 3) -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(eps, seed=seed)


def test_ladder() -> None:
    assert ladder(1000) == (1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500,
                            700, 1000)
    assert ladder(30) == (1, 2, 3, 5, 7, 10, 15, 20, 30)
    assert ladder(4) == (1, 2, 3, 4)
    assert ladder(1) == (1,)


@pytest.mark.parametrize(("frame", "expected"), [(spread, 10), (heavy, 50)])
def test_choice_plugs_into_a_release_charged_once(frame, expected) -> None:
    df, s = frame(), session()
    bounds = df.dp(s, privacy_unit="uid", keys=KEYS).groupby("g").choose_contribution_bounds(
        epsilon=0.1, release_epsilon=0.9)
    assert dict(bounds) == {"max_rows_per_unit": expected, "max_groups_per_unit": None,
                            "max_rows_per_group": None}
    assert type(bounds["max_rows_per_unit"]) is int
    assert s.spent == pytest.approx((0.1, 0.0))
    led = s.ledger
    assert len(led) == 1 and led["query"].iloc[0] == "groupby(g).choose_contribution_bounds(uid)"
    p = bounds.provenance
    assert p is bounds.attrs["dp"] and p["ledger_entry"] is not None and p["seeded"]
    assert p["epsilon"] == pytest.approx(0.1) and p["delta"] == 0.0
    assert set(p["histograms"]) == {"rows", "groups", "max_rows"}
    assert pickle.loads(pickle.dumps(bounds)) == bounds
    out = df.dp(s, privacy_unit="uid", keys=KEYS, bounds={"x": (0, 100)},
                **bounds).groupby("g").sum("x", epsilon=0.9)
    assert out.attrs["dp"]["epsilon"] == pytest.approx(0.9)
    assert s.spent[0] == pytest.approx(1.0)


def test_ungrouped_choice_is_t_only() -> None:
    s = session()
    bounds = heavy().dp(s, privacy_unit="uid").contribution_bounds(epsilon=0.2)
    assert set(bounds) == set(BOUND_NAMES)
    assert bounds["max_groups_per_unit"] is None and bounds["max_rows_per_group"] is None
    assert set(bounds.provenance["histograms"]) == {"rows"}


def test_reproducible_with_a_seed() -> None:
    a, b = (spread().dp(session(seed=11), privacy_unit="uid", keys=KEYS)
            .contribution_bounds(epsilon=0.05, by="g") for _ in range(2))
    assert a.provenance["histograms"] == b.provenance["histograms"] and a == b


def test_the_earlier_name_is_the_same_release() -> None:
    """``contribution_bounds`` (0.1's name, kept by the API) is ``choose_contribution_bounds``:
    the same draw from the same seed, on the frame and on a group-by. Fails if the alias
    drops an argument or releases anything else."""
    for seed in (11, 12):
        new = spread().dp(session(seed=seed), privacy_unit="uid", keys=KEYS)
        old = spread().dp(session(seed=seed), privacy_unit="uid", keys=KEYS)
        a = new.choose_contribution_bounds(epsilon=0.05, by="g", release="mean", cap=50)
        b = old.contribution_bounds(epsilon=0.05, by="g", release="mean", cap=50)
        assert a == b and a.provenance["histograms"] == b.provenance["histograms"]
        assert a.provenance["release"] == b.provenance["release"] == "mean"
        c = spread().dp(session(seed=seed), privacy_unit="uid", keys=KEYS).groupby(
            "g").contribution_bounds(epsilon=0.05, release="mean", cap=50)
        assert c == a and c.provenance["histograms"] == a.provenance["histograms"]


def test_a_small_budget_is_noisier_than_a_large_one() -> None:
    """The histograms are released with noise of scale 1 / (epsilon / 3) (seeded draws)."""
    df = spread()
    req = BoundsRequest(_f(1), "uid", ("g",), {"g": tuple(range(20))})
    exact = exact_histograms(req, df.dp(session())._backend.exact(req.compute_request(), None))
    errs = {}
    for eps in (0.03, 3.0):
        diffs = []
        for seed in range(20):
            b = df.dp(session(10, seed), privacy_unit="uid", keys=KEYS).contribution_bounds(
                epsilon=eps, by="g")
            diffs += [np.asarray(b.provenance["histograms"][k]) - exact[k] for k in exact]
        errs[eps] = float(np.mean(np.abs(np.concatenate(diffs))))
    # the mean |discrete Laplace| at scale t is about t: 100 at eps 0.03 / 3, 1 at 3 / 3
    assert 70 < errs[0.03] < 130 and errs[3.0] < 1.5


def _f(x: float):
    from fractions import Fraction
    return Fraction(x)


@pytest.mark.parametrize("call, error", [
    (lambda df, s: df.dp(s).contribution_bounds(epsilon=0.1), ValidationError),
    (lambda df, s: df.dp(s, privacy_unit="uid").contribution_bounds(epsilon=0.1, by="nope"),
     UnknownColumnError),
    (lambda df, s: df.dp(s, privacy_unit="uid").contribution_bounds(epsilon=-1), ValidationError),
    (lambda df, s: df.dp(s, privacy_unit="uid").contribution_bounds(epsilon=0.1, cap=0),
     ValidationError),
    (lambda df, s: df.dp(s, privacy_unit="uid").contribution_bounds(epsilon=0.1, cap=2.5),
     ValidationError),
    (lambda df, s: df.dp(s, privacy_unit="uid").contribution_bounds(
        epsilon=0.1, release_epsilon=0), ValidationError),
    (lambda df, s: df.dp(s, privacy_unit="uid").contribution_bounds(epsilon=0.1, by="uid"),
     ValidationError),
    (lambda df, s: df.dp(s, privacy_unit="uid").contribution_bounds(epsilon=5.0),
     BudgetExceededError),
    # a unit without a bound is declared for the choice, but no aggregate runs on it
    (lambda df, s: df.dp(s, privacy_unit="uid", bounds={"x": (0, 1)}).sum("x", epsilon=0.1),
     ValidationError),
])
def test_refusals_charge_nothing(call, error) -> None:
    s = session()
    with pytest.raises(error):
        call(spread(users=50), s)
    assert s.spent == (0.0, 0.0) and len(s.ledger) == 0


def test_other_session_unit_is_refused() -> None:
    s = session()
    df = spread(users=50).assign(v=1)
    df.dp(s).count(epsilon=0.1)  # the session now protects rows
    with pytest.raises(dpf.errors.PrivacyUnitError):
        df.dp(s, privacy_unit="uid").contribution_bounds(epsilon=0.1)
    assert s.spent[0] == pytest.approx(0.1)


def _histograms(priv: object, by: tuple[str, ...] = ("g",)) -> dict[str, list[int]]:
    req = BoundsRequest(_f(1), "uid", by, {})
    backend = priv._backend  # type: ignore[attr-defined]
    exact = backend.bind(req.columns).exact(req.compute_request(), None)
    return {k: v.tolist() for k, v in exact_histograms(req, exact).items()}


def test_every_backend_gives_the_same_histograms(tmp_path) -> None:
    import dask.dataframe as dd
    import polars as pl

    df = heavy(users=300)
    df.loc[::7, "g"] = None  # rows without a group belong to no group
    df.loc[::11, "uid"] = -1
    want = _histograms(df.dp(session()))
    df.to_parquet(tmp_path / "d.parquet")
    fronts = [pl.from_pandas(df).dp(session()),
              dd.from_pandas(df, npartitions=3).dp(session()),
              dpf.scan(tmp_path / "d.parquet", batch_size=500).dp(session())]
    for priv in fronts:
        assert _histograms(priv) == want
    assert sum(want["rows"]) == df["uid"][df["g"].notna()].nunique()


def test_one_unit_moves_each_histogram_by_one_in_one_bin() -> None:
    """The sensitivity the proof uses, checked on random neighbours (add/remove one unit)."""
    rng = np.random.default_rng(5)
    for trial in range(30):
        df = heavy(seed=trial, users=40)
        df["g"] = rng.integers(0, 6, len(df))
        victim = int(rng.integers(0, 40))
        a = _histograms(df.dp(session()))
        b = _histograms(df[df["uid"] != victim].dp(session()))
        for name in a:
            diff = np.abs(np.asarray(a[name]) - np.asarray(b[name]))
            assert diff.sum() == 1, (trial, name)


def test_declared_keys_leave_out_other_groups() -> None:
    df = pd.DataFrame({"uid": [1, 1, 1, 2], "g": ["a", "b", "zz", "a"]})
    req = BoundsRequest(_f(1), "uid", ("g",), {"g": ("a", "b")}, cap=5)
    exact = df.dp(session())._backend.exact(req.compute_request(), None)
    h = exact_histograms(req, exact)
    # unit 1: 2 rows in declared groups (bin (1, 2]), 2 groups, at most 1 in a group
    assert h["rows"].tolist() == [1, 1, 0, 0, 0]
    assert h["groups"].tolist() == [1, 1, 0, 0, 0]
    assert h["max_rows"].tolist() == [2, 0, 0, 0, 0]


@pytest.mark.parametrize("df", [
    pd.DataFrame({"uid": pd.Series([], dtype="int64"), "g": pd.Series([], dtype="int64")}),
    pd.DataFrame({"uid": [None, None], "g": [1, 2]}, dtype="float64"),
])
def test_empty_or_unitless_data_is_released_like_any_other(df) -> None:
    """No refusal depends on the data: an empty frame, or one whose every unit is missing, is
    charged and answered from the noise alone (PRIVACY.md)."""
    s = session()
    bounds = df.dp(s, privacy_unit="uid").contribution_bounds(epsilon=0.5, by="g")
    assert s.spent == pytest.approx((0.5, 0.0))
    assert set(bounds) == set(BOUND_NAMES)
    assert all(v is None or (isinstance(v, int) and v >= 1) for v in bounds.values())
    assert bounds["max_rows_per_unit"] is not None or bounds["max_rows_per_group"] is not None


# issue 44, item 6: one shape always, and the release the bounds are tuned for


def zipf(seed: int = 0, units: int = 1500, groups: int = 10) -> pd.DataFrame:
    """Heavy-tailed rows per unit (1-600, Zipf-like), spread over ``groups`` groups."""
    rng = np.random.default_rng(seed)
    rows = np.minimum(rng.zipf(1.6, units), 600)
    uid = np.repeat(np.arange(units), rows)
    home = rng.integers(0, groups, units)[uid]  # most of a unit's rows in one group
    g = np.where(rng.random(uid.size) < 0.7, home, rng.integers(0, groups, uid.size))
    return pd.DataFrame({"uid": uid, "g": g, "x": rng.uniform(0, 100, uid.size)})


def test_every_draw_has_the_same_three_keys_and_plugs_in() -> None:
    """Before: ``{max_rows_per_unit}`` in one draw, ``{max_groups_per_unit,
    max_rows_per_group}`` in another (a KeyError in user code after the charge)."""
    df, keys = zipf(), {"g": list(range(10))}
    shapes = set()
    for seed in range(12):
        s = session(10, seed)
        for eps, rel in ((0.05, 0.2), (1.0, 5.0)):
            b = df.dp(s, privacy_unit="uid", keys=keys).groupby("g").contribution_bounds(
                epsilon=eps, release_epsilon=rel)
            assert list(b) == list(BOUND_NAMES)
            shapes.add(tuple(v is None for v in b.values()))
            assert b.provenance["bounds"] == dict(b)
            priv = df.dp(s, privacy_unit="uid", keys=keys, bounds={"x": (0, 100)}, **b)
            for by in (None, "g"):  # every shape releases (nothing spent)
                assert priv.explain("sum", "x", by=by, epsilon=1.0)["fits_budget"]
    assert len(shapes) > 1  # the bounds that bind vary, the keys do not
    s = session(10, 0)
    for rel in ("count", "sum", "mean", "quantile"):
        b = df.dp(s, privacy_unit="uid").contribution_bounds(epsilon=0.1, release=rel)
        assert list(b) == list(BOUND_NAMES) and b["max_rows_per_unit"] is not None
        out = df.dp(s, privacy_unit="uid", bounds={"x": (0, 100)}, **b).groupby("g")
        assert out  # a None bound is "not declared": every front takes it
    assert df.dp(session(), privacy_unit="uid", max_rows_per_unit=None, max_groups_per_unit=3,
                 max_rows_per_group=5).count(epsilon=0.1) >= 0


def test_release_tunes_the_bounds() -> None:
    """A count pays a whole row for each row dropped, a quantile mostly for noise: at the
    same budget the count keeps the most rows per unit, the quantile the fewest."""
    df = zipf(units=3000)
    chosen: dict[str, list[int]] = {r: [] for r in ("count", "sum", "mean", "quantile")}
    for seed in range(5):
        for rel in chosen:
            priv = df.dp(session(10, seed), privacy_unit="uid", keys={"g": list(range(10))})
            b = priv.groupby("g").contribution_bounds(epsilon=0.5, release_epsilon=0.3,
                                                      release=rel)
            assert b.provenance["release"] == rel
            chosen[rel].append(int(b["max_rows_per_unit"]))
    med = {r: float(np.median(v)) for r, v in chosen.items()}
    assert med["quantile"] < med["mean"] < med["sum"] < med["count"], med


def test_an_unknown_release_is_refused_before_the_charge() -> None:
    s = session()
    with pytest.raises(ValidationError, match="release must be one of"):
        spread(users=50).dp(s, privacy_unit="uid").contribution_bounds(epsilon=0.1,
                                                                        release="median")
    assert s.spent == (0.0, 0.0)
