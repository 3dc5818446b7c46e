"""The near-zero hint (core/hints.py): a grouped release over public keys whose every value is
within its noise of zero warns that the keys may be misspelled; post-processing only."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf

KEYS = [f"State {i}" for i in range(50)]


def frame(keys: list[str], rows: int = 40) -> pd.DataFrame:
    return pd.DataFrame({"state": np.repeat(keys, rows), "x": 1.0})


def hinted(df: pd.DataFrame, seed: int, op: str = "count", **kw: object) -> bool:
    s = dpf.Session(10, seed=seed) if seed else dpf.Session(10)
    priv = df.dp(s, bounds={"x": (0, 10)}, keys={"state": KEYS})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = getattr(priv.groupby("state"), op)(*(() if op == "count" else ("x",)),
                                                  epsilon=0.5, **kw)
    near = [w for w in caught if issubclass(w.category, dpf.NearZeroWarning)]
    assert bool(near) == bool(out.attrs["dp"].get("warnings"))
    assert s.spent[0] == pytest.approx(0.5)  # the hint spends nothing
    for w in near:
        assert "spelled as in the data" in str(w.message) and "state" in str(w.message)
        assert w.filename == __file__  # points at the caller's line, not dpframe's
    return bool(near)


@pytest.mark.filterwarnings("ignore:.*INSECURE")
@pytest.mark.parametrize("op", ["count", "sum"])
def test_misspelled_keys_warn(op: str) -> None:
    # every true value is 0: the hint fires with probability >= 95% whatever the number of keys
    # (Bonferroni over the 50 keys); 40 releases: P(fewer than 33) < 1e-3. Without the
    # correction (a 95% half-width per key) it would fire about 0.95**50 = 8% of the time.
    lower = frame([k.lower() for k in KEYS])
    fired = sum(hinted(lower, seed, op) for seed in range(1, 41))
    assert fired >= 33


@pytest.mark.filterwarnings("ignore:.*INSECURE")
def test_keys_with_rows_do_not_warn() -> None:
    df = frame(KEYS)
    assert not any(hinted(df, seed) for seed in range(1, 21))
    # one key with rows is enough to silence it
    one = pd.concat([frame([k.lower() for k in KEYS]), frame(KEYS[:1], rows=400)])
    assert not any(hinted(one, seed) for seed in range(1, 21))


def test_not_for_private_keys_or_means() -> None:
    s = dpf.Session(10, 1e-5)
    df = frame([k.lower() for k in KEYS])
    priv = df.dp(s, bounds={"x": (0, 10)}, keys={"state": KEYS})
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpf.NearZeroWarning)
        priv.groupby("state").mean("x", epsilon=0.5)  # a ratio: no zero to compare with
        priv.count(epsilon=0.1)                       # ungrouped
        df.dp(s).groupby("state", keys="private").count(epsilon=0.5, delta=1e-6)
