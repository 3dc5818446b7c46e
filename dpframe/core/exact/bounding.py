"""Contribution bounding: at most T rows per privacy unit in the release, k groups per unit and
R rows per (unit, group), chosen uniformly at random (never by row order), on every backend.

Split out of :mod:`dpframe.core.exact.transform` (issue 35). Every function here is a *stable*
transformation: a unit's kept rows depend only on its own rows and fresh randomness (or keyed,
data-independent priorities), so after bounding one unit contributes at most min(T, k R) rows,
which is what :mod:`dpframe.core.sensitivity` assumes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .hashing import keyed_priority, priority_into, value_words
from .parallel import BLOCK_ROWS, map_ranges
from .values import sorted_order

I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

_UMAX = np.uint64(np.iinfo(np.uint64).max)


def _first_in_runs(sorted_keys: npt.NDArray[np.integer[Any]], limit: int) -> Bools:
    """Whether each element is among the first ``limit`` of its run of equal keys (input
    sorted): element i is not iff element i - limit has its key. One comparison pass."""
    first = np.ones(sorted_keys.size, dtype=bool)
    np.not_equal(sorted_keys[limit:], sorted_keys[:-limit], out=first[limit:])
    return first


def _first_by_key(key: I64, perm: I64, bound: int, limit: int) -> npt.NDArray[np.intp]:
    """The positions of ``key`` that come among the first ``limit`` of their key in the order
    of ``perm`` (distinct values in ``[0, bound)``, so no two positions tie), sorted by
    (key, perm).

    When the key's span times ``bound`` fits 63 bits, one sort of packed words (key above,
    perm below) replaces a ``unique`` and an ``argsort`` (a value sort is several times
    cheaper): a packed word's position is read back through the inverse of ``perm``. The
    positions are the same either way."""
    n = key.size
    lo, hi = int(key.min()), int(key.max())
    shift = max(bound - 1, 1).bit_length()
    if (hi - lo + 1) << shift >= 1 << 63:
        _, dense = np.unique(key, return_inverse=True)
        order = np.argsort(dense.astype(np.int64) * bound + perm)
        return order[_first_in_runs(dense[order].astype(np.int64), limit)]
    packed = key - lo
    packed <<= shift
    packed |= perm
    packed.sort()
    inverse = np.empty(bound, dtype=np.intp)
    inverse[perm] = np.arange(n, dtype=np.intp)
    low = packed & ((1 << shift) - 1)
    packed >>= shift
    return inverse[low[_first_in_runs(packed, limit)]]


def _select_rows(key: I64, rows: npt.NDArray[np.intp], rows_per_group: int,
                 gen: np.random.Generator, units: I64 | None = None,
                 rows_per_unit: int | None = None) -> npt.NDArray[np.intp]:
    """Among ``rows``, whose pair keys are ``key``, keep at most ``rows_per_group`` per pair, a
    uniform random subset; with ``rows_per_unit``, then at most ``rows_per_unit`` per unit
    (``units``, one per row) among those. Both steps rank the rows by one uniform random
    order (a permutation): the law of :func:`select_drawing`'s uniform row priorities."""
    if rows.size == 0:
        return rows
    perm = gen.permutation(rows.size)
    kept = _first_by_key(key.astype(np.int64, copy=False), perm, rows.size, rows_per_group)
    if rows_per_unit is None or units is None:
        return rows[kept]
    # the kept rows ranked again by the same order, now within their unit
    return rows[kept[_first_by_key(units[kept].astype(np.int64), perm[kept], rows.size,
                                   rows_per_unit)]]


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
    entry on several threads (:mod:`dpframe.core.exact.parallel`). ``top``: the largest group."""
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


def _choose_groups(u: I64, g: I64, nu: int, groups_per_unit: int, gen: np.random.Generator,
                   code_range: tuple[int, int] | None = None) -> Bools:
    """For rows (unit u, group g), whether their pair is among the unit's ``groups_per_unit`` pairs
    of smallest keyed priority (a uniform choice among the unit's distinct groups,
    :func:`pair_keys`). The keys are computed block by block in cache, on several threads.
    ``code_range``: bounds of the group codes when the caller knows them (any range holding
    them gives the same choice: only the key's layout depends on it)."""
    salt = int(gen.integers(0, 2**63))
    return _smallest_pairs(u, KeyedPairs(u, salt), g, nu, groups_per_unit, code_range)


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
                    groups_per_unit: int, code_range: tuple[int, int] | None = None) -> Bools:
    """For rows (unit ``u``, group ``g``) with pair priority ``prio`` (or the inputs of its
    keyed hash), whether their pair is among the unit's ``groups_per_unit`` pairs of least order key
    (:func:`pair_keys`: the top 24 bits of the priority, then the smaller group).
    ``code_range``: bounds of the group codes when the caller knows them (any range holding
    them gives the same choice: only the key's layout depends on it)."""
    lo, hi = _code_range(g) if code_range is None else code_range
    if _keyable(lo, hi):
        # the same order in 32 bits for up to 254 groups: only the speed depends on it
        compact = hi < _COMPACT_LOW
        key = (_pair_order_keys(prio.words, g, prio.salt, compact)
               if isinstance(prio, KeyedPairs) else pair_keys(prio, g, compact))
        return _smallest_keys(u, key, g, nu, groups_per_unit, hi)
    if isinstance(prio, KeyedPairs):
        prio = prio.priorities(g)
    order = np.lexsort((g.astype(np.int64, copy=False).view(np.uint64), prio >> _TOP,
                        u))  # -1 after every group
    sp, sg = prio[order] >> _TOP, g[order]
    return _first_pairs(u, order, (sp[1:] != sp[:-1]) | (sg[1:] != sg[:-1]), groups_per_unit)


def _first_pairs(u: I64, order: npt.NDArray[np.intp], new_key: Bools, groups_per_unit: int
                 ) -> Bools:
    """Whether each row's pair is among its unit's first ``groups_per_unit`` pairs, for rows sorted
    by (unit, pair order) along ``order``; ``new_key[i]``: sorted rows i and i + 1 belong to
    different pairs of one unit (ignored across units)."""
    su = u[order]
    new_unit = np.r_[True, su[1:] != su[:-1]]
    pair_id = np.cumsum(new_unit | np.r_[True, new_key]) - 1
    pair_rank = pair_id - np.maximum.accumulate(np.where(new_unit, pair_id, 0))
    chosen = np.empty(u.size, dtype=bool)
    chosen[order] = pair_rank < groups_per_unit
    return chosen


def _smallest_keys(u: I64, key: Keys, g: I64, nu: int, groups_per_unit: int, top: int) -> Bools:
    """For rows with pair order keys ``key`` (one per pair, distinct within a unit), whether
    their pair is among the unit's ``groups_per_unit`` pairs of least key: one pass of per-unit
    minima per group kept (up to 3), else one value sort of packed (unit, key) words, else
    (units and keys past 64 bits) one ``lexsort``. ``top``: the largest group."""
    if groups_per_unit == 1:
        return _least_pair(u, g, key, nu, top)
    bits = 32 if key.dtype == np.uint32 else 64 - int(_TOP) + 32
    if groups_per_unit > 3 and (nu - 1).bit_length() + bits <= 64:  # one sort beats 4+ passes
        return _keys_up_to_threshold(u, key, nu, groups_per_unit, bits)
    if groups_per_unit <= 8:
        chosen = np.zeros(u.size, dtype=bool)
        cand, done = key, key.dtype.type(np.iinfo(key.dtype).max)
        for round_ in range(groups_per_unit):
            best = np.full(nu, done, dtype=key.dtype)
            np.minimum.at(best, u, cand)
            chosen |= cand == best[u]  # one pair per unit (its key is unique in the unit)
            if round_ + 1 < groups_per_unit:
                cand = np.where(chosen, done, key)
        return chosen
    order = np.lexsort((key, u))
    sk = key[order]
    return _first_pairs(u, order, sk[1:] != sk[:-1], groups_per_unit)


def _keys_up_to_threshold(u: I64, key: Keys, nu: int, groups_per_unit: int, bits: int) -> Bools:
    """:func:`_smallest_keys` by one value sort (no ``argsort``, no per-round passes): each
    row's (unit, key) packed in one word (the unit above ``bits`` key bits) and sorted; one
    entry per pair; a unit's first ``groups_per_unit`` entries are its chosen pairs, the last of
    them its threshold, and a row is chosen iff its key is at most its unit's threshold. A
    unit's pairs have distinct keys, so these are exactly its ``groups_per_unit`` pairs of least key
    (all of them when it has fewer)."""
    packed = u.astype(np.uint64)
    packed <<= np.uint64(bits)
    packed |= key
    packed.sort()
    pairs = packed[np.r_[True, packed[1:] != packed[:-1]]]  # one entry a pair
    unit = pairs >> np.uint64(bits)
    chosen = _first_in_runs(unit, groups_per_unit)
    last = chosen.copy()  # the last chosen pair of each unit
    last[:-1] &= ~(chosen[1:] & (unit[1:] == unit[:-1]))
    threshold = np.zeros(nu, dtype=key.dtype)
    threshold[unit[last].astype(np.intp)] = pairs[last] & np.uint64((1 << bits) - 1)
    return key <= threshold[u]


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
    #: more than ``rows_per_group`` rows; every other row was kept or dropped without its priority
    examined: npt.NDArray[np.intp]
    #: their priorities, as given or drawn
    priority: npt.NDArray[np.uint64]


def select_by_priority(units: I64, groups: I64,
                       pair_priority: npt.NDArray[np.uint64] | KeyedPairs,
                       row_priority: npt.NDArray[np.uint64] | DrawPriorities, groups_per_unit: int,
                       rows_per_group: int, rows_per_unit: int | None = None) -> Bools:
    """Contribution bounding by carried priorities: each unit keeps its ``groups_per_unit`` pairs
    (its rows of one group) of least order key (:func:`pair_keys`: the top 24 bits of
    ``pair_priority``, then the group), and in each its ``rows_per_group`` rows of smallest
    ``row_priority``. ``pair_priority`` may be given as :class:`KeyedPairs` (the words and
    salt of :func:`~dpframe.core.exact.hashing.keyed_priority`): the same selection, without an
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
    ``rows_per_group`` rows (:attr:`Selection.examined`). Drawing each priority, uniformly and
    independently of everything drawn or read before, the first time it is read, and then
    carrying it with the row wherever it is read again, gives every read the law it has
    when all priorities are drawn up front: couple the two by giving each row, up front, the
    value the late draw would give it (a fresh uniform draw for a row never read); the two
    runs then read the same values at every step and select the same rows. Both conditions
    matter. Pre-selection in blocks draws in each block the priorities of its heavy pairs'
    rows; the rows a block keeps carry theirs to the final selection, which draws only for
    rows that arrive without one (never read before). Drawing again for a row whose priority
    a block already used is wrong: a pair of 20 rows in block A (pre-selected to 10) and 1 row
    in block B, ``rows_per_group`` 10, must keep B's row with probability 10/21; fresh draws for
    the 11 rows that meet would keep it with probability 10/11 (A's 10 survivors are the
    least of 20 draws, not 10 fresh ones).

    ``rows_per_unit`` (T): then each unit keeps, among the rows left, its ``rows_per_unit`` rows of
    smallest row priority (the same priorities: rank a unit's rows once, keep per pair the
    first R, then the first T of those). The per-pair and total steps compose over unions of
    blocks (a row's rank among its unit's survivors in its block is no larger: a pair's
    survivors below it in the block are survivors below it in the union, or the pair has R
    survivors below it in the union), but the group step does not with T (a block may keep a
    group the union drops, whose rows then push a row out): blocks pre-select by T only when
    there is no group step (:attr:`~dpframe.core.exact.compute.ComputeRequest.preselect_total`).
    """
    return select_drawing(units, groups, pair_priority, row_priority, groups_per_unit,
                          rows_per_group, rows_per_unit).keep


def select_drawing(units: I64, groups: I64,
                   pair_priority: npt.NDArray[np.uint64] | KeyedPairs,
                   row_priority: npt.NDArray[np.uint64] | DrawPriorities, groups_per_unit: int,
                   rows_per_group: int, rows_per_unit: int | None = None) -> Selection:
    """:func:`select_by_priority`, with the row priorities it read: a callable
    ``row_priority`` is called once, with the rows of :attr:`Selection.examined` (never when
    no pair holds more than ``rows_per_group`` rows and no unit more than ``rows_per_unit``)."""
    n = units.size
    none = np.zeros(0, dtype=np.intp)
    if n == 0:
        return Selection(np.zeros(0, dtype=bool), none, np.zeros(0, dtype=np.uint64))
    nu = int(units.max()) + 1
    keep = np.ones(n, dtype=bool)
    # more rows than units times groups kept: some unit has more (no count needed); a unit
    # with no more rows than groups kept keeps them all, so the choice may be skipped
    if n > nu * groups_per_unit or bool((np.bincount(units, minlength=nu) > groups_per_unit).any()):
        keep = _smallest_pairs(units, pair_priority, groups, nu, groups_per_unit)
    if rows_per_group >= n and (rows_per_unit is None or rows_per_unit >= n):  # no bound can bind
        return Selection(keep, none, np.zeros(0, dtype=np.uint64))
    width = int(groups.max()) + 1  # pair ids: unit * width + group
    kept = np.flatnonzero(keep)
    kept_units = units[kept]
    if groups_per_unit == 1:  # one pair left per unit: its size is the unit's kept rows (no sort)
        sizes = np.bincount(kept_units, minlength=nu)
        heavy = (kept[sizes[kept_units] > rows_per_group] if int(sizes.max()) > rows_per_group
                 else kept[:0])  # no pair past the bound: no per-row look-up
    else:
        pairs = kept_units.astype(np.int64) * width + groups[kept]
        _, dense, sizes = np.unique(pairs, return_inverse=True, return_counts=True)
        heavy = kept[sizes[dense] > rows_per_group]
    if rows_per_unit is not None:  # and every row of a unit holding more than T rows
        per_unit = np.bincount(kept_units, minlength=nu)
        if int(per_unit.max()) > rows_per_unit:
            heavy = np.union1d(heavy, kept[per_unit[kept_units] > rows_per_unit])
    if not heavy.size:  # no priority read (none drawn)
        return Selection(keep, none, np.zeros(0, dtype=np.uint64))
    priority = (np.asarray(row_priority[heavy], dtype=np.uint64)
                if isinstance(row_priority, np.ndarray) else row_priority(heavy))
    pairs = units[heavy].astype(np.int64) * width + groups[heavy]
    order = np.lexsort((priority, pairs))
    first = _first_in_runs(pairs[order], rows_per_group)
    keep[heavy[order[~first]]] = False
    if rows_per_unit is not None:  # the first T of a unit's rows left, by the same priorities
        left = order[first]
        left_units = units[heavy[left]].astype(np.int64)
        by_unit = np.lexsort((priority[left], left_units))
        keep[heavy[left[by_unit[~_first_in_runs(left_units[by_unit], rows_per_unit)]]]] = False
    return Selection(keep, heavy, priority)


#: Rows per unit and group kept (averaged over the unit codes) from which
#: :func:`bound_contributions` chooses groups among every unit's pairs without counting each
#: unit's rows first (a pass over every row into a table per unit: about 60 ms at 1e7 rows).
CHOOSE_WITHOUT_COUNT = 2


def bound_contributions(units: I64, groups: I64 | None, rows_per_group: int, groups_per_unit: int,
                        gen: np.random.Generator, rows_per_unit: int | None = None) -> Bools:
    """Mask keeping at most ``groups_per_unit`` groups per unit and ``rows_per_group`` rows per
    (unit, group), chosen at random (never by row order).

    ``units`` are dense codes in [0, n_units) (-1: dropped); ``groups`` group codes (-1 or
    >= n_groups: dropped). Groups: each (unit, group) pair gets a keyed pseudo-random priority
    and a unit keeps the ``groups_per_unit`` pairs of smallest priority: a uniform choice among its
    distinct groups. Rows: inside each pair a uniform random permutation picks ``rows_per_group``
    rows. A unit's selection depends only on its own rows and fresh randomness, so the
    transformation is stable. Vectorized and O(n) except where a bound binds: only units with
    more than ``groups_per_unit`` rows enter the group step, and only units with more than
    ``rows_per_group`` kept rows are sorted.

    ``rows_per_unit`` (T): then at most T rows per unit over every group, the first T of its rows
    left by the random order that chose the rows in each pair (:func:`_select_rows`; the law
    of :func:`select_by_priority`'s). The selection of a unit still depends only on its own
    rows and fresh randomness.
    """
    return bound_rows(units, groups, rows_per_group, groups_per_unit, gen, rows_per_unit)[0]


class _Rows(NamedTuple):
    """The rows a bounding works on: unit codes with dropped rows sent to the spare last code
    ``nu - 1``, whether no row was dropped, and the mask of rows still kept."""

    u: I64
    nu: int
    all_valid: bool
    keep: Bools


def _valid_rows(units: I64, groups: I64 | None, code_range: tuple[int, int] | None) -> _Rows:
    """The rows with a unit and a group (a missing one drops the row), as :class:`_Rows`."""
    all_valid = int(units.min()) >= 0 and (code_range is None or code_range[0] >= 0)
    if all_valid:  # (two reductions: cheaper than the masks they spare)
        keep = np.ones(units.size, dtype=bool)
    else:
        keep = units >= 0
        if groups is not None:
            keep &= groups >= 0
    nu = int(units.max()) + 2  # one spare code for dropped rows
    u = units if all_valid else np.where(keep, units, nu - 1)
    return _Rows(u, nu, all_valid, keep)


def _keep_groups(rows: _Rows, groups: I64, groups_per_unit: int, gen: np.random.Generator,
                 code_range: tuple[int, int], per_unit: I64 | None) -> Bools:
    """The group step: each unit keeps its ``groups_per_unit`` pairs of least keyed priority.
    ``per_unit`` (rows per unit, or None: not counted) lets only busy units be chosen among
    when they are few; choosing among every unit's pairs is the same choice."""
    u, nu, keep = rows.u, rows.nu, rows.keep
    if per_unit is not None:
        busy_unit = per_unit > groups_per_unit
        busy_units = int(np.count_nonzero(busy_unit))
        if not busy_units:
            return keep
        if busy_units * 2 <= np.count_nonzero(per_unit):  # few busy units: only theirs
            idx = np.flatnonzero(busy_unit[u])
            keep[idx[~_choose_groups(u[idx], groups[idx], nu, groups_per_unit, gen,
                                     code_range)]] = False
            return keep
    chosen = _choose_groups(u, groups, nu, groups_per_unit, gen, code_range)
    return chosen if rows.all_valid else keep & chosen


def _keep_rows(units: I64, groups: I64 | None, rows: _Rows, limit: int, rows_per_group: int,
               rows_per_unit: int | None, gen: np.random.Generator, ng: int
               ) -> tuple[Bools, npt.NDArray[np.intp] | None]:
    """The row step: in each (unit, group) pair at most ``rows_per_group`` kept rows, and at most
    ``rows_per_unit`` per unit, chosen by one uniform random order (:func:`_select_rows`); only
    units with more than ``limit`` kept rows are read again."""
    u, nu, keep = rows.u, rows.nu, rows.keep
    # few rows kept (one group of many): only those are read; else one pass over all rows
    few = np.flatnonzero(keep) if np.count_nonzero(keep) * 4 < units.size else None
    if few is not None:
        kept_u = u[few]
    elif bool(keep.all()):
        kept_u = u
    else:  # dropped rows counted in the spare last unit, never heavy
        kept_u = np.where(keep, u, nu - 1)
    heavy_unit = np.bincount(kept_u, minlength=nu) > limit
    heavy_unit[nu - 1] = False
    if not heavy_unit.any():
        return keep, few
    heavy_rows = heavy_unit[kept_u]
    idx = np.flatnonzero(heavy_rows) if few is None else few[heavy_rows]
    # the pair of each heavy row only (not of every row: a pass and an array per row)
    pairs = units[idx] if groups is None else units[idx].astype(np.int64) * ng + groups[idx]
    kept = _select_rows(pairs, idx, rows_per_group, gen, units[idx], rows_per_unit)
    keep[idx] = False
    keep[kept] = True
    return keep, None


def bound_rows(units: I64, groups: I64 | None, rows_per_group: int, groups_per_unit: int,
               gen: np.random.Generator, rows_per_unit: int | None = None
               ) -> tuple[Bools, npt.NDArray[np.intp] | None]:
    """:func:`bound_contributions`: its mask, and the kept rows' indices when it listed them
    on the way (None: not listed), so that the caller need not list them again.

    The group step (:func:`_keep_groups`), then the row step (:func:`_keep_rows`), skipped
    when a count of rows per unit shows that no unit has more rows than the bounds allow."""
    if units.size == 0:
        return np.zeros(0, dtype=bool), None
    code_range = None if groups is None else _code_range(groups)
    rows = _valid_rows(units, groups, code_range)
    limit = rows_per_group if rows_per_unit is None else min(rows_per_group, rows_per_unit)
    choose = code_range is not None and groups_per_unit < code_range[1] + 1
    if choose and units.size >= CHOOSE_WITHOUT_COUNT * rows.nu * groups_per_unit:
        # many more rows than units can keep pairs: choose among every unit's pairs, with no
        # count of rows per unit first (a unit with at most groups_per_unit rows keeps all its
        # pairs: the same choice); rows are counted after, among the kept ones
        assert groups is not None and code_range is not None
        rows = rows._replace(keep=_keep_groups(rows, groups, groups_per_unit, gen, code_range,
                                               None))
    else:
        per_unit = np.bincount(rows.u, minlength=rows.nu)
        per_unit[rows.nu - 1] = 0
        if choose:
            assert groups is not None and code_range is not None
            rows = rows._replace(keep=_keep_groups(rows, groups, groups_per_unit, gen, code_range,
                                                   per_unit))
        if int(per_unit.max(initial=0)) <= limit:  # no unit has more rows than the bounds
            return rows.keep, None
    ng = code_range[1] + 1 if code_range is not None else 1
    return _keep_rows(units, groups, rows, limit, rows_per_group, rows_per_unit, gen, ng)
