"""Typed errors. Every error dpframe raises on bad input derives from :class:`DPError`.

Messages name columns, arguments and declared (public) values only; they never contain
values read from the private data.
"""

from __future__ import annotations


class DPError(Exception):
    """Base class of every dpframe error."""


class ValidationError(DPError, ValueError):
    """Bad arguments or data (wrong type, unknown column, invalid epsilon...)."""


class BoundsError(ValidationError):
    """A query needs declared bounds that are missing or malformed."""


class KeysError(ValidationError):
    """Grouping without public keys and without ``keys="private"``."""


class PrivacyUnitError(ValidationError):
    """A release under another privacy unit than the one its session (and ledger) protects."""


class InputError(ValidationError):
    """The input could not be read as one consistent snapshot (an I/O error, a corrupt file, a
    file changed or replaced during the release): an operational fault, raised before any
    charge, so nothing is spent. The message names the file, never a value from it."""


class OutputError(DPError, OSError):
    """A release file could not be written (a full disk, a file-size limit, an I/O error); the
    temporary file is removed and the target left as it was. Also an ``OSError``."""


class BudgetExceededError(DPError):
    """The query does not fit the remaining budget: nothing computed, nothing charged."""


class LedgerError(DPError):
    """The durable ledger is missing, corrupt, or disagrees with the session."""


__all__ = [
    "BoundsError",
    "BudgetExceededError",
    "DPError",
    "InputError",
    "KeysError",
    "LedgerError",
    "OutputError",
    "PrivacyUnitError",
    "ValidationError",
]
