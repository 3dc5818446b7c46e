"""Where a scan reads from: discovery of files, format inference, opening, metadata, batches.

Opening never quotes a value in an error (a malformed file's message may hold one), and
reading never raises on one: every batch is conformed to the public schema
(:mod:`dpframe.backends.arrow.conform`).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds

from ...errors import ValidationError
from .columns import is_bytes, is_number, is_text
from .conform import conform_batch, public_schema
from .prefetch import PREFETCH, prefetch

#: Read-ahead of pyarrow's scanner: batches within a file, files at once. pyarrow's defaults
#: (16, 4) buffer about a gigabyte of decoded batches for no speed-up here.
BATCH_READAHEAD = 4
FRAGMENT_READAHEAD = 2
_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".parq": "parquet",
            ".csv": "csv", ".tsv": "csv", ".arrow": "ipc", ".feather": "ipc", ".ipc": "ipc"}
_COMPRESSIONS = (".gz", ".bz2", ".zst", ".lz4")

Format: TypeAlias = str | ds.FileFormat


def _infer_format(paths: Sequence[str]) -> str:
    kinds = set()
    for p in paths:
        name = p.lower()
        for comp in _COMPRESSIONS:
            if name.endswith(comp):
                name = name[: -len(comp)]
        kinds.add(_FORMATS.get(os.path.splitext(name)[1], "?"))
    if len(kinds) != 1 or "?" in kinds:
        raise ValidationError("cannot tell the input format from the file names; pass "
                              "format='parquet', 'csv' or 'ipc'")
    return kinds.pop()


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
        check_utf8=conv.check_utf8)
    p = base.parse_options
    parse = pacsv.ParseOptions(delimiter=p.delimiter, quote_char=p.quote_char,
                               double_quote=p.double_quote, escape_char=p.escape_char,
                               newlines_in_values=p.newlines_in_values,
                               ignore_empty_lines=p.ignore_empty_lines,
                               invalid_row_handler=lambda _row: "skip")
    return ds.CsvFileFormat(parse_options=parse, convert_options=convert,
                            read_options=opts.read_options)


def _is_csv(fmt: Any) -> bool:
    return bool(fmt == "csv" or isinstance(fmt, ds.CsvFileFormat))


def _open_csv(source: Any, fmt: Any, partitioning: Any) -> ds.Dataset:
    """A CSV dataset whose schema is inferred with the declared columns read as bytes and
    malformed rows skipped, then the declared types put back: inferring it never fails on a
    value (text in a declared numeric column, bytes that are not UTF-8 in a declared text
    column are missing when read). A column inferred as binary is text (a CSV holds text;
    Arrow infers binary from one value that is not UTF-8): its type never depends on one row."""
    declared = dict(fmt.default_fragment_scan_options.convert_options.column_types) \
        if isinstance(fmt, ds.CsvFileFormat) else {}
    probe = ds.dataset(source, format=_lenient_csv_format(fmt, list(declared)),
                       partitioning=partitioning)
    schema = pa.schema([f.with_type(declared.get(f.name, _csv_text(f.type)))
                        for f in probe.schema])
    return ds.dataset(source, format=fmt, schema=schema, partitioning=partitioning)


def _csv_text(t: pa.DataType) -> pa.DataType:
    """The public type of a CSV column Arrow inferred as ``t``: binary is text."""
    return pa.string() if is_bytes(t) else t


def _read_as_bytes(t: pa.DataType, parsers: bool) -> bool:
    """Whether a lenient CSV read takes a column of public type ``t`` as bytes, conformed batch
    by batch: numbers, booleans, text, dates and timestamps (Arrow casts text to each exactly; a
    time of day it cannot, so those stay with the CSV parser, as do timestamps when the
    format's ``timestamp_parsers`` are set: formats an Arrow cast does not know)."""
    return bool(is_number(t) or is_text(t) or pa.types.is_date(t)
                or (pa.types.is_timestamp(t) and not parsers))


def _open_dataset(source: Any, fmt: Any, partitioning: Any = None) -> ds.Dataset:
    """``ds.dataset(source, format=fmt)`` with typed errors that quote no value."""
    try:
        if _is_csv(fmt):
            return _open_csv(source, fmt, partitioning)
        return ds.dataset(source, format=fmt, partitioning=partitioning)
    except (pa.ArrowException, OSError, ValueError, TypeError) as exc:  # may quote a value
        name = "CSV" if _is_csv(fmt) else str(getattr(fmt, "default_extname", fmt))
        raise ValidationError(f"cannot open the input as {name} ({type(exc).__name__}): a file "
                              "is empty, truncated, corrupt or in another format, or an option "
                              "(format, partitioning) is invalid") from None


@dataclass(frozen=True)
class _Opened:
    """An opened source: its dataset and, when it is a list of files, the files and format."""

    dataset: ds.Dataset
    files: list[str] | None = None
    format: Format | None = None


def _open(source: Any, fmt: Format | None, partitioning: Any) -> _Opened:
    if isinstance(source, ds.Dataset):
        if isinstance(source, ds.FileSystemDataset) and partitioning is None:
            return _Opened(source, list(source.files), source.format)
        return _Opened(source)
    if isinstance(source, pa.RecordBatch):
        return _Opened(ds.dataset(pa.Table.from_batches([source])))
    if isinstance(source, pa.Table):
        return _Opened(ds.dataset(source))
    if isinstance(source, pd.DataFrame):
        return _Opened(ds.dataset(_table_of(source)))
    return _open_paths(_paths_of(source), fmt, partitioning)


def _table_of(df: pd.DataFrame) -> pa.Table:
    try:
        return pa.Table.from_pandas(df, preserve_index=False)
    except (pa.ArrowException, ValueError, TypeError):  # the message may quote a value
        raise ValidationError("cannot convert the DataFrame to Arrow (a column mixes types or "
                              "its names are not unique): query it with df.dp(...) "
                              "instead") from None


def _paths_of(source: Any) -> list[str]:
    try:
        given = [source] if isinstance(source, str | os.PathLike) else list(source)
        return [os.fsdecode(p) for p in given]
    except TypeError:
        raise ValidationError("scan needs a path, a glob, a folder, a list of them, a pyarrow "
                              "Dataset or a pyarrow Table") from None


def _discover(paths: list[str]) -> tuple[list[str], list[str]]:
    """The files (globs expanded, in sorted order) and the folders among ``paths``."""
    files: list[str] = []
    dirs: list[str] = []
    for s in paths:
        if any(ch in s for ch in "*?["):
            files.extend(sorted(m for m in glob.glob(s, recursive=True) if os.path.isfile(m)))
        elif os.path.isdir(s):
            dirs.append(s)
        elif os.path.isfile(s):
            files.append(s)
        else:
            raise ValidationError(f"no such file or folder: {s}")
    return files, dirs


def _open_paths(paths: list[str], fmt: Format | None, partitioning: Any) -> _Opened:
    files, dirs = _discover(paths)
    if dirs:
        return _open_folder(files, dirs, fmt, partitioning)
    if not files:
        raise ValidationError(f"no file matches {paths[0] if paths else ''}")
    fmt = fmt if fmt is not None else _infer_format(files)
    return _Opened(_open_dataset(files, fmt), files, fmt)


def _open_folder(files: list[str], dirs: list[str], fmt: Format | None,
                 partitioning: Any) -> _Opened:
    """One folder: with ``partitioning``, the partitioned dataset itself (its key columns are
    in the paths); without, the files found in it."""
    if files or len(dirs) > 1:
        raise ValidationError("pass one folder, or files and globs, not both")
    probe = _open_dataset(dirs[0], fmt if fmt is not None else "parquet",
                          partitioning=partitioning)
    if partitioning is not None:
        return _Opened(probe, None, fmt if fmt is not None else "parquet")
    found = list(probe.files)
    fmt = fmt if fmt is not None else _infer_format(found or ["x.parquet"])
    return _Opened(_open_dataset(found, fmt), found, fmt)


def _visible(names: list[str], columns: Sequence[str] | None) -> list[str] | None:
    """The columns a source shows, checked against the dataset's names."""
    if len(set(names)) != len(names):
        raise ValidationError("a column name appears more than once: give each column a unique "
                              "name")
    if columns is None:
        return None
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise ValidationError(f"unknown column {unknown[0]!r}")
    return list(columns)


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

    def __init__(self, source: Any, *, format: Format | None = None,
                 columns: Sequence[str] | None = None,
                 partitioning: Any = None) -> None:
        opened = _open(source, format, partitioning)
        self._dataset = opened.dataset
        self._files = opened.files
        self._format = opened.format
        self._columns = _visible(self._dataset.schema.names, columns)

    @property
    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of the visible columns, in their public types
        (:func:`~dpframe.backends.arrow.conform.public_type`)."""
        s = self._dataset.schema
        if self._columns is None:
            return public_schema(s)
        return public_schema(pa.schema([s.field(c) for c in self._columns]))

    @property
    def files(self) -> list[str] | None:
        """The files read, when the source is files."""
        return None if self._files is None else list(self._files)

    def _is_parquet(self) -> bool:
        f = self._format
        return f == "parquet" or isinstance(f, ds.ParquetFileFormat)

    def _csv_read_format(self) -> ds.CsvFileFormat:
        """The CSV format used to *read*: numeric, boolean, text, date and timestamp columns as
        bytes (:func:`_read_as_bytes`; conformed to the public schema batch by batch, so a
        malformed value far down a file is missing rather than an error quoting it), and rows
        with the wrong number of fields skipped."""
        dataset = self._dataset
        base = dataset.format if isinstance(dataset, ds.FileSystemDataset) else self._format
        parsers = isinstance(base, ds.CsvFileFormat) and bool(
            base.default_fragment_scan_options.convert_options.timestamp_parsers)
        return _lenient_csv_format(base, [f.name for f in dataset.schema
                                          if _read_as_bytes(f.type, parsers)])

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
        expected = public_schema(pa.schema([self._dataset.schema.field(c) for c in cols]))
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
        lenient = self._csv_read_format() if isinstance(dataset.format,
                                                        ds.CsvFileFormat) else None
        yield from prefetch(lambda: _fragment_batches(dataset, cols, batch_size, lenient),
                            PREFETCH)

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


def _fragment_batches(dataset: ds.FileSystemDataset, cols: list[str], batch_size: int,
                      lenient: ds.CsvFileFormat | None) -> Iterator[pa.RecordBatch]:
    """The batches of each file of ``dataset`` in turn (see :func:`_file_batches`)."""
    parquet = isinstance(dataset.format, ds.ParquetFileFormat)
    for frag in dataset.get_fragments():
        yield from _file_batches(frag, cols, batch_size, parquet, lenient)


def _file_batches(frag: ds.Fragment, cols: list[str], batch_size: int, parquet: bool,
                  lenient: ds.CsvFileFormat | None) -> Iterator[pa.RecordBatch]:
    """The batches of one file in its own physical schema (Parquet: one row group at a time);
    a partitioned folder's key columns, which are in the paths and not in the files, are added
    from the path. ``lenient``: the CSV format that reads the file without failing on values."""
    keys = ds.get_partition_keys(frag.partition_expression)
    if lenient is not None:
        frag = lenient.make_fragment(frag.path, frag.filesystem,
                                     partition_expression=frag.partition_expression)
    names = set(frag.physical_schema.names)
    present = [c for c in cols if c in names]
    implied = {c: keys[c] for c in cols if c in keys and c not in names}
    for part in frag.split_by_row_group() if parquet else [frag]:
        for batch in part.to_batches(columns=present, batch_size=batch_size,
                                     batch_readahead=2, fragment_readahead=1):
            yield _with_columns(batch, implied)


def _with_columns(batch: pa.RecordBatch, constants: dict[str, Any]) -> pa.RecordBatch:
    """``batch`` with a column repeating each value of ``constants``, in their order."""
    for name, value in constants.items():
        batch = batch.append_column(name, pa.repeat(pa.scalar(value), batch.num_rows))
    return batch
