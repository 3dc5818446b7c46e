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
from .accessor import accessor_for
from .frame import PrivateFrame

if TYPE_CHECKING:
    from ..engine.session import Session

__all__ = ["SparkBackend", "SparkDPAccessor", "private_frame"]


def spark_backend(sdf: DataFrame, *, partitions: int | None = None) -> SparkBackend:
    """The backend of ``sdf``: ``partitions`` is how many blocks of whole units bounding
    uses (default: ``spark.sql.shuffle.partitions``)."""
    return SparkBackend(sdf, partitions)


SparkDPAccessor = accessor_for(
    spark_backend, "SparkDPAccessor",
    "``sdf.dp(...)``: differentially private aggregates of this Spark DataFrame.",
    ":param partitions: how many blocks of whole units bounding uses "
    "(default: ``spark.sql.shuffle.partitions``).\n")


def private_frame(sdf: DataFrame, session: Session | None = None,
                  **options: Any) -> PrivateFrame:
    """A :class:`PrivateFrame` over a Spark DataFrame: what ``sdf.dp(session, **options)``
    returns (its options: the pandas accessor's and ``partitions``)."""
    return SparkDPAccessor(sdf)(session, **options)


class _Accessor:
    """The descriptor ``DataFrame.dp``: a :class:`SparkDPAccessor` of the frame."""

    def __get__(self, sdf: DataFrame | None, owner: type) -> Any:
        return SparkDPAccessor if sdf is None else SparkDPAccessor(sdf)


if not isinstance(DataFrame.__dict__.get("dp"), _Accessor):
    DataFrame.dp = _Accessor()  # type: ignore[attr-defined]
