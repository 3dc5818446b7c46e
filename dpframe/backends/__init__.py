"""Backends: exact aggregates from a data engine (pandas, Arrow batches, Dask), never noise.

Each receives a data-only :class:`~dpframe.core.exact.compute.ComputeRequest` and returns
:class:`~dpframe.core.exact.compute.ExactAggregates`; the contracts in ``pyproject.toml`` forbid
backends to import the noise, planning and accounting modules of the core.
"""
