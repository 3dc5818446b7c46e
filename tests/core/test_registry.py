"""The aggregate registry is the one list of aggregates: every aggregate has its front methods,
its release-spec entry, its docs row and its mechanism pages, and nothing exists beside it."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from dpframe.cli import queries, schema, spec
from dpframe.core import query
from dpframe.core.aggregates import (
    AGGREGATES,
    LEVELS,
    NAMES,
    Aggregate,
    agg_names,
    aggregate,
    positional,
)
from dpframe.core.validate import check_query
from dpframe.errors import ValidationError
from dpframe.fronts import aggregation
from dpframe.fronts.frame import PrivateFrame
from dpframe.fronts.groupby import PrivateGroupBy

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_query_ops_are_the_registry() -> None:
    # Op is a str checked against the registry when the query is validated (before any charge)
    from fractions import Fraction

    q = query.Query((query.Measure("mode_of_everything", "x"),), Fraction(1), bounds={"x": (0, 1)})
    with pytest.raises(ValidationError, match="unknown aggregate 'mode_of_everything'"):
        check_query(q, {"x": "float"})
    for op in AGGREGATES:
        assert aggregate(op).op == op


def test_simple_names_get_generated_front_methods() -> None:
    # a name taking only a column has a front method without a front edit: generated from
    # the registry (fronts/registered.py) unless a front writes its own
    from dpframe.fronts import registered

    generated = registered.generated_names()
    assert {"nunique", "mode", "mean"} <= set(generated) and "quantile" not in generated
    for cls in (PrivateFrame, PrivateGroupBy):
        for name in generated:
            method = getattr(cls, name)
            assert method.__qualname__ == f"{cls.__name__}.{name}" and method.__doc__


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
        aggregate("trimmed_mean")


# -- the edge tables are derived from the registry (a new aggregate needs only its module) -----

class _Toy(Aggregate):
    """A registered toy: a level-taking aggregate (like ``quantile``) with a second name."""

    op = "toy"
    names = ("toy", "toy_half")
    summary = "a toy"

    def arguments(self, name: str) -> tuple[str, ...]:
        return () if name == "toy_half" else ("q",)


class _Columnless(_Toy):
    op = "columnless"
    names = ("columnless",)
    needs_column = False
    in_agg = False

    def arguments(self, name: str) -> tuple[str, ...]:
        return ()


def test_the_cli_and_agg_tables_are_what_the_registry_derives() -> None:
    assert (*NAMES, "agg") == schema.AGGREGATES
    assert schema.needs(NAMES) == schema._NEEDS
    assert agg_names(NAMES) | {aggregation.SIZE} == aggregation.AGG_NAMES  # size: pandas' rows
    # what they were when kept by hand (the order too: the spec's messages list them)
    assert schema.AGGREGATES == ("count", "count_distinct", "nunique", "sum", "mean", "var",
                                 "std", "max", "min", "median", "quantile", "histogram", "mode",
                                 "agg")
    assert schema._NEEDS["count"] == () and schema._NEEDS["quantile"] == ("column", "q")
    assert schema._NEEDS["histogram"] == ("column", "bins") and schema._NEEDS["median"] == (
        "column",)
    assert set(NAMES) - {"quantile", "histogram"} | {"size"} == aggregation.AGG_NAMES
    assert {n: queries.arguments(n) for n in ("sum", "quantile", "histogram", "agg")} == {
        "sum": ("column",), "quantile": ("column", "q"), "histogram": ("column", "bins"),
        "agg": ("aggregates",)}


def test_a_new_aggregate_reaches_every_table_from_its_module_alone() -> None:
    names = {**NAMES, "toy": _Toy(), "toy_half": _Toy(), "columnless": _Columnless()}
    needs = schema.needs(names)
    assert needs["toy"] == ("column", "q") and needs["toy_half"] == ("column",)
    assert needs["columnless"] == ()
    assert {"toy_half"} <= agg_names(names) and not {"toy", "columnless"} & agg_names(names)
    assert positional("toy", names) == ("column", "q")


def test_the_spec_options_are_the_front_keywords() -> None:
    # every option the CLI passes is a keyword of some front method (read by signature)
    import inspect

    takes = {p for cls in (PrivateFrame, PrivateGroupBy) for name in NAMES
             if hasattr(cls, name)
             for p in inspect.signature(getattr(cls, name)).parameters}
    assert set(queries._OPTIONS) <= takes | {"weights"}
    assert set(queries._OPTIONS) == set(schema.QueryTable.model_fields) - queries._STRUCTURE


def test_fixed_quantile_levels_live_with_the_quantile() -> None:
    from fractions import Fraction

    assert {"max": Fraction(1), "min": Fraction(0), "median": Fraction(1, 2)} == LEVELS
    assert set(LEVELS) < set(AGGREGATES["quantile"].names)
