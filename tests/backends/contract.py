"""One registry of frame factories: every backend the shared suites run on.

A factory turns one frame, given as :class:`Data` (a pandas frame and the Arrow table of the
same values, with a batch layout), into the object whose ``.dp(session, **options)`` answers on
its backend, kept alive for a ``with`` block (temporary files, Dask's configuration, a DuckDB
connection). The shared suites (the aggregate contract, the non-interference suites, the
agreement of backends) parametrize over :func:`params`, so a new backend is one factory here
plus, where its front lives, one adapter module (docs/architecture.md).

Engine knobs (``batch_size=``, ``partitions=``) belong to ``dpf.scan(...)`` for scans and to
``.dp(...)`` for Polars and DuckDB; :class:`Knobs` passes the layout to the latter, so every
factory honours it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpframe as dpf


@dataclass(frozen=True)
class Data:
    """One frame: :attr:`pandas` for the pandas-typed backends (pandas, Dask), :attr:`arrow`
    (the same values, possibly with dictionary columns or bytes that are not UTF-8) for the
    others, each built when a factory first asks (a frame of mixed Python objects has no Arrow
    form); the layout of scans (rows per batch, partitions of a unit plan) and of Dask."""

    make_pandas: Callable[[], pd.DataFrame]
    make_arrow: Callable[[], pa.Table]
    batch_size: int = 1 << 20
    partitions: int | None = None
    npartitions: int = 2

    @property
    def pandas(self) -> pd.DataFrame:
        return self.make_pandas()

    @property
    def arrow(self) -> pa.Table:
        return self.make_arrow()

    @classmethod
    def of(cls, df: pd.DataFrame, **layout: Any) -> Data:
        """``df`` and its Arrow table (``pa.Table.from_pandas``)."""
        return cls(lambda: df, lambda: pa.Table.from_pandas(df, preserve_index=False), **layout)


class Knobs:
    """A frame whose ``.dp(...)`` gets the layout's engine knobs (Polars, DuckDB)."""

    def __init__(self, frame: Any, **knobs: Any) -> None:
        self.frame = frame
        self.knobs = knobs

    def dp(self, session: Any = None, **options: Any) -> Any:
        return self.frame.dp(session, **self.knobs, **options)


Factory = Callable[[Data], contextlib.AbstractContextManager[Any]]


#: The capabilities a case may need beyond ``.dp(...)`` on an ordinary typed frame; a backend
#: that lacks one says why in :attr:`Backend.lacks`, and :func:`params` skips it with that reason.
CAPABILITIES = {
    "objects": "columns of Python objects of mixed types (lists, Decimals, bytes beside ints)",
    "numeric_dictionaries": "dictionary-encoded columns of numbers",
    "categories": "a pandas Categorical's declared categories as public keys (keys='categories')",
    "uint64": "unsigned 64-bit integer columns",
    "many_cases": "many cases per suite (hypothesis loops, case corpora)",
}


@dataclass(frozen=True)
class Backend:
    """A registry entry: its factory, the marks its tests carry and the capabilities it lacks
    (capability -> the documented reason, shown as the skip reason)."""

    name: str
    build: Factory
    marks: tuple[Any, ...] = field(default=())
    lacks: Mapping[str, str] = field(default_factory=dict)
    #: The share of a hypothesis suite's examples it draws (its cost per release).
    share: float = 1.0

    def can(self, *needs: str) -> bool:
        """Whether this backend has every capability in ``needs``."""
        return not any(n in self.lacks for n in needs)


@contextlib.contextmanager
def _pandas(d: Data) -> Iterator[Any]:
    yield d.pandas


@contextlib.contextmanager
def _scan(d: Data) -> Iterator[Any]:
    yield dpf.scan(d.arrow, batch_size=d.batch_size, partitions=d.partitions)


@contextlib.contextmanager
def _parquet(d: Data) -> Iterator[Any]:
    with tempfile.TemporaryDirectory(prefix="dpframe-contract-") as tmp:
        path = os.path.join(tmp, "frame.parquet")
        pq.write_table(d.arrow, path, row_group_size=max(1, d.batch_size))
        yield dpf.scan(path, batch_size=d.batch_size, partitions=d.partitions)


@contextlib.contextmanager
def _polars(d: Data) -> Iterator[Any]:
    pl = pytest.importorskip("polars")
    import dpframe.fronts.polars  # noqa: F401  (registers pl.DataFrame.dp)

    yield Knobs(pl.from_arrow(d.arrow), batch_size=d.batch_size, partitions=d.partitions)


@contextlib.contextmanager
def _dask(d: Data) -> Iterator[Any]:
    dask = pytest.importorskip("dask")
    import dask.dataframe as dd

    import dpframe.fronts.dask  # noqa: F401  (registers ddf.dp)

    # object columns stay objects (Dask would otherwise turn True, 1 and [1] into text)
    with dask.config.set({"dataframe.convert-string": False, "scheduler": "sync"}):
        yield dd.from_pandas(d.pandas, npartitions=d.npartitions)


@contextlib.contextmanager
def _spark(d: Data) -> Iterator[Any]:
    """A Spark frame in the session the ``spark`` fixture started (its mark requests it)."""
    from pyspark.sql import SparkSession

    import dpframe.fronts.spark  # noqa: F401  (adds sdf.dp)

    t = d.arrow  # Spark has no dictionary type: its values, decoded
    t = pa.table({n: c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c
                  for n, c in zip(t.column_names, t.columns, strict=True)})
    yield SparkSession.builder.getOrCreate().createDataFrame(t)


@contextlib.contextmanager
def _duckdb(d: Data) -> Iterator[Any]:
    duckdb = pytest.importorskip("duckdb")
    import dpframe.fronts.duckdb  # noqa: F401  (adds rel.dp)

    con = duckdb.connect()
    try:
        yield Knobs(con.from_arrow(d.arrow), batch_size=d.batch_size, partitions=d.partitions)
    finally:
        con.close()


_ARROW_TYPED = "an Arrow-typed frame has no column of mixed Python objects (its type is one)"
_NO_CATEGORIES = ("an Arrow dictionary's values come from the data, never declared: "
                  "keys='categories' is refused (KeysError), declare the key list")

REGISTRY: dict[str, Backend] = {b.name: b for b in (
    Backend("pandas", _pandas),
    Backend("scan", _scan, lacks={"objects": _ARROW_TYPED, "categories": _NO_CATEGORIES}),
    # the scan's reader over a file: half the scan's examples (the suite's time)
    Backend("parquet", _parquet, lacks={"objects": _ARROW_TYPED, "categories": _NO_CATEGORIES},
            share=1 / 2),
    Backend("polars", _polars, lacks={
        "objects": _ARROW_TYPED, "categories": _NO_CATEGORIES,
        "numeric_dictionaries": "pl.from_arrow decodes them (Categorical and Enum hold text "
                                "only): an encoded case would be its decoded one",
    }),
    Backend("dask", _dask),
    Backend("spark", _spark, (pytest.mark.spark, pytest.mark.xdist_group("spark")), lacks={
        "objects": _ARROW_TYPED, "categories": _NO_CATEGORIES,
        "uint64": "Spark has no unsigned type: createDataFrame refuses uint64 (PySparkTypeError "
                  "UNSUPPORTED_DATA_TYPE_FOR_ARROW_CONVERSION), so no such Spark frame exists",
        "many_cases": "each case is a JVM job (about a second on local[2]): a few cases only"}),
    # a DuckDB release plans a few SQL queries (~0.1 s on 2 cores): a quarter of the examples
    Backend("duckdb", _duckdb, lacks={"objects": _ARROW_TYPED, "categories": _NO_CATEGORIES},
            share=1 / 4),
)}

#: The backends that run in-process without a marker (loops inside one test may use them).
LOCAL = tuple(name for name, b in REGISTRY.items() if not b.marks)
#: The backends whose tests carry a marker (Spark): a loop of :data:`LOCAL` leaves them out.
MARKED = tuple(name for name, b in REGISTRY.items() if b.marks)


def having(*needs: str, among: tuple[str, ...] = LOCAL) -> tuple[str, ...]:
    """The backends of ``among`` with every capability in ``needs`` (for loops in one test;
    the others are skipped visibly by :func:`params` where a suite parametrizes)."""
    return tuple(n for n in among if REGISTRY[n].can(*needs))


def examples(name: str, n: int) -> int:
    """How many of a hypothesis suite's ``n`` examples backend ``name`` draws (at least 2)."""
    return max(2, round(n * REGISTRY[name].share))


def built(name: str, data: Data) -> contextlib.AbstractContextManager[Any]:
    """The object whose ``.dp(...)`` answers on backend ``name``."""
    return REGISTRY[name].build(data)


def params(*names: str, exclude: tuple[str, ...] = (), needs: tuple[str, ...] = ()
           ) -> list[Any]:
    """``pytest.param`` per backend (default: every one), with its marks and id; a backend
    lacking a capability in ``needs`` is skipped with the registry's reason, never dropped."""
    unknown = set(needs) - set(CAPABILITIES)
    assert not unknown, f"unknown capabilities: {sorted(unknown)}"
    chosen = names or tuple(REGISTRY)
    out = []
    for n in chosen:
        if n in exclude:
            continue
        b = REGISTRY[n]
        marks = list(b.marks)
        missing = [f"{c}: {b.lacks[c]}" for c in needs if c in b.lacks]
        if missing:
            marks.append(pytest.mark.skip(reason=f"{n} lacks " + "; ".join(missing)))
        out.append(pytest.param(n, marks=marks, id=n))
    return out
