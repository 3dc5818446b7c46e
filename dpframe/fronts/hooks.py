"""Register ``ddf.dp``, the Polars ``.dp`` namespace, ``spark_df.dp`` and DuckDB's ``rel.dp``
whatever the import order, without ``import dpframe`` importing any of those libraries.

``import dpframe`` registers an integration at once when its library (``dask.dataframe``,
``polars``) is already imported; otherwise it installs :class:`AfterImport`, a finder on
``sys.meta_path`` that waits for that module to be imported (by anyone, later), lets the import
finish, then imports the integration (:mod:`dpframe.fronts.dask`,
:mod:`dpframe.fronts.polars`, which
register themselves) and removes itself. The import machinery is used as documented
(``importlib.abc.MetaPathFinder``, ``Loader.exec_module``); nothing of Dask or Polars is
patched.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

DASK_MODULE = "dask.dataframe"
POLARS_MODULE = "polars"
SPARK_MODULE = "pyspark.sql"
DUCKDB_MODULE = "duckdb"


class _ThenLoader(importlib.abc.Loader):
    """Delegates to the real loader, then runs ``then`` once the module is executed."""

    def __init__(self, loader: Any, then: Callable[[], None]) -> None:
        self._loader = loader
        self._then = then

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._then()

    def __getattr__(self, name: str) -> Any:  # get_resource_reader, is_package, ...
        return getattr(self._loader, name)


class AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then()`` right after the module ``name`` is first imported, then uninstalls."""

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name = name
        self._then = then

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _ThenLoader(spec.loader, self._run)
        return spec

    def _run(self) -> None:
        self.uninstall()
        self._then()

    def install(self) -> None:
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def uninstall(self) -> None:
        while self in sys.meta_path:
            sys.meta_path.remove(self)


def _importer(module: str, what: str) -> Callable[[], None]:
    def register() -> None:
        try:
            importlib.import_module(module)
        except Exception as exc:  # never break the user's import of the library
            warnings.warn(f"dpframe: {what} is unavailable ({exc})", ImportWarning,
                          stacklevel=2)

    return register


def _when_imported(name: str, then: Callable[[], None]) -> None:
    """``then()`` now if the module ``name`` is loaded, else right after it is."""
    if name in sys.modules:
        then()
        return
    if not any(isinstance(f, AfterImport) and f.name == name for f in sys.meta_path):
        AfterImport(name, then).install()


def register_dask_accessor() -> None:
    """Register ``ddf.dp`` now if Dask's dataframe module is loaded, else when it is."""
    _when_imported(DASK_MODULE, _importer("dpframe.fronts.dask", "the .dp accessor on Dask frames"))


def register_polars_namespace() -> None:
    """Register ``pl_df.dp`` / ``lazy.dp`` now if polars is loaded, else when it is."""
    _when_imported(POLARS_MODULE,
                   _importer("dpframe.fronts.polars", "the .dp namespace on Polars frames"))


def register_spark_accessor() -> None:
    """Register ``spark_df.dp`` now if ``pyspark.sql`` is loaded, else when it is."""
    _when_imported(SPARK_MODULE,
                   _importer("dpframe.fronts.spark", "the .dp accessor on Spark frames"))


def register_duckdb_accessor() -> None:
    """Register ``rel.dp`` on DuckDB relations now if duckdb is loaded, else when it is."""
    _when_imported(DUCKDB_MODULE,
                   _importer("dpframe.fronts.duckdb", "the .dp accessor on DuckDB relations"))
