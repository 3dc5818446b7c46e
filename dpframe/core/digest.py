"""The digest of a release's values: what the ledger and an export's provenance record, so
that values changed after the release (``r * 2`` keeps pandas' ``.attrs``) no longer claim the
release's ledger entry.

The canonical bytes are each measure's values, in release order (groups, then a histogram's
bins), as IEEE float64 little-endian, ``-0.0`` read as ``0.0`` and every NaN as one NaN, each
measure prefixed by its count of values. Public: a function of released values only.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

#: The prefix naming the rule, so that a future rule cannot be mistaken for this one.
RULE = "sha256:float64le/1:"


def values_digest(measures: Sequence[npt.ArrayLike]) -> str:
    """``RULE`` + the sha256 of the canonical bytes of ``measures`` (each an array of one
    measure's values, any shape: read in C order).

    Example:
        >>> values_digest([[1, 2]]) == values_digest([np.array([1.0, 2.0])])
        True
        >>> values_digest([[0.0]]) == values_digest([[-0.0]]), values_digest([[1, 2]]) == \\
        ...     values_digest([[2, 1]])
        (True, False)
    """
    h = hashlib.sha256()
    for values in measures:
        a = np.asarray(values, dtype=np.float64).reshape(-1) + 0.0  # -0.0 + 0.0 is 0.0
        a = np.where(np.isnan(a), np.nan, a).astype("<f8")
        h.update(struct.pack("<Q", a.size))
        h.update(a.tobytes())
    return RULE + h.hexdigest()


def derived_provenance(prov: Mapping[str, Any]) -> dict[str, Any]:
    """``prov`` for values a front computed from a release's (post-processing: ``bounds()``'s
    two numbers, ``describe()``'s table): ``derived``, naming the release's ledger entry and
    values digest in ``derived_from``; an export of them claims neither (dpframe.export)."""
    return {**prov, "derived": True, "values_digest": None,
            "derived_from": {"ledger_entry": prov.get("ledger_entry"),
                             "values_digest": prov.get("values_digest")}}
