"""Stable transformations on numpy arrays, shared by every backend.

Backends (pandas, Arrow batches, Dask partitions) only factorize keys and feed arrays through
these functions, so clamping, fixed-point accumulation, binning and contribution bounding have
exactly one implementation. Each function is a *stable* transformation: one privacy unit's rows
influence only that unit's contribution, which is what the sensitivities in
:mod:`dpframe.core.sensitivity` assume.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .compute import AggregateRequest, ComputeRequest
from .hashing import keyed_priority, priority_into, value_words
from .parallel import BLOCK_ROWS, map_ranges
from .values import sorted_order

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]

_SPLIT = 26


def fixed_point(values: npt.ArrayLike, req: AggregateRequest) -> F64:
    """Clamp, shift and quantize values to integers in [req.ilo, req.ihi], held exactly in
    float64 (|value| <= 2**53).

    A missing value (NaN / None) becomes the integer nearest 0 inside [ilo, ihi]: 0, i.e.
    skipped like pandas does, whenever the bounds contain 0 (for means, whose values are shifted
    by the midpoint, always). Every row's value, missing or not, lies in the bounds, so the
    change_one sensitivity (U - L per row) holds too. The integer is clipped *after* rounding,
    so the per-row bound holds exactly whatever floating-point rounding did before.
    """
    x = np.asarray(values)
    if req.integer and x.dtype.kind in "iub":
        return np.clip(x, req.ilo, req.ihi).astype(np.float64)
    v = np.clip(np.asarray(x, dtype=np.float64), req.lo, req.hi)  # a fresh array
    if req.center is not None:  # sums of squares (variances): (x - center)^2, then as usual
        v -= req.center
        np.square(v, out=v)
    if req.shift:
        v -= req.shift
    v *= req.scale  # unit is a power of two: exact scaling
    np.rint(v, out=v)
    if req.rounds_past_bounds:
        np.clip(v, req.ilo, req.ihi, out=v)
    nan = np.isnan(v)
    if nan.any():
        v[nan] = _missing_integer(req)
    return v


def _missing_integer(req: AggregateRequest) -> float:
    """The integer a missing value counts as: the one nearest 0 inside ``[ilo, ihi]``."""
    return float(min(max(0, req.ilo), req.ihi))


def _int64_when_fits(totals: npt.NDArray[np.object_]) -> npt.NDArray[np.int64] | npt.NDArray[
        np.object_]:
    """Exact totals (Python integers) as int64 when every one fits with room to add, else as
    they are (object)."""
    if all(-(1 << 62) < int(t) < (1 << 62) for t in totals):
        return totals.astype(np.int64)
    return totals


def bin_index(values: npt.ArrayLike, edges: tuple[float, ...], right: bool = True,
              include_lowest: bool = False) -> I64:
    """Histogram bin of each value, exactly as ``pd.cut(values, edges, right=right,
    include_lowest=include_lowest)``: bins ``(e_i, e_i+1]`` (``right``) or ``[e_i, e_i+1)``;
    the lowest edge belongs to the first bin only with ``include_lowest`` (and ``right``); the
    highest edge is outside when not ``right``. -1 outside and for NaN."""
    x = np.asarray(values, dtype=np.float64)
    e = np.asarray(edges, dtype=np.float64)
    idx = np.searchsorted(e, x, side="left" if right else "right") - 1
    if right and include_lowest:
        idx[x == e[0]] = 0
    bad = np.isnan(x) | (idx < 0) | (idx >= len(e) - 1)
    idx[bad] = -1
    return idx.astype(np.int64)


def grid_index(values: npt.ArrayLike, req: AggregateRequest) -> I64:
    """Candidate cell of each clamped value: the first candidate >= x; -1 for NaN."""
    x = np.asarray(values, dtype=np.float64)
    nan = np.isnan(x)
    idx = np.searchsorted(np.asarray(req.edges), np.clip(x, req.lo, req.hi), side="left")
    idx = np.minimum(idx, len(req.edges) - 1)
    idx[nan] = -1
    return idx.astype(np.int64)


def bucket_codes(codes: I64, ngroups: int, mask: Bools | None = None) -> I64:
    """Group codes with every dropped row (code < 0 or masked out) sent to bucket ``ngroups``,
    so grouped reductions are plain bincounts whose last bin is discarded."""
    drop = codes < 0
    if mask is not None:
        drop |= ~mask
    if not drop.any():
        return codes
    return np.where(drop, ngroups, codes)


def grouped_count(codes: I64, ngroups: int, mask: Bools | None = None) -> I64:
    """Rows per group (codes < 0, or == ngroups, are dropped)."""
    b = bucket_codes(codes, ngroups, mask)
    if ngroups == 1:  # one group: count the rows not sent to the drop bucket
        return np.array([np.count_nonzero(b == 0)], dtype=np.int64)
    return np.bincount(b, minlength=ngroups + 1)[:ngroups].astype(np.int64)


def grouped_sum_exact(codes: I64, values: F64, ngroups: int, max_abs: int,
                      mask: Bools | None = None) -> npt.NDArray[np.int64] | npt.NDArray[
                          np.object_]:
    """Exact sums per group of integer values (held in float64, |v| <= max_abs <= 2**53).

    Float bincounts are exact while every partial sum is an integer below 2**53, so rows are
    summed in chunks of 2**53 / max_abs rows (2**20 rows for the fixed-point default), and the
    chunk sums are added as integers (in int64 when ``n * max_abs < 2**62`` bounds every total,
    else as Python integers). Very large values are split as hi * 2**26 + lo first.
    """
    b = bucket_codes(codes, ngroups, mask)  # dropped rows sum into bucket ngroups, discarded
    in_int64 = max_abs <= (1 << 40) and b.size * (max_abs + 1) < (1 << 62)
    total = np.zeros(ngroups + 1, dtype=np.int64 if in_int64 else object)
    parts: list[tuple[F64, int]] = [(values, 1)]
    if max_abs > (1 << 40):
        hi = np.floor(values / float(1 << _SPLIT))
        parts = [(hi, 1 << _SPLIT), (values - hi * float(1 << _SPLIT), 1)]
        max_abs = max(max_abs >> _SPLIT, 1 << _SPLIT)
    chunk = max(1 << 10, (1 << 53) // (max_abs + 1))
    # rows whose sum int64 holds whatever their values: past them, the int64 partial sums go
    # into the Python-int total (2**23 rows at 2**40 already pass 2**63)
    flush = max(chunk, (1 << 62) // (max_abs + 1))
    single = ngroups == 1 and not bool((b == ngroups).any())
    for vals, mult in parts:
        acc = np.zeros(ngroups + 1, dtype=np.int64)
        held = 0  # rows summed into acc since it was last added to the total
        for start in range(0, max(b.size, 1), chunk):
            if not in_int64 and held + chunk > flush:
                total = total + acc.astype(object) * mult
                acc[:] = 0
                held = 0
            held += chunk
            if single:  # one group, nothing dropped: any summation order is exact here too
                acc[0] += int(vals[start : start + chunk].sum())
                continue
            s = np.bincount(b[start : start + chunk], weights=vals[start : start + chunk],
                            minlength=ngroups + 1)
            acc += s.astype(np.int64)
        if in_int64:  # every total is below n * max_abs < 2**62: int64 holds it exactly
            return acc[:ngroups]
        total = total + acc.astype(object) * mult
    return _int64_when_fits(total[:ngroups])


def grouped_bin_counts(codes: I64, bins: I64, ngroups: int, nbins: int,
                       mask: Bools | None = None) -> I64:
    """Counts per (group, bin), shape [ngroups, nbins]; negative codes or bins are dropped."""
    ok = (codes >= 0) & (bins >= 0) & (codes < ngroups)
    if mask is not None:
        ok &= mask
    flat = codes[ok].astype(np.int64, copy=False) * nbins + bins[ok]  # (narrow codes widened)
    return np.bincount(flat, minlength=ngroups * nbins).reshape(ngroups, nbins).astype(np.int64)


def _rank_in_runs(sorted_keys: I64) -> I64:
    """Position of each element within its run of equal keys (input sorted)."""
    n = sorted_keys.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    start = np.empty(n, dtype=bool)
    start[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=start[1:])
    pos = np.arange(n, dtype=np.int64)
    run_start = np.maximum.accumulate(np.where(start, pos, 0))
    return pos - run_start


_UMAX = np.uint64(np.iinfo(np.uint64).max)


def _select_rows(key: I64, rows: npt.NDArray[np.intp], max_rows: int,
                 gen: np.random.Generator, units: I64 | None = None,
                 max_total: int | None = None) -> npt.NDArray[np.intp]:
    """Among ``rows``, whose pair keys are ``key``, keep at most ``max_rows`` per pair, a
    uniform random subset; with ``max_total``, then at most ``max_total`` per unit
    (``units``, one per row) among those. Both steps rank the rows by one uniform random
    order (a permutation): the law of :func:`select_drawing`'s uniform row priorities."""
    if rows.size == 0:
        return rows
    perm = gen.permutation(rows.size)
    _, dense = np.unique(key, return_inverse=True)
    order = np.argsort(dense.astype(np.int64) * rows.size + perm)
    rank = _rank_in_runs(dense[order].astype(np.int64))
    kept = order[rank < max_rows]
    if max_total is None or units is None:
        return rows[kept]
    _, unit_of = np.unique(units[kept], return_inverse=True)
    by_unit = np.argsort(unit_of.astype(np.int64) * rows.size + perm[kept])
    rank = _rank_in_runs(unit_of[by_unit].astype(np.int64))
    return rows[kept[by_unit[rank < max_total]]]


#: A pair's order: the top 24 bits of its keyed priority, then its group. Every layout of the
#: order key below (and the sort that replaces it for group codes past 32 bits) gives this one
#: order, so which layout a block takes (it depends on the block's largest group code: data)
#: never changes which pairs are kept.
PRIORITY_BITS = 24
_TOP = np.uint64(64 - PRIORITY_BITS)
_LOW = 0xFFFFFFFF
#: A compact (32-bit) key: the top 24 bits of the priority, the group code in the low 8 bits.
_COMPACT_LOW = 0xFF
Keys = npt.NDArray[np.uint64] | npt.NDArray[np.uint32]


def _code_range(g: I64) -> tuple[int, int]:
    """The smallest and largest group code (0, 0 when there is none)."""
    return (int(g.min()), int(g.max())) if g.size else (0, 0)


def _keyable(lo: int, hi: int) -> bool:
    """Whether group codes in [lo, hi] fit the low half of an order key: -1 (a dropped row) up
    to 2**32 - 2 (the key of -1 is 2**32 - 1, above every group)."""
    return lo >= -1 and hi < _LOW


def pair_keys(prio: npt.NDArray[np.uint64], g: I64, compact: bool = False) -> Keys:
    """The order key of each row's (unit, group) pair: the top 24 bits of ``prio``, then the
    group (-1, a dropped row, after every group), as one word, so a unit's pairs compare by
    key as they do by that order.

    Two pairs of a unit never share a key (their groups differ), so the rows at a unit's least
    key are exactly one pair's: no tie-break pass. With uniform 64-bit priorities the top 24
    bits are uniform, so the choice stays uniform among a unit's groups but for ties of
    probability below ``m**2 / 2**25`` for ``m`` pairs, broken by the smaller group. The key
    depends on the pair alone, never on the block, so blocks can pre-select
    (:func:`select_by_priority`). ``g`` must be :func:`_keyable`.

    Layouts: 64 bits (the priority bits above the group's 32), or ``compact``, 32 bits (above
    the group's 8, for codes -1 to 254; -1 as 255): half the bytes to write, scatter and
    compare. Both give the one order of :data:`PRIORITY_BITS`, so a block's choice of layout
    (from its largest group code, which one unit's rows can change) changes nothing else."""
    words = _pair_keys_into(prio.copy(), g, compact, np.empty_like(prio))
    return words.astype(np.uint32) if compact else words


def narrowest_signed(top: int) -> np.dtype[np.signedinteger[Any]]:
    """The narrowest signed integer type holding every code in [-1, top]: int8 up to 127, then
    int16, int32, int64 (per-row code tables and columns stay small)."""
    for kind in (np.int8, np.int16, np.int32):
        if top <= np.iinfo(kind).max:
            return np.dtype(kind)
    return np.dtype(np.int64)


def _least_pair(u: I64, g: I64, key: Keys, nu: int, top: int) -> Bools:
    """Whether each row's pair is its unit's pair of least key (one per unit): the per-unit
    least key, its group read back as a narrow table, and each row compared with its unit's
    entry on several threads (:mod:`dpframe.core.parallel`). ``top``: the largest group."""
    low = _COMPACT_LOW if key.dtype == np.uint32 else _LOW
    best = np.full(nu, np.iinfo(key.dtype).max, dtype=key.dtype)
    np.minimum.at(best, u, key)
    group = (best & key.dtype.type(low)).astype(np.int64)
    group[group == low] = -1  # the key of a dropped row's group (-1)
    table = group.astype(narrowest_signed(top))  # gathered per row: small stays in cache
    hit = np.empty(u.size, dtype=bool)

    def compare(a: int, b: int) -> None:
        np.equal(g[a:b], table[u[a:b]], out=hit[a:b])

    map_ranges(compare, u.size)
    return hit


def _choose_groups(u: I64, g: I64, nu: int, max_groups: int, gen: np.random.Generator,
                   code_range: tuple[int, int] | None = None) -> Bools:
    """For rows (unit u, group g), whether their pair is among the unit's ``max_groups`` pairs
    of smallest keyed priority (a uniform choice among the unit's distinct groups,
    :func:`pair_keys`). The keys are computed block by block in cache, on several threads.
    ``code_range``: bounds of the group codes when the caller knows them (any range holding
    them gives the same choice: only the key's layout depends on it)."""
    salt = int(gen.integers(0, 2**63))
    return _smallest_pairs(u, KeyedPairs(u, salt), g, nu, max_groups, code_range)


@dataclass(frozen=True)
class KeyedPairs:
    """The pair priorities ``keyed_priority(words, groups, salt)`` of a selection, given by
    their inputs: :func:`select_by_priority` computes their order keys block by block in
    cache (:func:`_pair_order_keys`), never the 64-bit priorities of every row."""

    words: I64
    salt: int

    def priorities(self, g: I64) -> npt.NDArray[np.uint64]:
        return keyed_priority(self.words, g, self.salt)


def _pair_order_keys(words: npt.NDArray[np.integer[Any]], g: npt.NDArray[np.integer[Any]],
                     salt: int, compact: bool) -> Keys:
    """``pair_keys(keyed_priority(words, g, salt), g, compact)``, computed one cache block at a
    time in two reused buffers, the blocks' ranges on several threads (the same words)."""
    key: Keys = (np.empty(words.size, dtype=np.uint32) if compact
                 else np.empty(words.size, dtype=np.uint64))

    def fill(a: int, b: int) -> None:
        z, scratch = (np.empty(min(b - a, BLOCK_ROWS), dtype=np.uint64) for _ in range(2))
        for start in range(a, b, BLOCK_ROWS):
            end = min(b, start + BLOCK_ROWS)
            m = end - start
            priority_into(words[start:end], g[start:end], salt, z[:m], scratch)
            key[start:end] = _pair_keys_into(z[:m], g[start:end], compact, scratch)

    map_ranges(fill, words.size)
    return key


def _pair_keys_into(prio: npt.NDArray[np.uint64], g: npt.NDArray[np.integer[Any]],
                    compact: bool, scratch: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """:func:`pair_keys` of one cache block, computed in ``prio`` (overwritten) with
    ``scratch`` and no new array: the same words, still as uint64 (the caller narrows them
    when it stores them). ``(top 24 bits) << 8`` is the top 32 bits with the low 8 cleared."""
    low = scratch[:prio.size]
    np.copyto(low, g, casting="unsafe")  # -1 wraps to all ones
    if compact:
        prio >>= np.uint64(32)
        prio &= np.uint64(~_COMPACT_LOW & _LOW)
        low &= np.uint64(_COMPACT_LOW)
    else:
        prio >>= _TOP
        prio <<= np.uint64(32)
        low &= np.uint64(_LOW)
    prio |= low
    return prio


def _smallest_pairs(u: I64, prio: npt.NDArray[np.uint64] | KeyedPairs, g: I64, nu: int,
                    max_groups: int, code_range: tuple[int, int] | None = None) -> Bools:
    """For rows (unit ``u``, group ``g``) with pair priority ``prio`` (or the inputs of its
    keyed hash), whether their pair is among the unit's ``max_groups`` pairs of least order key
    (:func:`pair_keys`: the top 24 bits of the priority, then the smaller group).
    ``code_range``: bounds of the group codes when the caller knows them (any range holding
    them gives the same choice: only the key's layout depends on it)."""
    lo, hi = _code_range(g) if code_range is None else code_range
    if _keyable(lo, hi):
        # the same order in 32 bits for up to 254 groups: only the speed depends on it
        compact = hi < _COMPACT_LOW
        key = (_pair_order_keys(prio.words, g, prio.salt, compact)
               if isinstance(prio, KeyedPairs) else pair_keys(prio, g, compact))
        return _smallest_keys(u, key, g, nu, max_groups, hi)
    if isinstance(prio, KeyedPairs):
        prio = prio.priorities(g)
    order = np.lexsort((g.astype(np.int64, copy=False).view(np.uint64), prio >> _TOP,
                        u))  # -1 after every group
    sp, sg = prio[order] >> _TOP, g[order]
    return _first_pairs(u, order, (sp[1:] != sp[:-1]) | (sg[1:] != sg[:-1]), max_groups)


def _first_pairs(u: I64, order: npt.NDArray[np.intp], new_key: Bools, max_groups: int
                 ) -> Bools:
    """Whether each row's pair is among its unit's first ``max_groups`` pairs, for rows sorted
    by (unit, pair order) along ``order``; ``new_key[i]``: sorted rows i and i + 1 belong to
    different pairs of one unit (ignored across units)."""
    su = u[order]
    new_unit = np.r_[True, su[1:] != su[:-1]]
    pair_id = np.cumsum(new_unit | np.r_[True, new_key]) - 1
    pair_rank = pair_id - np.maximum.accumulate(np.where(new_unit, pair_id, 0))
    chosen = np.empty(u.size, dtype=bool)
    chosen[order] = pair_rank < max_groups
    return chosen


def _smallest_keys(u: I64, key: Keys, g: I64, nu: int, max_groups: int, top: int) -> Bools:
    """For rows with pair order keys ``key`` (one per pair, distinct within a unit), whether
    their pair is among the unit's ``max_groups`` pairs of least key: one pass of per-unit
    minima per group kept (up to 8), else one sort. ``top``: the largest group."""
    if max_groups == 1:
        return _least_pair(u, g, key, nu, top)
    if max_groups <= 8:
        chosen = np.zeros(u.size, dtype=bool)
        cand, done = key, key.dtype.type(np.iinfo(key.dtype).max)
        for round_ in range(max_groups):
            best = np.full(nu, done, dtype=key.dtype)
            np.minimum.at(best, u, cand)
            chosen |= cand == best[u]  # one pair per unit (its key is unique in the unit)
            if round_ + 1 < max_groups:
                cand = np.where(chosen, done, key)
        return chosen
    order = np.lexsort((key, u))
    sk = key[order]
    return _first_pairs(u, order, sk[1:] != sk[:-1], max_groups)


def ranked_private_keys(codes: I64, keys: list[tuple[object, ...]]
                        ) -> tuple[I64, npt.NDArray[np.int64]]:
    """Private keys made comparable across blocks for selection by priority: each row's key
    as its rank in the canonical order of ``keys`` (tuples of canonical labels; -1 stays -1:
    missing), and each rank's word (the labels' words, folded column by column). A block's
    codes index its own key list, so they mean nothing elsewhere; ranks order any two keys
    alike in every block, and words are the same for a key in every block. Pair priorities
    keyed on the words, ties broken by rank (:func:`pair_keys`: the group is the tie-break),
    order each unit's pairs by one total order in every block, which pre-selection needs
    (:func:`select_by_priority`), even when words collide (text words are a public digest)."""
    order = sorted_order(keys)
    rank = np.empty(len(keys), dtype=np.int64)
    rank[order] = np.arange(len(keys))
    width = len(keys[0]) if keys else 0
    words = np.zeros(len(keys), dtype=np.int64)
    for i in range(width):  # fold column by column: keyed_priority(previous, this word, 0)
        column = value_words([keys[j][i] for j in order]).view(np.int64)
        words = column if i == 0 else keyed_priority(words, column, 0).view(np.int64)
    ranked = np.where(codes >= 0, rank[np.maximum(codes, 0)], -1) if len(keys) else (
        np.full(codes.size, -1, dtype=np.int64))
    return ranked.astype(np.int64, copy=False), words


def pair_priorities(words: I64, groups: npt.NDArray[np.integer[Any]],
                    key_words: npt.NDArray[np.int64] | None, salt: int
                    ) -> KeyedPairs | npt.NDArray[np.uint64]:
    """The pair priorities of rows of unit word ``words`` and group ``groups``, for
    :func:`select_by_priority`: keyed on the group code when codes mean the same in every
    block (public keys, or none), as :class:`KeyedPairs` (computed block by block); or on the
    key's word when they do not (private keys: ``groups`` are ranks and ``key_words`` each
    rank's word, :func:`ranked_private_keys`)."""
    if key_words is None:
        return KeyedPairs(words, salt)
    return keyed_priority(words, key_words[groups], salt)


#: Row priorities drawn on demand: the uniform 64-bit priorities of the given rows (indices
#: into the selection's arrays, ascending, each asked for at most once per selection).
DrawPriorities = Callable[[npt.NDArray[np.intp]], npt.NDArray[np.uint64]]


class Selection(NamedTuple):
    """What :func:`select_drawing` kept, and the row priorities it examined."""

    keep: Bools
    #: the rows whose row priority the selection read (ascending): rows of kept pairs holding
    #: more than ``max_rows`` rows; every other row was kept or dropped without its priority
    examined: npt.NDArray[np.intp]
    #: their priorities, as given or drawn
    priority: npt.NDArray[np.uint64]


def select_by_priority(units: I64, groups: I64,
                       pair_priority: npt.NDArray[np.uint64] | KeyedPairs,
                       row_priority: npt.NDArray[np.uint64] | DrawPriorities, max_groups: int,
                       max_rows: int, max_total: int | None = None) -> Bools:
    """Contribution bounding by carried priorities: each unit keeps its ``max_groups`` pairs
    (its rows of one group) of least order key (:func:`pair_keys`: the top 24 bits of
    ``pair_priority``, then the group), and in each its ``max_rows`` rows of smallest
    ``row_priority``. ``pair_priority`` may be given as :class:`KeyedPairs` (the words and
    salt of :func:`~dpframe.core.hashing.keyed_priority`): the same selection, without an
    array of every row's priority. ``row_priority`` may be given as a function drawing the
    priorities of the rows it is asked for (:func:`select_drawing`, which also returns them).

    Blocks can pre-select: a row kept over a union of blocks is kept in its own block (its
    ranks there are no larger), so selecting again over the union of the blocks' selections
    gives the selection over the union (Dask ships only pre-selected rows, never every row).
    With pair priorities a keyed pseudo-random function of (unit, group) and independent
    uniform row priorities, it is the distribution of :func:`bound_contributions`: a uniform
    choice of groups, then a uniform choice of rows; a unit's selection depends only on its own
    rows and fresh randomness (a stable transformation). ``units`` are dense codes >= 0.

    Row priorities may be drawn late (the principle of deferred decisions): the selection
    reads a row's priority only when its pair, among the kept pairs, holds more than
    ``max_rows`` rows (:attr:`Selection.examined`). Drawing each priority, uniformly and
    independently of everything drawn or read before, the first time it is read, and then
    carrying it with the row wherever it is read again, gives every read the law it has
    when all priorities are drawn up front: couple the two by giving each row, up front, the
    value the late draw would give it (a fresh uniform draw for a row never read); the two
    runs then read the same values at every step and select the same rows. Both conditions
    matter. Pre-selection in blocks draws in each block the priorities of its heavy pairs'
    rows; the rows a block keeps carry theirs to the final selection, which draws only for
    rows that arrive without one (never read before). Drawing again for a row whose priority
    a block already used is wrong: a pair of 20 rows in block A (pre-selected to 10) and 1 row
    in block B, ``max_rows`` 10, must keep B's row with probability 10/21; fresh draws for
    the 11 rows that meet would keep it with probability 10/11 (A's 10 survivors are the
    least of 20 draws, not 10 fresh ones).

    ``max_total`` (T): then each unit keeps, among the rows left, its ``max_total`` rows of
    smallest row priority (the same priorities: rank a unit's rows once, keep per pair the
    first R, then the first T of those). The per-pair and total steps compose over unions of
    blocks (a row's rank among its unit's survivors in its block is no larger: a pair's
    survivors below it in the block are survivors below it in the union, or the pair has R
    survivors below it in the union), but the group step does not with T (a block may keep a
    group the union drops, whose rows then push a row out): blocks pre-select by T only when
    there is no group step (:attr:`~dpframe.core.compute.ComputeRequest.preselect_total`).
    """
    return select_drawing(units, groups, pair_priority, row_priority, max_groups,
                          max_rows, max_total).keep


def select_drawing(units: I64, groups: I64,
                   pair_priority: npt.NDArray[np.uint64] | KeyedPairs,
                   row_priority: npt.NDArray[np.uint64] | DrawPriorities, max_groups: int,
                   max_rows: int, max_total: int | None = None) -> Selection:
    """:func:`select_by_priority`, with the row priorities it read: a callable
    ``row_priority`` is called once, with the rows of :attr:`Selection.examined` (never when
    no pair holds more than ``max_rows`` rows and no unit more than ``max_total``)."""
    n = units.size
    none = np.zeros(0, dtype=np.intp)
    if n == 0:
        return Selection(np.zeros(0, dtype=bool), none, np.zeros(0, dtype=np.uint64))
    nu = int(units.max()) + 1
    keep = np.ones(n, dtype=bool)
    # more rows than units times groups kept: some unit has more (no count needed); a unit
    # with no more rows than groups kept keeps them all, so the choice may be skipped
    if n > nu * max_groups or bool((np.bincount(units, minlength=nu) > max_groups).any()):
        keep = _smallest_pairs(units, pair_priority, groups, nu, max_groups)
    if max_rows >= n and (max_total is None or max_total >= n):  # no bound can bind
        return Selection(keep, none, np.zeros(0, dtype=np.uint64))
    width = int(groups.max()) + 1  # pair ids: unit * width + group
    kept = np.flatnonzero(keep)
    kept_units = units[kept]
    if max_groups == 1:  # one pair left per unit: its size is the unit's kept rows (no sort)
        sizes = np.bincount(kept_units, minlength=nu)
        heavy = (kept[sizes[kept_units] > max_rows] if int(sizes.max()) > max_rows
                 else kept[:0])  # no pair past the bound: no per-row look-up
    else:
        pairs = kept_units.astype(np.int64) * width + groups[kept]
        _, dense, sizes = np.unique(pairs, return_inverse=True, return_counts=True)
        heavy = kept[sizes[dense] > max_rows]
    if max_total is not None:  # and every row of a unit holding more than T rows
        per_unit = np.bincount(kept_units, minlength=nu)
        if int(per_unit.max()) > max_total:
            heavy = np.union1d(heavy, kept[per_unit[kept_units] > max_total])
    if not heavy.size:  # no priority read (none drawn)
        return Selection(keep, none, np.zeros(0, dtype=np.uint64))
    priority = (np.asarray(row_priority[heavy], dtype=np.uint64)
                if isinstance(row_priority, np.ndarray) else row_priority(heavy))
    pairs = units[heavy].astype(np.int64) * width + groups[heavy]
    order = np.lexsort((priority, pairs))
    rank = _rank_in_runs(pairs[order])
    keep[heavy[order[rank >= max_rows]]] = False
    if max_total is not None:  # the first T of a unit's rows left, by the same priorities
        left = order[rank < max_rows]
        left_units = units[heavy[left]].astype(np.int64)
        by_unit = np.lexsort((priority[left], left_units))
        rank = _rank_in_runs(left_units[by_unit])
        keep[heavy[left[by_unit[rank >= max_total]]]] = False
    return Selection(keep, heavy, priority)


#: Rows per unit and group kept (averaged over the unit codes) from which
#: :func:`bound_contributions` chooses groups among every unit's pairs without counting each
#: unit's rows first (a pass over every row into a table per unit: about 60 ms at 1e7 rows).
CHOOSE_WITHOUT_COUNT = 2


def bound_contributions(units: I64, groups: I64 | None, max_rows: int, max_groups: int,
                        gen: np.random.Generator, max_total: int | None = None) -> Bools:
    """Mask keeping at most ``max_groups`` groups per unit and ``max_rows`` rows per
    (unit, group), chosen at random (never by row order).

    ``units`` are dense codes in [0, n_units) (-1: dropped); ``groups`` group codes (-1 or
    >= n_groups: dropped). Groups: each (unit, group) pair gets a keyed pseudo-random priority
    and a unit keeps the ``max_groups`` pairs of smallest priority: a uniform choice among its
    distinct groups. Rows: inside each pair a uniform random permutation picks ``max_rows``
    rows. A unit's selection depends only on its own rows and fresh randomness, so the
    transformation is stable. Vectorized and O(n) except where a bound binds: only units with
    more than ``max_groups`` rows enter the group step, and only units with more than
    ``max_rows`` kept rows are sorted.

    ``max_total`` (T): then at most T rows per unit over every group, the first T of its rows
    left by the random order that chose the rows in each pair (:func:`_select_rows`; the law
    of :func:`select_by_priority`'s). The selection of a unit still depends only on its own
    rows and fresh randomness.
    """
    return _bound(units, groups, max_rows, max_groups, gen, max_total)[0]


def _bound(units: I64, groups: I64 | None, max_rows: int, max_groups: int,
           gen: np.random.Generator, max_total: int | None = None
           ) -> tuple[Bools, npt.NDArray[np.intp] | None]:
    """:func:`bound_contributions`: its mask, and the kept rows' indices when it listed them
    on the way (None: not listed), so that the caller need not list them again."""
    n = units.size
    if n == 0:
        return np.zeros(0, dtype=bool), None
    code_range = None if groups is None else _code_range(groups)
    all_valid = int(units.min()) >= 0 and (code_range is None or code_range[0] >= 0)
    if all_valid:  # (two reductions: cheaper than the masks they spare)
        keep = np.ones(n, dtype=bool)
    else:
        keep = units >= 0
        if groups is not None:
            keep &= groups >= 0
    nu = int(units.max()) + 2  # one spare code for dropped rows
    u = units if all_valid else np.where(keep, units, nu - 1)
    limit = max_rows if max_total is None else min(max_rows, max_total)
    choose = code_range is not None and max_groups < code_range[1] + 1
    if choose and n >= CHOOSE_WITHOUT_COUNT * nu * max_groups:
        # many more rows than units can keep pairs: choose among every unit's
        # pairs, with no count of rows per unit first (a unit with at most max_groups rows
        # keeps all its pairs: the same choice); rows are counted after, among the kept ones
        assert groups is not None
        chosen = _choose_groups(u, groups, nu, max_groups, gen, code_range)
        keep = chosen if all_valid else keep & chosen
    else:
        per_unit = np.bincount(u, minlength=nu)
        per_unit[nu - 1] = 0
        if choose:
            assert groups is not None
            busy_unit = per_unit > max_groups
            busy_units = int(np.count_nonzero(busy_unit))
            if busy_units * 2 > np.count_nonzero(per_unit):
                # most units are busy: choosing among every unit's pairs is the same choice
                # and skips a gather of the subset
                chosen = _choose_groups(u, groups, nu, max_groups, gen, code_range)
                keep = chosen if all_valid else keep & chosen
            elif busy_units:
                idx = np.flatnonzero(busy_unit[u])
                keep[idx[~_choose_groups(u[idx], groups[idx], nu, max_groups, gen,
                                         code_range)]] = False
        if int(per_unit.max(initial=0)) <= limit:  # no unit has more rows than the bounds
            return keep, None
    # rows per (unit, group): with groups, pairs are identified by (unit, group)
    # few rows kept (one group of many): only those are read; else one pass over all rows
    few = np.flatnonzero(keep) if np.count_nonzero(keep) * 4 < n else None
    if few is not None:
        kept_u = u[few]
    elif bool(keep.all()):
        kept_u = u
    else:  # dropped rows counted in the spare last unit, never heavy
        kept_u = np.where(keep, u, nu - 1)
    per_unit = np.bincount(kept_u, minlength=nu)
    heavy_unit = per_unit > limit
    heavy_unit[nu - 1] = False
    if not heavy_unit.any():
        return keep, few
    heavy_rows = heavy_unit[kept_u]
    idx = np.flatnonzero(heavy_rows) if few is None else few[heavy_rows]
    ng = code_range[1] + 1 if code_range is not None else 1
    # the pair of each heavy row only (not of every row: a pass and an array per row)
    pairs = units[idx] if groups is None else units[idx].astype(np.int64) * ng + groups[idx]
    kept = _select_rows(pairs, idx, max_rows, gen, units[idx], max_total)
    keep[idx] = False
    keep[kept] = True
    return keep, None


def poisson_sample(units: I64 | None, n: int, rate: Fraction, gen: np.random.Generator
                   ) -> Bools:
    """Keep each privacy unit (each row at row level) independently with probability
    ``rate``, which must be a dyadic fraction k / 2**53 (planning rounds it up). A unit's rows
    are kept or dropped together via a salted pseudo-random priority of the unit."""
    if rate.denominator > (1 << 53) or (1 << 53) % rate.denominator:
        raise ValueError("sample rate must be a multiple of 2**-53")
    k = np.uint64(rate.numerator * ((1 << 53) // rate.denominator))
    if units is None:
        draws = gen.integers(0, 1 << 53, size=n, dtype=np.uint64)
    else:
        salt = int(gen.integers(0, 2**63))
        draws = keyed_priority(units, np.zeros_like(units), salt) >> np.uint64(11)
    return draws < k


def distinct_units_per_group(units: I64, groups: I64, ngroups: int, mask: Bools) -> I64:
    """Number of distinct units per group among masked rows (for DP key selection)."""
    ok = mask & (units >= 0) & (groups >= 0) & (groups < ngroups)
    u, g = units[ok], groups[ok]
    if u.size == 0:
        return np.zeros(ngroups, dtype=np.int64)
    nu = int(u.max()) + 1
    pairs = np.unique(g.astype(np.int64, copy=False) * nu + u)
    return np.bincount(pairs // nu, minlength=ngroups).astype(np.int64)


def fixed_point_total(values: np.ndarray, req: AggregateRequest) -> tuple[int, int] | None:
    """``(sum(fixed_point(values, req)), non-missing values)`` in one cache-blocked pass, for
    a float64 column (None otherwise: the caller takes the general path).

    Same integers as :func:`fixed_point`: scaling by the unit (a power of two) is exact and
    commutes with clamping and with the shift's subtraction, so ``rint(clip(x s, lo s, hi s)
    - shift s)`` is ``rint((clip(x, lo, hi) - shift) s)``. Each block's sum is exact in float64
    (|value| <= 2**34 and 2**16 values stay below 2**53) and blocks add as Python integers. A
    block whose sum is NaN holds missing values; only that block is scanned for them. Large
    arrays are cut at block boundaries and the ranges run on several threads
    (:mod:`dpframe.core.parallel`): integer totals add up the same in any order.
    """
    x = np.asarray(values)
    max_abs = max(abs(req.ilo), abs(req.ihi))
    if x.dtype != np.float64 or req.center is not None or max_abs * BLOCK_ROWS >= 1 << 53:
        return None
    parts = map_ranges(lambda a, b: _fixed_point_blocks(x[a:b], req), x.size)
    return sum(t for t, _ in parts), x.size - sum(m for _, m in parts)


def _fixed_point_into(chunk: F64, b: F64, req: AggregateRequest) -> None:
    """:func:`fixed_point` of one block of a float64 column written into ``b`` (as long as
    ``chunk``), missing values left NaN: scaled first, then clamped, shifted and rounded (the
    same integers: scaling by a power of two is exact and commutes with the rest)."""
    scale = req.scale
    with np.errstate(over="ignore"):  # |x| near the float limit: inf, then clipped
        np.multiply(chunk, scale, out=b)  # (silently: a warning would tell of the data)
    np.clip(b, req.lo * scale, req.hi * scale, out=b)  # NaN stays NaN
    if req.shift:
        np.subtract(b, req.shift * scale, out=b)
    np.rint(b, out=b)
    if req.rounds_past_bounds:
        np.clip(b, req.ilo, req.ihi, out=b)


def _fixed_point_blocks(x: F64, req: AggregateRequest) -> tuple[int, int]:
    """The exact total of ``fixed_point(x, req)`` and the number of missing values, block by
    block in one reused buffer (the pass of :func:`fixed_point_total`)."""
    fill = _missing_integer(req)
    buf = np.empty(min(BLOCK_ROWS, max(x.size, 1)))
    total, missing = 0, 0
    for start in range(0, x.size, BLOCK_ROWS):
        chunk = x[start:start + BLOCK_ROWS]
        b = buf[:chunk.size]
        _fixed_point_into(chunk, b, req)
        block_sum = float(b.sum())
        if block_sum != block_sum:  # NaN: missing values in this block count as ``fill``
            nan = np.isnan(b)
            missing += int(np.count_nonzero(nan))
            b[nan] = fill
            block_sum = float(b.sum())
        total += int(block_sum)
    return total, missing


#: Below this many rows a grouped fixed-point sum takes the general path: its full-size
#: arrays are small, and the blocked pass's fixed cost (about 25 us) would dominate.
SMALL_GROUPED_ROWS = 1 << 14


def grouped_fixed_point_total(codes: npt.NDArray[np.signedinteger[Any]], values: np.ndarray,
                              req: AggregateRequest, ng: int
                              ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """``(grouped_sum_exact(codes, fixed_point(values, req), ng), non-missing values per
    group)`` in one cache-blocked pass, for a float64 column whose totals int64 holds (None
    otherwise: the caller takes the general path). Rows of a code < 0 or == ``ng`` are
    dropped. Fewer than :data:`SMALL_GROUPED_ROWS` rows: None too.

    The integers are :func:`fixed_point`'s (:func:`_fixed_point_into`). Each block's per-group
    bincount is exact in float64 (|value| <= 2**36 and 2**16 values stay below 2**53), blocks
    add as int64 (every total is below n * max_abs < 2**62), and a block whose sums hold a NaN
    has missing values, counted as ``fill`` like fixed_point's, found in that block only. No
    array of every row is made (a 1e7-row grouped sum made three); ranges run on several
    threads, their integer totals adding up the same in any order."""
    x = np.asarray(values)
    max_abs = max(abs(req.ilo), abs(req.ihi))
    if (x.dtype != np.float64 or req.center is not None or max_abs * BLOCK_ROWS >= 1 << 53
            or x.size * (max_abs + 1) >= 1 << 62 or codes.size != x.size
            or x.size < SMALL_GROUPED_ROWS):
        return None
    parts = map_ranges(lambda a, b: _grouped_fixed_point_blocks(codes[a:b], x[a:b], req, ng),
                       x.size)
    sums, counts = (np.add.reduce([p[i] for p in parts], axis=0) for i in (0, 1))
    return sums[:ng].astype(np.int64, copy=False), counts[:ng].astype(np.int64, copy=False)


def _grouped_fixed_point_blocks(codes: npt.NDArray[np.signedinteger[Any]], x: F64,
                                req: AggregateRequest, ng: int
                                ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The pass of :func:`grouped_fixed_point_total` over one range: per-group int64 totals
    and non-missing counts, ``ng + 1`` long (the last: dropped rows)."""
    fill = _missing_integer(req)
    buf = np.empty(min(BLOCK_ROWS, max(x.size, 1)))
    sums = np.zeros(ng + 1, dtype=np.int64)
    counts = np.zeros(ng + 1, dtype=np.int64)
    for start in range(0, x.size, BLOCK_ROWS):
        chunk = x[start:start + BLOCK_ROWS]
        cb = codes[start:start + BLOCK_ROWS]
        if cb.size and int(cb.min()) < 0:
            cb = np.where(cb < 0, ng, cb)
        b = buf[:chunk.size]
        _fixed_point_into(chunk, b, req)
        block = np.bincount(cb, weights=b, minlength=ng + 1)
        counts += np.bincount(cb, minlength=ng + 1)
        if np.isnan(block).any():  # missing values in this block count as ``fill``
            nan = np.isnan(b)
            counts -= np.bincount(cb[nan], minlength=ng + 1)
            b[nan] = fill
            block = np.bincount(cb, weights=b, minlength=ng + 1)
        sums += block.astype(np.int64)
    return sums, counts


def as_counts(total: int) -> np.ndarray:
    """One group's exact total as grouped_sum_exact returns it (int64, or object if huge)."""
    return _int64_when_fits(np.array([total], dtype=object))


def bounded_rows(request: ComputeRequest, group_codes: I64, unit_codes: I64 | None, ng: int,
                  gen: np.random.Generator | None) -> tuple[I64, npt.NDArray[np.intp] | None]:
    """Group codes after Poisson sampling of units and contribution bounding, and the rows
    they are for: every row (None), each dropped row sent to bucket ``ng``; or, when bounding
    kept at most half of the rows, the kept rows' indices and their codes alone (later passes
    then read only those: one group per unit keeps about one row in nine at 10 rows a unit).
    Both forms give the same aggregates. ``gen`` is None only when the request draws nothing
    at random (:attr:`ComputeRequest.draws_at_random`). Codes keep their signed type (a
    narrow one holds ``ng`` too: :func:`~dpframe.backends.base.group_code_dtype`); every
    reduction reads them as they are, or widens the rows it multiplies."""
    group_codes = _signed_codes(group_codes)
    if not request.draws_at_random:
        return bucket_codes(group_codes, ng), None
    assert gen is not None, "sampling and bounding draw at random: the caller passes a generator"
    if request.sample_rate is not None:
        group_codes = np.where(poisson_sample(unit_codes, group_codes.size, request.sample_rate,
                                              gen), group_codes, -1)
    if not request.privacy_unit:
        return bucket_codes(group_codes, ng), None
    assert unit_codes is not None
    mask, rows = _bound(unit_codes, group_codes if request.by else None, request.max_rows,
                        request.max_groups, gen, request.max_total if request.by else None)
    if rows is None:
        if np.count_nonzero(mask) * 2 > mask.size:
            return bucket_codes(group_codes, ng, mask), None
        rows = np.flatnonzero(mask)
    return bucket_codes(group_codes[rows], ng), rows


def _signed_codes(codes: npt.ArrayLike) -> npt.NDArray[np.signedinteger[Any]]:
    """Group codes as a signed integer array: as they are when they are one (int8 for a few
    keys: an eighth of the bytes of every pass), else as int64."""
    a = np.asarray(codes)
    return a if a.dtype.kind == "i" else a.astype(np.int64)
