"""The ``.dp`` accessor on DuckDB relations: ``rel.dp(session, ...)``.

A thin front, as for Polars: it returns the same :class:`~dpframe.fronts.frame.PrivateFrame`
as ``df.dp(...)``, over :class:`~dpframe.backends.duckdb.DuckDBBackend` (DuckDB streams Arrow
record batches to the Arrow batch backend of ``dpf.scan``). Validation, sensitivities, the
charge, noise and the ledger are the one release path, so a query has the same semantics,
noise scale and charge as through pandas, a scan or Polars. A table or view is queried as
``con.table("events").dp(...)``.

Importing this module imports duckdb and adds ``dp`` to ``duckdb.DuckDBPyRelation`` (DuckDB has
no accessor registry: a class attribute, as for Spark). ``import dpframe`` imports it when
duckdb is imported, before or after dpframe (:mod:`dpframe.fronts.hooks`), and never imports
duckdb itself.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

try:
    from duckdb import DuckDBPyRelation
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("dpframe.fronts.duckdb needs duckdb: pip install 'dpframe[duckdb]'") \
        from exc

from ..backends.arrow import DEFAULT_BATCH_SIZE, DEFAULT_PARTITION_ROWS
from ..backends.duckdb import DuckDBBackend
from .arguments import document_dp
from .frame import PrivateFrame
from .scan import ENGINE_DOC

if TYPE_CHECKING:
    from ..engine.session import Session

__all__ = ["DuckDBBackend", "DuckDBDPAccessor", "private_frame"]


def private_frame(relation: DuckDBPyRelation | str, session: Session | None = None, *,
                  con: Any = None, batch_size: int = DEFAULT_BATCH_SIZE,
                  progress: bool | None = None, partition_rows: int = DEFAULT_PARTITION_ROWS,
                  partitions: int | None = None,
                  spill_dir: str | os.PathLike[str] | None = None,
                  **options: Any) -> PrivateFrame:
    """A :class:`PrivateFrame` over a DuckDB relation, or a table or view named in ``con``
    (what ``rel.dp(...)`` returns).

    ``options`` are the pandas accessor's (bounds, keys, schema, privacy_unit,
    max_rows_per_unit, max_groups_per_unit, max_rows_per_group); ``batch_size``,
    ``progress``, ``partition_rows``, ``partitions`` and ``spill_dir`` tune the engine as for
    ``dpf.scan`` (docs/scan.md).
    """
    backend = DuckDBBackend(relation, con=con, batch_size=batch_size, progress=progress,
                            partition_rows=partition_rows, partitions=partitions,
                            spill_dir=spill_dir)
    return PrivateFrame(backend, session, **options)


class DuckDBDPAccessor:
    """``rel.dp(...)``: differentially private aggregates of this DuckDB relation."""

    def __init__(self, relation: DuckDBPyRelation) -> None:
        self._relation = relation

    def __call__(self, session: Session | None = None, **options: Any) -> PrivateFrame:
        return private_frame(self._relation, session, **options)

    __call__ = document_dp(__call__, PrivateFrame, private_frame, ENGINE_DOC)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self(), name)


class _Accessor:
    """The descriptor ``DuckDBPyRelation.dp``: a :class:`DuckDBDPAccessor` of the relation."""

    def __get__(self, rel: DuckDBPyRelation | None, owner: type) -> Any:
        return DuckDBDPAccessor if rel is None else DuckDBDPAccessor(rel)


if not isinstance(DuckDBPyRelation.__dict__.get("dp"), _Accessor):
    DuckDBPyRelation.dp = _Accessor()  # type: ignore[attr-defined]
