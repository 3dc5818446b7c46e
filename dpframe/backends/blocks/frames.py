"""The pandas-frame view of the block engine: a block of rows held in a pandas DataFrame, read
as the exact primitives read it (the ``Columns`` protocol: numbers, value words, unit codes),
its keys factorized and its units coded under the canonical value model, and its exact
aggregates (:class:`PandasBackend`, which factorizes keys and units, then runs the shared
transformations). The pandas backend is this view over a whole frame as one block
(:mod:`dpframe.backends.pandas`); Dask's partitions and buckets and Spark's blocks run it on
theirs."""

from __future__ import annotations

import copy
import decimal
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from ...core.exact.compute import ComputeRequest, ExactAggregates
from ...core.exact.hashing import distinct_hash, value_words
from ...core.exact.memo import IdentityCache
from ...core.exact.parallel import map_ranges, row_ranges
from ...core.exact.primitives import compute_exact
from ...core.exact.transform import SMALL_GROUPED_ROWS
from ...core.exact.values import NUMERIC_KINDS, ColumnKind, canonical, canonicalize, is_canonical
from ...errors import ValidationError
from ..base import (
    declared_positions,
    group_code_dtype,
    observed_key_codes,
    offset_codes,
    one_time_spelling,
    one_time_spellings,
    only_columns,
    public_key_codes,
    public_key_list,
    python_objects,
    remap_codes,
)
from ..objects import (
    MAX_PIECES,
    addresses,
    factorize_pieces,
    patched,
    sample_positions,
    text_pieces,
)


def column_kind(dtype: Any) -> ColumnKind:
    """Public kind of a pandas dtype (a pure function of the dtype: cached)."""
    try:
        return _column_kind_cached(dtype)
    except TypeError:  # an unhashable extension dtype
        return _column_kind(dtype)


@functools.lru_cache(maxsize=256)
def _column_kind_cached(dtype: Any) -> ColumnKind:
    return _column_kind(dtype)


def _column_kind(dtype: Any) -> ColumnKind:
    if isinstance(dtype, pd.ArrowDtype):  # the scan's kind of the same Arrow type
        from .arrow_columns import arrow_kind
        from .arrow_conform import public_type

        return arrow_kind(public_type(dtype.pyarrow_dtype))
    if pd.api.types.is_bool_dtype(dtype):
        return "bool"
    if pd.api.types.is_integer_dtype(dtype):
        return "int"
    if pd.api.types.is_float_dtype(dtype):
        return "float"
    if pd.api.types.is_string_dtype(dtype) and not pd.api.types.is_object_dtype(dtype):
        return "str"
    return "other"


def plain_values(s: pd.Series) -> pd.Series:
    """``s`` as every reader of the backend (keys, values, units) takes it: an Arrow column
    in its public type, as a scan reads it
    (:func:`~dpframe.backends.blocks.arrow_conform.public_type`: a dictionary or run-end
    encoded column as its values, views, narrow decimals and half floats widened, exactly),
    nested Arrow values (lists, structs, maps) as missing, as in a scan, and Arrow text whose
    bytes are not UTF-8 missing
    (:func:`~dpframe.backends.blocks.arrow_conform.utf8_or_missing`: pandas' ``str`` dtype too,
    which ``pd.read_parquet`` gives); any other column as it is."""
    if isinstance(s.dtype, pd.StringDtype) and s.dtype.storage == "pyarrow":
        return _utf8_text(s)
    if not isinstance(s.dtype, pd.ArrowDtype):
        return s
    import pyarrow as pa

    from .arrow_columns import decoded, flat, value_type
    from .arrow_conform import conform_array, public_type, utf8_or_missing

    t = s.dtype.pyarrow_dtype
    want = value_type(public_type(t))
    if pa.types.is_nested(want):
        return pd.Series(np.full(len(s), None, dtype=object), index=s.index, name=s.name)
    if want == t:
        return _utf8_text(s)
    values = decoded(flat(pa.array(s.array)))  # one array of the values, run ends decoded
    # conformed (text not UTF-8 made missing too, :func:`conform_array`): a dictionary's
    # decoded text is checked as text
    values = conform_array(values, want) if values.type != want else utf8_or_missing(values)
    return pd.Series(pd.arrays.ArrowExtensionArray(values), index=s.index, name=s.name)


def _utf8_text(s: pd.Series) -> pd.Series:
    """An Arrow-backed column (``pd.ArrowDtype`` or pandas' ``str`` dtype on pyarrow) with its
    text values whose bytes are not UTF-8 missing, in the same dtype; the very column when
    there is none or it holds no text
    (:func:`~dpframe.backends.blocks.arrow_conform.utf8_or_missing`, one pass over ASCII bytes)."""
    from .arrow_conform import utf8_or_missing

    values = s.array.__arrow_array__()
    checked = utf8_or_missing(values)
    if checked is values:
        return s
    if isinstance(s.dtype, pd.ArrowDtype):
        return pd.Series(pd.arrays.ArrowExtensionArray(checked), index=s.index, name=s.name)
    # the dtype as it was (``str``: NaN for missing, or ``string[pyarrow]``: NA); pandas 3
    # takes it, its stubs do not know the argument yet
    text = pd.arrays.ArrowStringArray(checked, dtype=s.dtype)  # type: ignore[call-arg]
    return pd.Series(text, index=s.index, name=s.name)


def _is_uint64(dtype: Any) -> bool:
    """uint64 values at or above 2**63 do not fit int64: they are read as float64 (exact below
    2**53, and bounds never exceed 2**52 in magnitude, so clamping is exact)."""
    return str(dtype).lower() in ("uint64", "uint64[pyarrow]")


def present(s: pd.Series) -> npt.NDArray[np.bool_]:
    """Whether each value is present (not None, NaN, NA or NaT), never raising on a value:
    one whose NaN test raises (``Decimal("sNaN")`` in an object column) is missing."""
    try:
        return np.asarray(s.notna().to_numpy(dtype=bool), dtype=bool)
    except Exception:  # the same test value by value, a value that raises missing
        return np.array([_present_value(v) for v in s.to_numpy(dtype=object)], dtype=bool)


def _present_value(v: object) -> bool:
    """``notna`` of one value of an object column (a list is present, as in ``notna``)."""
    try:
        missing = pd.isna(v)  # type: ignore[call-overload]
        return not bool(missing) if np.ndim(missing) == 0 else True
    except Exception:
        return False


def numeric_column(s: pd.Series) -> tuple[np.ndarray, npt.NDArray[np.bool_] | None]:
    """A numeric column as numpy (int64 when it has no missing value, else float64 with NaN)
    and its non-missing mask; None for a float64 column, whose missing values are its NaNs
    (computed only where needed: an ungrouped sum finds them without a pass of its own)."""
    if s.dtype == np.float64:
        return s.to_numpy(), None
    kind = column_kind(s.dtype)
    if kind not in NUMERIC_KINDS:  # only counted (count(col)); values are never read
        # an object column by the canonical value model, as keys and distinct counts read it:
        # a list, a dict, a tuple or a complex number conforms to nothing (missing)
        return np.zeros(len(s)), factorize(s)[0] >= 0 if s.dtype == object else present(s)
    valid = present(s)
    if kind in ("int", "bool") and bool(valid.all()) and not _is_uint64(s.dtype):
        return s.to_numpy(dtype=np.int64), valid
    return s.to_numpy(dtype=np.float64, na_value=np.nan), valid


def _hashable_or_none(v: object) -> object:
    try:
        hash(v)
    except Exception:  # unhashable, or a hash that raises (a signalling NaN Decimal)
        return None
    return v


#: What ``pd.api.types.infer_dtype`` says of object columns whose equal values pandas'
#: hash table already merges as the canonical value model does (text, bytes, numbers of one
#: family: ``1`` and ``1.0``, ``0.0`` and ``-0.0`` hash alike), relabelled after factorizing.
_MERGED_AS_CANONICAL = frozenset({"string", "bytes", "empty", "integer", "floating",
                                  "mixed-integer-float", "boolean", "decimal"})


def _canonical_object(v: object) -> object:
    """One value of an object column in its canonical form (None: missing or conforming to
    nothing), date-times and spans in their one spelling."""
    try:
        c = canonical(v, "other")
        c = None if c is None else one_time_spelling(c)
        hash(c)  # a canonical value whose hash raises (an aware time of a broken zone)
    except Exception:
        return None
    return c


def _object_values(values: npt.NDArray[np.object_]) -> npt.NDArray[np.object_]:
    """An object column's values ready for factorizing (:func:`_mapped_objects`)."""
    return _mapped_objects(values)[0]


def _mapped_objects(values: npt.NDArray[np.object_]
                    ) -> tuple[npt.NDArray[np.object_], list[npt.NDArray[np.intp]]]:
    """An object column's values ready for factorizing: as they are where pandas merges their
    equal values as the canonical value model does, else each in its canonical form first;
    and the positions of the values that are not text (in order).

    ``pd.factorize`` merges values by ``==`` and hash and keeps the first row's spelling of
    each: a ``complex(1, 0)`` first (equal to 1, conforming to nothing) would make every 1
    missing; an ``np.datetime64`` first would spell a ``Timestamp`` key (its label, type and
    order rank from one row); a ``Timestamp`` and an equal ``np.datetime64`` with nanoseconds
    hash differently and would be two units. Mapping each value first leaves pandas only
    canonical values, of one spelling per class, to merge.

    Which rows are mapped is decided range by range (:func:`_settle`): a range pandas merges
    as the model does stays as it is, and only the ranges that hold another value are cut
    down, to :data:`_LEAF` rows mapped one by one. One person's odd value among a million text
    keys costs one leaf, never a pass over every row (docs/privacy.md, "Timing")."""
    leaves, rest = _settled(values)
    return patched(values, leaves), rest


def _settled(values: npt.NDArray[np.object_]
             ) -> tuple[list[tuple[int, npt.NDArray[np.object_]]], list[npt.NDArray[np.intp]]]:
    """The leaves :func:`_mapped_objects` maps (first row, values in canonical form) and the
    positions of the values that are not text, in row order (:func:`_settle`)."""
    leaves: list[tuple[int, npt.NDArray[np.object_]]] = []
    rest: list[npt.NDArray[np.intp]] = []
    for a in range(0, values.size, _SEGMENT):
        _settle(values, a, min(a + _SEGMENT, values.size), leaves, rest)
    return leaves, rest


#: Rows whose kind one ``infer_dtype`` call reads, and rows mapped one by one where a range
#: holds values pandas would not merge as the model does: an odd value costs at most a leaf.
_SEGMENT, _LEAF = 1 << 14, 1 << 8


def _kind_merged_as_canonical(part: npt.NDArray[np.object_]) -> str | None:
    """The ``infer_dtype`` kind of ``part`` (a range of an object column, missing values
    skipped) when pandas merges its equal values as the canonical value model does
    (:data:`_MERGED_AS_CANONICAL`) and can hash them all (a signalling NaN ``Decimal`` raises
    when hashed or compared); None otherwise."""
    try:
        kind = pd.api.types.infer_dtype(part, skipna=True)
        if kind == "decimal":  # every value a Decimal or missing: none signalling
            snan = any(isinstance(v, decimal.Decimal) and v.is_snan() for v in part)
            return None if snan else kind
        return kind if kind in _MERGED_AS_CANONICAL else None
    except Exception:  # a value infer_dtype cannot inspect: mapped value by value
        return None


def _settle(values: npt.NDArray[np.object_], a: int, b: int,
            leaves: list[tuple[int, npt.NDArray[np.object_]]],
            rest: list[npt.NDArray[np.intp]]) -> None:
    """Rows ``a:b`` of ``values`` as :func:`_mapped_objects` needs them: left as they are where
    pandas merges them as the model does, else halved down to leaves of :data:`_LEAF` rows,
    whose values in canonical form are appended to ``leaves``. The positions of the rows
    that are not text (missing values, numbers, bytes, mapped values that are not ``str``)
    are appended to ``rest``."""
    part = values[a:b]
    try:  # text without a missing value: the usual range, read once
        if pd.api.types.infer_dtype(part, skipna=False) == "string":
            return
    except Exception:  # a value infer_dtype cannot inspect: read below
        pass
    kind = _kind_merged_as_canonical(part)
    if kind in ("string", "empty"):  # text and missing values: the missing are apart
        rest.append(a + np.flatnonzero(pd.isna(part)))
        return
    if kind is not None:  # numbers or bytes: none is text
        rest.append(np.arange(a, b))
        return
    if b - a > _LEAF:
        mid = (a + b) // 2
        _settle(values, a, mid, leaves, rest)
        _settle(values, mid, b, leaves, rest)
        return
    mapped = _canonical_values(part)
    leaves.append((a, mapped))
    rest.append(a + np.array([i for i, c in enumerate(mapped) if type(c) is not str],
                             dtype=np.intp))


#: Columns shorter than this are read by value (addresses would save nothing), and a sample of
#: this many rows decides whether the column repeats its objects.
_BY_OBJECT_ROWS = 1 << 14


def _by_object(values: npt.NDArray[np.object_]
               ) -> tuple[npt.NDArray[np.signedinteger[Any]], npt.NDArray[np.intp]] | None:
    """Each row's object as a code (rows holding the same object, hence one value, share it;
    numbered as ``pd.factorize`` of the addresses numbers them) and one row holding each
    object; None when the column is short or its first :data:`_BY_OBJECT_ROWS` rows hold
    mostly distinct objects (text parsed row by row, as ``json.loads`` makes it).

    An object array holds its objects' addresses; two rows with one address hold one object,
    and the value model maps an object to its canonical form by the object alone
    (:func:`~dpframe.core.exact.values.canonical`), so they are one value. Rows holding equal
    objects at different addresses are merged afterwards, by value, like any other rows.
    The sample's objects appear first (the first codes): each row is looked up among them
    (:func:`~dpframe.backends.objects.sample_positions`), and only rows of other objects are
    factorized, numbered after them in their order of first appearance in the column."""
    n = values.size
    if n == 0 or n < 4 * _BY_OBJECT_ROWS:
        return None
    held = np.ascontiguousarray(values)  # referenced to the end: the addresses are a view
    stored = addresses(held)
    first, sample = pd.factorize(stored[:_BY_OBJECT_ROWS])
    if 4 * len(sample) > _BY_OBJECT_ROWS:
        return None
    rows, late = sample_positions(stored, np.asarray(sample, dtype=np.uintp))
    one_row = np.empty(len(sample), dtype=np.intp)
    one_row[first] = np.arange(len(first), dtype=np.intp)  # any row of an object will do
    if late.size:
        late_rows, late_objects = pd.factorize(stored[late])
        rows[late] = late_rows + len(sample)
        late_one = np.empty(len(late_objects), dtype=np.intp)
        late_one[late_rows] = late
        one_row = np.concatenate([one_row, late_one])
    del held  # the addresses' objects are no longer read
    return rows, one_row


def _factorize_objects(values: npt.NDArray[np.object_]) -> tuple[Any, Any]:
    """``pd.factorize`` of an object column's values by canonical value
    (:func:`_mapped_objects`), with the text and the other values hashed apart.

    pandas hashes an object array with its string table only when every value is a ``str``,
    else with its object table, which is about 1.3 times slower on text: one person's
    ``None`` or number among a million text keys would slow the whole column. So the text is
    factorized alone and the other values apart: no value that is not a ``str`` equals one,
    so no class spans the two. Codes of the other values follow the text's. A few other
    values or mapped leaves leave the text in pieces, factorized as views of the column
    (:func:`~dpframe.backends.objects.factorize_pieces`: no copy of a million objects)."""
    leaves, rest = _settled(values)
    others = np.concatenate(rest) if rest else np.zeros(0, dtype=np.intp)
    if others.size == 0 or 2 * others.size > values.size:  # text alone, or mostly other
        return pd.factorize(patched(values, leaves), use_na_sentinel=True)
    if others.size + len(leaves) > MAX_PIECES:  # many pieces: the text as one array
        mapped = patched(values, leaves)
        other_values = mapped[others]
        text = mapped.copy() if mapped is values else mapped
        is_other = np.zeros(mapped.size, dtype=bool)
        is_other[others] = True
        text[others] = text[int(np.argmin(is_other))]  # a text value of the column
        codes, uniques = pd.factorize(text, use_na_sentinel=True)
    else:
        other_values, pieces = text_pieces(values, leaves, others)
        codes, uniques = factorize_pieces(values.size, pieces)
    other_codes, other_uniques = pd.factorize(other_values, use_na_sentinel=True)
    codes[others] = np.where(other_codes >= 0, other_codes + len(uniques), -1)
    return codes, np.concatenate([np.asarray(uniques, dtype=object),
                                  np.asarray(other_uniques, dtype=object)])


def _canonical_values(part: npt.NDArray[np.object_]) -> npt.NDArray[np.object_]:
    """Each value of ``part`` in canonical form (:func:`_canonical_object`; None: missing)."""
    # a value of a plain type maps as every equal value of its type does: each distinct one
    # is canonicalized once (a date-time is not plain: equal ones may differ by ``fold``)
    memo: dict[tuple[type, object], object] = {}
    canonical_of = []
    for v in part:
        c: object = memo
        if type(v) in _PLAIN_TYPES:
            key = (type(v), v)
            try:  # a NaN is unequal to itself (a miss each time); a signalling one raises
                c = memo.get(key, memo)
                if c is memo:
                    c = memo[key] = _canonical_object(v)
            except Exception:
                c = memo
        canonical_of.append(_canonical_object(v) if c is memo else c)
    out = np.empty(part.size, dtype=object)
    out[:] = canonical_of
    return out


#: Types whose equal values of one type have one canonical form (no ``fold``, no
#: comparison of the data's own making): canonicalized once per distinct value.
_PLAIN_TYPES = frozenset({int, float, str, bytes, bool, decimal.Decimal, np.int64, np.float64,
                          np.int32, np.float32, np.bool_, np.str_})


def _factorize_raw(s: pd.Series) -> tuple[npt.NDArray[np.int64], list[object]]:
    """``pd.factorize`` that never raises on data: unhashable values (a list in an object
    column) are missing, as docs/privacy.md says of values that do not conform to the schema
    (docs/privacy.md#behaviour-that-does-not-depend-on-the-data).
    Object columns are factorized by canonical value (:func:`_factorize_objects`); date-times and
    spans are labelled in their one spelling (:func:`~dpframe.backends.base.one_time_spelling`)."""
    # an object column factorizes as its array (the same hash table, without the Index), its
    # values in canonical form first where pandas would merge them otherwise
    try:
        codes, uniques = (_factorize_objects(s.to_numpy()) if s.dtype == object else
                          pd.factorize(s, use_na_sentinel=True))
    except Exception:  # unhashable values, or hashes and comparisons that raise: those are
        # missing, the others as they were (an object column's still in canonical form: a
        # value that raises must not bring back the raw spellings for the whole column)
        raw = _object_values(s.to_numpy()) if s.dtype == object else s.to_numpy(dtype=object)
        clean = np.empty(len(raw), dtype=object)
        clean[:] = [_hashable_or_none(v) for v in raw]
        codes, uniques = pd.factorize(clean, use_na_sentinel=True)
    # tolist(): the scalars iterating gives, made in one call (iteration boxes each one)
    # labels a value Python cannot hold (an Arrow date past 9999) as None: missing
    labels = python_objects(len(uniques), uniques.tolist, uniques.__getitem__)
    # date-times and spans live only in columns of the other kind; an object column's values
    # are in their one spelling already (_object_values): no pass over other labels
    if s.dtype != object and column_kind(s.dtype) == "other":
        labels = one_time_spellings(labels)
    return np.asarray(codes, dtype=np.int64), labels


def factorize(s: pd.Series) -> tuple[npt.NDArray[np.int64], list[object]]:
    """Codes (-1 for missing) and canonical labels of the distinct values
    (:mod:`dpframe.core.exact.values`): equal values (``0.0`` / ``-0.0``, ``True`` / ``1`` /
    ``1.0``)
    share one code and one canonical label, whatever row came first."""
    rows, codes, labels = _factorized(s)
    return (codes if rows is None else codes[rows]), labels


def _factorized(s: pd.Series) -> tuple[npt.NDArray[np.signedinteger[Any]] | None,
                                      npt.NDArray[np.int64], list[object]]:
    """:func:`factorize` in two steps where an object column repeats its objects: ``rows``
    (each row's object, :func:`_by_object`), the codes of one row of each object and the
    labels (a row's code is ``codes[rows]``: callers mapping the codes further map the short
    array first); ``rows`` None and the rows' codes otherwise.

    pandas gives a column of text alone its ``str`` dtype (Arrow-backed: about 11 to 16 ms to
    group a million rows), but one person's number makes it ``object``: 2.7x to 4.8x that
    time read by value (finding 67 of docs/audit.md). A column built from a few key objects
    repeated (a list of constants, ``np.repeat``, a mapping, a merge) is read by its objects'
    addresses instead, and only one row of each object by value."""
    if s.dtype == object:
        values = s.to_numpy()
        shared = _by_object(values)
        if shared is not None:
            rows, one_row = shared
            codes, labels = _factorize_values(pd.Series(values[one_row], dtype=object))
            return rows, codes, labels
    codes, labels = _factorize_values(s)
    return None, codes, labels


def _factorize_values(s: pd.Series) -> tuple[npt.NDArray[np.int64], list[object]]:
    """:func:`factorize` reading every row by value."""
    kind = column_kind(s.dtype)
    if kind == "float":  # -0.0 + 0.0 is 0.0: one spelling before hashing
        codes, uniques = _factorize_raw(pd.Series(
            s.to_numpy(dtype=np.float64, na_value=np.nan) + 0.0, copy=False))
        return codes, [float(u) for u in uniques]  # type: ignore[arg-type]
    codes, uniques = _factorize_raw(s)
    if is_canonical(uniques, kind):
        return codes, uniques
    remap, labels = canonicalize(uniques, kind)
    if np.array_equal(remap, np.arange(len(remap))):  # none merged or moved: no pass
        return codes, labels
    return remap_codes(codes, remap), labels


def declared_codes(s: pd.Series, declared: tuple[object, ...], dtype: npt.DTypeLike = np.int64
                   ) -> npt.NDArray[np.signedinteger[Any]]:
    """Position of each row's key among the declared keys (-1: undeclared or missing), in
    ``dtype`` (a signed type holding every position: a narrow one is written directly).

    Rows match declared keys under Python ``==`` (``-0.0`` matches a declared ``0.0``). Arrow-
    backed columns use one hash lookup against the declared set (``index_in``, ranges of rows
    on several threads when there are many); others factorize and map the observed uniques.
    """
    pa_array = getattr(s.array, "_pa_array", None)
    if pa_array is not None:
        import pyarrow as pa
        import pyarrow.compute as pc

        value_set = _arrow_value_set(declared, pa_array.type)
        if value_set is not None:
            if pa.types.is_floating(pa_array.type):  # Arrow tells -0.0 from 0.0: normalise
                pa_array = pc.add(pa_array, 0.0)
            if len(row_ranges(len(pa_array))) == 1:  # one range: no slices, no copy
                return _found_or_missing(pc.index_in(pa_array, value_set=value_set), dtype)
            out = np.empty(len(pa_array), dtype=dtype)

            def look_up(a: int, b: int) -> None:  # one range of rows (pyarrow frees the GIL)
                out[a:b] = _found_or_missing(pc.index_in(pa_array.slice(a, b - a),
                                                         value_set=value_set), dtype)

            map_ranges(look_up, out.size)
            return out
    rows, codes, uniques = _factorized(s)
    mapping = declared_positions(uniques, declared)
    table = np.full(len(mapping) + 1, -1, dtype=dtype)  # a code -1 reads the last, -1
    table[:-1] = mapping
    found = table[codes]
    return found if rows is None else found[rows]


def _found_or_missing(found: Any, dtype: npt.DTypeLike = np.int64
                      ) -> npt.NDArray[np.signedinteger[Any]]:
    """Positions found by Arrow's ``index_in`` (int32, null where not found) as int64, -1 where
    null: read from the array's buffers (a ``fill_null`` kernel call and two conversions cost
    more than the lookup itself on a thousand rows)."""
    import pyarrow as pa

    if isinstance(found, pa.ChunkedArray) and found.num_chunks == 1:
        found = found.chunk(0)
    if isinstance(found, pa.ChunkedArray) or found.type != pa.int32():  # the general way
        return np.asarray(found.fill_null(-1).to_numpy(zero_copy_only=False), dtype=dtype)
    n, start = len(found), found.offset
    if n == 0:
        return np.zeros(0, dtype=dtype)
    validity, data = found.buffers()
    out = np.frombuffer(data, dtype=np.int32, count=start + n)[start:].astype(dtype)
    if found.null_count and validity is not None:
        valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), count=start + n,
                              bitorder="little")[start:]
        out[valid == 0] = -1
    return out


#: Arrow value sets of recent declared key lists (boxed: None, no value set, is an answer), by
#: the identity of the (immutable) tuple and the Arrow type: a plan reused by nightly jobs and
#: notebooks passes the same tuple.
_VALUE_SETS: IdentityCache[tuple[Any]] = IdentityCache(64)


def _arrow_value_set(declared: tuple[object, ...], pa_type: Any) -> Any:
    """The declared keys as an Arrow array of ``pa_type`` (floats normalised: ``-0.0`` is
    ``0.0``), or None when they do not convert or repeat (the factorizing path decides)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    remembered = _VALUE_SETS.get((declared,), pa_type)
    if remembered is not None:
        return remembered[0]
    try:
        value_set = pa.array(list(declared), type=pa_type)
        if pa.types.is_floating(pa_type):
            value_set = pc.add(value_set, 0.0)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError):
        value_set = None
    if value_set is not None and len(set(declared)) != len(declared):
        value_set = None
    _VALUE_SETS.put((declared,), (value_set,), pa_type)
    return value_set


def value_hashes(s: pd.Series) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    """A hash of each value's canonical label (:mod:`dpframe.core.exact.values`: 0.0 and -0.0, True
    and 1 are one value; missing and non-conforming values are absent) and whether it is
    present, for distinct counts. The hash is the core's (:mod:`dpframe.core.exact.hashing`) and
    depends on the label only, so equal values hash equal in every partition of a Dask frame."""
    codes, labels = factorize(s)
    if not labels:
        return np.zeros(len(s), dtype=np.uint64), np.zeros(len(s), dtype=bool)
    label_hash = distinct_hash(value_words(labels))
    valid = codes >= 0
    return np.where(valid, label_hash[np.maximum(codes, 0)], 0).astype(np.uint64), valid


def unit_codes(s: pd.Series) -> npt.NDArray[np.int64]:
    """Dense codes of privacy units (-1: missing unit, row dropped), by the canonical value
    model: ``0.0`` and ``-0.0`` are one unit, as are ``1`` and ``True`` in an object column.

    Integer ids spanning a range no wider than twice the row count are used as offsets, with no
    hashing; anything else is factorized.
    """
    kind = column_kind(s.dtype)
    if kind == "int" and len(s) and not s.hasnans:
        codes = offset_codes(s.to_numpy(dtype=np.int64))
        if codes is not None:
            return codes
    if kind == "str":  # a string dtype holds text or missing values only: nothing to merge,
        # and no labels to build (they cost a Python string per unit)
        return np.asarray(pd.factorize(s, use_na_sentinel=True)[0], dtype=np.int64)
    return factorize(s)[0]


def column_labels(columns: pd.Index) -> dict[str, Any]:
    """Query name (``str(label)``) -> column label, refusing what no name could address
    unambiguously: several column levels, or two labels with one name (a duplicate, or ``0``
    and ``"0"``). Column names are public schema, so the refusal reveals nothing."""
    if isinstance(columns, pd.MultiIndex):
        raise ValidationError("columns with several levels (a MultiIndex) are not supported: "
                              "flatten them first, e.g. df.columns = ['_'.join(map(str, c)) "
                              "for c in df.columns]")
    labels: dict[str, Any] = {}
    for c in columns:
        name = str(c)
        if name in labels:
            raise ValidationError(f"column name {name!r} appears more than once (or as both a "
                                  "number and a string): give each column a unique name")
        labels[name] = c
    return labels


class PandasBackend:
    """Exact aggregates of an in-memory pandas DataFrame."""

    #: ``diagnostics=``: per row, rows of its unit a pre-selection dropped before these rows
    #: reached this backend (a Dask bucket's: :func:`~dpframe.core.exact.transform.carried_drops`)
    dropped_before: npt.NDArray[np.int64] | None = None

    def __init__(self, df: pd.DataFrame) -> None:
        if not isinstance(df, pd.DataFrame):
            raise ValidationError("expected a pandas DataFrame")
        self.df = df
        self._labels = column_labels(df.columns)
        self._bound: dict[str, pd.Series] | None = None

    def bind(self, columns: Sequence[str]) -> PandasBackend:
        """This backend reading ``columns`` (those that exist) as they are now: a release's
        schema and exact aggregates see one snapshot of its columns, each taken once (a
        ``df[name]`` costs about 9 us)."""
        bound = copy.copy(self)
        taken = {c: self.df.get(self._labels[c]) for c in columns
                 if isinstance(c, str) and c in self._labels}
        # a column dropped (or duplicated) since the frame was wrapped is left out: the schema
        # then names it unknown, a typed error before any charge
        bound._bound = {c: plain_values(s) for c, s in taken.items() if isinstance(s, pd.Series)}
        return bound

    def column(self, name: str) -> pd.Series:
        """The column a query names (``"0"`` names a column labelled ``0``)."""
        if self._bound is not None and name in self._bound:
            return self._bound[name]
        return plain_values(self.df[self._labels[name]])

    def schema(self, columns: Sequence[str] | None = None) -> dict[str, ColumnKind]:
        if columns is not None and self._bound is not None:  # a release's: its columns' dtypes
            return {c: column_kind(self._bound[c].dtype) for c in columns
                    if isinstance(c, str) and c in self._bound}
        dtypes = list(self.df.dtypes)
        if len(dtypes) == len(self._labels):
            kinds = {name: column_kind(dtypes[i]) for i, name in enumerate(self._labels)}
        else:  # the frame changed after it was wrapped: its columns now (public schema)
            kinds = {name: column_kind(self.df[label].dtype)
                     for name, label in self._labels.items() if label in self.df.columns}
        return kinds if columns is None else only_columns(kinds, columns)

    def categories(self, column: str) -> tuple[object, ...] | None:
        dtype = self.column(column).dtype
        if isinstance(dtype, pd.CategoricalDtype):
            return tuple(dtype.categories)
        return None

    def group_codes(self, request: ComputeRequest, dtype: npt.DTypeLike = np.int64
                    ) -> tuple[npt.NDArray[np.signedinteger[Any]], list[tuple[object, ...]]]:
        """Group code per row and the key list, for public or private keys; public keys' codes
        in ``dtype`` (holding every code and -1; private keys' are int64)."""
        q = request
        if not q.by:  # every row in the one group: a zero-stride view, no 8 bytes per row
            return np.broadcast_to(np.zeros(1, dtype=np.int64), (len(self.df),)), [()]
        if q.private_keys:
            found = [factorize(self.column(col)) for col in q.by]
            return observed_key_codes([c for c, _ in found], [u for _, u in found])
        declared: list[tuple[object, ...]] = [tuple(q.keys[c]) for c in q.by]
        codes = public_key_codes(
            lambda i, t: declared_codes(self.column(q.by[i]), declared[i], t), declared, dtype)
        return codes, public_key_list(declared)

    def exact(self, request: ComputeRequest, gen: np.random.Generator | None) -> ExactAggregates:
        q = request
        if (not q.by and not q.draws_at_random and request.requests
                and all(r.kind == "rows" for r in request.requests)):
            # the number of rows, with nothing to bound, group or sample: no pass over the data
            n = np.array([len(self.df)], dtype=np.int64)
            return ExactAggregates([()], {r.key: n.copy() for r in request.requests}, {})
        # public keys' codes in the narrowest type holding them and the drop bucket (int8 for
        # up to 126 keys): every pass over a large frame's codes reads an eighth of the bytes
        # of int64 (on small frames the casts numpy adds cost more than they save)
        narrow = q.by and not q.private_keys and len(self.df) >= SMALL_GROUPED_ROWS
        codes, keys = self.group_codes(request,
                                       group_code_dtype(request) if narrow else np.int64)
        units = None
        if request.privacy_unit:
            units = self.codes(request.privacy_unit)
        return compute_exact(request, codes, keys, units, self, gen, self.dropped_before)

    # -- the Columns protocol (dpframe.backends.base.Columns) -----------------------------------
    def words(self, name: str) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
        """The hashes of the column ``name``'s values a distinct count counts, and whether
        each row has one (:func:`value_hashes`)."""
        return value_hashes(self.column(name))

    def codes(self, name: str) -> npt.NDArray[np.int64]:
        """Dense codes of the column ``name`` (privacy units: :func:`unit_codes`)."""
        return unit_codes(self.column(name))

    def numbers(self, name: str) -> tuple[np.ndarray, npt.NDArray[np.bool_] | None]:
        """The column ``name`` read as numbers (:func:`numeric_column`), as the aggregates
        read it."""
        return numeric_column(self.column(name))
