"""The privacy unit a ledger protects: how it is recorded and why another one is refused.

A ledger records ``"rows"`` (row-level releases) or ``"column:<name>"`` (one unit per value of a
column). The refusal messages name the unit column, never a value of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import PrivacyUnitError, ValidationError

ROW_UNIT = "rows"
_COLUMN_PREFIX = "column:"


def unit_code(unit: str | None) -> str:
    """How a privacy unit is recorded in a ledger: ``"rows"``, or ``"column:<name>"``."""
    return ROW_UNIT if unit is None else _COLUMN_PREFIX + unit


def unit_name(code: str) -> str:
    """The unit column's name, or ``"rows"`` for row-level releases."""
    return code[len(_COLUMN_PREFIX):] if code.startswith(_COLUMN_PREFIX) else ROW_UNIT


def _describe_unit(code: str) -> str:
    if code.startswith(_COLUMN_PREFIX):
        return f"the values of column {unit_name(code)!r}"
    return "single rows"


def privacy_unit_message(bound: str, asked: str) -> str:
    """Why a release under ``asked`` is refused by a session protecting ``bound``."""
    if bound.startswith(_COLUMN_PREFIX):
        how = (f"pass privacy_unit={unit_name(bound)!r} and max_rows_per_unit to df.dp(...), "
               "or use another session and ledger for")
    else:
        how = ("declare dpf.Session(privacy_unit=...) on a new session and ledger for")
    return (f"this session (and its ledger) protects {_describe_unit(bound)}; a release "
            f"protecting {_describe_unit(asked)} would not be bounded by its budget: {how} "
            f"releases protecting {_describe_unit(asked)}")


def unit_refused(bound: str, asked: str) -> PrivacyUnitError:
    """The error of a charge (or binding) under ``asked`` on a ledger protecting ``bound``."""
    return PrivacyUnitError(privacy_unit_message(bound, asked) + "; nothing was charged")


def check_unit(unit: Any) -> str:
    """``unit`` if it is a unit code (a non-empty string); ``ValidationError`` otherwise."""
    if not isinstance(unit, str) or not unit:
        raise ValidationError(
            "privacy_unit must be a non-empty string ('rows' or the unit column's name)"
        )
    return unit


def meta_unit(meta: Mapping[str, Any]) -> str | None:
    """The unit code a charge's ``meta`` names, or None."""
    unit = meta.get("privacy_unit")
    return None if unit is None else check_unit(unit)
