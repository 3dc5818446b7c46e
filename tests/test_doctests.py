"""The ``Example:`` blocks of the public modules' docstrings run and print what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["dpframe.fronts.frame", "dpframe.fronts.groupby", "dpframe.fronts.selection",
           "dpframe.fronts.results", "dpframe.core.intervals", "dpframe.core.value_bounds",
           "dpframe.core.digest",
           "dpframe.testing"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    if name == "dpframe.fronts.frame":
        assert result.attempted > 0  # the examples exist


def test_every_query_method_documents_its_shared_parameters() -> None:
    """Every query method documents epsilon (and its alternative, accuracy), what it returns and
    what it raises, with a doctested example (0.1's 17 query methods documented none of
    them)."""
    from dpframe.fronts.frame import PrivateFrame
    from dpframe.fronts.groupby import PrivateGroupBy

    methods = [getattr(PrivateFrame, m) for m in (
        "count", "count_distinct", "sum", "mean", "var", "std", "bounds", "quantile", "max",
        "min", "median", "histogram", "nunique", "mode")] + [getattr(PrivateGroupBy, m) for m in (
            "count", "count_distinct", "sum", "mean", "var", "std", "max", "min", "quantile",
            "median", "agg", "nunique", "mode")]
    for fn in methods:
        doc = fn.__doc__ or ""
        for field in (":param epsilon:", ":param accuracy:", ":returns:",
                      ":raises BudgetExceededError:", "Example:", ">>> "):
            assert field in doc, (fn.__qualname__, field)


def test_the_generated_methods_examples_run() -> None:
    """The methods generated from the registry (fronts/registered.py) have their docstring
    from the aggregate (``Aggregate.front_doc``): its example runs too."""
    from dpframe.fronts import registered
    from dpframe.fronts.frame import PrivateFrame
    from dpframe.fronts.groupby import PrivateGroupBy

    parser, attempted = doctest.DocTestParser(), 0
    for cls in (PrivateFrame, PrivateGroupBy):
        for name in registered.generated_names():
            fn = getattr(cls, name)
            if fn.__module__ != registered.__name__:
                continue  # written by hand: doctested with its module
            test = parser.get_doctest(fn.__doc__ or "", {}, fn.__qualname__, None, 0)
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
            runner.run(test)
            assert runner.failures == 0, fn.__qualname__
            attempted += runner.tries
    assert attempted >= 4 * 4  # nunique and mode, on frames and group-bys
