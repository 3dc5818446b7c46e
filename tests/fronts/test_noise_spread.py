"""Every docs/privacy.md sensitivity, measured as the empirical spread of seeded releases.

Each test releases one query many times on a fixed frame whose exact answer is known (values are
exactly representable, and under user-level bounds no unit exceeds its row / group limits, so
contribution bounding keeps every row), takes the noise = release - exact, and compares its mean
square with the second moment that the *expected* sensitivity implies (``_support.noise_z``,
|z| < 5). Each test also proves the check has power: the other relation's sensitivity (when it
differs) and twice the expected one must both be rejected (|z| > 5) on the same draws.
Grouped queries and histograms give one independent draw per key / bin per release.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ._support import check_spread, repeat

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")

RELATIONS = ("add_remove", "change_one")
N_SCALAR = 500      # ungrouped releases per test
N_GROUPED = 50      # grouped releases per test (x 40 keys / bins = 2000 draws)
NKEYS = 40
EPS = 1.0
B = (-10.0, 10.0)   # M = 10, W = 20: the relations differ by 2 for sums
KEYS = [f"k{i:02d}" for i in range(NKEYS)]


def other(relation: str) -> str:
    return "change_one" if relation == "add_remove" else "add_remove"


def row_frame() -> pd.DataFrame:
    """Small frame; values inside and outside the bounds (clamping is part of the exact)."""
    x = np.array([3.0, -7.5, 10.0, 25.0, -40.0, 0.25, 6.0, -2.0, 9.5, 1.0, 4.0, -10.0])
    return pd.DataFrame({"x": x, "uid": np.arange(x.size)})


def unit_frame() -> pd.DataFrame:
    """Units with 1..3 rows each (R = 3 keeps everything)."""
    uid = np.array([0, 0, 0, 1, 2, 2, 3, 3, 3, 4])
    x = np.array([1.0, 2.0, 3.0, -4.0, 5.0, 50.0, 7.0, -8.0, 9.0, 10.0])
    return pd.DataFrame({"x": x, "uid": uid})


def clamped_sum(x: np.ndarray) -> float:
    return float(np.clip(x, *B).sum())


SUM_SENS = {"add_remove": 10.0, "change_one": 20.0}           # M | U - L
GROUPED_SUM_SENS = {"add_remove": 10.0, "change_one": 20.0}   # M | max(U - L, 2M)
GROUPED_COUNT_SENS = {"add_remove": 1.0, "change_one": 2.0}


def wrong(expected: dict[str, float], relation: str) -> list[float]:
    out = [2 * expected[relation]]
    if expected[other(relation)] not in (expected[relation], *out):
        out.append(expected[other(relation)])
    return out


# -- ungrouped ------------------------------------------------------------------------------------

@pytest.mark.parametrize("relation", RELATIONS)
def test_count_spread(relation):
    df = row_frame()
    vals = repeat(N_SCALAR, lambda s: df.dp(s).count(epsilon=EPS), neighbouring=relation,
                  seed=1)
    assert all(isinstance(v, int) for v in vals)
    noise = np.array(vals) - len(df)
    check_spread(noise, EPS, 1.0, integer=True, wrong=[2.0])


@pytest.mark.parametrize("relation", RELATIONS)
def test_sum_spread(relation):
    df = row_frame()
    vals = repeat(N_SCALAR, lambda s: df.dp(s, bounds={"x": B}).sum("x", epsilon=EPS),
                  neighbouring=relation, seed=2)
    noise = np.array(vals) - clamped_sum(df["x"].to_numpy())
    check_spread(noise, EPS, SUM_SENS[relation], integer=False, wrong=wrong(SUM_SENS, relation))


@pytest.mark.parametrize("relation", RELATIONS)
def test_user_level_count_spread(relation):
    """max_rows_per_unit = 3: count sensitivity x3 (both relations)."""
    df = unit_frame()
    vals = repeat(N_SCALAR, lambda s: df.dp(s, privacy_unit="uid", max_rows_per_unit=3)
                  .count(epsilon=EPS), neighbouring=relation, seed=3)
    noise = np.array(vals) - len(df)
    check_spread(noise, EPS, 3.0, integer=True, wrong=[1.0, 6.0])


@pytest.mark.parametrize("relation", RELATIONS)
def test_user_level_sum_spread(relation):
    """max_rows_per_unit = 3: sum sensitivity x3 (bounds contain 0, so R (U - L) under
    change_one)."""
    df = unit_frame()
    vals = repeat(N_SCALAR, lambda s: df.dp(s, bounds={"x": B}, privacy_unit="uid",
                                             max_rows_per_unit=3).sum("x", epsilon=EPS),
                  neighbouring=relation, seed=4)
    noise = np.array(vals) - clamped_sum(df["x"].to_numpy())
    exp = {k: 3 * v for k, v in SUM_SENS.items()}
    check_spread(noise, EPS, exp[relation], integer=False,
                 wrong=[SUM_SENS[relation], *wrong(exp, relation)])


# -- grouped ----------------------------------------------------------------------------------

def grouped_frame() -> pd.DataFrame:
    """Keys k00..k39 with 0..3 rows each (some declared keys are absent), one unit per row."""
    rng = np.random.default_rng(11)
    reps = rng.integers(0, 4, NKEYS)
    g = np.repeat(KEYS, reps)
    x = rng.integers(-30, 30, g.size).astype(np.float64) / 2
    return pd.DataFrame({"g": g, "x": x, "uid": np.arange(g.size)})


def per_key(df: pd.DataFrame, col: str | None) -> pd.Series:
    if col is None:
        return df.groupby("g").size().reindex(KEYS, fill_value=0).astype(float)
    return df.assign(c=np.clip(df[col], *B)).groupby("g")["c"].sum().reindex(KEYS, fill_value=0)


def grouped_noise(df: pd.DataFrame, relation: str, col: str | None, seed: int,
                  **opts) -> np.ndarray:
    def release(s):
        p = df.dp(s, bounds={"x": B}, keys={"g": KEYS}, **opts).groupby("g")
        # the raw mechanism's noise (postprocess=None: no projection onto non-negative counts)
        r = p.count(epsilon=EPS, postprocess=None) if col is None else p.sum(col, epsilon=EPS)
        assert list(r.index) == KEYS
        return r.to_numpy(dtype=np.float64)

    vals = np.stack(repeat(N_GROUPED, release, neighbouring=relation, seed=seed))
    exact = per_key(df, col).to_numpy()
    return vals - exact[None, :]


@pytest.mark.parametrize("relation", RELATIONS)
def test_groupby_count_spread(relation):
    noise = grouped_noise(grouped_frame(), relation, None, seed=5)
    check_spread(noise, EPS, GROUPED_COUNT_SENS[relation], integer=True,
                 wrong=wrong(GROUPED_COUNT_SENS, relation))


@pytest.mark.parametrize("relation", RELATIONS)
def test_groupby_sum_spread(relation):
    noise = grouped_noise(grouped_frame(), relation, "x", seed=6)
    check_spread(noise, EPS, GROUPED_SUM_SENS[relation], integer=False,
                 wrong=wrong(GROUPED_SUM_SENS, relation))


@pytest.mark.parametrize("relation", RELATIONS)
def test_histogram_spread(relation):
    df = row_frame()
    edges = np.linspace(-50, 50, NKEYS + 1).tolist()
    exact = pd.cut(df["x"], edges).value_counts(sort=False).to_numpy()

    def release(s):
        h = df.dp(s).histogram("x", bins=edges, epsilon=EPS, postprocess=None)  # raw noise
        return h.to_numpy()

    noise = np.stack(repeat(N_GROUPED, release, neighbouring=relation, seed=7)) - exact
    check_spread(noise, EPS, GROUPED_COUNT_SENS[relation], integer=True,
                 wrong=wrong(GROUPED_COUNT_SENS, relation))


def multi_group_frame() -> pd.DataFrame:
    """Each unit has one row in each of at most 2 keys (max_groups_per_unit = 2 keeps all)."""
    rng = np.random.default_rng(12)
    rows = []
    for uid in range(50):
        for key in rng.choice(KEYS, size=int(rng.integers(1, 3)), replace=False):
            rows.append((uid, key, float(rng.integers(-20, 20))))
    return pd.DataFrame(rows, columns=["uid", "g", "x"])


@pytest.mark.parametrize("relation", RELATIONS)
def test_groupby_count_two_groups_per_unit(relation):
    """max_groups_per_unit = 2: grouped L1 x2."""
    noise = grouped_noise(multi_group_frame(), relation, None, seed=8, privacy_unit="uid",
                          max_rows_per_group=1, max_groups_per_unit=2)
    exp = {k: 2 * v for k, v in GROUPED_COUNT_SENS.items()}
    check_spread(noise, EPS, exp[relation], integer=True,
                 wrong=[GROUPED_COUNT_SENS[relation], *wrong(exp, relation)])


@pytest.mark.parametrize("relation", RELATIONS)
def test_groupby_sum_two_groups_per_unit(relation):
    noise = grouped_noise(multi_group_frame(), relation, "x", seed=9, privacy_unit="uid",
                          max_rows_per_group=1, max_groups_per_unit=2)
    exp = {k: 2 * v for k, v in GROUPED_SUM_SENS.items()}
    check_spread(noise, EPS, exp[relation], integer=False,
                 wrong=[GROUPED_SUM_SENS[relation], *wrong(exp, relation)])


@pytest.mark.parametrize("relation", RELATIONS)
def test_groupby_count_rows_and_groups_per_unit(relation):
    """max_rows_per_group = 3 and max_groups_per_unit = 2: grouped count L1 x6."""
    base = multi_group_frame()
    df = pd.concat([base, base.iloc[::2], base.iloc[::3]], ignore_index=True)  # <= 3 rows/pair
    noise = grouped_noise(df, relation, None, seed=10, privacy_unit="uid",
                          max_rows_per_group=3, max_groups_per_unit=2)
    exp = {k: 6 * v for k, v in GROUPED_COUNT_SENS.items()}
    check_spread(noise, EPS, exp[relation], integer=True, wrong=wrong(exp, relation))


def test_adversarial_values_do_not_widen_the_noise():
    """Huge, infinite and subnormal values are clamped before accumulation: the noise still
    follows the declared sensitivity and the exact part is the clamped sum."""
    vals = [1e300, -1e300, np.inf, -np.inf, 5e-324, np.nextafter(10.0, 11.0), -0.0, 1e16]
    df = pd.DataFrame({"g": np.repeat(KEYS, len(vals)),
                       "x": np.tile(np.array(vals, dtype=np.float64), NKEYS)})
    exact_each = float(np.clip(np.array(vals), *B).sum())  # 10 - 10 + 10 - 10 + 0 + 10 + 0 + 10
    assert exact_each == 20.0
    noise = grouped_noise(df, "add_remove", "x", seed=13)
    check_spread(noise, EPS, 10.0, integer=False, wrong=[20.0])
