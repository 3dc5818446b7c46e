"""dpframe: differentially private statistics from pandas DataFrames."""

from __future__ import annotations

from . import accessor as _accessor  # noqa: F401  (registers the .dp accessor on DataFrames)
from . import local
from .core.accounting import posterior_bound
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
from .release import last_release
from .results import DPFloat, DPInt
from .scan import Scan, scan
from .session import Session

__version__ = "0.1.0"

__all__ = [
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
    "to_arrow",
    "to_ipc",
    "to_parquet",
]

from ._dask_hook import register_dask_accessor as _register_dask_accessor
from ._dask_hook import register_polars_namespace as _register_polars_namespace

# ddf.dp and pl_df.dp whatever the import order; import dpframe never imports Dask or Polars
_register_dask_accessor()
_register_polars_namespace()
