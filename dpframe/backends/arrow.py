"""The Arrow batch backend: exact aggregates of a dataset read batch by batch, in bounded memory.

Nothing here adds noise or computes a sensitivity: every block of rows is factorized and handed
to :func:`dpframe.core.transform.compute_exact` (the one implementation of clamping, fixed-point
accumulation, binning and contribution bounding); the blocks' exact aggregates are then added.
Adding is correct because blocks hold disjoint privacy units:

* **Row-level queries** (no ``privacy_unit``): each row is a unit, so any batches are disjoint.
  One streaming pass; memory is one record batch plus the per-group totals.
* **Privacy-unit queries**: a unit's rows may be spread over many batches, and contribution
  bounding must see all of them together. Two passes:

  1. every batch's needed columns are spilled into ``P`` temporary Arrow IPC files, the
     partition of a row being a keyed 64-bit hash of its unit id modulo ``P`` (the key is
     fresh randomness from the session, so nobody can aim many units at one partition); every
     row of a unit lands in the same partition. Rows that every query would drop anyway
     (missing unit, undeclared public key) are not spilled.
  2. each partition is loaded alone, its units factorized, and ``compute_exact`` bounds each
     unit's contributions exactly as the pandas backend does for the whole frame.

  Memory is one batch in pass 1 and one partition in pass 2 (``partition_rows`` rows by
  default); disk is the spilled columns, deleted as soon as the release is computed, also on
  error or interrupt. See docs/scan.md.
"""

from __future__ import annotations

import contextlib
import glob as _glob
import math
import os
import queue
import shutil
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.dataset as ds

from ..core.compute import ComputeRequest, ExactAggregates, union_pairs
from ..core.transform import compute_exact
from ..core.values import NUMERIC_KINDS, ColumnKind, canonicalize
from ..errors import ValidationError
from .base import combine_codes, declared_positions, public_key_list

I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]
Column: TypeAlias = pa.Array | pa.ChunkedArray

DEFAULT_BATCH_SIZE = 1 << 20
DEFAULT_PARTITION_ROWS = 4_000_000
MAX_PARTITIONS = 4096
#: Read-ahead of pyarrow's scanner: batches within a file, files at once. pyarrow's defaults
#: (16, 4) buffer about a gigabyte of decoded batches for no speed-up here.
BATCH_READAHEAD = 4
FRAGMENT_READAHEAD = 2
#: Parquet batches decoded ahead of the consumer by the prefetch thread.
PREFETCH = 2
_GROUP_CODE = "__dpframe_group__"
_OVERFLOW_GUARD = 1 << 61
_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".parq": "parquet",
            ".csv": "csv", ".tsv": "csv", ".arrow": "ipc", ".feather": "ipc", ".ipc": "ipc"}


# -- types and columns ---------------------------------------------------------------------------

def arrow_kind(t: pa.DataType) -> ColumnKind:
    """Public kind of an Arrow type (dictionary columns take their values' kind)."""
    if pa.types.is_dictionary(t):
        return arrow_kind(t.value_type)
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "str"
    return "other"


def _nested(t: pa.DataType) -> bool:
    return bool(pa.types.is_nested(t) or (pa.types.is_dictionary(t)
                                          and pa.types.is_nested(t.value_type)))


def _flat(arr: Column) -> pa.Array:
    """One array; a nested one (lists, structs, maps) as all null: such values conform to no
    key or unit kind, so they count as missing, like lists in a pandas object column."""
    if _nested(arr.type):
        return pa.nulls(len(arr))
    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks == 1:
            return arr.chunk(0)
        if arr.num_chunks == 0:
            return pa.array([], type=arr.type)
        if pa.types.is_dictionary(arr.type):
            arr = arr.unify_dictionaries()
        return arr.combine_chunks()
    return arr


def _decode(arr: pa.Array) -> pa.Array:
    return arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr


def numeric_array(col: Column) -> tuple[np.ndarray, Bools]:
    """A column as numpy and its non-missing mask, like the pandas backend's ``numeric_column``:
    int64 for integer/bool columns without missing values, float64 with NaN otherwise; columns
    that are not numeric give zeros and the non-null mask (enough for ``count(column)``)."""
    arr = _decode(_flat(col))
    kind = arrow_kind(arr.type)
    n = len(arr)
    if kind not in NUMERIC_KINDS:
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        return np.zeros(n), np.asarray(valid, dtype=bool)
    if kind in ("int", "bool") and arr.null_count == 0 and arr.type != pa.uint64():
        return arr.to_numpy(zero_copy_only=False).astype(np.int64, copy=False), np.ones(n, bool)
    if arr.type != pa.float64():
        arr = pc.cast(arr, pa.float64(), safe=False)  # exact below 2**53; larger are clamped
    x = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.float64)
    return x, ~np.isnan(x)


def _missing(v: object) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def dictionary_codes(col: Column) -> tuple[npt.NDArray[np.integer[Any]], list[object]]:
    """Dictionary indices (-1 for null) and the dictionary's values, without re-hashing when
    the column is already dictionary-encoded (Parquet string columns read as dictionaries).
    Entries may be unused or missing values (None, NaN): callers map or drop them."""
    arr = _flat(col)
    d = arr if pa.types.is_dictionary(arr.type) else pc.dictionary_encode(arr)
    idx = d.indices
    if idx.null_count:
        idx = pc.fill_null(idx, -1)
    codes = np.asarray(idx.to_numpy(zero_copy_only=False))
    return codes, d.dictionary.to_pylist()


def factorize(col: Column) -> tuple[I64, list[object]]:
    """Codes (-1 for missing) and canonical labels of the distinct values, via Arrow
    dictionaries and the core's canonical value model (:mod:`dpframe.core.values`).

    Repeated dictionary entries (``["a", "a", "b"]``), ``0.0`` and ``-0.0``, unused entries and
    missing values (null, NaN) are handled once, on the dictionary: equal entries share one code
    (their rows add up, never overwrite), unused and missing ones get none.
    """
    raw, uniques = dictionary_codes(col)
    codes = raw.astype(np.int64)
    n_u = len(uniques)
    if n_u == 0:
        return np.full(codes.size, -1, dtype=np.int64), []
    kind = arrow_kind(_flat(col).type)
    remap, labels = canonicalize(uniques, kind)
    present = np.bincount(codes[codes >= 0], minlength=n_u) > 0
    remap = np.where(present, remap, -1)
    used = np.unique(remap[remap >= 0])
    if used.size < len(labels):  # drop classes no row holds
        dense = np.full(len(labels), -1, dtype=np.int64)
        dense[used] = np.arange(used.size)
        remap = np.where(remap >= 0, dense[np.maximum(remap, 0)], -1)
        labels = [labels[i] for i in used]
    return np.append(remap, -1)[codes], labels


def unit_codes(col: Column) -> I64:
    """An integer per distinct privacy unit (-1 for a missing one), without listing the units:
    only equality matters, so no Python object is made per unit. Equality is the canonical
    value model's: ``0.0`` and ``-0.0`` are one unit, as :func:`unit_hash` says too."""
    arr = _decode(_flat(col))
    if pa.types.is_integer(arr.type) and arr.null_count == 0:  # pandas hashes ints faster
        codes, _ = pd.factorize(arr.to_numpy(zero_copy_only=False), sort=False)
        return np.asarray(codes, dtype=np.int64)
    if pa.types.is_floating(arr.type):
        arr = pc.add(arr, pa.scalar(0.0, arr.type))  # -0.0 + 0.0 is 0.0
        arr = pc.if_else(pc.is_nan(arr), pa.scalar(None, arr.type), arr)
    raw, _ = dictionary_codes(pc.dictionary_encode(arr))
    return raw.astype(np.int64)


def public_codes(col: Column, declared: Sequence[object]) -> I64:
    """Position of each row's value in the declared keys; -1 when missing or undeclared.

    A plain (not dictionary-encoded) string column is looked up in the declared set directly
    (``index_in``: one hash probe per row, no dictionary built); string equality is the
    canonical value model's for text. Other columns go through their dictionary."""
    arr = _flat(col)
    if ((pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type))
            and all(isinstance(k, str) for k in declared) and len(set(declared)) == len(declared)):
        idx = pc.index_in(arr, value_set=pa.array(list(declared), type=arr.type))
        return np.asarray(pc.fill_null(idx, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    raw, uniques = dictionary_codes(arr)
    lut = np.append(declared_positions(uniques, declared), -1)  # lut[-1]: null rows
    for i, u in enumerate(uniques):
        if _missing(u):
            lut[i] = -1
    return lut[raw]


# -- keyed hashing of unit ids -------------------------------------------------------------------

#: Threads aggregating batches of a row-level scan with public keys (at most 2: the
#: reader's prefetch thread runs beside them).
WORKERS = max(1, min(2, os.cpu_count() or 1))


#: The (public, fixed) key of value hashes for distinct counts: only equality matters.
_DISTINCT_KEY = (0x5EED_D15C, 0x0DD5_7A7E)


def value_hashes(col: Column) -> tuple[npt.NDArray[np.uint64], Bools]:
    """A hash of each value (equal values, 0.0 and -0.0 included, hash equal in every batch)
    and whether it is present (not null, not NaN; nested values count as missing), for
    distinct counts."""
    arr = _decode(_flat(col))
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_floating(arr.type):
        valid &= ~np.asarray(pc.is_nan(arr).fill_null(False).to_numpy(zero_copy_only=False),
                             dtype=bool)
    if pa.types.is_null(arr.type):
        return np.zeros(len(arr), dtype=np.uint64), valid
    return unit_hash(arr, _DISTINCT_KEY), valid


def _mix(h: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """The splitmix64 finalizer (a bijection of 64-bit words), vectorized."""
    with np.errstate(over="ignore"):
        h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return h ^ (h >> np.uint64(31))


def unit_hash(col: Column, key: tuple[int, int]) -> npt.NDArray[np.uint64]:
    """A keyed 64-bit hash of each value: equal values get equal hashes in every batch."""
    arr = _flat(col)
    if pa.types.is_dictionary(arr.type):
        h_dict = unit_hash(arr.dictionary, key)
        idx = pc.fill_null(arr.indices, 0).to_numpy(zero_copy_only=False)
        return h_dict[idx] if h_dict.size else np.zeros(len(arr), dtype=np.uint64)
    t = arr.type
    if pa.types.is_floating(t):
        x = np.asarray(pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False), np.float64)
        v = (x + 0.0).view(np.uint64)  # -0.0 and 0.0 are one unit
    elif pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_temporal(t):
        v = np.asarray(pc.cast(arr, pa.int64()).fill_null(0).to_numpy(zero_copy_only=False),
                       dtype=np.int64).view(np.uint64)
    else:
        if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                or pa.types.is_large_binary(t)):
            arr = pc.cast(arr, pa.string())
        objs = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=object)
        skey = f"{key[0] & 0xFFFFFFFFFFFFFFFF:016x}"
        v = pd.util.hash_array(objs, hash_key=skey, categorize=False)
    k0, k1 = np.uint64(key[0] & 0xFFFFFFFFFFFFFFFF), np.uint64(key[1] & 0xFFFFFFFFFFFFFFFF)
    return _mix(_mix(v ^ k0) ^ k1)


# -- the source ------------------------------------------------------------------------------------

_NUMBER_TEXT = (r"^\s*[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|inf|infinity|nan)\s*$")


def _null(n: int, t: pa.DataType) -> pa.Array:
    return pa.nulls(n, type=t)


def conform_array(arr: Column, t: pa.DataType) -> pa.Array:
    """``arr`` in the type ``t`` of the public schema, never raising on values: a value that
    does not conform (text in a numeric column, a fraction in an integer column, a number out
    of the type's range) is missing, never silently another number (PRIVACY.md)."""
    a = _flat(arr)
    have = a.type.value_type if pa.types.is_dictionary(a.type) else a.type
    want = t.value_type if pa.types.is_dictionary(t) else t
    if have == want or pa.types.is_null(want):
        return a
    a = _decode(a)
    n = len(a)
    if pa.types.is_null(a.type):
        return _null(n, want)
    if pa.types.is_integer(want) or pa.types.is_floating(want) or pa.types.is_boolean(want):
        return _to_number(a, want)
    try:
        return pc.cast(a, want)  # numbers to text, timestamps between units: exact
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return _null(n, want)


def _to_number(a: pa.Array, want: pa.DataType) -> pa.Array:
    text_type = pa.types.is_string(a.type) or pa.types.is_large_string(a.type)
    if text_type and pa.types.is_boolean(want):
        word = pc.utf8_trim_whitespace(pc.utf8_lower(a))
        true = pc.is_in(word, value_set=pa.array(["true", "1"]))
        false = pc.is_in(word, value_set=pa.array(["false", "0"]))
        return pc.if_else(true, True, pc.if_else(false, pa.scalar(False),
                                                 pa.scalar(None, pa.bool_())))
    if text_type:
        try:
            a = pc.cast(a, pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            text = pc.utf8_lower(a)
            ok = pc.fill_null(pc.match_substring_regex(text, _NUMBER_TEXT), False)
            a = pc.cast(pc.if_else(ok, pc.utf8_trim_whitespace(text), pa.scalar(None, a.type)),
                        pa.float64())
    elif not (pa.types.is_integer(a.type) or pa.types.is_floating(a.type)
              or pa.types.is_boolean(a.type)):
        return _null(len(a), want)
    try:
        return pc.cast(a, want)  # safe: raises instead of truncating or wrapping
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    x = np.asarray(pc.cast(a, pa.float64(), safe=False).to_numpy(zero_copy_only=False),
                   dtype=np.float64)
    if pa.types.is_floating(want):
        return pa.array(x, type=want, from_pandas=True)
    info = np.iinfo(want.to_pandas_dtype()) if pa.types.is_integer(want) else None
    ok = np.isfinite(x) & (x == np.floor(x))
    if info is not None:
        ok &= (x >= info.min) & (x <= info.max)
    else:
        ok &= (x == 0) | (x == 1)
    return pa.array(np.where(ok, x, 0), mask=~ok).cast(want)


def conform_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with exactly the columns of ``schema``, each conformed by
    :func:`conform_array`; a column the batch lacks is all missing."""
    if batch.schema.names == schema.names and all(
            _same_kind(batch.schema.field(i).type, f.type) for i, f in enumerate(schema)):
        return batch
    n = batch.num_rows
    names = batch.schema.names
    arrays = [conform_array(batch.column(names.index(f.name)), f.type) if f.name in names
              else _null(n, f.type.value_type if pa.types.is_dictionary(f.type) else f.type)
              for f in schema]
    return pa.RecordBatch.from_arrays(arrays, names=schema.names)


def _same_kind(have: pa.DataType, want: pa.DataType) -> bool:
    h = have.value_type if pa.types.is_dictionary(have) else have
    w = want.value_type if pa.types.is_dictionary(want) else want
    return bool(h == w)


class _Failed:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


_DONE = object()


def prefetch(make: Callable[[], Iterator[Any]], depth: int) -> Generator[Any, None, None]:
    """Items of ``make()`` produced by a background thread at most ``depth`` items ahead.

    Errors are re-raised in the consumer. Closing the generator (or an exception in the
    consumer, e.g. Ctrl-C) stops and joins the thread before returning.
    """
    q: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            for item in make():
                if not put(item):
                    return
        except BaseException as exc:  # handed to the consumer
            put(_Failed(exc))
            return
        put(_DONE)

    thread = threading.Thread(target=run, name="dpframe-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, _Failed):
                raise item.exc
            yield item
    finally:
        stop.set()
        while thread.is_alive():
            with contextlib.suppress(queue.Empty):
                q.get(timeout=0.05)
        thread.join()


def _infer_format(paths: Sequence[str]) -> str:
    kinds = set()
    for p in paths:
        name = p.lower()
        for comp in (".gz", ".bz2", ".zst", ".lz4"):
            if name.endswith(comp):
                name = name[: -len(comp)]
        kinds.add(_FORMATS.get(os.path.splitext(name)[1], "?"))
    if len(kinds) != 1 or "?" in kinds:
        raise ValidationError("cannot tell the input format from the file names; pass "
                              "format='parquet', 'csv' or 'ipc'")
    return kinds.pop()


def _numeric(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t))


def _lenient_csv_format(fmt: Any, text: Sequence[str]) -> ds.CsvFileFormat:
    """``fmt`` (a CSV format or ``"csv"``) reading the columns ``text`` as text and skipping
    rows with the wrong number of fields: reading it never fails on a value, so no error can
    quote one."""
    base = fmt if isinstance(fmt, ds.CsvFileFormat) else ds.CsvFileFormat()
    opts = base.default_fragment_scan_options
    conv = opts.convert_options
    convert = pacsv.ConvertOptions(
        column_types={**dict(conv.column_types), **{c: pa.string() for c in text}},
        null_values=conv.null_values, true_values=conv.true_values,
        false_values=conv.false_values, strings_can_be_null=conv.strings_can_be_null,
        check_utf8=conv.check_utf8)
    p = base.parse_options
    parse = pacsv.ParseOptions(delimiter=p.delimiter, quote_char=p.quote_char,
                               double_quote=p.double_quote, escape_char=p.escape_char,
                               newlines_in_values=p.newlines_in_values,
                               ignore_empty_lines=p.ignore_empty_lines,
                               invalid_row_handler=lambda _row: "skip")
    return ds.CsvFileFormat(parse_options=parse, convert_options=convert,
                            read_options=opts.read_options)


def _open_dataset(source: Any, fmt: Any, partitioning: Any = None) -> ds.Dataset:
    """``ds.dataset(source, format=fmt)`` with typed errors that quote no value.

    A CSV schema is inferred with the declared numeric column types read as text and malformed
    rows skipped, then the declared types are put back: inferring it never fails on a value
    (text in a declared numeric column is missing when read, like everywhere else)."""
    is_csv = fmt == "csv" or isinstance(fmt, ds.CsvFileFormat)
    name = "CSV" if is_csv else str(getattr(fmt, "default_extname", fmt))
    try:
        if not is_csv:
            return ds.dataset(source, format=fmt, partitioning=partitioning)
        declared = dict(fmt.default_fragment_scan_options.convert_options.column_types) \
            if isinstance(fmt, ds.CsvFileFormat) else {}
        text = [c for c, t in declared.items() if _numeric(t)]
        probe = ds.dataset(source, format=_lenient_csv_format(fmt, text),
                           partitioning=partitioning)
        schema = pa.schema([f.with_type(declared.get(f.name, f.type)) for f in probe.schema])
        return ds.dataset(source, format=fmt, schema=schema, partitioning=partitioning)
    except (pa.ArrowException, OSError, ValueError, TypeError) as exc:  # may quote a value
        raise ValidationError(f"cannot open the input as {name} ({type(exc).__name__}): a file "
                              "is empty, truncated, corrupt or in another format, or an option "
                              "(format, partitioning) is invalid") from None


class DatasetSource:
    """Where a scan reads from: files (Parquet, CSV, Arrow IPC), a pyarrow Dataset or a Table.

    ``source`` is a path, a glob (``events/*.parquet``, ``**`` allowed), a folder, a list of
    paths, a ``pyarrow.dataset.Dataset`` or a ``pyarrow.Table``. ``format`` is inferred from
    the file names unless given (a name or a ``pyarrow.dataset.FileFormat``).
    """

    #: Whether string columns grouped by *public* keys are best read as Arrow dictionaries:
    #: true for files (Parquet stores them so: no hashing), false for sources that would have
    #: to hash every row to build one (a plain string column is looked up directly instead).
    dictionary_public_keys = True

    def __init__(self, source: Any, *, format: str | ds.FileFormat | None = None,
                 columns: Sequence[str] | None = None,
                 partitioning: Any = None) -> None:
        self._files: list[str] | None = None
        self._format: str | ds.FileFormat | None = None
        self._partitioning = partitioning
        if isinstance(source, ds.Dataset):
            self._dataset = source
            if isinstance(source, ds.FileSystemDataset) and partitioning is None:
                self._files = list(source.files)
                self._format = source.format
        elif isinstance(source, pa.Table | pa.RecordBatch):
            self._dataset = ds.dataset(pa.Table.from_batches([source])
                                       if isinstance(source, pa.RecordBatch) else source)
        elif isinstance(source, pd.DataFrame):
            try:
                table = pa.Table.from_pandas(source, preserve_index=False)
            except (pa.ArrowException, ValueError, TypeError):  # the message may quote a value
                raise ValidationError("cannot convert the DataFrame to Arrow (a column mixes "
                                      "types or its names are not unique): query it with "
                                      "df.dp(...) instead") from None
            self._dataset = ds.dataset(table)
        else:
            try:
                given = [source] if isinstance(source, str | os.PathLike) else list(source)
                paths = [os.fsdecode(p) for p in given]
            except TypeError:
                raise ValidationError("scan needs a path, a glob, a folder, a list of them, a "
                                      "pyarrow Dataset or a pyarrow Table") from None
            files: list[str] = []
            dirs: list[str] = []
            for s in paths:
                if any(ch in s for ch in "*?["):
                    files.extend(sorted(m for m in _glob.glob(s, recursive=True)
                                        if os.path.isfile(m)))
                elif os.path.isdir(s):
                    dirs.append(s)
                elif os.path.isfile(s):
                    files.append(s)
                else:
                    raise ValidationError(f"no such file or folder: {s}")
            if dirs:
                if files or len(dirs) > 1:
                    raise ValidationError("pass one folder, or files and globs, not both")
                probe = _open_dataset(dirs[0], format if format is not None else "parquet",
                                      partitioning=partitioning)
                if partitioning is None:
                    files = list(probe.files)
            if not files and not dirs:
                raise ValidationError(f"no file matches {paths[0] if paths else ''}")
            fmt = format if format is not None else _infer_format(files or ["x.parquet"])
            self._format = fmt
            if dirs and partitioning is not None:
                self._dataset = probe
            else:
                self._files = files
                self._dataset = _open_dataset(files, fmt)
        self._columns = list(columns) if columns is not None else None
        names = self._dataset.schema.names
        if len(set(names)) != len(names):
            raise ValidationError("a column name appears more than once: give each column a "
                                  "unique name")
        if self._columns is not None:
            unknown = [c for c in self._columns if c not in names]
            if unknown:
                raise ValidationError(f"unknown column {unknown[0]!r}")

    @property
    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of the visible columns."""
        s = self._dataset.schema
        if self._columns is None:
            return s
        return pa.schema([s.field(c) for c in self._columns])

    @property
    def files(self) -> list[str] | None:
        """The files read, when the source is files."""
        return None if self._files is None else list(self._files)

    def _is_parquet(self) -> bool:
        f = self._format
        return f == "parquet" or isinstance(f, ds.ParquetFileFormat)

    def _csv_read_format(self) -> ds.CsvFileFormat:
        """The CSV format used to *read*: every numeric column as text (conformed to the
        public schema batch by batch, so a malformed value far down a file is missing instead
        of an error quoting it), and rows with the wrong number of fields skipped."""
        dataset = self._dataset
        base = dataset.format if isinstance(dataset, ds.FileSystemDataset) else self._format
        return _lenient_csv_format(base, [f.name for f in dataset.schema if _numeric(f.type)])

    def batches(self, columns: Sequence[str], batch_size: int,
                dictionary: Sequence[str] = ()) -> Generator[pa.RecordBatch, None, None]:
        """Record batches of ``columns`` in the public schema's types; Parquet string columns
        in ``dictionary`` are read as Arrow dictionaries (no re-hashing of repeated strings).

        Each file is read in its own physical schema and every batch is conformed to the
        dataset's (public) schema by :func:`conform_batch`: a value that does not conform (text
        in a numeric column of one file, a malformed CSV field) is missing, a column a file
        lacks is all missing. Nothing is raised on values, and no error quotes one.

        Parquet is read one row group at a time by a background thread that stays at most
        ``PREFETCH`` batches ahead, so memory is bounded however slow the consumer is (pyarrow's
        own scanner buffers up to about a gigabyte ahead of a slow consumer). Other formats use
        pyarrow's scanner with small read-ahead.
        """
        cols = list(columns)
        expected = pa.schema([self._dataset.schema.field(c) for c in cols])
        for batch in self._raw_batches(cols, batch_size, dictionary):
            yield conform_batch(batch, expected)

    def _raw_batches(self, cols: list[str], batch_size: int, dictionary: Sequence[str]
                     ) -> Generator[pa.RecordBatch, None, None]:
        dataset = self._dataset
        if dictionary and self._files is not None and self._format == "parquet":
            fmt = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(
                dictionary_columns=set(dictionary)))
            dataset = ds.dataset(self._files, format=fmt)
        if not isinstance(dataset, ds.FileSystemDataset):
            yield from dataset.to_batches(columns=cols, batch_size=batch_size,
                                          batch_readahead=BATCH_READAHEAD,
                                          fragment_readahead=FRAGMENT_READAHEAD)
            return
        parquet = isinstance(dataset.format, ds.ParquetFileFormat)
        lenient = self._csv_read_format() if isinstance(dataset.format,
                                                        ds.CsvFileFormat) else None

        def fragments() -> Iterator[pa.RecordBatch]:
            for frag in dataset.get_fragments():
                # a partitioned folder's key columns are in the paths, not in the files
                keys = ds.get_partition_keys(frag.partition_expression)
                if lenient is not None:  # CSV: the same file, read without failing on values
                    frag = lenient.make_fragment(frag.path, frag.filesystem,
                                                 partition_expression=frag.partition_expression)
                names = frag.physical_schema.names
                present = [c for c in cols if c in names]
                implied = [c for c in cols if c in keys and c not in names]
                parts = frag.split_by_row_group() if parquet else [frag]
                for part in parts:
                    for batch in part.to_batches(columns=present, batch_size=batch_size,
                                                 batch_readahead=2, fragment_readahead=1):
                        for c in implied:
                            batch = batch.append_column(
                                c, pa.repeat(pa.scalar(keys[c]), batch.num_rows))
                        yield batch

        yield from prefetch(fragments, PREFETCH)

    def row_count(self) -> int | None:
        """The number of rows when metadata gives it cheaply (Parquet, IPC, memory), else None."""
        if self._files is None or self._is_parquet() or self._format in ("ipc", "arrow",
                                                                         "feather"):
            return int(self._dataset.count_rows())
        return None

    def size_bytes(self) -> int | None:
        """Total size of the files on disk, when the source is files."""
        if self._files is None:
            return None
        try:
            return sum(os.path.getsize(f) for f in self._files)
        except OSError:
            return None


# -- accumulation ------------------------------------------------------------------------------

class _KeyIndex:
    """Observed private keys across blocks: a growing key -> global position dictionary."""

    def __init__(self) -> None:
        self.keys: list[tuple[object, ...]] = []
        self._pos: dict[tuple[object, ...], int] = {}

    def index(self, keys: list[tuple[object, ...]]) -> I64:
        out = np.empty(len(keys), dtype=np.int64)
        for i, k in enumerate(keys):
            j = self._pos.get(k)
            if j is None:
                j = self._pos[k] = len(self.keys)
                self.keys.append(k)
            out[i] = j
        return out


def _add_into(acc: np.ndarray | None, new: np.ndarray, index: I64 | None,
              size: int) -> np.ndarray:
    """``acc + new`` (``new``'s rows scattered to ``index``), exact: int64 while far from
    overflow, Python integers beyond."""
    shape = (size, *new.shape[1:])
    if acc is None:
        acc = np.zeros(shape, dtype=np.int64)
    elif acc.shape[0] < size:
        grown = np.zeros(shape, dtype=acc.dtype)
        grown[: acc.shape[0]] = acc
        acc = grown
    big = new.dtype == object or acc.dtype == object or (
        new.size and int(np.abs(new).max()) >= _OVERFLOW_GUARD) or (
        acc.size and int(np.abs(acc).max()) >= _OVERFLOW_GUARD)
    if big:
        acc = acc.astype(object)
        new = new.astype(object)
    if index is None:
        acc[: new.shape[0]] += new
    else:  # add.at: rows mapped to one position add up (a plain ``acc[index] += new`` would
        np.add.at(acc, index, new)  # keep only the last of them)
    return acc


class _Totals:
    """Sum of the exact aggregates of blocks holding disjoint units (a streaming ``merge``)."""

    def __init__(self) -> None:
        self.values: dict[tuple[object, ...], np.ndarray] = {}
        self.counts: dict[tuple[object, ...], np.ndarray] = {}
        self.unit_counts: np.ndarray | None = None
        self.distinct: dict[tuple[object, ...], tuple[np.ndarray, np.ndarray]] = {}
        self.blocks = 0

    def add(self, agg: ExactAggregates, index: I64 | None, size: int) -> None:
        for k, pairs in agg.distinct.items():  # sets: united, never added
            self.distinct[k] = union_pairs(self.distinct.get(k), None, pairs, index)
        for k, v in agg.values.items():
            self.values[k] = _add_into(self.values.get(k), v, index, size)
        for k, v in agg.counts.items():
            self.counts[k] = _add_into(self.counts.get(k), v, index, size)
        if agg.unit_counts is not None:
            self.unit_counts = _add_into(self.unit_counts, agg.unit_counts, index, size)
        self.blocks += 1

    def result(self, keys: list[tuple[object, ...]]) -> ExactAggregates:
        n = len(keys)

        def fit(a: np.ndarray) -> np.ndarray:
            if a.shape[0] == n:
                return a
            out = np.zeros((n, *a.shape[1:]), dtype=a.dtype)
            out[: a.shape[0]] = a
            return out

        return ExactAggregates(list(keys), {k: fit(v) for k, v in self.values.items()},
                               {k: fit(v) for k, v in self.counts.items()},
                               None if self.unit_counts is None else fit(self.unit_counts),
                               dict(self.distinct))


# -- the backend ---------------------------------------------------------------------------------

Block: TypeAlias = pa.RecordBatch | pa.Table


class ArrowBackend:
    """Exact aggregates of a :class:`DatasetSource`, batch by batch (see the module docstring).

    ``batch_size``: rows per record batch; ``progress``: a progress bar on stderr (None: only
    when stderr is a terminal); ``partition_rows``: target rows per spill partition for
    privacy-unit queries (memory of pass 2); ``partitions``: force the number of partitions;
    ``spill_dir``: where the temporary partition files go (default: the system temp folder).
    """

    def __init__(self, source: DatasetSource, *, batch_size: int = DEFAULT_BATCH_SIZE,
                 progress: bool | None = None, partition_rows: int = DEFAULT_PARTITION_ROWS,
                 partitions: int | None = None,
                 spill_dir: str | os.PathLike[str] | None = None) -> None:
        for name, val in (("batch_size", batch_size), ("partition_rows", partition_rows)):
            if isinstance(val, bool) or not isinstance(val, int) or val < 1:
                raise ValidationError(f"{name} must be a positive integer")
        if partitions is not None and (isinstance(partitions, bool) or not isinstance(
                partitions, int) or not 1 <= partitions <= MAX_PARTITIONS):
            raise ValidationError(f"partitions must be an integer in [1, {MAX_PARTITIONS}]")
        self.source = source
        self.batch_size = batch_size
        self.progress = progress
        self.partition_rows = partition_rows
        self.partitions = partitions
        self.spill_dir = None if spill_dir is None else os.fspath(spill_dir)

    # -- Backend protocol ------------------------------------------------------------------------
    def schema(self) -> dict[str, ColumnKind]:
        return {f.name: arrow_kind(f.type) for f in self.source.arrow_schema}

    def categories(self, column: str) -> tuple[object, ...] | None:
        """Arrow dictionaries come from the data, not from a declaration: never public keys."""
        return None

    def exact(self, request: ComputeRequest, gen: np.random.Generator) -> ExactAggregates:
        q = request
        agg = self._two_pass(request, gen) if q.privacy_unit else self._streaming(request, gen)
        return agg

    # -- helpers ----------------------------------------------------------------------------------
    @staticmethod
    def _measure_columns(request: ComputeRequest) -> list[str]:
        cols: list[str] = []
        for r in request.requests:
            if r.column is not None and r.column not in cols:
                cols.append(r.column)
        return cols

    def _dictionary_keys(self, q: Any) -> Sequence[str]:
        """The group-key columns worth reading as Arrow dictionaries (see
        ``DatasetSource.dictionary_public_keys``); unit columns never are (they are hashed)."""
        return q.by if q.private_keys or self.source.dictionary_public_keys else ()

    def _dictionary_columns(self, cols: Sequence[str]) -> list[str]:
        schema = self.source.arrow_schema
        out = []
        for c in cols:
            t = schema.field(c).type
            if pa.types.is_string(t) or pa.types.is_large_string(t):
                out.append(c)
        return out

    def _bar(self, total: int | None, desc: str, unit: str) -> Any:
        from tqdm.auto import tqdm

        enabled = self.progress if self.progress is not None else sys.stderr.isatty()
        return tqdm(total=total, desc=desc, unit=unit, unit_scale=True, disable=not enabled,
                    leave=False, file=sys.stderr, dynamic_ncols=True)

    def _batches(self, cols: list[str], dictionary: Sequence[str], desc: str
                 ) -> Generator[pa.RecordBatch, None, None]:
        total = self.source.row_count() if (self.progress or sys.stderr.isatty()) else None
        bar = self._bar(total, desc, "rows")
        try:
            with contextlib.closing(self.source.batches(cols, self.batch_size, dictionary)) as it:
                for batch in it:
                    yield batch
                    bar.update(batch.num_rows)
        finally:
            bar.close()

    @staticmethod
    def _getter(block: Block) -> Callable[[str], tuple[np.ndarray, Bools]]:
        cache: dict[str, tuple[np.ndarray, Bools]] = {}

        def get(name: str) -> tuple[np.ndarray, Bools]:
            if name not in cache:
                cache[name] = numeric_array(block.column(name))
            return cache[name]

        return get

    @staticmethod
    def _public_codes(block: Block, by: tuple[str, ...],
                      keys: dict[str, tuple[object, ...]]) -> I64:
        per_col = [public_codes(block.column(col), keys[col]) for col in by]
        if len(per_col) == 1:
            return per_col[0]
        return combine_codes(per_col, [len(keys[col]) for col in by])

    @staticmethod
    def _private_codes(block: Block, by: tuple[str, ...], index: _KeyIndex
                       ) -> tuple[I64, list[tuple[object, ...]], I64]:
        """Block-local codes, block-local keys, and their positions in the global key list."""
        per_col: list[I64] = []
        observed: list[list[object]] = []
        for col in by:
            codes, uniques = factorize(block.column(col))
            per_col.append(codes)
            observed.append(uniques)
        if len(by) == 1:
            local: list[tuple[object, ...]] = [(u,) for u in observed[0]]
            return per_col[0], local, index.index(local)
        sizes = [max(len(o), 1) for o in observed]
        combined = combine_codes(per_col, sizes)
        ok = combined >= 0
        codes = np.full(combined.size, -1, dtype=np.int64)
        if not ok.any():
            return codes, [], np.zeros(0, dtype=np.int64)
        sub, uniq = pd.factorize(combined[ok])
        codes[ok] = sub
        local = []
        for c in np.asarray(uniq):
            rest, tup = int(c), []
            for size, obs in zip(reversed(sizes), reversed(observed), strict=True):
                tup.append(obs[rest % size])
                rest //= size
            local.append(tuple(reversed(tup)))
        return codes, local, index.index(local)

    def _block(self, request: ComputeRequest, block: Block, totals: _Totals, key_index: _KeyIndex,
               public_keys: list[tuple[object, ...]], units: I64 | None,
               gen: np.random.Generator, precoded: bool = False) -> None:
        """compute_exact on one block of rows holding whole units, added to ``totals``."""
        totals.add(*self._block_aggregate(request, block, key_index, public_keys, units, gen,
                                          precoded))

    def _block_aggregate(self, request: ComputeRequest, block: Block, key_index: _KeyIndex,
                         public_keys: list[tuple[object, ...]], units: I64 | None,
                         gen: np.random.Generator, precoded: bool = False
                         ) -> tuple[ExactAggregates, I64 | None, int]:
        """compute_exact on one block: its aggregates, the positions of its keys in the global
        key list (private keys) and that list's size. With public keys (or none) and no
        sampling it touches no shared state, so blocks may run in parallel."""
        q = request
        n = block.num_rows
        index: I64 | None = None
        if not q.by:
            codes, keys = np.zeros(n, dtype=np.int64), public_keys
        elif not q.private_keys:
            if precoded:
                codes = np.asarray(block.column(_GROUP_CODE).to_numpy(zero_copy_only=False),
                                   dtype=np.int64)
            else:
                codes = self._public_codes(block, q.by, dict(q.keys))
            keys = public_keys
        else:
            codes, keys, index = self._private_codes(block, q.by, key_index)
        agg = compute_exact(request, codes, keys, units, self._getter(block), gen,
                            lambda name: value_hashes(block.column(name)))
        size = len(public_keys) if index is None else len(key_index.keys)
        return agg, index, size

    def _finish(self, request: ComputeRequest, totals: _Totals, key_index: _KeyIndex,
                public_keys: list[tuple[object, ...]], gen: np.random.Generator,
                empty: pa.Schema) -> ExactAggregates:
        if totals.blocks == 0:  # no row survived: zero aggregates of the right shapes
            block = empty.empty_table()
            units = np.zeros(0, dtype=np.int64) if request.privacy_unit else None
            self._block(request, block, totals, key_index, public_keys, units, gen,
                        precoded=_GROUP_CODE in empty.names)
        keys = key_index.keys if request.private_keys else public_keys
        return totals.result(keys)

    @staticmethod
    def _public_keys(request: ComputeRequest) -> list[tuple[object, ...]]:
        q = request
        if not q.by:
            return [()]
        if q.private_keys:
            return []
        return public_key_list([tuple(q.keys[c]) for c in q.by])

    # -- row-level: one streaming pass ------------------------------------------------------------
    def _streaming(self, request: ComputeRequest, gen: np.random.Generator) -> ExactAggregates:
        q = request
        cols = list(dict.fromkeys([*q.by, *self._measure_columns(request)]))
        public_keys = self._public_keys(request)
        totals, key_index = _Totals(), _KeyIndex()
        read_cols = cols or self.source.arrow_schema.names[:1]
        schema = None
        dict_cols = self._dictionary_columns(self._dictionary_keys(q))
        batches = self._batches(read_cols, dict_cols, "dpframe scan")
        # Public keys (or none) and no sampling: a block's aggregate depends on the block alone
        # and blocks add up exactly in any order, so WORKERS threads aggregate batches at once
        # (numpy and Arrow release the GIL). Private keys share the key index, and sampling
        # draws from one generator: those stay in order, one block at a time.
        parallel = WORKERS > 1 and not q.private_keys and q.sample_rate is None
        with contextlib.closing(batches):  # stops the reader at once on error or Ctrl-C
            if not parallel:
                for batch in batches:
                    schema = batch.schema
                    self._block(request, batch, totals, key_index, public_keys, None, gen)
            else:
                with ThreadPoolExecutor(WORKERS, thread_name_prefix="dpframe-block") as pool:
                    pending: deque[Future[tuple[ExactAggregates, I64 | None, int]]] = deque()
                    try:
                        for batch in batches:
                            schema = batch.schema
                            pending.append(pool.submit(self._block_aggregate, request, batch,
                                                       key_index, public_keys, None, gen))
                            while len(pending) > WORKERS:
                                totals.add(*pending.popleft().result())
                        while pending:
                            totals.add(*pending.popleft().result())
                    finally:
                        for f in pending:
                            f.cancel()
        if schema is None:
            schema = pa.schema([self.source.arrow_schema.field(c) for c in read_cols])
        return self._finish(request, totals, key_index, public_keys, gen, schema)

    # -- privacy units: two passes over keyed-hash partitions -------------------------------------
    def n_partitions(self) -> int:
        """Partitions for a privacy-unit query: enough for ``partition_rows`` rows each."""
        if self.partitions is not None:
            return self.partitions
        rows = self.source.row_count()
        if rows is None:
            size = self.source.size_bytes()
            rows = size // 16 if size is not None else None  # >= 16 bytes a CSV row, roughly
        if rows is None:
            return 16
        return max(1, min(MAX_PARTITIONS, math.ceil(rows / self.partition_rows)))

    def _spill_batch(self, request: ComputeRequest, batch: pa.RecordBatch) -> pa.RecordBatch | None:
        """The columns pass 2 needs, without rows every query would drop (missing unit, or an
        undeclared public key); public keys are replaced by their int32 group code."""
        q = request
        assert q.privacy_unit is not None
        keep = np.asarray(batch.column(q.privacy_unit).is_valid().to_numpy(
            zero_copy_only=False), dtype=bool)
        arrays: dict[str, pa.Array] = {}
        if q.by and not q.private_keys:
            codes = self._public_codes(batch, q.by, dict(q.keys))
            keep &= codes >= 0
            arrays[_GROUP_CODE] = pa.array(codes.astype(np.int32))
        elif q.by:
            for c in q.by:
                arrays[c] = _decode(batch.column(c))
        arrays[q.privacy_unit] = _decode(batch.column(q.privacy_unit))
        for c in self._measure_columns(request):
            if c not in arrays:
                arrays[c] = _decode(batch.column(c))
        out = pa.RecordBatch.from_pydict(arrays)
        if not keep.all():
            if not keep.any():
                return None
            out = out.filter(pa.array(keep))
        return out

    def _two_pass(self, request: ComputeRequest, gen: np.random.Generator) -> ExactAggregates:
        q = request
        assert q.privacy_unit is not None
        unit = q.privacy_unit
        cols = list(dict.fromkeys([*q.by, unit, *self._measure_columns(request)]))
        n_parts = self.n_partitions()
        hash_key = (int(gen.integers(0, 1 << 63)), int(gen.integers(0, 1 << 63)))
        public_keys = self._public_keys(request)
        totals, key_index = _Totals(), _KeyIndex()
        dict_cols = self._dictionary_columns(self._dictionary_keys(q))
        spill_schema: pa.Schema | None = None

        def process(block: pa.Table) -> None:
            units = unit_codes(block.column(unit))
            self._block(request, block, totals, key_index, public_keys, units, gen,
                        precoded=_GROUP_CODE in block.schema.names)

        if n_parts == 1:  # everything is one partition: keep it in memory, no spill
            parts: list[pa.RecordBatch] = []
            with contextlib.closing(self._batches(cols, dict_cols, "dpframe scan")) as batches:
                for batch in batches:
                    sb = self._spill_batch(request, batch)
                    if sb is not None:
                        parts.append(sb)
                        spill_schema = sb.schema
            if parts:
                process(pa.Table.from_batches(parts).combine_chunks())
        else:
            tmp = tempfile.mkdtemp(prefix="dpframe-spill-", dir=self.spill_dir)
            writers: dict[int, pa.ipc.RecordBatchFileWriter] = {}
            sinks: dict[int, Any] = {}
            try:
                batches = self._batches(cols, dict_cols, "dpframe scan, pass 1/2")
                with contextlib.closing(batches):
                    for batch in batches:
                        sb = self._spill_batch(request, batch)
                        if sb is None:
                            continue
                        spill_schema = sb.schema
                        part = (unit_hash(sb.column(unit), hash_key)
                                % np.uint64(n_parts)).astype(np.uint16)
                        order = np.argsort(part, kind="stable")  # a radix sort on 16 bits
                        bounds = np.searchsorted(part[order], np.arange(n_parts + 1))
                        sorted_batch = sb.take(pa.array(order))
                        for p in range(n_parts):
                            lo, hi = int(bounds[p]), int(bounds[p + 1])
                            if hi <= lo:
                                continue
                            if p not in writers:
                                sinks[p] = pa.OSFile(os.path.join(tmp, f"part-{p:05d}.arrow"), "wb")
                                writers[p] = pa.ipc.new_file(sinks[p], sb.schema)
                            writers[p].write_batch(sorted_batch.slice(lo, hi - lo))
                for p in list(writers):
                    writers.pop(p).close()
                    sinks.pop(p).close()
                pa.default_memory_pool().release_unused()  # pass 1's buffers, before pass 2
                bar = self._bar(n_parts, "dpframe scan, pass 2/2", "partitions")
                try:
                    for p in range(n_parts):
                        path = Path(tmp) / f"part-{p:05d}.arrow"
                        if path.exists():
                            with pa.memory_map(str(path)) as src:
                                table = pa.ipc.open_file(src).read_all()
                            process(table.combine_chunks())
                            del table
                            path.unlink()
                        bar.update(1)
                finally:
                    bar.close()
            finally:
                for w in writers.values():  # only after another error
                    with contextlib.suppress(Exception):
                        w.close()
                for s in sinks.values():
                    with contextlib.suppress(Exception):
                        s.close()
                shutil.rmtree(tmp, ignore_errors=True)
        if spill_schema is None:
            fields = []
            if q.by and not q.private_keys:
                fields.append(pa.field(_GROUP_CODE, pa.int32()))
            schema = self.source.arrow_schema
            for c in cols:
                if c in q.by and not q.private_keys:
                    continue
                t = schema.field(c).type
                fields.append(pa.field(c, t.value_type if pa.types.is_dictionary(t) else t))
            spill_schema = pa.schema(fields)
        return self._finish(request, totals, key_index, public_keys, gen, spill_schema)


__all__ = ["ArrowBackend", "DatasetSource", "arrow_kind", "dictionary_codes", "factorize",
           "numeric_array", "public_codes", "unit_codes", "unit_hash"]
