"""The aggregate registry is the one list of aggregates: every aggregate has its front methods,
its release-spec entry, its docs row and its mechanism pages, and nothing exists beside it."""

from __future__ import annotations

import importlib
import typing
from pathlib import Path

import pytest

from dpframe.cli import spec
from dpframe.core import query
from dpframe.core.aggregates import AGGREGATES, NAMES, aggregate
from dpframe.errors import ValidationError
from dpframe.fronts.frame import PrivateFrame, PrivateGroupBy

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_query_ops_are_the_registry() -> None:
    assert set(typing.get_args(query.Op)) == set(AGGREGATES)


@pytest.mark.parametrize("name", sorted(NAMES))
def test_every_name_has_a_front_method(name: str) -> None:
    assert callable(getattr(PrivateFrame, name, None)), f"PrivateFrame.{name} is missing"
    if name != "histogram":  # histograms are per frame (group by a count of bins instead)
        assert callable(getattr(PrivateGroupBy, name, None)), f"PrivateGroupBy.{name} missing"


def test_the_spec_aggregates_are_the_registry_names() -> None:
    assert set(spec.AGGREGATES) - {"agg"} == set(NAMES)


@pytest.mark.parametrize("op", sorted(AGGREGATES))
def test_every_aggregate_is_documented(op: str) -> None:
    page = (DOCS / "aggregates.md").read_text(encoding="utf-8")
    row = next((line for line in page.splitlines() if line.startswith(f"| `{op}` |")), None)
    assert row is not None, f"docs/aggregates.md has no row for {op}"
    for name in AGGREGATES[op].names:
        assert f"`{name}`" in row
    for mechanism in AGGREGATES[op].mechanism_pages:
        assert (DOCS / "mechanisms" / f"{mechanism}.md").is_file()


@pytest.mark.parametrize("op", sorted(AGGREGATES))
def test_every_aggregate_states_its_privacy_argument(op: str) -> None:
    module = importlib.import_module(type(AGGREGATES[op]).__module__)
    assert module.__doc__ and "Privacy:" in module.__doc__


def test_an_unknown_aggregate_is_a_typed_error() -> None:
    with pytest.raises(ValidationError, match="unknown aggregate"):
        aggregate("mode")
