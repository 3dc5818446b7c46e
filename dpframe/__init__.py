"""dpframe: differentially private statistics from pandas DataFrames."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

from . import local
from ._version import __version__
from .core.accounting import posterior_bound
from .engine.session import Session
from .errors import (
    AccountantMismatchError,
    BoundsError,
    BudgetExceededError,
    ContinualError,
    DPError,
    DPWarning,
    HorizonError,
    InputError,
    KeySelectionWarning,
    KeysError,
    LedgerError,
    LedgerMigrationError,
    NearZeroWarning,
    NoKeysReleasedWarning,
    OptionError,
    OutcomeNotRecordedError,
    OutputError,
    PrivacyUnitError,
    RunIdError,
    UnknownColumnError,
    ValidationError,
)
from .export import read_provenance, to_arrow, to_ipc, to_parquet
from .fronts import accessor as _accessor  # noqa: F401  (registers the .dp accessor on DataFrames)
from .fronts.continual import Continual
from .fronts.docs import ReleaseOptions
from .fronts.frame import PrivateFrame
from .fronts.groupby import PrivateGroupBy
from .fronts.hooks import register_dask_accessor as _register_dask_accessor
from .fronts.hooks import register_duckdb_accessor as _register_duckdb_accessor
from .fronts.hooks import register_polars_namespace as _register_polars_namespace
from .fronts.hooks import register_spark_accessor as _register_spark_accessor
from .fronts.results import DPFloat, DPInt

if TYPE_CHECKING:  # loaded on first use (see __getattr__): type checkers see them here
    from . import testing
    from .fronts.scan import BatchSource, Scan, scan

__all__ = [
    "AccountantMismatchError",
    "BatchSource",
    "BoundsError",
    "BudgetExceededError",
    "Continual",
    "ContinualError",
    "DPError",
    "DPFloat",
    "DPInt",
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
    "PrivateFrame",
    "PrivateGroupBy",
    "ReleaseOptions",
    "RunIdError",
    "Scan",
    "Session",
    "UnknownColumnError",
    "ValidationError",
    "__version__",
    "local",
    "posterior_bound",
    "read_provenance",
    "scan",
    "testing",
    "to_arrow",
    "to_ipc",
    "to_parquet",
]


def __getattr__(name: str) -> object:
    """Loaded on first use (PEP 562), so ``import dpframe`` stays fast: ``dpf.scan``,
    ``dpf.Scan`` and ``dpf.BatchSource`` (they need ``pyarrow.dataset``) and ``dpf.testing``
    (the audit statistics)."""
    if name == "testing":
        import importlib

        return importlib.import_module(".testing", __name__)
    if name in ("scan", "Scan", "BatchSource"):
        from .fronts import scan as _scan

        value = getattr(_scan, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dpframe' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names and the subpackages (``dir(dpframe)``, tab completion): not the
    module's own plumbing (``TYPE_CHECKING``, ``annotations``, private names)."""
    modules = {n for n, v in globals().items() if isinstance(v, ModuleType)}
    return sorted({*__all__, *(n for n in modules if not n.startswith("_"))})


# ddf.dp, pl_df.dp, spark_df.dp and rel.dp whatever the import order; import dpframe never
# imports Dask, Polars, pyspark or duckdb
_register_dask_accessor()
_register_polars_namespace()
_register_spark_accessor()
_register_duckdb_accessor()

