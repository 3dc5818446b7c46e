"""Exact draws of the randomized-response offset, vectorized.

The randomizer draws a data-independent offset ``D`` in ``{0..k-1}`` with ``P(D = 0) = p`` and
``P(D = j) = p'`` (:class:`~dpframe.local._design.Design`) and reports category
``(x + D) mod k`` (for k = 2: ``x XOR D``). ``D`` is the bin of a uniform real ``U`` in [0, 1)
among the cut points ``c_j = (1 + (j-1) q) / (1 + (k-1) q)`` (j = 1..k-1), so ``c_1 = p`` and
consecutive cut points are ``p'`` apart. ``U`` is read lazily from uniform random bits: after
``m`` bits, ``U`` is known to lie in a dyadic cell ``[A / 2^m, (A + 1) / 2^m)``; if no cut point
lies strictly inside it, the bin is decided, otherwise 64 more bits are read. Whether a cut
point lies inside a cell is decided with integer arithmetic from rigorous interval bounds on
``q``, refined until the answer is certain. That always happens because, for rational eps > 0,
``e^eps`` is transcendental (Lindemann-Weierstrass), so every ``c_j`` is irrational and never an
endpoint. Hence ``D`` has exactly the stated distribution: no floating-point probability is ever
used to sample. The first round reads 8 bits per value (16 when k > 32), enough except with
probability (k - 1) / 256 (resp. / 65536). The offset, and the time to draw it, do not depend
on the data.
"""

from __future__ import annotations

import bisect
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.noise.rng import RandomSource
from ._design import Design


@lru_cache(maxsize=256)
def edges(design: Design, m: int) -> tuple[tuple[int, ...], frozenset[int]]:
    """``(below, inside)`` at resolution ``m``: cell ``A`` (``U`` in ``[A, A+1) / 2**m``) lies
    wholly above cut point ``c_j`` iff ``A > below[j-1]``; ``inside`` holds the cells with a cut
    point in their interior, where the bin is not yet decided."""
    below: list[int] = []
    inside: set[int] = set()
    for j in range(1, design.k):
        f, strict = design.cut_floor(j, m)
        if strict:
            below.append(f)
            inside.add(f)
        else:  # c_j = f / 2**m exactly: cell f is already above it
            below.append(f - 1)
    return tuple(below), frozenset(inside)


def _code_dtype(k: int) -> type[np.signedinteger[Any]]:
    if k <= 127:
        return np.int8
    if k <= 32767:
        return np.int16
    return np.int32 if k <= 2**31 - 1 else np.int64


@lru_cache(maxsize=64)
def lut(design: Design, m: int) -> npt.NDArray[np.signedinteger[Any]]:
    """Offset for each ``m``-bit cell, or -1 when the cell straddles a cut point."""
    below, inside = edges(design, m)
    cells = np.arange(1 << m, dtype=np.int64)
    d = np.searchsorted(np.asarray(below, dtype=np.int64), cells, side="left")
    if inside:
        d[np.isin(cells, np.fromiter(inside, dtype=np.int64))] = -1
    out = d.astype(_code_dtype(design.k))
    out.flags.writeable = False
    return out


@lru_cache(maxsize=64)
def _pair_lut(design: Design) -> npt.NDArray[np.uint16]:
    """The 8-bit table applied to two cells at once: entry ``a | b << 8`` holds the offsets of
    cells ``a`` (low byte) and ``b`` (high byte), -1 stored as 0xFF. Read through a uint16 view
    of the random bytes and written back as bytes, byte order cancels out."""
    u = lut(design, 8).view(np.uint8).astype(np.uint16)
    out = (u[None, :] | (u[:, None] << np.uint16(8))).reshape(-1)
    out.flags.writeable = False
    return out


def _resolve(design: Design, prefix: int, m: int, rng: RandomSource) -> int:
    """Finish one undecided draw: read 64 more bits at a time until the cell is decided."""
    while True:
        prefix = (prefix << 64) | int(rng.words(1)[0])
        m += 64
        below, inside = edges(design, m)
        if prefix not in inside:
            return bisect.bisect_left(below, prefix)


def draw_offsets(design: Design, n: int, rng: RandomSource) -> npt.NDArray[np.signedinteger[Any]]:
    """``n`` exact independent draws of the offset ``D`` (see the module docstring).

    Rounds read 8 bits (16 when k > 32), then 8 more for the few undecided draws (k <= 32), then
    48 more (64 in all), then 64 at a time in Python; each round decides every draw whose cell
    holds no cut point, so the result is the bin of one uniform real ``U`` per draw.
    """
    k = design.k
    m = 8 if k <= 32 else 16
    pairs = rng.words((n * (m // 8) + 7) // 8).view(np.uint16)
    if m == 8:  # one lookup per two 8-bit cells (k <= 32 keeps offsets within a byte)
        cells: npt.NDArray[Any] = pairs.view(np.uint8)[:n]
        d = np.take(_pair_lut(design), pairs).view(np.int8)[:n]
    else:
        cells = pairs[:n]
        d = np.take(lut(design, m), cells)
    pending = np.flatnonzero(d < 0)
    cells = cells[pending]
    if pending.size and m == 8:  # second round: 16-bit cells
        extra = rng.words((pending.size + 7) // 8).view(np.uint8)[: pending.size]
        cells = (cells.astype(np.uint16) << np.uint16(8)) | extra
        m = 16
        d2 = np.take(lut(design, m), cells)
        d[pending] = d2
        undecided = np.flatnonzero(d2 < 0)
        pending, cells = pending[undecided], cells[undecided]
    if pending.size:  # third round: 64-bit cells
        below, inside = edges(design, 64)
        a = (cells.astype(np.uint64) << np.uint64(64 - m)) | (
            rng.words(pending.size) >> np.uint64(m))
        d[pending] = np.searchsorted(np.asarray(below, dtype=np.uint64), a, side="left")
        if inside:
            hit = np.isin(a, np.fromiter(inside, dtype=np.uint64, count=len(inside)))
            for i in np.flatnonzero(hit):
                d[pending[i]] = _resolve(design, int(a[i]), 64, rng)
    return d


def apply_offsets(codes: npt.NDArray[np.integer[Any]], offsets: npt.NDArray[np.integer[Any]],
                  k: int) -> npt.NDArray[np.signedinteger[Any]]:
    """``(codes + offsets) mod k`` for codes and offsets in [0, k), in the smallest signed type
    holding ``2k - 2`` (small types keep this pass memory-bound and fast)."""
    small = _code_dtype(2 * k - 2)
    out = codes.astype(small)
    out += offsets.astype(small, copy=False)
    wrap = out >= k
    out -= wrap.view(np.int8).astype(small, copy=False) * small(k)
    return out
