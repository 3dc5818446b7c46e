"""Object columns read without a pass per value: each row's object by its address, looked up
among a sample's objects, and ``pd.factorize`` of text given in pieces (issue 43, item 9).

An object column of text parsed row by row (``json.loads``) holds a million distinct objects:
copying it to write a few values (one person's number set apart, a leaf mapped to canonical
form) touches every object twice (a reference taken, then dropped), about a sixth of the
time pandas takes to hash the text. Hashing the untouched stretches as views of the column
and the few written values apart, then merging the pieces' uniques, gives the codes and
uniques of hashing the joined array, with no copy.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from ..core.exact.parallel import map_ranges

#: Pieces past this many are joined instead (a ``pd.factorize`` call costs about 20 us).
MAX_PIECES = 32


def factorize_pieces(n: int, pieces: Sequence[tuple[slice | npt.NDArray[np.intp],
                                                     npt.NDArray[np.object_]]]
                     ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.object_]]:
    """Codes of ``n`` rows and the uniques of ``pd.factorize`` of the pieces' values joined in
    row order, each piece ``(rows, values)`` giving its rows (a slice or increasing positions,
    every piece's after the previous one's) and their values; rows in no piece get -1.

    Exactness: ``pd.factorize`` numbers values in order of first appearance and keeps the
    first row's object. A value's first appearance is in the first piece holding it, at its
    first row there; so factorizing each piece, then the pieces' uniques joined in order,
    numbers every value and keeps every object as factorizing the joined values does."""
    codes = np.full(n, -1, dtype=np.intp)
    local: list[tuple[slice | npt.NDArray[np.intp], npt.NDArray[np.intp]]] = []
    uniques: list[npt.NDArray[np.object_]] = []
    for rows, values in pieces:
        piece_codes, piece_uniques = pd.factorize(values, use_na_sentinel=True)
        local.append((rows, piece_codes))
        uniques.append(np.asarray(piece_uniques, dtype=object))
    if not local:
        return codes, np.zeros(0, dtype=object)
    joined = np.concatenate(uniques)
    merged, merged_uniques = pd.factorize(joined, use_na_sentinel=True)
    start = 0
    for k, ((rows, piece_codes), piece_uniques) in enumerate(zip(local, uniques, strict=True)):
        if k == 0:  # the first piece's values appear first: numbered alike
            codes[rows] = piece_codes
        else:  # its numbers among all the pieces' (a code -1 reads the -1 appended)
            renumber = np.append(merged[start:start + piece_uniques.size], -1)
            codes[rows] = renumber[piece_codes]
        start += piece_uniques.size
    return codes, np.asarray(merged_uniques, dtype=object)


def text_pieces(values: npt.NDArray[np.object_], leaves: list[tuple[int, npt.NDArray[np.object_]]],
            others: npt.NDArray[np.intp]) -> tuple[npt.NDArray[np.object_], list[Any]]:
    """The other values (``others``' rows, mapped where a leaf was) and the text in pieces, in
    row order: the stretches of ``values`` between other rows and leaves (views), and each
    leaf's mapped text with its rows."""
    other_values = values[others]
    spans: list[tuple[int, int, npt.NDArray[np.object_] | None]] = []
    outside = np.ones(others.size, dtype=bool)
    for a, mapped in leaves:
        lo, hi = np.searchsorted(others, [a, a + mapped.size])
        other_values[lo:hi] = mapped[others[lo:hi] - a]
        outside[lo:hi] = False
        spans.append((a, a + mapped.size, mapped))
    spans += [(int(p), int(p) + 1, None) for p in others[outside]]
    pieces: list[Any] = []
    at = 0
    for a, b, leaf in sorted(spans, key=lambda span: span[0]):
        if a > at:
            pieces.append((slice(at, a), values[at:a]))
        if leaf is not None:
            text = np.flatnonzero([type(c) is str for c in leaf])
            if text.size:
                pieces.append((a + text, leaf[text]))
        at = b
    if at < values.size:
        pieces.append((slice(at, values.size), values[at:]))
    return other_values, pieces


def patched(values: npt.NDArray[np.object_], leaves: list[tuple[int, npt.NDArray[np.object_]]]
             ) -> npt.NDArray[np.object_]:
    """``values`` with the mapped leaves written in (a copy when there is one)."""
    if not leaves:
        return values
    out = values.copy()
    for a, mapped in leaves:
        out[a:a + mapped.size] = mapped
    return out


def sample_positions(addresses: npt.NDArray[np.uintp], sample: npt.NDArray[np.uintp]
                      ) -> tuple[npt.NDArray[np.signedinteger[Any]], npt.NDArray[np.intp]]:
    """Each address's position in ``sample`` (distinct; -1 where absent) and the rows where
    it is absent: Arrow's ``index_in``, ranges of rows on several threads."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out: npt.NDArray[np.signedinteger[Any]] = np.empty(
        addresses.size, dtype=np.int32 if addresses.size < 1 << 31 else np.int64)
    if sample.size == 0:
        out[:] = -1
        return out, np.arange(addresses.size, dtype=np.intp)
    value_set = pa.array(sample)

    def look_up(a: int, b: int) -> npt.NDArray[np.intp]:
        found = pc.index_in(pa.array(addresses[a:b]), value_set=value_set)
        if found.offset or found.type != pa.int32():  # not Arrow's usual answer: the long way
            filled = found.fill_null(-1).to_numpy(zero_copy_only=False)
            out[a:b] = filled
            return np.flatnonzero(filled < 0) + a
        out[a:b] = np.frombuffer(found.buffers()[1], dtype=np.int32, count=b - a)
        if not found.null_count:
            return np.zeros(0, dtype=np.intp)
        absent = _nulls(found.buffers()[0], b - a) + a
        out[absent] = -1
        return absent

    return out, np.concatenate(map_ranges(look_up, addresses.size))


def _nulls(validity: Any, n: int) -> npt.NDArray[np.intp]:
    """Positions of the nulls of an Arrow array of ``n`` values (no offset) from its validity
    bitmap: only the bytes not all valid are unpacked (one null costs one byte, not a pass
    making a boolean per value)."""
    bits = np.frombuffer(validity, dtype=np.uint8, count=(n + 7) // 8)
    partial = np.flatnonzero(bits != 0xFF)
    valid = np.unpackbits(bits[partial], bitorder="little").reshape(-1, 8)
    rows = (partial[:, None] * 8 + np.arange(8))[valid == 0]
    return rows[rows < n].astype(np.intp, copy=False)


def addresses(values: npt.NDArray[np.object_]) -> npt.NDArray[np.uintp]:
    """The address of each value of a contiguous object array (what the array stores): a
    view of its buffer, valid while ``values`` is referenced and unchanged."""
    stored = (ctypes.c_size_t * values.size).from_address(values.ctypes.data)
    return np.ctypeslib.as_array(stored)
