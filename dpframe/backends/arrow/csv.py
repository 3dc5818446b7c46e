"""CSV column types: declared, never inferred from the values
(docs/privacy.md#behaviour-that-does-not-depend-on-the-data).

A CSV file holds text. A type inferred from the values would let one person's row decide a
query: one ``abc`` in a column of numbers made it text, and a sum over it was refused (a
refusal is a one-bit release); one ``1.5`` made it a float, and the sum switched from the
geometric mechanism (an integer result) to granular Laplace (a float). So every CSV column a
query reads is typed by a declaration: ``dpf.scan(path, types={...})`` (a mapping or a pandera
schema's dtypes), a ``CsvFileFormat`` whose ``ConvertOptions(column_types=...)`` names it, or a
release spec's ``[input] types`` (which the CLI hands to ``dpf.scan`` as ``types=``: one code
path). A query that reads a CSV column without a declared type is refused before anything is
charged; the decision depends on the declaration, the query and the files' header names (public
schema), never on a value.

One rule for the values, in the CLI and in Python alike: each value is converted to its
declared type on its own, and a value that does not spell one is missing
(:func:`~dpframe.backends.blocks.arrow_conform.conform_array`). No count of such values exists
anywhere: not in a warning, a log line, an error or the metadata.

The second half of this module is the CSV *reader's* stream filters (moved here from
``source.py``, architecture review R4): Arrow's CSV parser is fed through them so that a file
reads the same whatever its block boundaries. They handle these deviations from RFC 4180:
quoted fields whose quotes do not balance on a line (a line is passed on only once its quoting
balances, :class:`_BalancedLines`), a UTF-8 byte-order mark, ``skip_rows`` counted in physical
lines, rows longer than the read block (re-read with growing blocks up to
:data:`MAX_CSV_BLOCK`), blank files, and rows with the wrong number of fields (skipped: the
value model makes them missing, never an error that could quote a value).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds

from ...errors import ValidationError

#: The type names a declaration may use, as messages show them: Arrow's names
#: (``pyarrow.type_for_alias``), the vocabulary of a release spec's ``[input] types`` too.
TYPE_NAMES = "int64, float64, string, bool, date32, timestamp[s], ..."


def _readable(t: pa.DataType) -> bool:
    """Whether a CSV field can spell a value of ``t``: numbers, booleans, text, bytes, dates,
    times, durations, decimals (not null, nested or dictionary types)."""
    kinds = (pa.types.is_integer, pa.types.is_floating, pa.types.is_boolean,
             pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
             pa.types.is_large_binary, pa.types.is_date, pa.types.is_timestamp,
             pa.types.is_time, pa.types.is_duration, pa.types.is_decimal)
    return any(kind(t) for kind in kinds)


def _from_dtype(given: Any) -> pa.DataType | None:
    """The Arrow type of a numpy or pandas dtype (a pandera column's), None when there is none
    a CSV field can spell (object, category)."""
    try:
        dt = pd.api.types.pandas_dtype(given)
    except (TypeError, ValueError):
        return None
    if isinstance(dt, pd.ArrowDtype):
        return dt.pyarrow_dtype
    if isinstance(dt, pd.StringDtype):
        return pa.string()
    if isinstance(dt, pd.DatetimeTZDtype):
        return pa.timestamp(dt.unit, tz=str(dt.tz))
    base = getattr(dt, "numpy_dtype", dt)  # nullable Int64, boolean, Float64
    if not isinstance(base, np.dtype) or base.kind not in "biufmMU":
        return None
    return pa.string() if base.kind == "U" else pa.from_numpy_dtype(base)


def csv_type(column: str, given: object) -> pa.DataType:
    """The declared type of the CSV column ``column``: an Arrow type name (``"int64"``,
    ``"float64"``, ``"string"``, ``"bool"``, ``"date32"``, ``"timestamp[s]"``: the names of
    ``pyarrow.type_for_alias``, as in a release spec), a ``pyarrow.DataType``, or a numpy or
    pandas dtype object (a pandera column's). A ValidationError names the column and the
    declaration, never a value."""
    t: pa.DataType | None
    if isinstance(given, str):
        try:
            t = pa.type_for_alias(given)
        except (ValueError, KeyError):
            raise ValidationError(f"unknown Arrow type name {given!r} for column {column!r}: "
                                  f"use {TYPE_NAMES}") from None
    elif isinstance(given, pa.DataType):
        t = given
    else:
        t = _from_dtype(given)
    if t is None or not _readable(t):
        raise ValidationError(f"column {column!r}: the declared type is none a CSV field can "
                              f"spell; use a number, boolean, text, date or time type "
                              f"({TYPE_NAMES})")
    return t


def csv_types(types: Mapping[str, object]) -> dict[str, pa.DataType]:
    """``types`` (column -> declared type, :func:`csv_type`) as Arrow types."""
    if not isinstance(types, Mapping):
        raise ValidationError("types must be a mapping {column: type name} (or a pandera "
                              "DataFrameSchema)")
    out: dict[str, pa.DataType] = {}
    for column, given in types.items():
        if not isinstance(column, str):
            raise ValidationError("types: columns are named by strings")
        out[column] = csv_type(column, given)
    return out


def _is_csv(d: ds.Dataset) -> bool:
    return isinstance(d, ds.FileSystemDataset) and isinstance(d.format, ds.CsvFileFormat)


def _format_declared(leaf: ds.FileSystemDataset) -> set[str]:
    """The columns the CSV format of ``leaf`` declares (``ConvertOptions(column_types=...)``)."""
    return set(leaf.format.default_fragment_scan_options.convert_options.column_types)


def declare(dataset: ds.Dataset, leaves: Iterable[ds.Dataset], types: Mapping[str, pa.DataType],
            headers: Iterable[Iterable[str]]) -> tuple[ds.Dataset, frozenset[str]]:
    """``dataset`` (whose leaf datasets are ``leaves``; the column names of its CSV files'
    headers are ``headers``) with its CSV columns typed by declaration, and the columns no
    declaration types.

    A column is a CSV column when a CSV file's header names it (a partition key read from the
    paths is not); it is declared by ``types`` or by the ``column_types`` of every CSV format
    of the dataset. A CSV column that is not declared is text in the schema (no type is
    inferred from the values: the first block's values set nothing) and a query that reads it
    is refused (:meth:`DatasetSource.check_declared`)."""
    csv = [d for d in leaves if _is_csv(d)]
    _check_declaration(dataset, csv, types)
    if not csv:
        return dataset, frozenset()
    read = {name for header in headers for name in header}
    declared = set(types).union(set.intersection(*(_format_declared(d) for d in csv)))
    undeclared = frozenset(c for c in dataset.schema.names if c in read and c not in declared)
    if not isinstance(dataset, ds.FileSystemDataset):
        return dataset, undeclared
    return _retyped(dataset, types, undeclared), undeclared


def _check_declaration(dataset: ds.Dataset, csv: list[ds.Dataset],
                       types: Mapping[str, pa.DataType]) -> None:
    """Refuse ``types`` for a dataset without CSV files, for a union (its children declare
    theirs in their formats), and for columns the dataset does not have."""
    if not types:
        return
    if not csv:
        raise ValidationError("column types are declared for CSV files only: Parquet and IPC "
                              "files and tables carry their own types")
    if not isinstance(dataset, ds.FileSystemDataset):
        raise ValidationError("types= declares the columns of CSV files or of one CSV "
                              "dataset: declare a union's in each child's "
                              "CsvFileFormat(convert_options=ConvertOptions("
                              "column_types=...))")
    unknown = [c for c in types if c not in dataset.schema.names]
    if unknown:
        raise ValidationError(f"a type is declared for {unknown[0]!r}, which is not a "
                              "column of the CSV files")


def _retyped(dataset: ds.FileSystemDataset, types: Mapping[str, pa.DataType],
             undeclared: frozenset[str]) -> ds.FileSystemDataset:
    """``dataset`` with the columns of ``types`` in their declared types and the
    ``undeclared`` ones text (its files, format and partitions unchanged)."""
    schema = pa.schema([f.with_type(types[f.name]) if f.name in types
                        else f.with_type(pa.string()) if f.name in undeclared else f
                        for f in dataset.schema])
    if schema.equals(dataset.schema):
        return dataset
    return ds.FileSystemDataset(list(dataset.get_fragments()), schema, dataset.format,
                                dataset.filesystem, root_partition=dataset.partition_expression)


def undeclared_message(columns: Iterable[str]) -> str:
    """The refusal of a query reading the CSV ``columns`` that no declaration types (names
    only, never a value)."""
    cols = list(columns)
    example = ", ".join(f"{c!r}: 'int64'" for c in cols)
    which = (f"column {cols[0]!r} has" if len(cols) == 1 else
             f"columns {', '.join(repr(c) for c in cols)} have")
    return (f"the CSV {which} no declared type: a "
            f"CSV holds text, and a type inferred from the values would let one row decide "
            f"whether a query is answered and by which mechanism. Declare the type of every "
            f"column the queries read: dpf.scan(..., types={{{example}}}) with Arrow type "
            f"names ({TYPE_NAMES})")


__all__ = ["TYPE_NAMES", "csv_type", "csv_types", "declare", "undeclared_message"]


# -- the CSV reader: lenient formats, block sizes and the stream filters ---------------------

#: The largest CSV block a file is re-read with when one of its rows does not fit the block.
MAX_CSV_BLOCK = 1 << 30

_T = TypeVar("_T")
_UTF8 = {"utf8", "utf-8"}


def _lenient_csv_format(fmt: Any, text: Sequence[str]) -> ds.CsvFileFormat:
    """``fmt`` (a CSV format or ``"csv"``) reading the columns ``text`` as raw bytes (conformed
    to their public type batch by batch: text that is not UTF-8, or does not spell a value of
    the type, is missing) and skipping rows with the wrong number of fields: reading it never
    fails on a value, so no error can quote one."""
    base = fmt if isinstance(fmt, ds.CsvFileFormat) else ds.CsvFileFormat()
    opts = base.default_fragment_scan_options
    conv = opts.convert_options
    convert = pacsv.ConvertOptions(
        column_types={**dict(conv.column_types), **{c: pa.binary() for c in text}},
        null_values=conv.null_values, true_values=conv.true_values,
        false_values=conv.false_values, strings_can_be_null=conv.strings_can_be_null,
        check_utf8=conv.check_utf8, decimal_point=conv.decimal_point,
        timestamp_parsers=conv.timestamp_parsers)
    p = base.parse_options
    parse = pacsv.ParseOptions(delimiter=p.delimiter, quote_char=p.quote_char,
                               double_quote=p.double_quote, escape_char=p.escape_char,
                               newlines_in_values=p.newlines_in_values,
                               ignore_empty_lines=p.ignore_empty_lines,
                               invalid_row_handler=lambda _row: "skip")
    return ds.CsvFileFormat(parse_options=parse, convert_options=convert,
                            read_options=opts.read_options)


def _block_size(fmt: ds.CsvFileFormat) -> int:
    return int(fmt.default_fragment_scan_options.read_options.block_size)


def _with_block_size(fmt: ds.CsvFileFormat, size: int) -> ds.CsvFileFormat:
    """``fmt`` reading blocks of ``size`` bytes."""
    if size == _block_size(fmt):
        return fmt
    opts = fmt.default_fragment_scan_options
    r = opts.read_options
    read = pacsv.ReadOptions(use_threads=r.use_threads, block_size=size, skip_rows=r.skip_rows,
                             skip_rows_after_names=r.skip_rows_after_names,
                             column_names=r.column_names,
                             autogenerate_column_names=r.autogenerate_column_names,
                             encoding=r.encoding)
    return ds.CsvFileFormat(parse_options=fmt.parse_options,
                            convert_options=opts.convert_options, read_options=read)


def _straddles(exc: BaseException) -> bool:
    """Whether ``exc`` is Arrow's refusal of a CSV row longer than the read block."""
    return isinstance(exc, pa.ArrowInvalid) and "straddl" in str(exc)


# -- CSV lines whose quoting balances ---------------------------------------------------------

_BOM = b"\xef\xbb\xbf"
_NL, _CR = 10, 13
#: Bytes read from a CSV file at a time by :class:`_BalancedLines`.
_CHUNK = 1 << 20


@dataclass(frozen=True)
class _Quoting:
    """How a CSV dialect quotes and escapes, as bytes (None: not at all)."""

    delimiter: int
    quote: int | None
    double_quote: bool
    escape: int | None

    @classmethod
    def of(cls, parse: pacsv.ParseOptions) -> _Quoting | None:
        """The quoting of ``parse``; None when values may hold newlines (a quote then
        legitimately continues a row on the next lines, as Arrow reads it)."""
        if parse.newlines_in_values:
            return None
        q, e = parse.quote_char, parse.escape_char
        return cls(ord(parse.delimiter), ord(q) if q else None, bool(parse.double_quote),
                   ord(e) if e else None)


def _escaped_positions(b: np.ndarray, escape: int) -> np.ndarray:
    """The positions of the bytes of ``b`` an escape character makes literal: the byte after
    each run of an odd number of escape characters (Arrow's parser reads escapes alike inside
    and outside quotes)."""
    esc = np.flatnonzero(b == escape)
    if not esc.size:
        return esc
    ends = np.append(np.flatnonzero(np.diff(esc) != 1), esc.size - 1)
    starts = np.insert(ends[:-1] + 1, 0, 0)
    return np.asarray(esc[ends[(ends - starts) % 2 == 0]] + 1)


def _unbalanced(b: np.ndarray, term: np.ndarray, q: _Quoting) -> np.ndarray:
    """The indices of the lines of ``b`` (line ``k`` ends at ``term[k]``; the last may end at
    the end of ``b``) that Arrow's parser would continue on the next line: a line ending
    inside a quoted field, or whose newline is escaped.

    Arrow's parser opens a quoted field only at the start of a field (the line's start or
    after a delimiter) and closes it at a quote not doubled; after it, quotes are literal
    until the next delimiter. So, over the runs of consecutive (unescaped) quotes of a line,
    with doubled quotes: a run of even length leaves the state as it was; a run of odd length
    at a field's start toggles it (opens a field, or closes the open one); elsewhere it closes
    any open field. Without doubled quotes, a lone quote at a field's start toggles and any
    other run closes. A line is unbalanced when an odd number of toggles follows its last
    closing run."""
    escaped = _escaped_positions(b, q.escape) if q.escape is not None else np.empty(0, np.int64)
    bad = [np.searchsorted(term, np.intersect1d(term, escaped, assume_unique=True))]
    if q.quote is not None:
        quotes = np.flatnonzero(b == q.quote)
        if escaped.size:
            quotes = np.setdiff1d(quotes, escaped, assume_unique=True)
        if quotes.size:
            first = np.ones(quotes.size, bool)
            first[1:] = np.diff(quotes) != 1
            heads = np.flatnonzero(first)
            length = np.diff(np.append(heads, quotes.size))
            start = quotes[heads]
            before = b[np.maximum(start - 1, 0)]
            after_delimiter = before == q.delimiter
            if escaped.size:
                after_delimiter &= ~np.isin(start - 1, escaped)
            at_field_start = (start == 0) | (before == _NL) | (before == _CR) | after_delimiter
            odd = length % 2 == 1 if q.double_quote else length == 1
            toggle = at_field_start & odd
            close = ~toggle & (odd if q.double_quote else True)
            line = np.searchsorted(term, start)
            last = np.ones(line.size, bool)
            last[:-1] = line[1:] != line[:-1]
            anchor = close.copy()
            anchor[0] = True
            anchor[1:] |= line[1:] != line[:-1]
            index = np.arange(line.size)
            since = np.maximum.accumulate(np.where(anchor, index, -1))
            toggles = np.cumsum(toggle)
            count = toggles - toggles[since] + toggle[since]
            bad.append(line[last & (count % 2 == 1)])
    return bad[0] if len(bad) == 1 else np.unique(np.concatenate(bad))


def _balanced_lines(data: bytes, q: _Quoting) -> bytes:
    """``data`` (whole lines) without its lines whose quoting does not balance
    (:func:`_unbalanced`), each with its newline (``\\r``, ``\\n`` or ``\\r\\n``): every other
    line reads as one row, whatever the dropped ones held."""
    if (q.quote is None or q.quote not in data) and (q.escape is None or q.escape not in data):
        return data
    b = np.frombuffer(data, np.uint8)
    term = np.flatnonzero((b == _NL) | (b == _CR) if _CR in data else b == _NL)
    lines = _unbalanced(b, term, q)
    if not lines.size:
        return data
    n = b.size
    bounds = np.append(term, n)
    start = np.where(lines > 0, bounds[np.maximum(lines - 1, 0)] + 1, 0)
    end = np.minimum(bounds[lines] + 1, n)
    crlf = (end < n) & (b[end - 1] == _CR) & (b[np.minimum(end, n - 1)] == _NL)
    end = end + crlf
    delta = np.zeros(n + 1, np.int8)
    delta[start] += 1
    delta[end] -= 1
    return b[np.cumsum(delta[:-1]) == 0].tobytes()


class _ReadStream:
    """The file protocol ``pyarrow.csv.open_csv`` needs of a Python stream, beside ``read``."""

    closed = False

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.closed = True


class _BalancedLines(_ReadStream):
    """A binary stream of the lines of ``raw`` whose quoting balances (the others dropped by
    :func:`_balanced_lines`), read ``_CHUNK`` bytes at a time: memory holds a chunk and one
    line. A line longer than ``limit`` bytes (no read block holds it) is dropped too, without
    being held. ``read(n)`` gives ``n`` bytes until the end, as a file does."""

    def __init__(self, raw: Any, quoting: _Quoting, limit: int) -> None:
        self._raw = raw
        self._quoting = quoting
        self._limit = limit
        self._line = bytearray()  # the start of a line not yet ended
        self._out = bytearray()
        self._skipping = False  # inside a line past the limit
        self._end = False
        self._head = True

    def read(self, size: int = -1) -> bytes:
        while not self._end and (size < 0 or len(self._out) < size):
            self._fill()
        take = len(self._out) if size < 0 else min(size, len(self._out))
        got = bytes(self._out[:take])
        del self._out[:take]
        return got

    def _fill(self) -> None:
        chunk = self._raw.read(_CHUNK)
        if self._head:
            self._head = False
            if chunk[:3] == _BOM:  # Arrow skips it: the first line starts after it
                self._out += _BOM
                chunk = chunk[3:]
        if not chunk:
            self._end = True
            if self._line and not self._skipping:
                self._out += _balanced_lines(bytes(self._line), self._quoting)
            self._line.clear()
            return
        cut = max(chunk.rfind(b"\n"), chunk.rfind(b"\r", 0, len(chunk) - 1))
        if cut < 0:  # no line ends in the chunk
            self._hold(chunk)
            return
        first = min(i for i in (chunk.find(b"\n"), chunk.find(b"\r")) if i >= 0)
        if self._skipping or len(self._line) + first + 1 > self._limit:  # drop the line
            self._skipping = False
            self._line.clear()
            first += chunk[first: first + 2] == b"\r\n"
            chunk, cut = chunk[first + 1:], cut - first - 1
        whole = bytes(self._line) + chunk[: cut + 1] if self._line else chunk[: cut + 1]
        self._line = bytearray(chunk[cut + 1:])
        self._out += _balanced_lines(whole, self._quoting)

    def _hold(self, chunk: bytes) -> None:
        """Keep ``chunk`` (no line ends in it) as part of the current line, unless the line
        is past the limit: then it is dropped."""
        if self._skipping:
            return
        self._line += chunk
        if len(self._line) > self._limit:
            self._line.clear()
            self._skipping = True


class _Prefixed(_ReadStream):
    """A binary stream of ``head`` then the rest of ``raw``."""

    def __init__(self, head: bytes, raw: Any) -> None:
        self._head = head
        self._raw = raw

    def read(self, size: int = -1) -> bytes:
        if self._head and size < 0:
            got, self._head = self._head + self._raw.read(), b""
            return bytes(got)
        if self._head:
            take = size
            got, self._head = self._head[:take], self._head[take:]
            return bytes(got)
        return bytes(self._raw.read() if size < 0 else self._raw.read(size))


def _skip_lines(raw: Any, count: int) -> Any:
    """``raw`` without its first ``count`` physical lines (ended by ``\\n``, ``\\r`` or
    ``\\r\\n``, a byte order mark in the first), as Arrow's ``skip_rows`` counts them:
    whatever their quotes hold."""
    cr = False  # the last line skipped ended by \r: a \n right after it belongs to it
    while True:
        chunk = raw.read(_CHUNK)
        if not chunk:
            return _Prefixed(b"", raw)
        i = 1 if cr and chunk[:1] == b"\n" else 0
        cr = False
        while count and i < len(chunk):
            ends = [j for j in (chunk.find(b"\n", i), chunk.find(b"\r", i)) if j >= 0]
            if not ends:
                i = len(chunk)
                break
            j = min(ends)
            if chunk[j] == _CR:
                if j + 1 < len(chunk):
                    j += chunk[j + 1] == _NL
                else:
                    cr = True
            count -= 1
            i = j + 1
        if not count and i < len(chunk):
            return _Prefixed(chunk[i:], raw)


def _filtered(raw: Any, fmt: ds.CsvFileFormat) -> Any:
    """The stream Arrow parses of the CSV bytes ``raw`` in the options of ``fmt``: in UTF-8,
    without the ``skip_rows`` first physical lines and, unless values may hold newlines,
    without every line whose quoting does not balance (:class:`_BalancedLines`)."""
    read = fmt.default_fragment_scan_options.read_options
    quoting = _Quoting.of(fmt.parse_options)
    stream: Any = raw
    if read.encoding != "utf8":
        stream = pa.transcoding_input_stream(raw, read.encoding, "utf8")
    if quoting is not None:
        if read.skip_rows:
            stream = _skip_lines(stream, read.skip_rows)
        stream = _BalancedLines(stream, quoting, MAX_CSV_BLOCK)
    return stream


@contextmanager
def _csv_reader(path: str, filesystem: Any, fmt: ds.CsvFileFormat,
                include: Sequence[str] | None = None) -> Iterator[pacsv.CSVStreamingReader]:
    """A streaming reader of the CSV file ``path`` in the options of ``fmt`` (its block size
    too), of the columns ``include`` (all when None). A compressed file is decompressed (told
    by its name), text in another encoding than UTF-8 transcoded, and unless values may hold
    newlines, every line whose quoting does not balance is dropped before Arrow parses the
    file (:class:`_BalancedLines`): each line is one row, and no row's quote swallows the
    lines after it. The first block and the rest are read alike."""
    opts = fmt.default_fragment_scan_options
    read = copy.copy(opts.read_options)
    convert = copy.copy(opts.convert_options)
    if include is not None:
        convert.include_columns = list(include)
    with filesystem.open_input_stream(path, compression="detect") as raw:
        stream = _filtered(raw, fmt)
        read.encoding = "utf8"
        if _Quoting.of(fmt.parse_options) is not None:
            read.skip_rows = 0  # skipped by _filtered, before the quote filter
        reader = pacsv.open_csv(stream, read_options=read, parse_options=fmt.parse_options,
                                convert_options=convert)
        try:
            yield reader
        finally:
            reader.close()


def _csv_schema(path: str, filesystem: Any) -> Callable[[ds.CsvFileFormat], pa.Schema]:
    """Reading the first block of the CSV file ``path`` in a given format: its schema."""
    def first_block(fmt: ds.CsvFileFormat) -> pa.Schema:
        with _csv_reader(path, filesystem, fmt) as reader:
            return reader.schema
    return first_block


def _growing_blocks(fmt: ds.CsvFileFormat, attempt: Callable[[ds.CsvFileFormat], _T]
                    ) -> tuple[_T, int]:
    """``attempt(fmt)``, retried with blocks twice as large while a row does not fit one (up
    to :data:`MAX_CSV_BLOCK`), and the block size that worked: a long field is a value, and
    its length must not decide whether a file reads."""
    size = _block_size(fmt)
    while True:
        try:
            return attempt(_with_block_size(fmt, size)), size
        except pa.ArrowInvalid as exc:
            if not _straddles(exc) or size >= MAX_CSV_BLOCK:
                raise
            size = min(2 * size, MAX_CSV_BLOCK)


def _blank(path: str, filesystem: Any, fmt: Any) -> bool:
    """Whether a CSV file, as Arrow parses it in the options of ``fmt`` (:func:`_filtered`:
    the lines the quote filter drops or ``skip_rows`` skips are not there), holds nothing but
    white space and a byte order mark (0 bytes, a lone newline, only lines the filter drops):
    a file of no rows, like a header-only one (Arrow refuses it). A file that cannot be read
    is not blank (opening refuses it)."""
    try:
        with filesystem.open_input_stream(path, compression="detect") as raw:
            f = _filtered(raw, _lenient_csv_format(fmt, []))
            head = True
            while chunk := f.read(1 << 16):
                if head and chunk.startswith(_BOM):
                    chunk = chunk[3:]
                head = False
                if chunk.strip(b" \t\r\n"):
                    return False
    except (OSError, pa.ArrowException, ValueError):
        return False
    return True


def _check_csv_options(fmt: Any) -> None:
    """Refuse, whatever the files hold, the CSV read options one person's row could turn
    against the others: column names generated from the first line (that line's field count
    sets the file's, every other row then malformed) and an encoding other than UTF-8 (the
    dataset's format drops it, and a byte the codec refuses would refuse the scan)."""
    if not isinstance(fmt, ds.CsvFileFormat):
        return
    read = fmt.default_fragment_scan_options.read_options
    if read.autogenerate_column_names and not read.column_names:
        raise ValidationError("ReadOptions(autogenerate_column_names=True) lets the first "
                              "line set every row's number of fields: pass "
                              "ReadOptions(column_names=[...]) instead")
    if str(read.encoding).lower() not in _UTF8:
        raise ValidationError("a CSV scan reads UTF-8 only: transcode the files to UTF-8 "
                              "first (ReadOptions(encoding=...) is not supported)")


#: Parquet pages written with a CRC checksum (``dpframe generate``, ``dpf.to_parquet``,
#: ``pq.write_table(..., write_page_checksum=True)``) are verified as they are read: a corrupt
#: page is an :class:`~dpframe.errors.InputError`, not values decoded from garbage.
