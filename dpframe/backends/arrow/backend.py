"""``ArrowBackend``: exact aggregates of a dataset read batch by batch, in bounded memory.

Every block of rows is factorized and handed to :func:`dpframe.core.exact.primitives.compute_exact`;
the blocks' exact aggregates are then added (:mod:`dpframe.backends.arrow.totals`). Row-level
queries stream once; privacy-unit queries make two passes over keyed partitions
(:mod:`dpframe.backends.arrow.spill`). See the package docstring.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import math
import os
import sys
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...core.exact.compute import ComputeRequest, ExactAggregates
from ...core.exact.hashing import BlockShifts, Key, block_partition, partition_of
from ...core.exact.parallel import in_order
from ...core.exact.primitives import compute_exact
from ...core.exact.values import ColumnKind
from ...errors import ValidationError
from ..base import (
    group_code_dtype,
    observed_key_codes,
    only_columns,
    public_key_codes,
    public_key_list,
)
from ..blocks import UnitBlock, exact_over_blocks
from ..blocks.arrow_columns import (
    I64,
    Bools,
    arrow_kind,
    decoded,
    factorize,
    numeric_array,
    public_codes,
    unit_codes,
    value_type,
)
from ..blocks.arrow_words import column_words, value_hashes
from .carried import DROPPED_BEFORE, ROW_PRIORITY, bound_by_priority, heavy_limit, preselect
from .source import DatasetSource
from .spill import SpillFiles, arrange
from .totals import KeyIndex, Totals

DEFAULT_BATCH_SIZE = 1 << 20
DEFAULT_PARTITION_ROWS = 4_000_000
MAX_PARTITIONS = 4096
#: Threads aggregating batches of a row-level scan with public keys (at most 2: the
#: reader's prefetch thread runs beside them).
WORKERS = max(1, min(2, os.cpu_count() or 1))
_GROUP_CODE = "__dpframe_group__"
#: The block of an integer unit id (:func:`~dpframe.core.exact.hashing.block_partition`), spilled in
#: place of the id, or beside it when the query also reads the id as a key or a value.
_UNIT_BLOCK = "__dpframe_unit_block__"
RESERVED = (_GROUP_CODE, _UNIT_BLOCK, ROW_PRIORITY, DROPPED_BEFORE)

Block: TypeAlias = pa.RecordBatch | pa.Table
Keys = list[tuple[object, ...]]
Partial = tuple[ExactAggregates, I64 | None, int]
#: A batch of pass 1 ordered by partition, where each partition starts, and the heavy
#: partitions' pre-selected rows (:mod:`.carried`), written in place of their slices.
_Arranged = tuple[pa.RecordBatch, npt.NDArray[np.intp], dict[int, pa.RecordBatch]]


@dataclass
class _Run:
    """One release's running state: its request and generator, the public keys (the output
    index when keys are public), the totals so far and the private keys observed so far."""

    request: ComputeRequest
    gen: np.random.Generator | None  # None: the request draws nothing at random
    public_keys: Keys
    totals: Totals = field(default_factory=Totals)
    key_index: KeyIndex = field(default_factory=KeyIndex)
    #: The pair-priority salt of heavy units' pre-selection (:mod:`.carried`), both passes.
    pair_salt: int = 0


def _public_keys(request: ComputeRequest) -> Keys:
    q = request
    if not q.by:
        return [()]
    if q.private_keys:
        return []
    return public_key_list([tuple(q.keys[c]) for c in q.by])


class BlockColumns:
    """One Arrow block's columns as the exact primitives read them (the
    :class:`~dpframe.backends.base.Columns` protocol; each column converted once)."""

    def __init__(self, block: Block) -> None:
        self.block = block
        self._numbers: dict[str, tuple[np.ndarray, Bools | None]] = {}

    def numbers(self, name: str) -> tuple[np.ndarray, Bools | None]:
        if name not in self._numbers:
            self._numbers[name] = numeric_array(self.block.column(name))
        return self._numbers[name]

    def words(self, name: str) -> tuple[npt.NDArray[np.uint64], Bools]:
        return value_hashes(self.block.column(name))

    def codes(self, name: str) -> I64:
        return unit_codes(self.block.column(name))


def _public_codes(block: Block, q: ComputeRequest, dtype: npt.DTypeLike = np.int64
                  ) -> npt.NDArray[np.signedinteger[Any]]:
    """Group codes of public keys, in ``dtype`` (holding every group code and -1)."""
    declared = [q.keys[c] for c in q.by]
    return public_key_codes(lambda i, t: public_codes(block.column(q.by[i]), declared[i], t),
                            declared, dtype)


def _private_codes(block: Block, by: tuple[str, ...], index: KeyIndex) -> tuple[I64, Keys, I64]:
    """Block-local codes, block-local keys, and their positions in the global key list."""
    found = [factorize(block.column(col)) for col in by]
    codes, local = observed_key_codes([c for c, _ in found], [u for _, u in found])
    return codes, local, index.index(local)


def _reads_unit_values(request: ComputeRequest) -> bool:
    """Whether the query reads the unit column's values (as private keys or a measured
    column), not only which rows share a unit."""
    unit = request.privacy_unit
    return unit in request.measure_columns or (request.private_keys and unit in request.by)


def _with_blocks(request: ComputeRequest, spilled: pa.RecordBatch, block: I64
                 ) -> pa.RecordBatch:
    """``spilled`` carrying its units' blocks: in place of the ids, or beside them when the
    query reads the ids as keys or values."""
    column = pa.array(block, pa.int64())
    if _reads_unit_values(request):
        return spilled.append_column(_UNIT_BLOCK, column)
    position = spilled.schema.get_field_index(request.privacy_unit)
    return spilled.set_column(position, _UNIT_BLOCK, column)


def _integer_units(schema: pa.Schema, unit: str) -> bool:
    """Whether the ids of ``unit`` are integers in every batch (``schema`` is the public one,
    which batches are conformed to), so that pass 1 lays them out by
    :func:`~dpframe.core.exact.hashing.block_partition` and spills their blocks (int64)."""
    return bool(pa.types.is_integer(value_type(schema.field(unit).type)))


def _unit_column(schema: pa.Schema, unit: str) -> str:
    """The spilled column telling a partition's units apart: their blocks, or their ids."""
    return _UNIT_BLOCK if _UNIT_BLOCK in schema.names else unit


def _group_column(request: ComputeRequest) -> str | None:
    """The spilled column of public group codes (None: no grouping, or private keys, whose
    columns are spilled as they are)."""
    return _GROUP_CODE if request.by and not request.private_keys else None


def with_carried(plain: Iterator[Callable[[], pa.Table] | None],
                 carried: Iterator[Callable[[], pa.Table] | None]
                 ) -> Iterator[Callable[[], pa.Table] | None]:
    """Per partition, a function reading its plainly spilled rows and its carried rows as one
    table (the plain rows' :data:`~.carried.ROW_PRIORITY` and
    :data:`~.carried.DROPPED_BEFORE` null); None when it has neither."""
    for read_plain, read_carried in zip(plain, carried, strict=True):
        if read_carried is None:
            yield read_plain
        else:
            yield functools.partial(_read_with_carried, read_plain, read_carried)


def _read_with_carried(read_plain: Callable[[], pa.Table] | None,
                       read_carried: Callable[[], pa.Table]) -> pa.Table:
    kept = read_carried()
    if read_plain is None:
        return kept
    plain = read_plain()
    for name in (ROW_PRIORITY, DROPPED_BEFORE):
        if name in kept.schema.names:
            f = kept.schema.field(name)
            plain = plain.append_column(f, pa.nulls(plain.num_rows, f.type))
    return pa.concat_tables([plain, kept]).combine_chunks()


def _same(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A streamed batch, read already (the reader's prefetch thread decoded it)."""
    return batch


def _partitions(unit: pa.Array, key: Key, parts: int) -> np.ndarray:
    """The spill partition of each row: its unit's word by keyed multiply-shift
    (:func:`~dpframe.core.exact.hashing.partition_of`), uint8 up to 256 partitions (a one-pass
    radix sort)."""
    return partition_of(column_words(unit), key[0], parts)


class ArrowBackend:
    """Exact aggregates of a :class:`DatasetSource`, batch by batch (see the package docstring).

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
        for reserved in RESERVED:
            if reserved in source.arrow_schema.names:
                raise ValidationError(f"column name {reserved!r} is reserved")
        self.source = source
        self.batch_size = batch_size
        self.progress = progress
        self.partition_rows = partition_rows
        self.partitions = partitions
        self.spill_dir = None if spill_dir is None else os.fspath(spill_dir)

    # -- Backend protocol ------------------------------------------------------------------------
    def bind(self, columns: Sequence[str]) -> ArrowBackend:
        """Itself: the batches are read when the release computes."""
        return self

    def schema(self, columns: Sequence[str] | None = None) -> dict[str, ColumnKind]:
        """The public kinds; a release's ``columns`` are checked first: a CSV column no
        declaration types is refused (ValidationError, before any charge), whatever its
        values (:mod:`dpframe.backends.arrow.csv`)."""
        if columns is not None:
            self.source.check_declared(columns)
        kinds = {f.name: arrow_kind(f.type) for f in self.source.arrow_schema}
        return kinds if columns is None else only_columns(kinds, columns)

    def categories(self, column: str) -> tuple[object, ...] | None:
        """Arrow dictionaries come from the data, not from a declaration: never public keys."""
        return None

    def exact(self, request: ComputeRequest, gen: np.random.Generator | None) -> ExactAggregates:
        if request.privacy_unit:
            assert gen is not None, "units are bounded at random: the release passes a generator"
            return self._two_pass(request, gen)
        return self._streaming(request, gen)

    # -- reading ----------------------------------------------------------------------------------
    def _dictionary_columns(self, q: ComputeRequest) -> list[str]:
        """The string group-key columns worth reading as Arrow dictionaries (see
        ``DatasetSource.dictionary_public_keys``); unit columns never are (they are hashed)."""
        if not (q.private_keys or self.source.dictionary_public_keys):
            return []
        schema = self.source.arrow_schema
        return [c for c in q.by if pa.types.is_string(schema.field(c).type)
                or pa.types.is_large_string(schema.field(c).type)]

    def _bar(self, total: int | None, desc: str, unit: str) -> Any:
        """A progress bar showing a percentage and times only: never a count of rows (the
        size of the data is private,
        docs/privacy.md#timing), so none without a known total."""
        if importlib.util.find_spec("ipywidgets") is not None:
            from tqdm.auto import tqdm  # a widget in notebooks, text elsewhere
        else:  # tqdm.auto in a notebook without ipywidgets warns (TqdmWarning): plain text
            from tqdm.std import tqdm

        enabled = self.progress if self.progress is not None else sys.stderr.isatty()
        shown = ("{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]" if total
                 else "{desc} [{elapsed}]")
        return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, leave=False,
                    file=sys.stderr, dynamic_ncols=True, bar_format=shown)

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

    # -- one block ----------------------------------------------------------------------------
    @staticmethod
    def _aggregate(run: _Run, block: Block, units: I64 | None,
                   precoded: bool = False) -> Partial:
        """compute_exact on one block of rows holding whole units: its aggregates, the
        positions of its keys in the global key list (private keys) and that list's size.
        With public keys (or none) and no sampling it touches no shared state, so blocks may
        run in parallel."""
        q = run.request
        index: I64 | None = None
        keys = run.public_keys
        if not q.by:
            codes = np.zeros(block.num_rows, dtype=np.int64)
        elif q.private_keys:
            codes, keys, index = _private_codes(block, q.by, run.key_index)
        elif precoded:  # in their narrow spilled type (group_code_dtype): see compute_exact
            codes = block.column(_GROUP_CODE).to_numpy(zero_copy_only=False)
        else:
            codes = _public_codes(block, q)
        before = None  # rows pass 1 dropped from heavy slices, per unit (diagnostics=)
        if DROPPED_BEFORE in block.schema.names:
            before = np.asarray(block.column(DROPPED_BEFORE).fill_null(0).to_numpy(
                zero_copy_only=False), dtype=np.int64)
        agg = compute_exact(q, codes, keys, units, BlockColumns(block), run.gen, before)
        size = len(run.public_keys) if index is None else len(run.key_index.keys)
        return agg, index, size

    def _add(self, run: _Run, block: Block, units: I64 | None, precoded: bool = False) -> None:
        run.totals.add(*self._aggregate(run, block, units, precoded))

    def _finish(self, run: _Run, empty: pa.Schema) -> ExactAggregates:
        if run.totals.blocks == 0:  # no row survived: zero aggregates of the right shapes
            units = np.zeros(0, dtype=np.int64) if run.request.privacy_unit else None
            self._add(run, empty.empty_table(), units, precoded=_GROUP_CODE in empty.names)
        keys = run.key_index.keys if run.request.private_keys else run.public_keys
        return run.totals.result(keys)

    # -- row-level: one streaming pass ------------------------------------------------------------
    def _streaming(self, request: ComputeRequest, gen: np.random.Generator | None
                   ) -> ExactAggregates:
        q = request
        run = _Run(request, gen, _public_keys(request))
        cols = request.columns
        read_cols = cols or self.source.arrow_schema.names[:1]
        batches = self._batches(read_cols, self._dictionary_columns(q), "dpframe scan")
        # Public keys (or none) and no sampling: a block's aggregate depends on the block alone
        # and blocks add up exactly in any order, so WORKERS threads aggregate batches at once
        # (numpy and Arrow release the GIL). Private keys share the key index, and sampling
        # draws from one generator: those stay in order, one block at a time.
        parallel = WORKERS > 1 and not q.private_keys and q.sample_rate is None
        with contextlib.closing(batches):  # stops the reader at once on error or Ctrl-C
            schema = self._stream(run, batches, WORKERS if parallel else 1)
        if schema is None:
            schema = pa.schema([self.source.arrow_schema.field(c) for c in read_cols])
        return self._finish(run, schema)

    def _stream(self, run: _Run, batches: Iterator[pa.RecordBatch], workers: int
                ) -> pa.Schema | None:
        """The streaming pass on the block engine
        (:func:`~dpframe.backends.blocks.exact_over_blocks`): at row level each row is its own
        unit, so every batch is a block of whole units; the blocks carry no entropy (row-level
        sampling draws from the release's generator, one block at a time in batch order) and
        are added in batch order, ``workers`` at once with at most ``workers + 1`` batches in
        flight. The last batch's schema (None: no batch)."""
        schema: list[pa.Schema] = []

        def aggregate(batch: pa.RecordBatch, _: np.random.Generator | None
                      ) -> tuple[pa.Schema, Partial]:
            return batch.schema, self._aggregate(run, batch, None)

        def add(done: tuple[pa.Schema, Partial]) -> None:
            schema[:] = [done[0]]
            run.totals.add(*done[1])

        exact_over_blocks((UnitBlock(functools.partial(_same, batch)) for batch in batches),
                          aggregate, add, workers=workers, ahead=workers + 1)
        return schema[0] if schema else None

    # -- privacy units: two passes over keyed partitions ------------------------------------------
    def n_partitions(self) -> int:
        """Partitions for a privacy-unit query: enough for ``partition_rows`` rows each, a
        power of two (integer ids then take their block by a shift, not a division:
        :func:`~dpframe.core.exact.hashing.block_partition`)."""
        if self.partitions is not None:
            return self.partitions
        rows = self.source.row_count()
        if rows is None:
            size = self.source.size_bytes()
            rows = size // 16 if size is not None else None  # >= 16 bytes a CSV row, roughly
        if rows is None:
            return 16
        needed = max(1, min(MAX_PARTITIONS, math.ceil(rows / self.partition_rows)))
        return 1 << (needed - 1).bit_length()

    @staticmethod
    def _spill_batch(request: ComputeRequest, batch: pa.RecordBatch) -> pa.RecordBatch | None:
        """The columns pass 2 needs, without rows every query would drop (missing unit, or an
        undeclared public key); public keys are replaced by their group code, in the type of
        :func:`~dpframe.backends.base.group_code_dtype`."""
        q = request
        assert q.privacy_unit is not None
        # decoded first: a dictionary's null values are nulls of the decoded column only
        units = decoded(batch.column(q.privacy_unit))
        keep = (np.asarray(units.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
                if units.null_count else None)  # None: every row has a unit
        arrays: dict[str, pa.Array] = {}
        if q.by and not q.private_keys:
            codes = _public_codes(batch, q, group_code_dtype(q))
            keep = codes >= 0 if keep is None else keep & (codes >= 0)
            arrays[_GROUP_CODE] = pa.array(codes)
        for c in [*(q.by if q.private_keys else ()), q.privacy_unit, *q.measure_columns]:
            if c not in arrays:
                arrays[c] = units if c == q.privacy_unit else decoded(batch.column(c))
        out = pa.RecordBatch.from_pydict(arrays)
        if keep is None or keep.all():
            return out
        return out.filter(pa.array(keep)) if keep.any() else None

    def _spill_schema(self, request: ComputeRequest, blocks: bool) -> pa.Schema:
        """The schema of spilled batches, for a scan where no row survived pass 1: an empty
        batch taken through pass 1's own steps (a stand-in written apart once missed a
        measured key column). ``blocks``: integer ids are spilled as their blocks."""
        schema = self.source.arrow_schema
        empty = pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema],
                                           schema=schema)
        spilled = self._spill_batch(request, empty)
        assert spilled is not None, "an empty batch has no row to drop"
        if blocks:
            spilled = _with_blocks(request, spilled, np.zeros(0, dtype=np.int64))
        return spilled.schema

    def _two_pass(self, request: ComputeRequest, gen: np.random.Generator) -> ExactAggregates:
        q = request
        assert q.privacy_unit is not None
        cols = request.columns
        n_parts = self.n_partitions()
        hash_key = (int(gen.integers(0, 1 << 63)), int(gen.integers(0, 1 << 63)))
        run = _Run(request, gen, _public_keys(request))
        batches = self._batches(cols, self._dictionary_columns(q),
                                "dpframe scan" if n_parts == 1 else "dpframe scan, pass 1/2")
        if n_parts == 1:  # everything is one partition: keep it in memory, no spill
            schema = self._in_memory(run, batches)
        else:
            schema = self._spilled(run, batches, n_parts, hash_key)
        if schema is None:
            schema = self._spill_schema(request, blocks=n_parts > 1 and _integer_units(
                self.source.arrow_schema, q.privacy_unit))
        return self._finish(run, schema)

    def _in_memory(self, run: _Run, batches: Generator[pa.RecordBatch, None, None]
                   ) -> pa.Schema | None:
        """The one-partition case: the spilled columns gathered in memory and reduced at once;
        their schema (None: no row survived)."""
        parts: list[pa.RecordBatch] = []
        with contextlib.closing(batches):
            for batch in batches:
                sb = self._spill_batch(run.request, batch)
                if sb is not None:
                    parts.append(sb)
        if not parts:
            return None
        schema = parts[-1].schema
        table = pa.Table.from_batches(parts).combine_chunks()
        del parts  # the batches, once copied into one table
        self._reduce_all(run, iter([lambda: table]), None)
        return schema

    def _spilled(self, run: _Run, batches: Generator[pa.RecordBatch, None, None],
                 n_parts: int, hash_key: Key) -> pa.Schema | None:
        """Pass 1 spills each row to the partition of its unit's keyed hash (a heavy slice
        pre-selected into the partition's carried file: :mod:`.carried`); pass 2 reduces each
        partition alone. The spilled schema (None: no row survived)."""
        assert run.request.privacy_unit is not None and run.gen is not None
        # heavy slices draw from a child of the release's generator: the partitions' seeds,
        # drawn from the release's own stream, are the same whether or not any slice is heavy
        child = run.gen.spawn(1)[0]
        run.pair_salt = int(child.integers(0, 1 << 63))
        seeded = ((batch, int(child.integers(0, 1 << 63))) for batch in batches)
        with SpillFiles(n_parts, self.spill_dir) as spill, \
                SpillFiles(n_parts, self.spill_dir) as carried:
            with contextlib.closing(batches):
                schema = self._spill_all(run, seeded, spill, carried, hash_key)
            spill.finish()
            carried.finish()
            pa.default_memory_pool().release_unused()  # pass 1's buffers, before pass 2
            bar = self._bar(n_parts, "dpframe scan, pass 2/2", "partitions")
            try:
                self._reduce_all(run, with_carried(spill.readers(), carried.readers()), bar)
            finally:
                bar.close()
        return schema

    def _spill_all(self, run: _Run, batches: Iterator[tuple[pa.RecordBatch, int]],
                   spill: SpillFiles, carried: SpillFiles, hash_key: Key) -> pa.Schema | None:
        """Pass 1: each batch's spilled columns, ordered by partition on ``WORKERS`` threads
        (numpy and Arrow release the GIL) while this thread writes the batches before them, in
        batch order; a partition's slice past :func:`~.carried.heavy_limit` rows is pre-selected
        into its carried file (each batch with its own seed). The spilled schema (None: no row
        survived)."""
        request = run.request
        unit = request.privacy_unit
        assert unit is not None

        blocks = _integer_units(self.source.arrow_schema, unit)
        shifts = BlockShifts(hash_key, spill.parts)  # the blocks' hashes, shared by batches

        def arranged(sb: pa.RecordBatch) -> tuple[pa.RecordBatch, npt.NDArray[np.intp]]:
            if not blocks:
                return arrange(sb, _partitions(sb.column(unit), hash_key, spill.parts),
                               spill.parts)
            # integer ids: each partition keeps the id's block, dense there (pass 2 needs
            # no renumbering table); a block tells a partition's ids apart. Spilled rows have
            # a unit (decoded, a dictionary's null values included)
            ids = sb.column(unit).to_numpy(zero_copy_only=False)
            block, part = block_partition(ids, hash_key, spill.parts, shifts)
            return arrange(_with_blocks(request, sb, block), part, spill.parts)

        def prepare(item: tuple[pa.RecordBatch, int]) -> _Arranged | None:
            batch, seed = item
            sb = self._spill_batch(request, batch)
            if sb is None:
                return None
            rows, bounds = arranged(sb)
            counts = np.diff(bounds)
            heavy = np.flatnonzero(counts > heavy_limit(rows.num_rows, spill.parts))
            gen = np.random.default_rng(seed)
            ids, groups = _unit_column(rows.schema, unit), _group_column(request)
            return rows, bounds, {int(p): preselect(
                rows.slice(int(bounds[p]), int(counts[p])), request, ids, groups,
                run.pair_salt, gen) for p in heavy}

        schema = None
        with ThreadPoolExecutor(WORKERS, thread_name_prefix="dpframe-spill") as pool, \
                contextlib.closing(in_order(pool, batches, prepare, WORKERS + 1,
                                            eager=True)) as prepared:
            for ready in prepared:  # written as soon as it and those before it are ready
                if ready is not None:
                    rows, bounds, heavy = ready
                    schema = rows.schema
                    spill.write_arranged(rows, bounds, skip=heavy.keys())
                    for p, kept in heavy.items():
                        carried.write(p, kept)
        return schema

    def _reduce_all(self, run: _Run, tables: Iterator[Callable[[], pa.Table] | None],
                    bar: Any | None) -> None:
        """Pass 2 on the block engine (:func:`~dpframe.backends.blocks.exact_over_blocks`):
        partitions hold disjoint units, so each is bounded and aggregated alone, with its own
        generator seeded in partition order from the release's (the same selection whatever
        the number of threads or their schedule), and the partial aggregates are added in
        partition order. ``tables`` gives a function reading each partition (None: an empty
        one), called on the thread that reduces it. With public keys (or none) on ``WORKERS``
        threads, at most ``WORKERS`` partitions in memory at a time; private keys share the
        key index, so those run one partition at a time."""
        gen = run.gen
        assert gen is not None, "units are bounded at random: the release passes a generator"
        # each partition's seed drawn from the release's stream as the engine reaches it
        blocks = (None if read is None else UnitBlock(read, gen.integers(0, 1 << 63, size=4))
                  for read in tables)

        def reduce(table: pa.Table, own: np.random.Generator | None) -> Partial:
            return self._reduce_one(replace(run, gen=own), table)

        exact_over_blocks(blocks, reduce, lambda partial: run.totals.add(*partial),
                          workers=1 if run.request.private_keys else WORKERS,
                          tick=None if bar is None else lambda: bar.update(1))

    def _reduce_one(self, run: _Run, block: pa.Table) -> Partial:
        """One partition of pass 2, holding whole units: bounded and aggregated. With carried
        rows (:mod:`.carried`), bounded by priority first: the rows kept are within every
        bound, so the aggregation's own bounding keeps them all; with ``diagnostics=`` the
        rows dropped on the way ride on the kept ones (:data:`~.carried.DROPPED_BEFORE`),
        counted per unit by the aggregation as bounding's own."""
        assert run.request.privacy_unit is not None and run.gen is not None
        ids = _unit_column(block.schema, run.request.privacy_unit)
        if ROW_PRIORITY in block.schema.names:
            kept, dropped = bound_by_priority(block, run.request, ids, _group_column(run.request),
                                              run.pair_salt, run.gen)
            block = block.take(pa.array(kept))
            if dropped is not None:
                block = block.set_column(block.schema.get_field_index(DROPPED_BEFORE),
                                         DROPPED_BEFORE, pa.array(dropped, pa.int64()))
        units = unit_codes(block.column(ids))
        return self._aggregate(run, block, units, precoded=_GROUP_CODE in block.schema.names)
