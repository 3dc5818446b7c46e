"""Spec errors: a pydantic validation failure as one message that names sections and fields,
never values (docs/cli.md, exit code 2)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from ..core.names import close_names
from ..errors import ValidationError
from .schema import AGGREGATES, SECTIONS, SpecModel


class SpecError(ValidationError):
    """The release spec is malformed (unknown field, wrong type, missing value)."""


#: Messages for a missing table or field, by its location (query numbers left out).
_MISSING = {
    ("release",): "[release] needs epsilon (the ledger's total budget)",
    ("release", "epsilon"): "[release] needs epsilon (the ledger's total budget)",
    ("input",): "[input] needs path (a CSV/Parquet/Arrow file, glob or folder) or generate "
                "(built-in synthetic data)",
    ("query",): "the spec needs at least one [[query]]",
    ("query", "aggregate"): "needs aggregate (one of " + ", ".join(AGGREGATES) + ")",
    ("query", "epsilon"): "needs epsilon",
}
_NO_QUERY = "the spec needs at least one [[query]] (an array of tables: [[query]])"
_MUST_BE = {
    "float_type": "a number", "int_type": "an integer", "string_type": "a string",
    "bool_type": "true or false", "dict_type": "a table", "model_type": "a table",
    "model_attributes_type": "a table", "list_type": "a list", "tuple_type": "a list",
    "finite_number": "a finite number", "string_too_short": "a non-empty string",
}
_COMPARE = {"greater_than": ("gt", "greater than"), "greater_than_equal": ("ge", "at least"),
            "less_than": ("lt", "less than"), "less_than_equal": ("le", "at most")}
#: Length errors: (the context key of the limit, the words before it, the unit counted).
_LENGTH = {"too_short": ("min_length", "must have at least", "item"),
           "too_long": ("max_length", "must have at most", "item"),
           "string_too_long": ("max_length", "must be at most", "character")}
#: A query's name is shown when it is a usable label; longer ones are shown by number.
_MAX_SHOWN_NAME = 40


@dataclass(frozen=True)
class _Problem:
    """One pydantic error, located in the spec: its section ("[release]", "query 'x'") and the
    field path inside it."""

    loc: tuple[str | int, ...]
    kind: str
    ctx: Mapping[str, Any]
    msg: str
    section: str
    path: list[str]

    @property
    def label(self) -> str:
        """The section and the field: "[release] epsilon"."""
        return f"{self.section} {'.'.join(self.path)}".strip()

    @property
    def parent(self) -> str:
        """The section and the field's parent: where an unknown or missing field belongs."""
        return f"{self.section} {'.'.join(self.path[:-1])}".strip()

    @property
    def key(self) -> tuple[str, ...]:
        """The location with query numbers left out."""
        return tuple(str(x) for x in self.loc if not isinstance(x, int))


def _query_section(i: int, raw: Mapping[str, Any]) -> str:
    """"query 'name'" for the i-th ``[[query]]`` when its name is a short text, else its
    number."""
    queries = raw.get("query")
    q = queries[i] if isinstance(queries, list) and i < len(queries) else None
    name = q.get("name") if isinstance(q, dict) else None
    if isinstance(name, str) and 0 < len(name) <= _MAX_SHOWN_NAME:
        return f"query {name!r}"
    return f"[[query]] #{i + 1}"


def _where(loc: tuple[str | int, ...], raw: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The section a location is in ("[release]", "query 'x'", ...) and the field path."""
    if not loc:
        return "the spec", []
    head, rest = str(loc[0]), loc[1:]
    if head not in SpecModel.model_fields:
        return "the spec", [head]
    if head != "query" or head not in raw:
        return f"[{head}]", [str(x) for x in rest]
    if not rest or not isinstance(rest[0], int):
        return "[[query]]", [str(x) for x in rest]
    return _query_section(rest[0], raw), [str(x) for x in rest[1:]]


def _unknown_field(p: _Problem) -> str:
    model = SECTIONS.get(p.key[:-1])
    allowed = f" (allowed: {', '.join(sorted(model.model_fields))})" if model else ""
    near = close_names(str(p.loc[-1]), model.model_fields) if model else ""
    return f"{p.parent}: unknown field {str(p.loc[-1])!r}{near}{allowed}"


def _missing(p: _Problem) -> str:
    hint = _MISSING.get(p.key)
    if hint is None:
        return f"{p.parent} needs {p.loc[-1]}"
    return f"{p.section} {hint}" if p.key[0] == "query" and len(p.key) > 1 else hint


def _value_error(p: _Problem) -> str:
    text = str(p.ctx.get("error", p.msg))
    return f"{p.label} {text}" if p.path else f"{p.section}: {text}"


def _must_be(p: _Problem) -> str:
    return f"{p.label} must be {_MUST_BE[p.kind]}"


def _literal(p: _Problem) -> str:
    return f"{p.label} must be {p.ctx.get('expected')}"


def _compare(p: _Problem) -> str:
    bound_name, words = _COMPARE[p.kind]
    bound = p.ctx.get(bound_name)
    shown = f"{bound:,}" if isinstance(bound, int) else f"{bound:g}"
    return f"{p.label} must be {words} {shown}"


def _length(p: _Problem) -> str:
    limit, words, unit = _LENGTH[p.kind]
    n = p.ctx.get(limit)
    return f"{p.label} {words} {n} {unit}{'s' if n != 1 else ''}"


def _not_valid(p: _Problem) -> str:
    return f"{p.label} is not valid ({p.msg})"


_BY_KIND: dict[str, Callable[[_Problem], str]] = {
    "extra_forbidden": _unknown_field, "missing": _missing, "value_error": _value_error,
    "literal_error": _literal, **dict.fromkeys(_MUST_BE, _must_be),
    **dict.fromkeys(_COMPARE, _compare), **dict.fromkeys(_LENGTH, _length),
}


def _message(err: Mapping[str, Any], raw: Mapping[str, Any]) -> str:
    loc = tuple(err["loc"])
    section, path = _where(loc, raw)
    p = _Problem(loc, str(err["type"]), err.get("ctx") or {}, str(err["msg"]), section, path)
    if loc == ("query",) and p.kind not in ("extra_forbidden", "missing"):
        return _NO_QUERY
    return _BY_KIND.get(p.kind, _not_valid)(p)


def spec_error(exc: PydanticValidationError, raw: Mapping[str, Any]) -> SpecError:
    """One SpecError listing every problem (the first five), built from error locations and
    kinds only: ``include_input=False`` keeps values out of it."""
    errors = exc.errors(include_input=False, include_url=False)
    messages = list(dict.fromkeys(_message(e, raw) for e in errors))
    text = "; ".join(messages[:5])
    if len(messages) > 5:
        text += f" (and {len(messages) - 5} more)"
    return SpecError(text)
