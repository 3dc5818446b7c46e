"""Keyed 64-bit hashing: the one mixing function and the one rule for hashing a value.

The hashes serve three purposes, never more:

* **contribution bounding**: :func:`keyed_priority` gives each (unit, group) pair a
  pseudo-random priority (a unit keeps its pairs of smallest priority) and each unit its
  Poisson-sampling draw (:mod:`dpframe.core.exact.transform`);
* **unit identity across blocks**: a scan spills a row to the partition
  :func:`partition_of` the word of its unit (integer ids: :func:`block_partition`) and Dask
  shuffles rows by :func:`keyed` hashes of the same words, so all rows of a unit meet in one block;
* **distinct counts**: the values of a column are counted as distinct hashes
  (:func:`distinct_hash`).

**The rule.** A value becomes a 64-bit *word*, then a keyed hash ``mix(mix(word ^ k0) ^ k1)``
(:func:`keyed`). A number is the integer it equals when that fits int64 (``1``, ``1.0`` and
``True`` alike, ``-0.0`` is ``0``), an integer in [2**63, 2**64) (uint64 past int64)
its value tagged and mixed, else its float64 bits tagged and mixed; text is a digest of its
UTF-8 bytes, bytes a digest of themselves; a date or time held in a date or time column its count of
nanoseconds. Any other value: a canonical label (distinct counts) a digest of its type name and
repr; a raw unit id in an object column 0, one shared bucket (equal objects may have different
reprs). So equal numbers and texts get equal words whatever engine, dtype, block or process
read them, and equal instants whatever unit stores them: backends only turn a column into
numbers, times or byte buffers (:func:`number_words`, :func:`time_words`, :func:`bytes_words`)
or hand over Python values (:func:`value_words`).

**Why nothing leaks.** The keys of unit hashes and priorities are fresh randomness drawn from
the session's sampling generator for each release, never derived from data, and no key or hash
is ever released: they only decide where a unit's rows go, which of its groups and rows
bounding keeps, and which values are equal. A collision never merges two units: scans, pandas
and Dask's buckets factorize units by their exact ids (colliding units only share a partition
or a bucket), and it never loosens a bound (one unit's pairs always get distinct priorities:
the mixing is a bijection); a distinct count counts hashes, and one unit adds or removes at
most its own values' hashes whatever the hash function. Text words are a public digest that
chosen ids can make collide, which is why no step may tell units apart by hash
(docs/dask.md). The key also keeps whoever chose the data from aiming many units at one
partition. The mixing is fast, not cryptographic.

Numpy only: the core knows no data engine.
"""

from __future__ import annotations

import contextlib
import decimal
import numbers
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from .parallel import BLOCK_ROWS, map_ranges

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
Key = tuple[int, int]

_MASK = 0xFFFFFFFFFFFFFFFF
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_INT64_MIN, _INT64_END = -(1 << 63), 1 << 63

#: Tags that keep the digests of text, bytes and other values apart.
TEXT, BYTES, OTHER = 0x7E47, 0xB17E5, 0x07E4
#: The tag of the words of numbers that are no int64 integer (their float64 bits, mixed).
_FLOAT_TAG = np.uint64(0xF10A7)
#: Tag of the words of integers in [2**63, 2**64) (uint64 past int64), mixed like floats'.
_BIG_TAG = np.uint64(0xB16B16)
_UINT64_END = 1 << 64

#: The public, fixed key of distinct-count hashes: only equality matters there.
DISTINCT_KEY: Key = (0x5EED_D15C, 0x0DD5_7A7E)


def _mix_into(z: U64, scratch: U64 | None = None) -> U64:
    """:func:`mix` in place (``z`` is a fresh array the caller owns); the shifts go through one
    scratch array (``scratch``, at least as long as ``z``, or a new one), so a large ``z``
    costs at most one allocation, not three."""
    t = np.empty_like(z) if scratch is None else scratch[:z.size]
    for shift, factor in ((30, _M1), (27, _M2)):
        np.right_shift(z, np.uint64(shift), out=t)
        z ^= t
        z *= factor
    np.right_shift(z, np.uint64(31), out=t)
    z ^= t
    return z


def mix(words: npt.ArrayLike) -> U64:
    """The splitmix64 finalizer, vectorized: a bijection of 64-bit words with good avalanche."""
    return _mix_into(np.array(words, dtype=np.uint64))


#: A hash block: fills ``out`` (rows ``[start, end)``) with the help of ``scratch``.
Block = Callable[[int, int, U64, U64], None]


def _blockwise(n: int, block: Block) -> U64:
    """The hashes of rows ``[0, n)``, filled by ``block(start, end, out, scratch)`` one cache
    block at a time (its temporaries stay in L2), the blocks' ranges on several threads
    (:mod:`dpframe.core.exact.parallel`: the same bits on any number of threads). Each range makes
    one scratch array for all its blocks: a fresh large array per block would be a fresh
    ``mmap`` (and page faults) where the process fixes glibc's thresholds, as Dask's workers
    do."""
    out = np.empty(n, dtype=np.uint64)

    def fill(a: int, b: int) -> None:
        scratch = np.empty(min(b - a, BLOCK_ROWS), dtype=np.uint64)
        for start in range(a, b, BLOCK_ROWS):
            end = min(b, start + BLOCK_ROWS)
            block(start, end, out[start:end], scratch)

    if n <= BLOCK_ROWS:
        fill(0, n)
    else:
        map_ranges(fill, n)
    return out


def keyed(words: npt.ArrayLike, key: Key) -> U64:
    """``mix(mix(word ^ k0) ^ k1)``: a keyed hash of each word (equal words, equal hashes)."""
    k0, k1 = np.uint64(key[0] & _MASK), np.uint64(key[1] & _MASK)
    w = np.asarray(words, dtype=np.uint64)
    flat = w.reshape(-1)

    def block(start: int, end: int, z: U64, scratch: U64) -> None:
        np.bitwise_xor(flat[start:end], k0, out=z)  # the words are never written
        _mix_into(z, scratch)
        z ^= k1
        _mix_into(z, scratch)

    return _blockwise(flat.size, block).reshape(w.shape)


def partition_of(words: U64, key: int, parts: int) -> np.ndarray:
    """The partition in ``[0, parts)`` of each word: multiply-shift hashing (Dietzfelbinger,
    Hagerup, Katajainen and Penttonen, 1997), the top 32 bits of ``a * word mod 2**64`` scaled
    to ``parts``, with ``a = mix(key ^ golden) | 1`` for a ``key`` of fresh randomness per
    release (mixed, so a small key such as 0 still gives a full-width odd multiplier).

    Over the random ``a``, two distinct words agree on their top ``m`` bits with probability at
    most ``2 / 2**m``, so another unit shares a unit's partition with probability at most about
    ``4 / parts``, and no one who picks the data without knowing ``a`` can aim many units at one
    partition (which would only cost memory and time: partitions are never released). Equal
    words, one partition. Two multiplies and two shifts a word, against two splitmix rounds for
    :func:`keyed`. In the type of :func:`scale_top_bits`."""
    a = mix([(key ^ int(_GOLDEN)) & _MASK])[0] | np.uint64(1)
    return scale_top_bits(np.multiply(np.asarray(words, dtype=np.uint64), a), parts)


class BlockShifts:
    """The shifts ``h(b)`` of :func:`block_partition` (one key, one number of partitions) for
    blocks ``0 .. n - 1``, kept across the batches of one release: dense ids meet the same
    blocks in every batch, hashed once instead of once per batch. The table grows to cover a
    batch only as far as that batch's own hashing would have gone (twice its rows), so it never
    costs more than the batches it serves. Safe on several threads: a table is never written
    once shared, and two threads growing it at once compute the same words."""

    def __init__(self, key: Key, parts: int) -> None:
        self.key, self.parts = key, parts
        self._table = scale_top_bits(np.zeros(0, dtype=np.uint64), parts)

    def covering(self, hi: int, rows: int) -> np.ndarray | None:
        """The shifts of blocks ``0 .. hi`` (the table may be longer), or None when a batch of
        ``rows`` ids would not hash that many blocks itself."""
        table = self._table
        if hi < table.size:
            return table
        if hi >= 2 * rows:
            return None
        size = max(hi + 1, 2 * table.size)
        more = scale_top_bits(keyed(np.arange(table.size, size, dtype=np.uint64), self.key),
                              self.parts)
        table = np.concatenate([table, more])
        self._table = table
        return table


def block_partition(ids: npt.NDArray[np.integer], key: Key, parts: int,
                    shifts: BlockShifts | None = None) -> tuple[I64, np.ndarray]:
    """Integer unit ids laid out over ``parts`` partitions so that, inside each partition, the
    ids are told apart by dense codes with no table. Id ``i`` lies in block ``b = i // parts``
    at place ``r = i % parts`` (floor division: every integer, negative or past int64, has
    one) and goes to partition ``(r + h(b)) % parts``, where ``h`` is the :func:`keyed` hash
    of the block (``key``: fresh randomness per release) scaled to ``[0, parts)``. Returns
    ``(b, partition)``, ``b`` as int64 (``|b| < 2**63`` for any int64 or uint64 id and
    ``parts >= 2``) and the partition in the type of :func:`scale_top_bits`.

    Within one partition ``b`` identifies the id: two ids of one block share their shift
    ``h(b)``, so they share a partition only if their places agree, that is, only if they are
    one id. So a partition may keep ``b`` in place of the id, and ids ``0..n-1`` give every
    partition the codes ``0..n/parts`` (offsets, :func:`~dpframe.backends.base.offset_codes`),
    where hashing the ids themselves (:func:`partition_of`) leaves each partition 1/parts of
    the whole range, renumbered through a table the size of that range. The rotation is
    fresh per block and release: consecutive ids never share a partition, ids of two blocks
    share one with the probability that their shifts differ by one given amount, and nobody
    who picks ids without the key can aim many units at one partition (which would only cost
    memory and time: partitions are never released). Privacy does not depend on the layout:
    pass 2 bounds each unit on its own rows, whatever partition holds them. ``shifts``: the
    release's :class:`BlockShifts` (the same words, hashed once for all its batches)."""
    values = np.asarray(ids)
    assert values.dtype.kind in "iu" and parts >= 2, "integer ids and two partitions or more"
    wide = values.astype(np.uint64 if values.dtype.kind == "u" else np.int64, copy=False)
    # place + shift < 2 * parts, in a type that holds it: uint16 up to 2**15 partitions
    narrow = np.dtype(np.uint16 if parts <= 1 << 15 else np.uint32)
    mask, modulus = narrow.type(parts - 1), narrow.type(parts)
    place: npt.NDArray[np.unsignedinteger[Any]]
    if parts & (parts - 1) == 0:  # a power of two: a shift (floor division) and a mask
        block = wide >> wide.dtype.type(parts.bit_length() - 1)
        place = wide.astype(narrow)  # the low bits (a cast to a narrower type wraps)
        np.bitwise_and(place, mask, out=place)
    else:
        divisor = wide.dtype.type(parts)
        block = wide // divisor  # floor division
        # in [0, parts); a product past the dtype wraps back
        place = (wide - block * divisor).astype(narrow)
    block = block.astype(np.int64, copy=False)  # a uint64 block is < 2**63
    lo, hi = (int(block.min()), int(block.max())) if block.size else (0, -1)
    # few blocks from 0: a hash per block, gathered (hashed by an earlier batch of the
    # release's shifts, or now)
    table = None if lo < 0 else (shifts or BlockShifts(key, parts)).covering(hi, block.size)
    if table is not None:
        shift = table[block]
    elif 0 <= hi - lo < block.size:  # a narrow range elsewhere
        shift = scale_top_bits(keyed(np.arange(lo, hi + 1, dtype=np.int64).view(np.uint64),
                                     key), parts)[block - lo]
    else:
        shift = scale_top_bits(keyed(block.view(np.uint64), key), parts)
    np.add(place, shift, out=place)  # < 2 * parts: one subtraction (a mask for a power of
    if parts & (parts - 1) == 0:     # two) is the modulo
        np.bitwise_and(place, mask, out=place)
    else:
        np.subtract(place, np.greater_equal(place, modulus) * modulus, out=place)
    return block, place.astype(shift.dtype, copy=False)


def scale_top_bits(h: U64, parts: int) -> np.ndarray:
    """The top 32 bits of each 64-bit hash scaled to ``[0, parts)`` by multiply-shift (as even
    as a modulo, without a division), in the narrowest unsigned type: uint8 up to 256 parts
    (a one-pass radix sort), uint16 up to 2**16, else uint32. ``h`` is not written."""
    top = np.right_shift(h, np.uint64(32))
    top *= np.uint64(parts)
    top >>= np.uint64(32)
    return top.astype(np.uint8 if parts <= 256 else np.uint16 if parts <= 1 << 16
                      else np.uint32)


def distinct_hash(words: npt.ArrayLike) -> U64:
    """The hash of values counted by ``count_distinct``, under the public :data:`DISTINCT_KEY`
    (equal in every block, backend and process)."""
    return keyed(words, DISTINCT_KEY)


def keyed_priority(a: I64, b: I64, salt: int) -> U64:
    """A keyed pseudo-random 64-bit priority of each pair (a, b): ``mix((a * golden + b) ^
    salt)``. Rows of one pair share it; pairs with one ``a`` and distinct ``b`` always get
    distinct priorities (every step is a bijection), others independent-looking ones. The salt
    is fresh randomness per release."""
    # int64 -> uint64 by view: the same two's-complement wrap as astype, without the copies
    ua = np.asarray(a, dtype=np.int64).view(np.uint64)
    ub = np.broadcast_to(np.asarray(b, dtype=np.int64), ua.shape).reshape(-1)
    flat = ua.reshape(-1)

    def block(start: int, end: int, z: U64, scratch: U64) -> None:
        priority_into(flat[start:end], ub[start:end], salt, z, scratch)

    return _blockwise(flat.size, block).reshape(ua.shape)


def priority_into(a: npt.NDArray[np.integer[Any]], b: npt.NDArray[np.integer[Any]],
                  salt: int, z: U64, scratch: U64) -> None:
    """:func:`keyed_priority` of one block of pairs written into ``z`` (as long as ``a``),
    with ``scratch`` (at least as long) for the shifts: no array is allocated, so a caller
    hashing a large array block by block in cache reuses two buffers. ``a`` and ``b`` may be
    any integer type (each value is read as its int64 two's-complement word)."""
    if a.dtype.itemsize == 8:  # int64 or uint64: the word is the view
        np.multiply(a.view(np.uint64), _GOLDEN, out=z)
    else:  # a narrower integer: cast (a negative one wraps, as its int64 word does)
        np.copyto(z, a, casting="unsafe")
        z *= _GOLDEN
    if b.dtype.itemsize == 8:
        z += b.view(np.uint64)
    else:
        t = scratch[:z.size]
        np.copyto(t, b, casting="unsafe")
        z += t
    z ^= np.uint64(salt & _MASK)
    _mix_into(z, scratch)


# -- words -----------------------------------------------------------------------------------

def number_words(x: np.ndarray) -> U64:
    """The word of each number of a numeric array (bool, int, uint or float): the integer it
    equals when that fits int64, an integer in [2**63, 2**64) by :func:`_big_words`, else its
    float64 bits tagged and mixed (a bijection, so two floats never share a word, and an
    integer shares one with a float only by chance: raw bits would make 1 and 5e-324 one
    value; ``-0.0`` is ``0``; NaN gives a word too: callers drop missing values)."""
    if x.dtype.kind in "bi" or (x.dtype.kind == "u" and x.dtype.itemsize < 8):
        return np.asarray(x, dtype=np.int64).view(np.uint64)
    if x.dtype.kind == "u":  # uint64: past int64, each value exactly (never the float it
        return _with_big_words(x.astype(np.uint64, copy=False))  # rounds to)
    f = np.asarray(x, dtype=np.float64)
    whole = f == np.floor(f)
    integral = whole & (f >= _INT64_MIN) & (f < _INT64_END)
    ints = np.where(integral, f, 0.0).astype(np.int64).view(np.uint64)
    words = np.where(integral, ints, _mix_into((f + 0.0).view(np.uint64) ^ _FLOAT_TAG))
    big = whole & (f >= _INT64_END) & (f < _UINT64_END)  # 2.0**63 is the integer 2**63
    if big.any():
        words[big] = _big_words(f[big].astype(np.uint64))
    return words


def _big_words(u: U64) -> U64:
    """Words of integers in [2**63, 2**64) (as uint64): the value tagged and mixed, a
    bijection, so two of them never share a word (their floats would: 2**64 - 1 and
    2**64 - 2 round to one float)."""
    return _mix_into(u ^ _BIG_TAG)


def _with_big_words(u: U64) -> U64:
    """The words of uint64 values: themselves, those past int64 by :func:`_big_words` (``u``
    is not written)."""
    big = u >= np.uint64(_INT64_END)
    if not big.any():
        return u
    out = u.copy()
    out[big] = _big_words(out[big])
    return out


#: Nanoseconds in a unit of Arrow's and numpy's date and time types.
_NANOS = {"D": 86_400 * 10**9, "s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def time_words(counts: npt.ArrayLike, unit: str | None) -> U64:
    """The word of each date or time stored as an integer count of ``unit`` (``"D"``,
    ``"s"``, ``"ms"``, ``"us"``, ``"ns"``; None: a count of its own, like a period's ordinal):
    its count of nanoseconds (modulo 2**64), so one instant is one word in any unit."""
    nanos = np.uint64(_NANOS.get(unit, 1) if unit is not None else 1)
    return np.asarray(counts, dtype=np.int64).astype(np.uint64) * nanos


def bytes_words(data: npt.NDArray[np.uint8], offsets: I64, tag: int = TEXT) -> U64:
    """A digest of each byte string ``data[offsets[i]:offsets[i + 1]]`` (Arrow's layout of a
    string column), vectorized over 8-byte blocks: each block is mixed with its position, the
    sum of a string's blocks with its length and ``tag``."""
    starts = np.asarray(offsets[:-1], dtype=np.int64)
    lengths = np.asarray(offsets[1:], dtype=np.int64) - starts
    head = _mix_into(lengths.astype(np.uint64) ^ np.uint64(tag))
    blocks = (lengths + 7) >> 3
    total = int(blocks.sum())
    if total == 0:
        return head
    owner = np.repeat(np.arange(lengths.size), blocks)
    first = np.cumsum(blocks) - blocks
    j = np.arange(total, dtype=np.int64) - first[owner]
    padded = np.concatenate([np.asarray(data, dtype=np.uint8), np.zeros(8, dtype=np.uint8)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, 8)
    w = np.ascontiguousarray(windows[starts[owner] + 8 * j]).view("<u8").ravel()
    tail = np.minimum(lengths[owner] - 8 * j, 8)  # bytes of the block inside the string
    w = w.astype(np.uint64) & _TAIL_MASKS[tail]
    w += j.astype(np.uint64) * _GOLDEN
    sums = np.add.reduceat(_mix_into(w), first[blocks > 0])
    head[blocks > 0] += sums
    return _mix_into(head)


_TAIL_MASKS = np.array([0, *((1 << (8 * k)) - 1 for k in range(1, 8)), _MASK], dtype=np.uint64)


def _float_word(f: float) -> int:
    """:func:`number_words` of one float."""
    if f.is_integer() and _INT64_MIN <= f < _INT64_END:
        return int(f) & _MASK
    return int(number_words(np.array([f]))[0])


def _integer_word(i: int) -> int | None:
    """:func:`number_words` of one integer in int64 or uint64 (None past both)."""
    if _INT64_MIN <= i < _INT64_END:
        return i & _MASK
    if _INT64_END <= i < _UINT64_END:
        return int(_big_words(np.array([i], dtype=np.uint64))[0])
    return None


def _number_word(v: object, exact: bool) -> int | None:
    """The word of a number (see :func:`value_words`), None when it has none."""
    if isinstance(v, complex | np.complexfloating):
        if v.imag != 0:
            return None
        v = v.real
    if isinstance(v, numbers.Integral | np.bool_):
        word = _integer_word(int(v))
        if word is not None:
            return word
    elif isinstance(v, numbers.Rational | decimal.Decimal):  # 2**64 - 1 as a fraction or a
        with contextlib.suppress(ArithmeticError, TypeError, ValueError):  # decimal: that int
            if abs(v) < _UINT64_END:  # type: ignore[operator]  # no int() of 1e1000000
                i = int(v)  # type: ignore[arg-type]
                word = _integer_word(i) if i == v else None
                if word is not None:
                    return word
    try:
        f = float(v)  # type: ignore[arg-type]
        if f != f or (exact and f != v):
            return None
    except (ArithmeticError, TypeError, ValueError):  # huge ints, signalling NaNs
        return None
    return _float_word(f)


def _present(v: object) -> bool:
    """Not None and equal to itself (NaN, NaT and ``pd.NA`` are not)."""
    try:
        return v is not None and bool(v == v)
    except (ArithmeticError, TypeError, ValueError):
        return False


def value_words(values: Iterable[object], exact: bool = True) -> U64:
    """The word of each Python value: text, bytes and numbers by the rule (a missing value
    gets some word: callers drop it). Values are handled type by type, vectorized.

    ``exact`` (canonical labels, :mod:`dpframe.core.exact.values`): a number no float equals and a
    value of another kind (a date) get a digest of type name and repr. Not ``exact`` (raw unit
    ids of an object column, not canonicalized: a ``datetime`` and an equal ``Timestamp`` have
    different reprs): a number is the float it rounds to, and any other value gets 0, one
    shared bucket, so that no two equal values can ever get different words.
    """
    items = list(values)
    vals = np.fromiter(items, dtype=object, count=len(items))
    kinds: dict[type, int] = {}
    kind = np.fromiter((kinds.setdefault(type(v), len(kinds)) for v in items), dtype=np.int64,
                       count=len(items))
    out = np.zeros(len(items), dtype=np.uint64)
    for t, k in kinds.items():
        rows = np.flatnonzero(kind == k)
        out[rows] = _words_of_type(t, vals[rows], exact)
    return out


def _words_of_type(t: type, vals: npt.NDArray[np.object_], exact: bool) -> U64:
    if issubclass(t, str):
        return _digest([v.encode("utf-8", "surrogatepass") for v in vals], TEXT)
    if issubclass(t, bytes):
        return _digest(vals.tolist(), BYTES)
    if issubclass(t, np.datetime64 | np.timedelta64):  # numpy's are integers too: not numbers
        return _one_by_one(vals, exact)
    if issubclass(t, float | np.floating):
        return number_words(vals.astype(np.float64))
    if issubclass(t, numbers.Integral | np.bool_):
        with contextlib.suppress(OverflowError, TypeError, ValueError):  # beyond int64
            return number_words(vals.astype(np.int64))
    return _one_by_one(vals, exact)


def _one_by_one(vals: npt.NDArray[np.object_], exact: bool) -> U64:
    """Words of other numbers (huge ints, decimals, fractions, complex) and other values."""
    out = np.zeros(vals.size, dtype=np.uint64)
    spelled: list[tuple[int, bytes]] = []
    for i, v in enumerate(vals):
        word = None
        if isinstance(v, numbers.Number | np.bool_) and not isinstance(
                v, np.datetime64 | np.timedelta64):
            with contextlib.suppress(Exception):  # a number that will not convert is spelled
                word = _number_word(v, exact)
        if word is not None:
            out[i] = word
        elif exact and _present(v):
            spelled.append((i, _spelling(v)))
    if spelled:
        rows, raw = zip(*spelled, strict=True)
        out[list(rows)] = _digest(raw, OTHER)
    return out


def _spelling(v: object) -> bytes:
    """Type name and repr; never an error, which would come after the charge: an integer
    whose decimal text passes Python's limit (4,300 digits) is spelled in hexadecimal (the
    same integer always the same way), and a value whose repr fails by its type alone."""
    try:
        text = repr(v)
    except ValueError:
        text = hex(int(v)) if isinstance(v, numbers.Integral) else ""
    except Exception:  # a repr of the data's own making that raises
        text = ""
    return f"{type(v).__name__}:{text}".encode("utf-8", "surrogatepass")


def _digest(raw: Iterable[bytes], tag: int) -> U64:
    chunks = list(raw)
    lengths = np.fromiter(map(len, chunks), dtype=np.int64, count=len(chunks))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return bytes_words(np.frombuffer(b"".join(chunks), dtype=np.uint8), offsets, tag)


__all__ = ["BYTES", "DISTINCT_KEY", "OTHER", "TEXT", "bytes_words", "distinct_hash", "keyed",
           "keyed_priority", "mix", "number_words", "time_words", "value_words"]
