"""The Dask backend: exact partial aggregates on the workers, one combine on the client.

Each partition runs the pandas backend (:class:`~dpframe.backends.pandas.PandasBackend`) on
its rows, so factorizing, clamping, fixed-point accumulation, binning and contribution
bounding keep exactly one implementation. Workers return small
:class:`~dpframe.core.exact.compute.ExactAggregates` (numpy arrays); a tree of merges brings them
to the
client, where :func:`dpframe.engine.release.run_release` adds noise once, through the same session.
No noise, budget or sensitivity logic ever runs on a worker, and the session never leaves the
client.

Contribution bounding needs each privacy unit's rows in one block. Each partition pre-selects
the rows that can survive bounding and sends them to buckets by a canonical, keyed hash of the
unit (no Dask shuffle); a bucket tells units apart by their exact ids and selects again, which
is bounding over all rows (docs/dask.md). With private keys, pairs are ordered by the key's
rank in the canonical order and priorities keyed on its word, alike in every block. With
private keys or sampling, a bucket then runs the pandas backend on the rows it keeps. Buckets
gather identifying columns without converting a value
(:func:`~dpframe.backends.dask.exchange.concat_exact`).

The package's modules, along its seams:

* :mod:`~dpframe.backends.dask.backend`: :class:`DaskBackend`, the per-partition computation
  of row-level releases and the merge tree;
* :mod:`~dpframe.backends.dask.exchange`: pre-selection, the exchange of pre-selected rows by
  unit hash and each bucket's final selection;
* :mod:`~dpframe.backends.dask.conform`: partitions typed apart from the public schema (numbers
  read by value, identities exactly, private keys labelled by their public kind);
* :mod:`~dpframe.backends.dask.words`: the canonical, keyed unit hash.

This package imports dask: only ``dpframe.fronts.dask`` imports it (``import dpframe`` never
imports dask).
"""

from .backend import DEFAULT_SPLIT_EVERY, DaskBackend, merge_partials
from .words import unit_hash

__all__ = ["DEFAULT_SPLIT_EVERY", "DaskBackend", "merge_partials", "unit_hash"]
