"""dpframe: differentially private statistics from pandas DataFrames."""

from __future__ import annotations

from .errors import (
    BoundsError,
    BudgetExceededError,
    DPError,
    KeysError,
    LedgerError,
    ValidationError,
)

__version__ = "0.1.0"

__all__ = [
    "BoundsError",
    "BudgetExceededError",
    "DPError",
    "KeysError",
    "LedgerError",
    "ValidationError",
    "__version__",
]
