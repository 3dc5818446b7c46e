"""Where a scan reads from: discovery of files, format inference, opening, metadata, batches.

Opening never quotes a value in an error (a malformed file's message may hold one), and
reading never raises on one: every batch is conformed to the public schema
(:mod:`dpframe.backends.blocks.arrow_conform`). Local files are pinned when opened (inode, size,
times): a read of a file changed since, or a file that cannot be read or decoded, raises
:class:`~dpframe.errors.InputError`, an operational fault the release path refuses before any
charge.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from ...errors import InputError, ValidationError
from ..blocks.arrow_columns import is_bytes
from ..blocks.arrow_conform import TextOptions, conform_batch, public_schema
from .csv import (
    MAX_CSV_BLOCK,
    _blank,
    _block_size,
    _check_csv_options,
    _csv_reader,
    _csv_schema,
    _growing_blocks,
    _lenient_csv_format,
    _straddles,
    _with_block_size,
    csv_types,
    declare,
    undeclared_message,
)
from .prefetch import PREFETCH, prefetch

#: Read-ahead of pyarrow's scanner: batches within a file, files at once. pyarrow's defaults
#: (16, 4) buffer about a gigabyte of decoded batches for no speed-up here.
BATCH_READAHEAD = 4
FRAGMENT_READAHEAD = 2
_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".parq": "parquet",
            ".csv": "csv", ".tsv": "csv", ".arrow": "ipc", ".feather": "ipc", ".ipc": "ipc"}
_COMPRESSIONS = (".gz", ".bz2", ".zst", ".lz4")

Format: TypeAlias = str | ds.FileFormat
_T = TypeVar("_T")


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


def _is_csv(fmt: Any) -> bool:
    return bool(fmt == "csv" or isinstance(fmt, ds.CsvFileFormat))


def _open_csv(source: Any, fmt: Any, partitioning: Any) -> ds.Dataset:
    """A CSV dataset whose schema is inferred with the declared columns read as bytes and
    malformed rows skipped, then the declared types put back: inferring it never fails on a
    value (text in a declared numeric column, bytes that are not UTF-8 in a declared text
    column are missing when read; a row longer than the read block makes it read again with
    larger blocks). The first file is read as the scan reads it (:func:`_csv_reader`: a line
    whose quoting does not balance is dropped alone), and the partitioning's keys follow its
    columns. A column inferred as binary or as null (blank in the first block) is text
    (a CSV holds text; Arrow infers binary from one value that is not UTF-8). No inferred type
    outlives the opening: :func:`~dpframe.backends.arrow.csv.declare` then makes every CSV
    column that no declaration types text, and refuses queries that read one."""
    declared = dict(fmt.default_fragment_scan_options.convert_options.column_types) \
        if isinstance(fmt, ds.CsvFileFormat) else {}
    files, keys = _csv_listing(source, fmt, partitioning)
    probe, _ = _growing_blocks(_lenient_csv_format(fmt, list(declared)),
                               _csv_schema(files.files[0], files.filesystem))
    if keys is not None:
        probe = pa.unify_schemas([probe, keys])
    schema = pa.schema([f.with_type(declared.get(f.name, _csv_text(f.type)))
                        for f in probe])
    return ds.dataset(source, format=fmt, schema=schema, partitioning=partitioning)


def _csv_listing(source: Any, fmt: Any, partitioning: Any
                 ) -> tuple[ds.FileSystemDataset, pa.Schema | None]:
    """The files of ``source`` (in the order Arrow reads them) and, with ``partitioning``, the
    schema of its keys. Without, no file is read; with, Arrow discovers the keys from the
    paths and reads the first block of the first file in a format no value can fail or
    quote can span (no quoting, malformed rows skipped, larger blocks for long rows)."""
    if partitioning is None:
        return ds.dataset(source, format="csv", schema=pa.schema([])), None
    base = fmt if isinstance(fmt, ds.CsvFileFormat) else ds.CsvFileFormat()
    p = base.parse_options
    blind = ds.CsvFileFormat(
        parse_options=pacsv.ParseOptions(delimiter=p.delimiter, quote_char=False,
                                         ignore_empty_lines=p.ignore_empty_lines,
                                         invalid_row_handler=lambda _row: "skip"),
        read_options=base.default_fragment_scan_options.read_options)
    found, _ = _growing_blocks(blind, lambda f: ds.dataset(source, format=f,
                                                           partitioning=partitioning))
    parts = found.partitioning
    return found, (parts.schema if parts is not None else None)


def _csv_text(t: pa.DataType) -> pa.DataType:
    """The public type of a CSV column Arrow inferred as ``t``: binary and null are text."""
    return pa.string() if is_bytes(t) or pa.types.is_null(t) else t


def _read_as_bytes(t: pa.DataType) -> bool:
    """Whether a lenient CSV read takes a column of public type ``t`` as bytes, conformed batch
    by batch (:func:`~dpframe.backends.blocks.arrow_conform.conform_array`): every column but a
    binary one (read as bytes anyway), so the CSV parser converts no value and never fails on
    one."""
    return not is_bytes(t)


def _lenient_for(dataset: ds.FileSystemDataset) -> ds.CsvFileFormat:
    """The CSV format that reads the files of ``dataset`` without failing on a value."""
    return _lenient_csv_format(dataset.format, [f.name for f in dataset.schema
                                                if _read_as_bytes(f.type)])


def _text_options(dataset: ds.Dataset) -> TextOptions:
    """How the CSV format of ``dataset`` (the first CSV one of a union) spells values."""
    for d in _leaves(dataset):
        if isinstance(d, ds.FileSystemDataset) and isinstance(d.format, ds.CsvFileFormat):
            return TextOptions.of(d.format.default_fragment_scan_options.convert_options)
    return TextOptions()


def _leaves(dataset: ds.Dataset) -> Iterator[ds.Dataset]:
    """The datasets a union is made of (recursively), or ``dataset`` itself."""
    if isinstance(dataset, ds.UnionDataset):
        for child in dataset.children:
            yield from _leaves(child)
    else:
        yield dataset


@dataclass(frozen=True)
class _Files:
    """What opening found of each file: the CSV block size that reads its first block and its
    columns, and the blank CSV files (read as no rows)."""

    blocks: dict[str, int]
    names: dict[str, list[str]]
    blank: frozenset[str]


_REFUSED = ("cannot open the input as {} ({}): a file is empty, truncated, corrupt or in "
            "another format, or an option (format, partitioning) is invalid")


def _check_files(dataset: ds.Dataset) -> _Files:
    """Every file of ``dataset`` opened before any charge: a Parquet or IPC file's footer, a
    CSV file's first block as the scan reads it (:func:`_csv_reader`; read again with larger
    blocks while a row does not fit one; a blank file is a file of no rows). A file that
    cannot be opened is refused with a typed error that quotes nothing from it."""
    blocks: dict[str, int] = {}
    names: dict[str, list[str]] = {}
    blank: set[str] = set()
    for d in _leaves(dataset):
        if not isinstance(d, ds.FileSystemDataset):
            continue
        csv = isinstance(d.format, ds.CsvFileFormat)
        _check_csv_options(d.format)
        lenient = _lenient_for(d) if csv else None
        for frag in d.get_fragments():
            try:
                if lenient is None:
                    frag.physical_schema  # noqa: B018 (reads the footer)
                elif _blank(frag.path, frag.filesystem, d.format):
                    blank.add(frag.path)
                else:
                    schema, blocks[frag.path] = _growing_blocks(
                        lenient, _csv_schema(frag.path, frag.filesystem))
                    names[frag.path] = schema.names
            except (pa.ArrowException, OSError, ValueError, TypeError) as exc:
                name = "CSV" if csv else str(getattr(d.format, "default_extname", d.format))
                raise ValidationError(_REFUSED.format(name, type(exc).__name__)) from None
    return _Files(blocks, names, frozenset(blank))


_VERIFY = ds.ParquetFragmentScanOptions(page_checksum_verification=True)


def _verifying(fmt: Any, read_options: Any = None) -> Any:
    """``fmt`` as a Parquet format that verifies page checksums when it is ``"parquet"``;
    any other format (a format object passed by the caller included) as it is."""
    if fmt != "parquet":
        return fmt
    if read_options is None:
        return ds.ParquetFileFormat(default_fragment_scan_options=_VERIFY)
    return ds.ParquetFileFormat(read_options=read_options, default_fragment_scan_options=_VERIFY)


def _open_dataset(source: Any, fmt: Any, partitioning: Any = None) -> ds.Dataset:
    """``ds.dataset(source, format=fmt)`` with typed errors that quote no value; CSV read
    options no data may turn against a row are refused first (:func:`_check_csv_options`)."""
    _check_csv_options(fmt)
    try:
        if _is_csv(fmt):
            return _open_csv(source, fmt, partitioning)
        return ds.dataset(source, format=_verifying(fmt), partitioning=partitioning)
    except (pa.ArrowException, OSError, ValueError, TypeError) as exc:  # may quote a value
        name = "CSV" if _is_csv(fmt) else str(getattr(fmt, "default_extname", fmt))
        raise ValidationError(_REFUSED.format(name, type(exc).__name__)) from None


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
    return _Opened(_open_dataset(_not_blank(files, fmt), fmt), files, fmt)


def folder_files(folder: str) -> list[str]:
    """The files of ``folder`` (recursively, hidden ones aside, as pyarrow lists them), none
    of them read."""
    try:  # with a schema given, no file is read yet
        return list(ds.dataset(folder, format="parquet", schema=pa.schema([])).files)
    except (pa.ArrowException, OSError, ValueError, TypeError):
        raise ValidationError("cannot list the files of the folder") from None


def inferred_format(paths: Sequence[str]) -> str | None:
    """The format a scan of ``paths`` without ``format=`` reads (``"parquet"``, ``"csv"``,
    ``"ipc"``), told from the file names alone (a folder's files' names; an empty folder is
    Parquet): no file is opened. None when the scan would refuse the paths."""
    try:
        files, dirs = _discover([os.fsdecode(p) for p in paths])
        if dirs:
            if files or len(dirs) > 1:
                return None
            files = folder_files(dirs[0]) or ["x.parquet"]
        return _infer_format(files) if files else None
    except ValidationError:
        return None


def _not_blank(files: list[str], fmt: Format) -> list[str]:
    """``files`` without the blank CSV files (no rows: the schema is read from another file);
    all of them when every one is blank (opening refuses them)."""
    if not _is_csv(fmt):
        return files
    local = pafs.LocalFileSystem()
    return [f for f in files if not _blank(f, local, fmt)] or files


def _open_folder(files: list[str], dirs: list[str], fmt: Format | None,
                 partitioning: Any) -> _Opened:
    """One folder: with ``partitioning``, the partitioned dataset itself (its key columns are
    in the paths); without, the files found in it."""
    if files or len(dirs) > 1:
        raise ValidationError("pass one folder, or files and globs, not both")
    if partitioning is not None:
        probe = _open_dataset(dirs[0], fmt if fmt is not None else "parquet",
                              partitioning=partitioning)
        return _Opened(probe, None, fmt if fmt is not None else "parquet")
    found = folder_files(dirs[0])
    fmt = fmt if fmt is not None else _infer_format(found or ["x.parquet"])
    return _Opened(_open_dataset(_not_blank(found, fmt), fmt), found, fmt)


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
    the file names unless given (a name or a ``pyarrow.dataset.FileFormat``). ``types``
    declares the types of CSV columns (column -> Arrow type name or type,
    :func:`~dpframe.backends.arrow.csv.csv_type`): a CSV column no declaration types is text,
    and a query reading it is refused (:meth:`check_declared`).
    """

    #: Whether string columns grouped by *public* keys are best read as Arrow dictionaries:
    #: true for files (Parquet stores them so: no hashing), false for sources that would have
    #: to hash every row to build one (a plain string column is looked up directly instead).
    dictionary_public_keys = True
    #: The visible CSV columns no declaration types (:mod:`dpframe.backends.arrow.csv`).
    _undeclared: frozenset[str] = frozenset()

    def __init__(self, source: Any, *, format: Format | None = None,
                 columns: Sequence[str] | None = None,
                 partitioning: Any = None,
                 types: Mapping[str, object] | None = None) -> None:
        declared = csv_types(types) if types is not None else {}  # before any file is read
        opened = _open(source, format, partitioning)
        self._files = opened.files
        self._format = opened.format
        self._columns = _visible(opened.dataset.schema.names, columns)
        self._pinned = _pin(opened.dataset)
        self._csv = any(isinstance(getattr(d, "format", None), ds.CsvFileFormat)
                        for d in _leaves(opened.dataset))
        self._checked = _check_files(opened.dataset)
        self._dataset, undeclared = declare(opened.dataset, list(_leaves(opened.dataset)),
                                            declared, self._checked.names.values())
        visible = self._columns
        self._undeclared = frozenset(c for c in undeclared if visible is None or c in visible)
        self._text = _text_options(self._dataset)
        self.check_unchanged()

    def check_unchanged(self) -> None:
        """:class:`~dpframe.errors.InputError` if a local file of the source changed since it
        was opened (replaced, truncated, rewritten: its inode, size, modification or change
        time differ) or is gone: every read of the source reads the snapshot it opened."""
        for path, was in self._pinned.items():
            if _stat_of(path) != was:
                raise InputError(f"input file {path} changed or was replaced since it was "
                                 "opened: its data is not the snapshot the release started "
                                 "from")

    def check_declared(self, columns: Sequence[object]) -> None:
        """Refuse (ValidationError) a read of CSV columns that no declaration types: the
        decision depends on the declaration and the column names only."""
        missing = [c for c in columns if isinstance(c, str) and c in self._undeclared]
        if missing:
            raise ValidationError(undeclared_message(dict.fromkeys(missing)))

    @property
    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of the visible columns, in their public types
        (:func:`~dpframe.backends.blocks.arrow_conform.public_type`)."""
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

    def batches(self, columns: Sequence[str], batch_size: int,
                dictionary: Sequence[str] = ()) -> Generator[pa.RecordBatch, None, None]:
        """Record batches of ``columns`` in the public schema's types; Parquet string columns
        in ``dictionary`` are read as Arrow dictionaries (no re-hashing of repeated strings).

        Each file is read in its own physical schema (the files of a union of datasets too)
        and every batch is conformed to the dataset's (public) schema by
        :func:`conform_batch`: a value that does not conform (text in a numeric column of one
        file, a malformed CSV field) is missing, a column a file lacks is all missing. CSV
        columns are read as bytes and converted there (:func:`_read_as_bytes`), a blank CSV
        file is no rows, and a CSV row longer than the read block makes its file read again
        with larger blocks. Nothing is raised on values, and no error quotes one; a file that
        cannot be read or decoded, or that changed since the source opened it (checked before
        and after the read), raises :class:`~dpframe.errors.InputError`.

        Parquet is read one row group at a time by a background thread that stays at most
        ``PREFETCH`` batches ahead, so memory is bounded however slow the consumer is (pyarrow's
        own scanner buffers up to about a gigabyte ahead of a slow consumer). Other formats use
        pyarrow's scanner with small read-ahead.
        """
        cols = list(columns)
        expected = public_schema(pa.schema([self._dataset.schema.field(c) for c in cols]))
        self.check_unchanged()
        raw = self._raw_batches(cols, batch_size, dictionary)
        try:
            while True:
                try:
                    batch = next(raw)
                except StopIteration:
                    break
                except (pa.ArrowException, OSError) as exc:  # may quote a value: type only
                    self.check_unchanged()
                    if self._csv and not isinstance(exc, OSError):
                        raise  # a CSV row past MAX_CSV_BLOCK: the data's doing, not a fault
                    raise InputError(f"cannot read the input ({type(exc).__name__}): a file "
                                     "is unreadable, truncated or corrupt") from None
                yield conform_batch(batch, expected, self._text)
        finally:
            raw.close()
        self.check_unchanged()  # the whole read was of the opened snapshot

    def _raw_batches(self, cols: list[str], batch_size: int, dictionary: Sequence[str]
                     ) -> Generator[pa.RecordBatch, None, None]:
        dataset = self._dataset
        if dictionary and self._files is not None and self._format == "parquet":
            fmt = _verifying("parquet", ds.ParquetReadOptions(
                dictionary_columns=set(dictionary)))
            dataset = ds.dataset(self._files, format=fmt)
        if isinstance(dataset, ds.InMemoryDataset):  # tables of the dataset's one schema
            yield from dataset.to_batches(columns=cols, batch_size=batch_size,
                                          batch_readahead=BATCH_READAHEAD,
                                          fragment_readahead=FRAGMENT_READAHEAD)
            return
        checked = self._checked
        yield from prefetch(lambda: _dataset_batches(dataset, cols, batch_size, checked),
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


Stat: TypeAlias = tuple[int, int, int, int, int] | None


def _stat_of(path: str) -> Stat:
    """What tells a local file's version apart: device, inode, size, modification and
    change times (ns); None when it is gone or unreadable."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _pin(dataset: ds.Dataset) -> dict[str, Stat]:
    """The version of every local file of ``dataset``, as opened (see
    :meth:`DatasetSource.check_unchanged`); files on other file systems are not pinned."""
    pinned: dict[str, Stat] = {}
    for d in _leaves(dataset):
        if isinstance(d, ds.FileSystemDataset) and isinstance(d.filesystem,
                                                                pafs.LocalFileSystem):
            for path in d.files:
                pinned[path] = _stat_of(path)
    return pinned


def _dataset_batches(dataset: ds.Dataset, cols: list[str], batch_size: int,
                     checked: _Files) -> Iterator[pa.RecordBatch]:
    """The batches of each file of ``dataset`` in turn, in its own physical schema (a union's
    children each so, recursively; see :func:`_file_batches`)."""
    for d in _leaves(dataset):
        if isinstance(d, ds.FileSystemDataset):
            yield from _fragment_batches(d, cols, batch_size, checked)
        else:  # in memory: its tables are of its schema
            names = set(d.schema.names)
            yield from d.to_batches(columns=[c for c in cols if c in names],
                                    batch_size=batch_size, batch_readahead=BATCH_READAHEAD,
                                    fragment_readahead=FRAGMENT_READAHEAD)


def _fragment_batches(dataset: ds.FileSystemDataset, cols: list[str], batch_size: int,
                      checked: _Files) -> Iterator[pa.RecordBatch]:
    """The batches of each file of ``dataset`` in turn (see :func:`_file_batches`); blank CSV
    files have none."""
    parquet = isinstance(dataset.format, ds.ParquetFileFormat)
    lenient = _lenient_for(dataset) if isinstance(dataset.format, ds.CsvFileFormat) else None
    for frag in dataset.get_fragments():
        if lenient is not None and frag.path in checked.blank:
            continue
        yield from _file_batches(frag, cols, batch_size, parquet, lenient, checked)


def _file_batches(frag: ds.Fragment, cols: list[str], batch_size: int, parquet: bool,
                  lenient: ds.CsvFileFormat | None, checked: _Files
                  ) -> Iterator[pa.RecordBatch]:
    """The batches of one file in its own physical schema (Parquet: one row group at a time);
    a partitioned folder's key columns, which are in the paths and not in the files, are added
    from the path. ``lenient``: the CSV format that reads the file without failing on values."""
    keys = ds.get_partition_keys(frag.partition_expression)
    if lenient is not None:
        yield from _csv_file_batches(frag, cols, batch_size, lenient, keys,
                                     checked.blocks.get(frag.path, _block_size(lenient)),
                                     checked.names.get(frag.path))
        return
    names = set(frag.physical_schema.names)
    present = [c for c in cols if c in names]
    implied = {c: keys[c] for c in cols if c in keys and c not in names}
    for part in frag.split_by_row_group() if parquet else [frag]:
        for batch in part.to_batches(columns=present, batch_size=batch_size,
                                     batch_readahead=2, fragment_readahead=1):
            yield _with_columns(batch, implied)


def _csv_file_batches(frag: ds.Fragment, cols: list[str], batch_size: int,
                      lenient: ds.CsvFileFormat, keys: dict[str, Any], block: int,
                      names: list[str] | None) -> Iterator[pa.RecordBatch]:
    """The batches of one CSV file (of columns ``names``, None: not known yet) read by
    ``lenient`` through :func:`_csv_reader` in blocks of ``block`` bytes; when a row does not
    fit a block, the file is read again with blocks twice as large (up to
    :data:`MAX_CSV_BLOCK`) from its first row, skipping the rows already given."""
    if names is None:
        names = _growing_blocks(lenient, _csv_schema(frag.path, frag.filesystem))[0].names
    present = [c for c in cols if c in names]
    implied = {c: keys[c] for c in cols if c in keys and c not in names}
    given = 0
    while True:
        fmt = _with_block_size(lenient, block)
        seen = 0
        try:
            with _csv_reader(frag.path, frag.filesystem, fmt, present) as reader:
                for read in reader:
                    for start in range(0, read.num_rows, batch_size):
                        batch = read.slice(start, batch_size)
                        skip, seen = max(given - seen, 0), seen + batch.num_rows
                        if skip < batch.num_rows:
                            given = seen
                            yield _with_columns(batch.slice(skip) if skip else batch, implied)
            return
        except pa.ArrowInvalid as exc:
            if not _straddles(exc) or block >= MAX_CSV_BLOCK:
                raise
            block = min(2 * block, MAX_CSV_BLOCK)


def _with_columns(batch: pa.RecordBatch, constants: dict[str, Any]) -> pa.RecordBatch:
    """``batch`` with a column repeating each value of ``constants``, in their order."""
    for name, value in constants.items():
        batch = batch.append_column(name, pa.repeat(pa.scalar(value), batch.num_rows))
    return batch
