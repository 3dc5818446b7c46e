"""The ``.dp`` accessor on Dask DataFrames: ``ddf.dp(session, ...)``.

Same API and semantics as the pandas accessor (:class:`~dpframe.fronts.frame.PrivateFrame`):
workers compute exact partial aggregates, the client adds noise and charges its session.
Results are computed pandas objects with ``.attrs["dp"]``. Importing this module imports dask
and registers the accessor with Dask's own ``register_dataframe_accessor``. ``import dpframe``
imports it when ``dask.dataframe`` is imported, before or after dpframe
(:mod:`dpframe.fronts.hooks`), and never imports dask itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

try:
    import dask.dataframe as dd
    from dask.dataframe.extensions import register_dataframe_accessor
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("dpframe.fronts.dask needs dask: pip install 'dpframe[dask]'") from exc

from ..backends.dask import DaskBackend
from .accessor import accessor_for
from .frame import PrivateFrame

if TYPE_CHECKING:
    from ..engine.session import Session

__all__ = ["DaskBackend", "DaskDPAccessor", "private_frame"]

#: ``ddf.dp(...)``: ``split_every`` is the merge tree's fan-in; ``shuffle_method`` is accepted
#: and has no effect (deprecated: dpframe exchanges a unit's rows itself).
DaskDPAccessor = accessor_for(
    DaskBackend, "DaskDPAccessor",
    "``ddf.dp(...)``: differentially private aggregates of this Dask DataFrame.",
    ":param split_every: the merge tree's fan-in.\n"
    ":param shuffle_method: deprecated, no effect.\n")


def private_frame(ddf: dd.DataFrame, session: Session | None = None,
                  **options: Any) -> PrivateFrame:
    """A :class:`PrivateFrame` over a Dask DataFrame: what ``ddf.dp(session, **options)``
    returns (its options: the pandas accessor's, ``split_every`` and ``shuffle_method``)."""
    return DaskDPAccessor(ddf)(session, **options)


if getattr(dd.DataFrame, "dp", None) is not DaskDPAccessor:
    register_dataframe_accessor("dp")(DaskDPAccessor)
