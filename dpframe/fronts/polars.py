"""The ``.dp`` namespace on Polars frames: ``pl_df.dp(session, ...)`` and ``lazy.dp(session, ...)``.

A thin front: it returns the same :class:`~dpframe.fronts.frame.PrivateFrame` as ``df.dp(...)``,
over :class:`~dpframe.backends.polars.PolarsBackend` (the Arrow batch backend of ``dpf.scan``
fed Polars frames batch by batch, or a LazyFrame streamed). Validation, sensitivities, the
charge, noise and the ledger are the one release path, so a query has the same semantics,
noise scale and charge as through pandas or a scan.

Importing this module imports polars and registers the namespace; ``import dpframe`` imports it
when polars is imported, before or after dpframe (:mod:`dpframe.fronts.hooks`), and never
imports polars itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

try:
    import polars as pl
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("dpframe.fronts.polars needs polars: pip install 'dpframe[polars]'") from exc

from ..backends.polars import PolarsBackend
from .accessor import accessor_for
from .frame import PrivateFrame
from .scan import ENGINE_DOC

if TYPE_CHECKING:
    from ..engine.session import Session

__all__ = ["PolarsBackend", "PolarsDPNamespace", "private_frame"]


#: ``frame.dp(...)``: the engine's knobs tune it as for ``dpf.scan`` (docs/scan.md).
PolarsDPNamespace = accessor_for(
    PolarsBackend, "PolarsDPNamespace",
    "``frame.dp(...)``: differentially private aggregates of this Polars frame.", ENGINE_DOC)


def private_frame(frame: pl.DataFrame | pl.LazyFrame, session: Session | None = None,
                  **options: Any) -> PrivateFrame:
    """A :class:`PrivateFrame` over a Polars DataFrame or LazyFrame: what
    ``frame.dp(session, **options)`` returns (its options: the pandas accessor's and the
    engine's ``batch_size``, ``progress``, ``partition_rows``, ``partitions``,
    ``spill_dir``)."""
    return PolarsDPNamespace(frame)(session, **options)


if getattr(pl.DataFrame, "dp", None) is not PolarsDPNamespace:
    pl.api.register_dataframe_namespace("dp")(PolarsDPNamespace)
if getattr(pl.LazyFrame, "dp", None) is not PolarsDPNamespace:
    pl.api.register_lazyframe_namespace("dp")(PolarsDPNamespace)
