"""The ``.dp`` accessor on Spark DataFrames: ``spark_df.dp(session, ...)``.

Same API and semantics as the pandas accessor (:class:`~dpframe.fronts.frame.PrivateFrame`):
Spark computes exact per-group aggregates (:mod:`dpframe.backends.spark`), the driver adds
noise and charges its session and ledger. Results are pandas objects with ``.attrs["dp"]``.
Importing this module imports pyspark and adds ``dp`` to ``pyspark.sql.DataFrame`` (Spark has
no accessor registry: a class attribute, which Spark's column lookup by attribute never
shadows). ``import dpframe`` imports it when ``pyspark.sql`` is imported, before or after
dpframe (:mod:`dpframe.fronts.hooks`), and never imports pyspark itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

try:
    from pyspark.sql import DataFrame
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("dpframe.fronts.spark needs pyspark: pip install 'dpframe[spark]'") \
        from exc

from ..backends.spark import SparkBackend
from .arguments import document_dp
from .frame import PrivateFrame

if TYPE_CHECKING:
    from ..engine.session import Session

__all__ = ["SparkBackend", "SparkDPAccessor", "private_frame"]


def private_frame(sdf: DataFrame, session: Session | None = None, *,
                  partitions: int | None = None, **options: Any) -> PrivateFrame:
    """A :class:`PrivateFrame` over a Spark DataFrame (what ``sdf.dp(...)`` returns).

    ``options`` are the pandas accessor's (bounds, keys, schema, privacy_unit,
    max_rows_per_unit, max_groups_per_unit, max_rows_per_group); ``partitions`` is how many
    blocks of whole units bounding uses (default: ``spark.sql.shuffle.partitions``)."""
    return PrivateFrame(SparkBackend(sdf, partitions), session, **options)


class SparkDPAccessor:
    """``sdf.dp(...)``: differentially private aggregates of this Spark DataFrame."""

    def __init__(self, sdf: DataFrame) -> None:
        self._sdf = sdf

    def __call__(self, session: Session | None = None, **options: Any) -> PrivateFrame:
        return private_frame(self._sdf, session, **options)

    __call__ = document_dp(__call__, PrivateFrame, private_frame,
                           ":param partitions: how many blocks of whole units bounding uses "
                           "(default: ``spark.sql.shuffle.partitions``).\n")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self(), name)


class _Accessor:
    """The descriptor ``DataFrame.dp``: a :class:`SparkDPAccessor` of the frame."""

    def __get__(self, sdf: DataFrame | None, owner: type) -> Any:
        return SparkDPAccessor if sdf is None else SparkDPAccessor(sdf)


if not isinstance(DataFrame.__dict__.get("dp"), _Accessor):
    DataFrame.dp = _Accessor()  # type: ignore[attr-defined]
