"""The ``.dp`` accessor on pandas DataFrames: a thin front over :class:`PrivateFrame`.

``df.dp(session, bounds=..., keys=...)`` returns a :class:`~dpframe.fronts.frame.PrivateFrame`;
``df.dp.sum(...)`` (no call) uses the active session and no declared bounds beyond a schema.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from ..backends.pandas import PandasBackend
from .arguments import document_dp
from .frame import PrivateFrame

if TYPE_CHECKING:
    from ..engine.session import Session


@pd.api.extensions.register_dataframe_accessor("dp")
class DPAccessor:
    """``df.dp(...)``: differentially private aggregates of this frame."""

    def __init__(self, df: pd.DataFrame) -> None:
        self._df = df

    def __call__(self, session: Session | None = None, **options: Any) -> PrivateFrame:
        return PrivateFrame(PandasBackend(self._df), session, **options)

    __call__ = document_dp(__call__, PrivateFrame)

    @property
    def local(self) -> Any:
        """Local-model randomizers for a column (no session charge; see docs/local.md)."""
        from ..local import LocalAccessor

        return LocalAccessor(self._df)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self(), name)
