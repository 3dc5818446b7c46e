"""The ``.dp`` accessors: :func:`accessor_for` makes one for each kind of frame (pandas here;
Dask, Polars and Spark in their modules) from the function that wraps such a frame in a
backend, and the pandas one is registered on DataFrames.

``df.dp(session, bounds=..., keys=...)`` returns a :class:`~dpframe.fronts.frame.PrivateFrame`;
``df.dp.sum(...)`` (no call) uses the active session and no declared bounds beyond a schema.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..backends.base import Backend
from ..backends.pandas import PandasBackend
from .arguments import document_dp
from .frame import PrivateFrame

if TYPE_CHECKING:
    from ..engine.session import Session


class FrameAccessor:
    """``data.dp(...)``: differentially private aggregates of ``data`` (a subclass per kind of
    frame, made by :func:`accessor_for`). ``data.dp.<method>`` without a call uses the active
    session."""

    def __init__(self, data: Any) -> None:
        self._data = data

    def __call__(self, session: Session | None = None, **options: Any) -> PrivateFrame:
        raise NotImplementedError  # pragma: no cover - accessor_for's subclasses define it

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self(), name)


def accessor_for(make_backend: Callable[..., Backend], name: str, doc: str,
                 engine_doc: str = "") -> type[FrameAccessor]:
    """The accessor class ``name`` whose call ``data.dp(session, **options)`` is
    ``PrivateFrame(make_backend(data, **knobs), session, **declarations)``: the keyword-only
    parameters of ``make_backend`` are the engine's knobs (documented by ``engine_doc``), the
    other options the frame's declarations. Its signature, docstring and OptionError name them
    all (:func:`~dpframe.fronts.arguments.document_dp`)."""
    knobs = [n for n, p in inspect.signature(make_backend).parameters.items()
             if p.kind is inspect.Parameter.KEYWORD_ONLY]

    def __call__(self: FrameAccessor, session: Session | None = None,
                 **options: Any) -> PrivateFrame:
        engine = {k: options.pop(k) for k in knobs if k in options}
        return PrivateFrame(make_backend(self._data, **engine), session, **options)

    __call__.__qualname__ = f"{name}.__call__"
    call = document_dp(__call__, PrivateFrame, make_backend if knobs else None, engine_doc)
    return type(name, (FrameAccessor,), {"__doc__": doc, "__call__": call,
                                         "__module__": FrameAccessor.__module__})


_PandasAccessor = accessor_for(PandasBackend, "DPAccessor",
                               "``df.dp(...)``: differentially private aggregates of this frame.")


@pd.api.extensions.register_dataframe_accessor("dp")
class DPAccessor(_PandasAccessor):  # type: ignore[valid-type,misc]
    """``df.dp(...)``: differentially private aggregates of this frame."""

    @property
    def local(self) -> Any:
        """Local-model randomizers for a column (no session charge; see docs/local.md)."""
        from ..local import LocalAccessor

        return LocalAccessor(self._data)
