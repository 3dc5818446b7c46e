"""Griffe extension for the API reference: render Sphinx cross-reference roles as code.

dpframe's docstrings use reST roles (``:class:`~fractions.Fraction```); mkdocstrings renders
Markdown, where the role prefix would show up verbatim. This turns each role into inline code
(``~`` keeps the last dotted component, as in Sphinx).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj|const):`(~?)([^`]+)`")


def _code(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


class SphinxRoles(griffe.Extension):
    """Rewrite ``:role:`target``` as ``target`` in every docstring."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(_code, obj.docstring.value)
