"""A spec's ``postprocess`` (histograms and grouped counts): "none" asks for the raw counts
(TOML has no null), "nonnegative" or nothing for the projected default."""

from __future__ import annotations

import pytest

from dpframe.cli.queries import front_call
from dpframe.cli.schema import QueryTable
from dpframe.cli.spec import QuerySpec


def _call(**fields: object) -> dict[str, object]:
    table = QueryTable.model_validate({"aggregate": "histogram", "column": "age",
                                       "bins": [0, 50, 100], "epsilon": 0.5, **fields})
    given = table.model_dump(exclude={"name", "keys", "by", "weights", "q", "aggregates"})
    return front_call(QuerySpec(name="h", **given))[2]


def test_postprocess_none_asks_for_the_raw_counts() -> None:
    assert _call(postprocess="none")["postprocess"] is None
    assert _call(postprocess="nonnegative")["postprocess"] == "nonnegative"
    assert "postprocess" not in _call()  # the front's default: projected


def test_an_unknown_postprocess_is_refused() -> None:
    with pytest.raises(ValueError, match="postprocess"):
        _call(postprocess="clip")
