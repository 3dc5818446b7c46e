"""Close-name suggestions for messages about column names (public schema, never data)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def close_names(name: object, names: Iterable[object]) -> str:
    """`` (did you mean 'wage'?)`` for the names in ``names`` closest to ``name`` (a typo or
    another case), or "" when none is close. Column names are public schema, so the hint
    quotes no private value."""
    if not isinstance(name, str):
        return ""
    candidates = [n for n in names if isinstance(n, str)]
    near = difflib.get_close_matches(name, candidates, n=3, cutoff=0.6)
    if not near:
        lowered = {n.lower(): n for n in candidates}
        near = [lowered[name.lower()]] if name.lower() in lowered else []
    return f" (did you mean {' or '.join(repr(n) for n in near)}?)" if near else ""


__all__ = ["close_names"]
