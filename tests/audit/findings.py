"""The attacker's review of 0.1: one scenario per finding.

Each release below is reduced to a statistic of what one person's rows could change besides
the noise: a label's spelling, the order of released keys, a refusal or an exception (an
exception, raised before or after the charge, is an output too: REFUSED), the number of groups,
or the noisy value itself where the finding was too little noise. Each one fails on the 0.1 code
(docs/audit.md shows the bounds it reached there) and passes on this one.
"""

from __future__ import annotations

import datetime
import decimal
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa

import dpframe as dpf
from dpframe.core.noise.rng import InsecureSeedWarning

from .scenario import Built
from .support import Frames, Release, charged, dp, frame, runs, session

#: The statistic of a release that raised: an outcome the attacker sees like any other.
REFUSED = 1e30
#: Releases per dataset of the findings' scenarios (one draw each).
FINDING_TRIALS = 1000
#: Releases per dataset in the fast subset CI runs: each finding's scenario on the fixed code
#: (the broken controls and the full trials run in the full audit).
FINDING_FAST = 300
#: The fast trials of the costly scenarios (a local Dask cluster or 2**23 rows a release): the
#: 200 a side whose power on the code before each fix the catalogue's comments state.
FINDING_FAST_COSTLY = 200


def outcome(release: Release) -> Release:
    """``release`` with any ``Exception`` turned into the public outcome :data:`REFUSED`."""

    def go(df: Any, s: dpf.Session) -> npt.ArrayLike:
        try:
            return release(df, s)
        except Exception:
            return [REFUSED]

    return go


def finding(frames: Frames, release: Release, neighbouring: str = "add_remove"
            ) -> Callable[[int], Built]:
    """Like :func:`support.api`, with exceptions as outcomes and the claim read from both sides
    (a release that is refused on one dataset charges nothing there)."""
    safe = outcome(release)

    def build(seed: int) -> Built:
        df_d, df_d2 = frames()
        run_d, run_d2 = runs(safe, df_d, df_d2, seed, neighbouring)
        claims = [charged(safe, df, seed * 10_000_000 + 9_999_990 + side, neighbouring)
                  for side, df in enumerate((df_d, df_d2))]
        eps, delta = max(c[0] for c in claims), max(c[1] for c in claims)
        return run_d, run_d2, float(eps), float(delta)

    return build


def arrow_keys(dictionary: Sequence[object], indices: Sequence[int]) -> pa.Table:
    """A table whose key column ``k`` is dictionary-encoded: ``indices`` into ``dictionary``."""
    keys = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(dictionary))
    return pa.table({"k": keys, "x": pa.array([1.0] * len(indices))})


def first(out: Any, label: object) -> float:
    """The released value of ``label`` (-1 when it is not released)."""
    for k, v in dict(out).items():
        if type(k) is type(label) and k == label:
            return float(v)
    return -1.0


def finding_dictionary() -> Callable[[int], Built]:
    """1. A scan whose Arrow dictionary repeats "a" (private keys): the rows under the second
    code must add to the first (0.1 overwrote the group, so one row wiped it)."""

    def frames() -> tuple[Any, Any]:
        base = [0] * 60 + [2]
        return arrow_keys(["a", "a", "b"], base), arrow_keys(["a", "a", "b"], [*base, 1])

    def rel(table: Any, s: dpf.Session) -> list[float]:
        out = dpf.scan(table).dp(s).groupby("k", keys="private").count(epsilon=1.0, delta=1e-6)
        return [first(out, "a")]

    return finding(frames, rel)


def finding_spelling() -> Callable[[int], Built]:
    """2. A private key held as 1 by 60 rows; one row spells it True (object column)."""

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        ones = [1] * 60
        return (frame(k=pd.Series(ones, dtype=object), x=1.0),
                frame(k=pd.Series([True, *ones], dtype=object), x=1.0))

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        out = dp(df, s).groupby("k", keys="private").count(epsilon=1.0, delta=1e-6)
        return [float(sum(type(k) is bool for k in out.index))]

    return finding(frames, rel)


def finding_order() -> Callable[[int], Built]:
    """3. Keys 1, 2, 10 of 60 rows each; one row holds "z" (never released)."""

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        keys: list[Any] = [1] * 60 + [2] * 60 + [10] * 60
        return (frame(k=pd.Series(keys, dtype=object), x=1.0),
                frame(k=pd.Series([*keys, "z"], dtype=object), x=1.0))

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        out = dp(df, s).groupby("k", keys="private").count(epsilon=1.0, delta=1e-6)
        labels = list(out.index)
        return [float(labels.index(10)) if 10 in labels else -1.0]

    return finding(frames, rel)


def gaussian_epsilon(sigma: float, sensitivity: float, delta: float) -> float:
    """The exact epsilon of the Gaussian mechanism (noise ``sigma``, L2 ``sensitivity``) at
    ``delta``: the smallest epsilon with ``Phi(a - e s) - exp(e) Phi(-a - e s) <= delta``,
    ``a = sensitivity / (2 sigma)``, ``s = sigma / sensitivity`` (the tight privacy profile,
    Balle and Wang 2018, Theorem 8). It is a lower bound as well as an upper bound: every
    smaller epsilon is violated by a threshold event."""

    def phi(x: float) -> float:
        return 0.5 * math.erfc(-x / math.sqrt(2.0))

    a, sc = sensitivity / (2.0 * sigma), sigma / sensitivity

    def profile(e: float) -> float:
        return phi(a - e * sc) - math.exp(e) * phi(-a - e * sc)

    lo, hi = 0.0, 1.0
    while profile(hi) > delta:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if profile(mid) > delta else (lo, mid)
    return lo


def finding_mixed_gaussian(seed: int) -> tuple[float, float, float, str]:
    """4. ``agg`` of a Gaussian sum with an exponential-mechanism max: the sum's noise must
    satisfy the (epsilon, delta) its provenance states (an exact computation, not a sample)."""
    df = frame(g=["a", "b"] * 50, x=np.linspace(0.0, 10.0, 100))
    s = session(seed, "add_remove")
    out = dp(df, s, bounds={"x": (0.0, 10.0)}, keys={"g": ["a", "b"]}).groupby("g").agg(
        {"x": ["sum", "max"]}, epsilon=1.0, delta=1e-6, mechanism="gaussian")
    m = next(m for m in out.attrs["dp"]["measures"] if m["aggregate"] == "sum")
    true = gaussian_epsilon(float(m["noise_scale"]), float(m["sensitivity"]), float(m["delta"]))
    return true, float(m["epsilon"]), float(m["delta"]), (
        f"exact Gaussian profile: sigma {float(m['noise_scale']):.4g}, "
        f"sensitivity {float(m['sensitivity']):g}")


def finding_change_one_sum() -> Callable[[int], Built]:
    """5. change_one: a replaced row leaves a filtered frame, taking U = 101 with it."""
    base = [100.5] * 5

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        return [dp(df, s, bounds={"x": (100.0, 101.0)}).sum("x", epsilon=1.0)]

    return finding(lambda: (frame(x=base), frame(x=[*base, 101.0])), rel, "change_one")


def finding_unit_spellings() -> Callable[[int], Built]:
    """6. A scan where one person's unit id is written 0.0 in one row and -0.0 in another."""

    def frames() -> tuple[Any, Any]:
        d = {"u": [1.0, 2.0, 3.0], "x": [1.0] * 3}
        d2 = {"u": [1.0, 2.0, 3.0, 0.0, -0.0], "x": [1.0] * 5}
        return pa.table(d), pa.table(d2)

    def rel(table: Any, s: dpf.Session) -> list[float]:
        return [dpf.scan(table).dp(s, privacy_unit="u", max_rows_per_unit=1).count(epsilon=1.0)]

    return finding(frames, rel)


def finding_empty() -> Callable[[int], Built]:
    """7. An empty frame against one row: both must be released (with noise)."""

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        return frame(x=np.array([], dtype=np.float64)), frame(x=[10.0])

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        return [dp(df, s, bounds={"x": (0.0, 10.0)}).sum("x", epsilon=1.0)]

    return finding(frames, rel)


def finding_list_key() -> Callable[[int], Built]:
    """8. A list in a key column (0.1 raised TypeError after the charge): a missing key."""

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        keys: list[Any] = ["a"] * 5 + ["b"] * 5
        return (frame(k=pd.Series(keys, dtype=object), x=1.0),
                frame(k=pd.Series([*keys, ["a"]], dtype=object), x=1.0))

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        out = dp(df, s, keys={"k": ["a", "b"]}).groupby("k").count(epsilon=1.0)
        return [first(out, "a")]

    return finding(frames, rel)


def finding_categories() -> Callable[[int], Built]:
    """9. A Categorical whose categories come from the data: a city held by one person."""

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        cities = ["a"] * 5 + ["b"] * 5
        d, d2 = frame(city=cities, x=1.0), frame(city=[*cities, "zed"], x=1.0)
        return d.astype({"city": "category"}), d2.astype({"city": "category"})

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        return [float(len(dp(df, s).groupby("city").count(epsilon=1.0)))]

    return finding(frames, rel)


def finding_mixed_units() -> Callable[[int], Built]:
    """10. A session spending 0.5 per person, then 0.5 per row: a person with 10 rows."""

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        u = list(range(10))
        return frame(u=u, x=1.0), frame(u=[*u, *[99] * 10], x=1.0)

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        per_unit = dp(df, s, privacy_unit="u", max_rows_per_unit=10).count(epsilon=0.5)
        try:
            return [float(dp(df, s).count(epsilon=0.5))]
        except Exception:
            return [float(per_unit)]

    return finding(frames, rel)


def finding_data_warning() -> Callable[[int], Built]:
    """11. A warning raised by the data: scaling a value near the float limit to fixed point
    overflowed before clamping, and numpy warned (statistic: warnings seen by the caller)."""

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        return frame(x=[5.0] * 10), frame(x=[5.0] * 10 + [1e308])

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            dp(df, s, bounds={"x": (0.0, 10.0)}).sum("x", epsilon=1.0)
        return [float(sum(not issubclass(w.category, InsecureSeedWarning) for w in seen))]

    return finding(frames, rel)


def finding_unsigned_dictionary() -> Callable[[int], Built]:
    """12. A scan of keys in a dictionary with unsigned indices (Polars' Categorical and Enum
    columns are such dictionaries); one more row has a missing key. Making room for the -1 of a
    missing row overflowed the unsigned indices: an exception after the charge, only when some
    row was missing (statistic: the count of "a", REFUSED on an exception)."""

    def keyed(indices: Sequence[int | None]) -> pa.Table:
        keys = pa.DictionaryArray.from_arrays(pa.array(indices, pa.uint32()),
                                              pa.array(["a", "b"]))
        return pa.table({"k": keys, "x": pa.array([1.0] * len(indices))})

    def frames() -> tuple[Any, Any]:
        base: list[int | None] = [0] * 10 + [1] * 10
        return keyed(base), keyed([*base, None])

    def rel(table: Any, s: dpf.Session) -> list[float]:
        out = dpf.scan(table).dp(s, keys={"k": ["a", "b"]}).groupby("k").count(epsilon=1.0)
        return [first(out, "a")]

    return finding(frames, rel)


def finding_nonconforming_batch() -> Callable[[int], Built]:
    """13. A scan of a folder whose schema (from its first file) holds timestamps in
    nanoseconds; another file holds 20 timestamps in seconds, and one more row a date past
    2262, which nanoseconds cannot hold. Casting that file's batch failed as a whole and made
    all of it missing: one row erased 20 (statistic: count of the column)."""
    import atexit
    import shutil
    import tempfile

    import pyarrow.parquet as pq

    def folder(seconds: Sequence[int]) -> str:
        path = tempfile.mkdtemp(prefix="dpframe-audit-")
        atexit.register(shutil.rmtree, path, True)
        pq.write_table(pa.table({"t": pa.array([0], pa.timestamp("ns"))}), f"{path}/a.parquet")
        pq.write_table(pa.table({"t": pa.array(list(seconds), pa.int64()).view(
            pa.timestamp("s"))}), f"{path}/b.parquet")
        return path

    def frames() -> tuple[Any, Any]:
        near = [1_577_836_800] * 20
        return folder(near), folder([*near, 2**40])

    def rel(path: Any, s: dpf.Session) -> list[float]:
        return [float(dpf.scan(path).dp(s).count("t", epsilon=1.0))]

    return finding(frames, rel)


def finding_far_date() -> Callable[[int], Built]:
    """14. Private keys of a pandas ``date32[pyarrow]`` column: 60 rows on one day, and one
    more row on a day past the year 9999. Making its label raised ``OverflowError`` (quoting
    it) after the charge (statistic: the count of the day, REFUSED on an exception)."""
    day = pa.int32()

    def dates(days: Sequence[int]) -> pd.DataFrame:
        col = pd.arrays.ArrowExtensionArray(pa.array(list(days), day).view(pa.date32()))
        return pd.DataFrame({"k": col, "x": [1.0] * len(days)})

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        return dates([18_262] * 60), dates([18_262] * 60 + [2**31 - 1])

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        out = dp(df, s).groupby("k", keys="private").count(epsilon=1.0, delta=1e-6)
        return [float(out.iloc[0]) if len(out) else -1.0]

    return finding(frames, rel)


def finding_integer_sum_past_int64() -> Callable[[int], Built]:
    """15. An integer sum whose exact total passes 2**63 (2**23 rows at the upper bound
    2**40, the largest noise scale at epsilon 1, vs one row fewer): partial sums were added in
    int64 and wrapped around to about -2**63 (or raised after the charge on the Arrow fronts).
    The exact total is kept in Python integers and the released integer saturates at int64's
    limits (statistic: whether the released sum is positive)."""
    bound = 1 << 40

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        n = 1 << 23
        return (pd.DataFrame({"i": np.full(n - 1, bound, dtype=np.int64)}),
                pd.DataFrame({"i": np.full(n, bound, dtype=np.int64)}))

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        return [float(float(dp(df, s, bounds={"i": (0, bound)}).sum("i", epsilon=1.0)) > 0)]

    return finding(frames, rel)


def finding_measured_public_key() -> Callable[[int], Built]:
    """16. A scan with a privacy unit, grouped by declared keys of the column it also sums
    (here the unit itself), where every row's key is undeclared, so no row is left after pass
    1: the schema that stands in for the spilled rows lacked the measured key column and the
    release raised ``KeyError`` after the charge; one more row with a declared key made it run
    (statistic: the sum of key 7, REFUSED on an exception)."""

    def table(units: Sequence[int]) -> pa.Table:
        return pa.table({"u": pa.array(list(units), pa.int64())})

    def frames() -> tuple[pa.Table, pa.Table]:
        return table([1, 2, 3]), table([1, 2, 3, 7])

    def rel(t: pa.Table, s: dpf.Session) -> list[float]:
        out = dpf.scan(t, partitions=2).dp(
            s, privacy_unit="u", max_rows_per_unit=2, bounds={"u": (0, 10)},
            keys={"u": [7, 8]}).groupby("u").sum("u", epsilon=1.0)
        return [float(out.iloc[0])]

    return finding(frames, rel)


def finding_null_dictionary_unit() -> Callable[[int], Built]:
    """17. A scan with integer unit ids in a dictionary whose values include a null (Arrow's
    ``dictionary_encode(null_encoding="encode")``): pass 1 skipped its row mask when the
    column had no null *indices*, so a row pointing at the null value was spilled and the
    block of its unit raised after the charge (found in review before it was released;
    statistic: the count, REFUSED on an exception)."""

    def table(units: Sequence[int | None]) -> pa.Table:
        return pa.table({"u": pa.array(list(units), pa.int64()).dictionary_encode(
            null_encoding="encode")})

    def frames() -> tuple[pa.Table, pa.Table]:
        base: list[int | None] = [5, 7, 9] * 4
        return table(base), table([*base, None])

    def rel(t: pa.Table, s: dpf.Session) -> list[float]:
        return [float(dpf.scan(t, partitions=2).dp(s, privacy_unit="u", max_rows_per_unit=4)
                      .count(epsilon=1.0))]

    return finding(frames, rel)


def finding_csv_hex_integers() -> Callable[[int], Built]:
    """18. A scan of a CSV whose integer column holds hexadecimal text (``0x10``; Arrow's type
    guess reads it as int64): Arrow's integer parser read it only when every value of the batch
    was an integer, so one more row with a blank field made every other row's value missing
    (found in review before it was released; statistic: the sum). Since finding 53 the column
    is declared int64, as every CSV column a query reads must be."""
    import atexit
    import shutil
    import tempfile

    def csv(rows: Sequence[str]) -> str:
        path = tempfile.mkdtemp(prefix="dpframe-audit-")
        atexit.register(shutil.rmtree, path, True)
        with open(f"{path}/x.csv", "w", encoding="utf-8") as f:
            f.write("v,w\n" + "".join(f"{r},a\n" for r in rows))
        return f"{path}/x.csv"

    def frames() -> tuple[str, str]:
        base = ["0x10"] * 20 + ["1"]
        return csv(base), csv([*base, ""])

    def rel(path: str, s: dpf.Session) -> list[float]:
        scan = dpf.scan(path, types={"v": "int64"})
        return [float(scan.dp(s, bounds={"v": (0, 20)}).sum("v", epsilon=1.0))]

    return finding(frames, rel)


def finding_huge_integer_label() -> Callable[[int], Built]:
    """19. A distinct count of an object column holding an integer of more than 4,300 digits:
    its spelling (``repr``) passed Python's limit on integer text and raised ``ValueError``
    after the charge, only when such a value was there (statistic: the count, REFUSED on an
    exception)."""

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        base: list[object] = list(range(20))
        return (pd.DataFrame({"u": pd.Series(base, dtype=object)}),
                pd.DataFrame({"u": pd.Series([*base, 10**5000], dtype=object)}))

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        return [float(dp(df, s).count_distinct("u", epsilon=1.0))]

    return finding(frames, rel)


def finding_dask_unit_dtypes(private_keys: bool = False) -> Callable[[int], Built]:
    """20 and 21. A unit-level Dask release whose partitions give the unit column different
    dtypes: pandas' concatenation makes int64 beside float64 float64, where 2**53 + 2k and
    2**53 + 2k + 1 are one number. One person with the id 1.5 in their own partition merged
    pairs of others into one unit each (10 of 20; 100 of 200 with private keys, whose key
    needs that many units to be released): in the buckets of pre-selection (20, public keys), in
    Dask's task shuffle (21, private keys and sampling; its P2P shuffle refused the mix after
    the charge instead). Statistic: the count at one row per unit; found in review,
    2026-11-26."""
    import dask
    import dask.dataframe as dd

    def part(ids: list[Any], dtype: Any) -> pd.DataFrame:
        return pd.DataFrame({"u": np.array(ids, dtype=dtype),
                             "g": pd.array(["a"] * len(ids), dtype="str")})

    base = [2**53 + i for i in range(200 if private_keys else 20)]

    def frames() -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
        return [part(base, np.int64)], [part(base, np.int64), part([1.5], np.float64)]

    def rel(parts: list[pd.DataFrame], s: dpf.Session) -> list[float]:
        ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=part([], np.int64),
                              verify_meta=False)
        with dask.config.set(scheduler="sync"):
            f = dp(ddf, s, privacy_unit="u", max_rows_per_unit=1)
            if private_keys:
                out = f.groupby("g", keys="private").count(epsilon=1.0, delta=1e-6)
                return [first(out, "a")]
            return [float(f.count(epsilon=1.0))]

    return finding(frames, rel)


def finding_dask_text_in_numbers() -> Callable[[int], Built]:
    """22. A Dask partition whose measured column is object because one person's value is
    text (the frame's meta says float64): the partition was read as it came, a column that
    is not numeric, so every number in it vanished from the sum, not only the text
    (statistic: the sum, bounds [0, 10]; found in review, 2026-11-26)."""
    import dask
    import dask.dataframe as dd

    def frames() -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
        base = pd.DataFrame({"x": np.full(20, 5.0)})
        odd = pd.DataFrame({"x": pd.Series([5.0] * 20 + ["abc"], dtype=object)})
        return [base, base], [base, odd]

    def rel(parts: list[pd.DataFrame], s: dpf.Session) -> list[float]:
        ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=parts[0].iloc[:0],
                              verify_meta=False)
        with dask.config.set(scheduler="sync"):
            return [float(dp(ddf, s, bounds={"x": (0.0, 10.0)}).sum("x", epsilon=1.0))]

    return finding(frames, rel)


def _dask_frame(parts: list[pd.DataFrame]) -> Any:
    """A Dask frame of ``parts`` as they are (dtypes may differ), with the first one's meta."""
    import dask
    import dask.dataframe as dd

    return dd.from_delayed([dask.delayed(p) for p in parts], meta=parts[0].iloc[:0],
                           verify_meta=False)


def finding_dask_measured_key_dtypes() -> Callable[[int], Built]:
    """23. A unit-level Dask release whose private key is also measured (``count("k")``
    grouped by ``k``): the buckets gathered it by pandas' common dtype, as a measured column,
    so one person's key 1.5 in a float64 partition made the int64 keys 2**53 and 2**53 + 1 one
    key (finding 20's flaw in the key column). Statistic: the count of key 2**53 (100 units
    apiece); found in review, 2026-11-26."""
    import dask

    def frames() -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
        keys = np.array([2**53] * 100 + [2**53 + 1] * 100, dtype=np.int64)
        base = pd.DataFrame({"u": np.arange(200), "k": keys})
        return [base], [base, pd.DataFrame({"u": np.array([10**6]), "k": np.array([1.5])})]

    def rel(parts: list[pd.DataFrame], s: dpf.Session) -> list[float]:
        with dask.config.set(scheduler="sync"):
            f = dp(_dask_frame(parts), s, privacy_unit="u", max_rows_per_unit=1,
                   bounds={"k": (0, 2**54)})
            out = f.groupby("k", keys="private").count("k", epsilon=1.0, delta=1e-6)
        return [first(out, 2**53)]

    return finding(frames, rel)


def finding_dask_distinct_dtypes() -> Callable[[int], Built]:
    """24. A unit-level Dask ``count_distinct``: the buckets gathered the counted column by
    pandas' common dtype, so one person's 1.5 in a float64 partition made the int64 values
    2**53 + 2k and 2**53 + 2k + 1 one value (200 distinct values counted as 100). Statistic:
    the distinct count; found in review, 2026-11-26."""
    import dask

    def frames() -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
        base = pd.DataFrame({"u": np.arange(200), "v": 2**53 + np.arange(200, dtype=np.int64)})
        return [base], [base, pd.DataFrame({"u": np.array([10**6]), "v": np.array([1.5])})]

    def rel(parts: list[pd.DataFrame], s: dpf.Session) -> list[float]:
        with dask.config.set(scheduler="sync"):
            f = dp(_dask_frame(parts), s, privacy_unit="u", max_rows_per_unit=1,
                   bounds={"v": (0, 2**54)})
            return [float(f.count_distinct("v", epsilon=1.0))]

    return finding(frames, rel)


def finding_dask_text_in_measured_key() -> Callable[[int], Built]:
    """25. Finding 22 in a column that is both a key and measured (``groupby("k").sum("k")``):
    keys were left as they came, for their values, so a partition typed object by one
    person's text key read no numbers at all and its 20 rows vanished from the key's sum.
    Statistic: the sum of key 5.0, bounds [0, 10]; found in review, 2026-11-26."""
    import dask

    def frames() -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
        base = pd.DataFrame({"k": np.full(20, 5.0)})
        odd = pd.DataFrame({"k": pd.Series([5.0] * 20 + ["abc"], dtype=object)})
        return [base, base], [base, odd]

    def rel(parts: list[pd.DataFrame], s: dpf.Session) -> list[float]:
        with dask.config.set(scheduler="sync"):
            f = dp(_dask_frame(parts), s, bounds={"k": (0.0, 10.0)}, keys={"k": [5.0]})
            return [first(f.groupby("k").sum("k", epsilon=1.0), 5.0)]

    return finding(frames, rel)


def finding_dask_bool_beside_numbers() -> Callable[[int], Built]:
    """26. A unit-level Dask sum of a bool column: one person's text typed their partition
    object, which was read as numbers (float64, finding 22's fix), and pandas' concatenation
    of bool beside float64 in the bucket gave an object column again, read as no number at
    all: the sum of 40 rows at True fell to 0. Statistic: the sum; found in review,
    2026-11-26."""
    import dask

    def frames() -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
        a = pd.DataFrame({"u": np.arange(20), "b": np.ones(20, dtype=bool)})
        b = pd.DataFrame({"u": np.arange(20, 40), "b": np.ones(20, dtype=bool)})
        odd = pd.DataFrame({"u": np.arange(20, 41),
                            "b": pd.Series([True] * 20 + ["abc"], dtype=object)})
        return [a, b], [a, odd]

    def rel(parts: list[pd.DataFrame], s: dpf.Session) -> list[float]:
        with dask.config.set(scheduler="sync"):
            f = dp(_dask_frame(parts), s, privacy_unit="u", max_rows_per_unit=1,
                   bounds={"b": (0, 1)})
            return [float(f.sum("b", epsilon=1.0))]

    return finding(frames, rel)


def finding_complex_merges_one() -> Callable[[int], Built]:
    """27. An object key column: ``pd.factorize`` merged ``complex(1, 0)`` with ``1`` (equal,
    hashed alike) under the first row's spelling, and a complex number conforms to nothing, so
    one row keyed ``complex(1, 0)`` ahead of them made every row keyed 1 missing (statistic:
    the count of the public key 1)."""

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        base: list[object] = [1] * 25 + ["a"] * 25
        return (frame(k=pd.Series(base, dtype=object)),
                frame(k=pd.Series([complex(1, 0), *base], dtype=object)))

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        out = dp(df, s, keys={"k": [1, "a"]}).groupby("k").count(epsilon=1.0)
        return [float(out.iloc[0])]

    return finding(frames, rel)


def finding_time_spelling() -> Callable[[int], Built]:
    """28. An object key column of ``Timestamp`` values: one row spelling its date as an equal
    ``np.datetime64`` ahead of them gave the released private key that type and spelling (and
    its rank among other keys: ``datetime64`` sorted after ``datetime``), the first row's
    (statistic: whether the released key is a ``Timestamp``)."""

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        day = pd.Timestamp("2024-01-01")
        base: list[object] = [day] * 60
        return (frame(k=pd.Series(base, dtype=object)),
                frame(k=pd.Series([np.datetime64("2024-01-01T00:00:00"), *base],
                                  dtype=object)))

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        out = dp(df, s).groupby("k", keys="private").count(epsilon=1.0, delta=1e-6)
        return [float(sum(isinstance(k, pd.Timestamp) for k in out.index))]

    return finding(frames, rel)


def finding_time_hash_split() -> Callable[[int], Built]:
    """29. A unit column of date-times with nanoseconds in an object column: a ``Timestamp``
    and the equal ``np.datetime64`` hash differently, so neither pandas nor the value model
    merged them, and one person holding rows under both spellings was two units with twice
    ``max_rows_per_unit`` rows (statistic: the count, sensitivity 3 claimed; 6 moved)."""

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        base = [pd.Timestamp("2024-01-01") + pd.Timedelta(days=i) for i in range(10)]
        t = pd.Timestamp("2024-06-01 00:00:00.000000001")
        person: list[object] = [t] * 3 + [np.datetime64(t.value, "ns")] * 3
        return (frame(u=pd.Series(base, dtype=object)),
                frame(u=pd.Series([*base, *person], dtype=object)))

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        return [float(dp(df, s, privacy_unit="u", max_rows_per_unit=3).count(epsilon=1.0))]

    return finding(frames, rel)


def finding_dst_fold() -> Callable[[int], Built]:
    """30. A Polars (or Arrow) column of time-zone-aware date-times in microseconds: Arrow makes
    Python ``datetime`` values, which compare by wall time within a zone and ignore ``fold``, so
    the two instants of a DST fall-back's repeated hour were one key, labelled ``fold=1`` when
    a row held the second (statistic: keys released from 60 rows at the first instant, one more
    at the second)."""
    import polars as pl

    def frames() -> tuple[Any, Any]:
        first = pd.Timestamp("2020-10-25 00:30", tz="UTC")
        second = pd.Timestamp("2020-10-25 01:30", tz="UTC")

        def table(stamps: list[pd.Timestamp]) -> pl.DataFrame:
            return pl.DataFrame({"t": pl.Series([t.to_pydatetime() for t in stamps])
                                 .dt.cast_time_unit("us").dt.convert_time_zone("Europe/Paris")})

        return table([first] * 60), table([first] * 60 + [second])

    def rel(df: Any, s: dpf.Session) -> list[float]:
        out = df.dp(s).groupby("t", keys="private").count(epsilon=1.0, delta=1e-6)
        return [float(sum(getattr(k, "fold", 0) for k in out.index))]

    return finding(frames, rel)


def finding_decimal_spelling() -> Callable[[int], Built]:
    """40. An object key column of decimals: ``Decimal("0.10")`` equals ``Decimal("0.1")``,
    hashed alike, and the released key kept the first row's spelling (a ``Fraction(1, 10)``
    first gave it another type); statistic: whether the key is spelled ``Decimal('0.1')``."""

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        base: list[object] = [decimal.Decimal("0.1")] * 60
        return (frame(k=pd.Series(base, dtype=object)),
                frame(k=pd.Series([decimal.Decimal("0.10"), *base], dtype=object)))

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        out = dp(df, s).groupby("k", keys="private").count(epsilon=1.0, delta=1e-6)
        return [float(sum(repr(k) == "Decimal('0.1')" for k in out.index))]

    return finding(frames, rel)


def finding_str_enum_label() -> Callable[[int], Built]:
    """41. An object key column of text: a ``str`` Enum member equals its text and hashes
    alike, so one member ahead of 60 rows of ``"red"`` made the released key the member, and
    its canonical label was ``str()`` of it, its name ``'Colour.RED'`` (statistic: whether the
    key released is the text ``'red'``)."""
    import enum

    class Colour(str, enum.Enum):  # noqa: UP042 (a StrEnum's str() is its text already)
        RED = "red"

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        base: list[object] = ["red"] * 60
        return (frame(k=pd.Series(base, dtype=object)),
                frame(k=pd.Series([Colour.RED, *base], dtype=object)))

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        out = dp(df, s).groupby("k", keys="private").count(epsilon=1.0, delta=1e-6)
        return [float(sum(type(k) is str and k == "red" for k in out.index))]

    return finding(frames, rel)


def finding_zoneless_time_label() -> Callable[[int], Built]:
    """49. An object key column of times of day: ``time(1, tzinfo=ZoneInfo(...))`` has no
    offset (a zone needs a date), so Python compares it as the naive ``time(1)``, equal and
    hashed alike; the released key kept the first row's spelling (statistic: whether the key
    released carries a zone)."""
    from zoneinfo import ZoneInfo

    zoned = datetime.time(1, tzinfo=ZoneInfo("Europe/Paris"))

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        base: list[object] = [datetime.time(1)] * 60
        return (frame(k=pd.Series(base, dtype=object)),
                frame(k=pd.Series([zoned, *base], dtype=object)))

    def rel(df: pd.DataFrame, s: dpf.Session) -> list[float]:
        out = dp(df, s).groupby("k", keys="private").count(epsilon=1.0, delta=1e-6)
        return [float(sum(getattr(k, "tzinfo", None) is not None for k in out.index))]

    return finding(frames, rel)
