"""The public names: PrivateFrame and PrivateGroupBy are exported (for type hints), and the
session-wide ``last_release`` is gone (every result carries its own provenance)."""

from __future__ import annotations

import pandas as pd

import dpframe as dpf
from dpframe.engine import release


def test_the_front_types_are_exported() -> None:
    assert {"PrivateFrame", "PrivateGroupBy"} <= set(dpf.__all__)
    s = dpf.Session(epsilon=1)
    priv = pd.DataFrame({"g": ["a"], "x": [1.0]}).dp(s, bounds={"x": (0, 1)},
                                                       keys={"g": ["a"]})
    assert isinstance(priv, dpf.PrivateFrame)
    assert isinstance(priv.groupby("g"), dpf.PrivateGroupBy)


def test_no_session_wide_last_release() -> None:
    assert not hasattr(dpf, "last_release") and "last_release" not in dpf.__all__
    assert not hasattr(release, "last_release") and not hasattr(release, "_LAST")


def test_a_scalar_result_exports_with_its_own_provenance() -> None:
    s = dpf.Session(epsilon=1)
    c = pd.DataFrame({"x": [1.0, 2.0]}).dp(s).count(epsilon=1)
    t = dpf.to_arrow(int(c), provenance=c.provenance)
    assert t.column("count").to_pylist() == [c]
