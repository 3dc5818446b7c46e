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
from ..backends.duckdb import DuckDBBackend, relation_of
from .accessor import accessor_for
from .frame import PrivateFrame
from .scan import ENGINE_DOC

if TYPE_CHECKING:
    from ..engine.session import Session

__all__ = ["DuckDBBackend", "DuckDBDPAccessor", "duckdb_backend", "private_frame"]


def duckdb_backend(relation: DuckDBPyRelation, *, batch_size: int = DEFAULT_BATCH_SIZE,
                   progress: bool | None = None, partition_rows: int = DEFAULT_PARTITION_ROWS,
                   partitions: int | None = None,
                   spill_dir: str | os.PathLike[str] | None = None) -> DuckDBBackend:
    """The backend of ``relation``; the engine's knobs tune it as for ``dpf.scan``
    (docs/scan.md)."""
    return DuckDBBackend(relation, batch_size=batch_size, progress=progress,
                         partition_rows=partition_rows, partitions=partitions,
                         spill_dir=spill_dir)


DuckDBDPAccessor = accessor_for(
    duckdb_backend, "DuckDBDPAccessor",
    "``rel.dp(...)``: differentially private aggregates of this DuckDB relation.", ENGINE_DOC)


def private_frame(relation: DuckDBPyRelation | str, session: Session | None = None, *,
                  con: Any = None, **options: Any) -> PrivateFrame:
    """A :class:`PrivateFrame` over a DuckDB relation, or over the table or view of that name
    in ``con`` (default: DuckDB's default connection): what ``rel.dp(session, **options)``
    returns (its options: the pandas accessor's and the engine's ``batch_size``,
    ``progress``, ``partition_rows``, ``partitions``, ``spill_dir``)."""
    return DuckDBDPAccessor(relation_of(relation, con))(session, **options)


class _Accessor:
    """The descriptor ``DuckDBPyRelation.dp``: a :class:`DuckDBDPAccessor` of the relation."""

    def __get__(self, rel: DuckDBPyRelation | None, owner: type) -> Any:
        return DuckDBDPAccessor if rel is None else DuckDBDPAccessor(rel)


if not isinstance(DuckDBPyRelation.__dict__.get("dp"), _Accessor):
    DuckDBPyRelation.dp = _Accessor()  # type: ignore[attr-defined]
