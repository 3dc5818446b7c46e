"""dpframe: differentially private statistics from pandas DataFrames."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

from . import local
from .core.accounting import posterior_bound
from .engine.release import last_release
from .engine.session import Session
from .errors import (
    BoundsError,
    BudgetExceededError,
    DPError,
    KeysError,
    LedgerError,
    PrivacyUnitError,
    ValidationError,
)
from .export import read_provenance, to_arrow, to_ipc, to_parquet
from .fronts import accessor as _accessor  # noqa: F401  (registers the .dp accessor on DataFrames)
from .fronts.results import DPFloat, DPInt
from .fronts.scan import BatchSource, Scan, scan

if TYPE_CHECKING:
    from . import testing

__version__ = "0.1.0"

__all__ = [
    "BatchSource",
    "BoundsError",
    "BudgetExceededError",
    "DPError",
    "DPFloat",
    "DPInt",
    "KeysError",
    "LedgerError",
    "PrivacyUnitError",
    "Scan",
    "Session",
    "ValidationError",
    "__version__",
    "last_release",
    "local",
    "posterior_bound",
    "read_provenance",
    "scan",
    "testing",
    "to_arrow",
    "to_ipc",
    "to_parquet",
]

from .fronts.hooks import register_dask_accessor as _register_dask_accessor
from .fronts.hooks import register_polars_namespace as _register_polars_namespace

# ddf.dp and pl_df.dp whatever the import order; import dpframe never imports Dask or Polars
_register_dask_accessor()
_register_polars_namespace()


def __getattr__(name: str) -> ModuleType:
    """``dpf.testing`` is imported on first use: ``import dpframe`` stays as fast as it was."""
    if name == "testing":
        return importlib.import_module(".testing", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
