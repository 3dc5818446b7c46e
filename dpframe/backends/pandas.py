"""The pandas backend: an in-memory DataFrame is one block of whole units, whose exact
aggregates the engine-neutral pandas-frame view computes
(:mod:`dpframe.backends.blocks.frames`, which Dask's and Spark's blocks run too)."""

from __future__ import annotations

from .blocks.frames import PandasBackend

__all__ = ["PandasBackend"]
