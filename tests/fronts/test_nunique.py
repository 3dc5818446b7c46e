"""``nunique``, pandas' name for ``count_distinct``: the same release (op, plan, noise, charge,
ledger mechanism), labelled ``nunique`` in the provenance, on every front that takes a name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf

from ._support import session

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")

KEYS = ["a", "b", "c"]


@pytest.fixture(scope="module")
def df() -> pd.DataFrame:
    rng = np.random.default_rng(46)
    out = pd.DataFrame({"g": rng.choice(KEYS, 600), "x": rng.integers(0, 40, 600),
                        "u": rng.integers(0, 200, 600)})
    out.loc[::9, "x"] = None
    return out


def _priv(df: pd.DataFrame, seed: int) -> Any:
    return df.dp(session(seed), keys={"g": KEYS}, privacy_unit="u", max_rows_per_unit=4,
                 max_groups_per_unit=2, max_rows_per_group=2)


CALLS: dict[str, tuple[Callable[[Any, str], Any], ...]] = {
    "frame": (lambda p, n: getattr(p, n)("x", epsilon=0.5),),
    "groupby": (lambda p, n: getattr(p.groupby("g"), n)("x", epsilon=0.5),),
    "selection": (lambda p, n: getattr(p.groupby("g")["x"], n)(epsilon=0.5),),
}


@pytest.mark.parametrize("front", sorted(CALLS))
def test_nunique_is_count_distincts_release(df: pd.DataFrame, front: str) -> None:
    (call,) = CALLS[front]
    out = {}
    for name in ("count_distinct", "nunique"):
        p = _priv(df, 3)
        r = call(p, name)
        prov = r.attrs["dp"]
        (m,) = prov["measures"]
        out[name] = (np.asarray(r, dtype=np.float64).reshape(-1).tolist(), p.session.spent,
                     m["mechanism"], m["noise_scale"], m["sensitivity"], m["aggregate"])
    assert out["nunique"][:5] == out["count_distinct"][:5]  # same seed: the same noisy values
    assert out["nunique"][5] == "nunique" and out["count_distinct"][5] == "count_distinct"


def test_nunique_in_agg_query_and_explain(df: pd.DataFrame) -> None:
    p = df.dp(session(5), keys={"g": KEYS})  # rows are the units: nothing bounded away
    both = p.groupby("g").agg(n=("x", "nunique"), d=("x", "count_distinct"), epsilon=1e6)
    exact = df.groupby("g")["x"].nunique().reindex(KEYS)
    assert both["n"].tolist() == both["d"].tolist() == exact.tolist()
    labels = [m["aggregate"] for m in both.attrs["dp"]["measures"]]
    assert labels == ["nunique", "count_distinct"]
    (meas,) = p.query("nunique", "x", epsilon=1).measures  # the Query a call would release
    assert (meas.op, meas.label) == ("count_distinct", "nunique")
    plan = p.explain("nunique", "x", epsilon=1)
    assert plan["measures"][0]["aggregate"] == "nunique"
    assert plan == {**p.explain("count_distinct", "x", epsilon=1),
                    "measures": plan["measures"]}


def test_nunique_refuses_before_the_charge(df: pd.DataFrame) -> None:
    p = _priv(df, 1)
    for bad in (lambda: p.nunique("nope", epsilon=1), lambda: p.nunique("x", epsilon=-1),
                lambda: p.nunique("x", epsilon=1, resolution=3)):
        with pytest.raises(dpf.DPError):
            bad()
    assert p.session.spent == (0.0, 0.0) and p.session.ledger.empty
