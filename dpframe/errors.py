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


class OptionError(ValidationError, TypeError):
    """An option a call does not take (a misspelled keyword, a missing or extra argument): the
    message lists the call's options, with the closest ones. Also a ``TypeError``, as Python's
    own error for an unexpected keyword is."""


class BoundsError(ValidationError):
    """A query needs declared bounds that are missing or malformed."""


class KeysError(ValidationError):
    """Grouping without public keys and without ``keys="private"``."""


class PrivacyUnitError(ValidationError):
    """A release under another privacy unit than the one its session (and ledger) protects."""


class ContinualError(ValidationError):
    """A continual release (``dpf.Continual``) refused a night or a resume: a night skipped
    without ``fill_gaps=True``, a resume whose parameters or private state file differ from
    the ledger's record. Raised before anything is charged or drawn."""


class HorizonError(ContinualError):
    """A night past a continual release's horizon: its one charge covers ``horizon`` nights
    only. Raised before anything is charged or drawn."""


class InputError(ValidationError):
    """The input could not be read as one consistent snapshot (an I/O error, a corrupt file, a
    file changed or replaced during the release): an operational fault, raised before any
    charge, so nothing is spent. The message names the file, never a value from it."""


class WorkerError(InputError):
    """A cluster's workers cannot compute the exact half (dpframe is not installed there, or
    another version of it is): found by a probe before anything is read or charged, so nothing
    is spent. The message names the versions, never a value of the data."""


class OutputError(DPError, OSError):
    """A release file could not be written (a full disk, a file-size limit, an I/O error); the
    temporary file is removed and the target left as it was. Also an ``OSError``."""


class BudgetExceededError(DPError):
    """The query does not fit the remaining budget: nothing computed, nothing charged."""


class AccountantMismatchError(BudgetExceededError):
    """A charge refused by the session's accountant that the accountant which charged the
    ledger's releases would accept (for example a ``accountant="basic"`` session on a ledger
    charged by PLD: basic composition of the same releases is a valid but looser bound). The
    message names the accountant to open the ledger with. Nothing computed, nothing charged."""


class LedgerError(DPError):
    """The durable ledger is missing, corrupt, or disagrees with the session."""


class OutcomeNotRecordedError(LedgerError):
    """A release was charged (its budget is spent, committed in the ledger and counted from now
    on) but its outcome could not be recorded (a full disk, an I/O error): the entry stays
    ``charged``. Raised only after a charge; never means "nothing spent"."""


class LedgerMigrationError(LedgerError):
    """A ledger file of an older schema (1, 2 or 3: no privacy events) opened by a session
    whose accountant composes events (PLD or RDP, the default when delta > 0). Raised before
    anything is charged or written; ``dpframe ledger migrate PATH`` migrates it explicitly (a
    session with ``accountant="basic"`` may open it as it is)."""


class RunIdError(DPError):
    """A run id (``dpframe run --run-id``) that cannot be replayed: the ledger recorded it for
    another spec or another input. Raised before anything is charged or written; the message
    never quotes a digest or a data value."""


class DPWarning(UserWarning):
    """Base class of dpframe's warnings (they never quote private data values)."""


class NearZeroWarning(DPWarning):
    """Every value of a grouped release over public keys is within its noise of zero: are the
    declared keys spelled as in the data? Read from the noisy values alone (no privacy cost)."""


class KeySelectionWarning(DPWarning):
    """Private keys will need many distinct units to be released: ``max_groups_per_unit`` was
    not declared, so each unit counts in up to ``max_rows_per_unit`` keys' selection. Read
    from public parameters only, before the charge."""


class NoKeysReleasedWarning(KeySelectionWarning):
    """A ``keys="private"`` release released no key. The number of released keys is public
    (it is the release), so saying so costs no privacy; the message states the threshold
    (public) and what would lower it."""


__all__ = [
    "BoundsError",
    "BudgetExceededError",
    "ContinualError",
    "DPError",
    "DPWarning",
    "HorizonError",
    "InputError",
    "KeySelectionWarning",
    "KeysError",
    "LedgerError",
    "LedgerMigrationError",
    "NearZeroWarning",
    "NoKeysReleasedWarning",
    "OptionError",
    "OutcomeNotRecordedError",
    "OutputError",
    "PrivacyUnitError",
    "RunIdError",
    "UnknownColumnError",
    "ValidationError",
]
