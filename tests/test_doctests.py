"""The ``Example:`` blocks of the public modules' docstrings run and print what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["dpframe.frontend", "dpframe.results", "dpframe.core.intervals"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    if name == "dpframe.frontend":
        assert result.attempted > 0  # the examples exist
