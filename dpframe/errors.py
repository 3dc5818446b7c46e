"""Typed errors. Every error dpframe raises on bad input derives from :class:`DPError`.

Messages name columns, arguments and declared (public) values only; they never contain
values read from the private data.
"""

from __future__ import annotations


class DPError(Exception):
    """Base class of every dpframe error."""


class ValidationError(DPError, ValueError):
    """Bad arguments or data (wrong type, unknown column, invalid epsilon...)."""


class UnknownColumnError(ValidationError):
    """A query names a column the data does not have (``column``: the name asked for)."""

    def __init__(self, message: str, column: object = None) -> None:
        super().__init__(message)
        self.column = column


class BoundsError(ValidationError):
    """A query needs declared bounds that are missing or malformed."""


class KeysError(ValidationError):
    """Grouping without public keys and without ``keys="private"``."""


class PrivacyUnitError(ValidationError):
    """A release under another privacy unit than the one its session (and ledger) protects."""


class BudgetExceededError(DPError):
    """The query does not fit the remaining budget: nothing computed, nothing charged."""


class LedgerError(DPError):
    """The durable ledger is missing, corrupt, or disagrees with the session."""


class DPWarning(UserWarning):
    """Base class of dpframe's warnings (they never quote private data values)."""


class NearZeroWarning(DPWarning):
    """Every value of a grouped release over public keys is within its noise of zero: are the
    declared keys spelled as in the data? Read from the noisy values alone (no privacy cost)."""


__all__ = [
    "BoundsError",
    "BudgetExceededError",
    "DPError",
    "DPWarning",
    "KeysError",
    "LedgerError",
    "NearZeroWarning",
    "PrivacyUnitError",
    "UnknownColumnError",
    "ValidationError",
]
