"""Findings 66 and 67 (issue 43, items 2 and 9).

Finding 66: text whose bytes are not UTF-8.

Arrow's string types promise UTF-8 without enforcing it: a Parquet file may hold any bytes in
a string column, and ``pd.read_parquet`` hands them on in pandas 3's ``str`` dtype. Python
cannot decode such a value: a private-key release or a distinct count over it raised pyarrow's
bare ``ArrowException`` after the charge (pandas, Dask), and a scan counted it as one more
distinct value while pandas' ``ArrowDtype`` read it as missing. Under dpframe's value model it
conforms to nothing: it is missing, like ``None`` (docs/privacy.md, "Behaviour that does not
depend on the data").

The scenario is exact: the pair (D: a row whose key, unit and counted value are ``None``;
D': the same row with bytes that are not UTF-8 there) is the same data under that model, so
the claim audited is epsilon 0. Each side runs through the real exact half (pandas on the
``str`` dtype ``pd.read_parquet`` gives, the Parquet scan, Polars and Dask), for private keys,
a distinct count, a count of the column and a count at unit level; the privacy loss is the L1
shift of the exact statistics times epsilon, and infinite when one side fails and the other
does not. The broken control (the check taken out) is caught.

Finding 67: one int among text keys, a timing question (docs/privacy.md, "Timing"). pandas
types a column of text alone ``str`` and the same column with one person's int ``object``. The
scenario is exact and structural, never timed: it counts the rows each side's grouping reads
(a row of the ``str`` column hashed by Arrow, a row's address hashed, a row read by value
through pandas' object table) and weighs them by their measured cost per row
(docs/benchmarks/timing.md: an object read by value costs about 4 rows of the ``str`` column,
an address about one). Its "epsilon" is the natural log of the ratio of the two sides' work,
its claim ``ln 1.5``, the timing target. Reading every row of the ``object`` column by value
(the code before, the broken control) is ``ln 4``.
"""

from __future__ import annotations

import contextlib
import math
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpframe as dpf
from dpframe.engine.release import compute_exact

EPSILON = 1.0
#: Bytes that are not UTF-8: a byte UTF-8 never uses, a truncated character, a surrogate.
NOT_UTF8 = (b"\xff", b"caf\xc3", b"\xed\xa0\x80")


def _table(odd: bytes | None) -> pa.Table:
    """40 rows over keys a and b and units u0..u9, then three rows whose text is ``odd``
    (None: missing) in ``c``, the key, unit and counted column."""
    text: list[bytes | None] = [b"ab"[i % 2:i % 2 + 1] for i in range(40)]
    units = [f"u{i % 10}".encode() for i in range(40)]
    extra = [odd if odd is None else NOT_UTF8[i] if odd == b"*" else odd for i in range(3)]
    c = pa.array([*text, *extra], pa.binary()).cast(pa.string(), safe=False)
    u = pa.array([*units, *extra], pa.binary()).cast(pa.string(), safe=False)
    return pa.table({"c": c, "u": u, "x": pa.array(np.arange(43.0))})


#: The queries audited: (aggregate, column, by, private keys, unit column).
QUERIES: tuple[tuple[str, str | None, str | None, bool, str | None], ...] = (
    ("count", None, "c", True, None),
    ("count_distinct", "c", None, False, None),
    ("count", "c", None, False, None),
    ("count", None, None, False, "u"),
    ("count_distinct", "c", "c", True, "u"),
)


def _backend(front: str, table: pa.Table, tmp: Path) -> tuple[Any, Any]:
    """The frame of ``front`` holding ``table`` and the backend its releases run on."""
    path = tmp / f"{front}.parquet"
    pq.write_table(table, path)
    if front == "pandas":
        from dpframe.backends.pandas import PandasBackend

        df = pd.read_parquet(path)  # pandas 3: the str dtype, the bytes as they are
        return df, PandasBackend(df)
    if front == "scan":
        scan = dpf.scan(str(path))
        return scan, scan.backend
    if front == "polars":
        pl = pytest.importorskip("polars")
        from dpframe.fronts.polars import PolarsBackend

        frame = pl.from_arrow(table)  # Polars keeps the bytes as they are too
        return frame, PolarsBackend(frame)
    import dask.dataframe as dd

    from dpframe.backends.dask import DaskBackend

    ddf = dd.from_pandas(pd.read_parquet(path), npartitions=2, sort=False)
    return ddf, DaskBackend(ddf)


def _statistics(exact: Any) -> dict[tuple[object, ...], float]:
    """The exact statistics a release noises, by (request, key): counts and sums per group,
    distinct (group, value) pairs per group, and distinct units per observed private key."""
    out: dict[tuple[object, ...], float] = {}
    for r, values in exact.values.items():
        for k, v in zip(exact.keys, np.asarray(values, dtype=float).tolist(), strict=True):
            out[("value", r, k)] = float(np.sum(v))
    for r, (groups, _hashes) in exact.distinct.items():
        for k, n in zip(exact.keys, np.bincount(np.asarray(groups, dtype=np.int64),
                                                minlength=len(exact.keys)).tolist(),
                        strict=True):
            out[("distinct", r, k)] = float(n)
    if exact.unit_counts is not None:
        for k, n in zip(exact.keys, np.asarray(exact.unit_counts).tolist(), strict=True):
            out[("units", k)] = float(n)
    return out


def _exact(front: str, odd: bytes | None, query: tuple[Any, ...], seed: int, tmp: Path
           ) -> dict[tuple[object, ...], float] | None:
    """The exact statistics of ``query`` on ``front`` (None: the exact half failed, which
    is charged and raised)."""
    import dask

    aggregate, column, by, private, unit = query
    frame, backend = _backend(front, _table(odd), tmp)
    s = dpf.Session(1e9, 1e-3, seed=seed, **({"privacy_unit": unit} if unit else {}))
    options: dict[str, Any] = ({"privacy_unit": unit, "max_rows_per_unit": 40,
                                "max_groups_per_unit": 2} if unit else {})
    q = frame.dp(s, **options).query(aggregate, *([column] if column else []), by=by,
                            keys="private" if private else None, epsilon=EPSILON,
                            **({"delta": 1e-6} if private else {}))
    with dask.config.set(scheduler="sync"):
        computed = compute_exact(s, q, backend)
    return None if computed.defect is not None else _statistics(computed.exact)


def finding_not_utf8(seed: int) -> tuple[float, float, float, str]:
    """66. The pair (D: three rows whose key, unit and counted value are missing; D': the
    same rows with bytes that are not UTF-8 there), on pandas' ``str`` dtype from
    ``pd.read_parquet``, the Parquet scan, Polars and Dask: the L1 shift of the exact
    statistics times epsilon (a failure on one side only: infinite); claim 0, the same data
    under the value model."""
    worst, where = 0.0, "none"
    with tempfile.TemporaryDirectory(prefix="dpframe-audit-") as tmp:
        for front in ("pandas", "scan", "polars", "dask"):
            for query in QUERIES:
                for odd in (NOT_UTF8[0], b"*"):
                    a = _exact(front, None, query, seed, Path(tmp))
                    b = _exact(front, odd, query, seed, Path(tmp))
                    if (a is None) != (b is None):
                        loss = math.inf
                    elif a is None or b is None:
                        loss = 0.0
                    else:
                        loss = EPSILON * sum(abs(a.get(k, 0.0) - b.get(k, 0.0))
                                             for k in {*a, *b})
                    if loss > worst:
                        worst, where = loss, f"{front} {query[0]}({query[1] or ''}) by {query[2]}"
    return worst, 0.0, 0.0, f"exact statistics, worst shift on {where}"


@contextlib.contextmanager
def utf8_unchecked() -> Iterator[None]:
    """The old reading: text is taken as it is, whatever its bytes."""
    from dpframe.backends.blocks import arrow_conform as conform

    with pytest.MonkeyPatch.context() as m:
        m.setattr(conform, "utf8_or_missing", lambda arr: arr)
        yield


#: Cost of a row read by value through pandas' object table, in rows of a ``str`` column hashed
#: by Arrow (docs/benchmarks/timing.md: about 43 ms against 11-16 ms per million rows); an
#: address hashed costs about one such row (pandas' integer table).
BY_VALUE_COST = 4.0
TIMING_TARGET = 1.5


def finding_object_column_work(seed: int) -> tuple[float, float, float, str]:
    """67. D: 200,000 text keys (50 distinct, each one object repeated) in pandas' ``str``
    dtype; D': the same with one row an int, which pandas types ``object``. The work of
    factorizing each side's key column (:func:`dpframe.backends.blocks.frames.factorize`, the step
    of every key, unit and distinct count), counted, not timed; claim ``ln 1.5``."""
    from unittest import mock

    from dpframe.backends.blocks import frames as backend

    n = 200_000
    keys = [f"key_{i:02d}" for i in range(50)]
    rows = [keys[i] for i in np.random.default_rng(seed).integers(0, 50, n)]
    d = pd.Series(rows)  # str dtype
    odd = [*rows]
    odd[n // 2] = 7
    d2 = pd.Series(odd)  # object dtype
    assert str(d.dtype) == "str" and d2.dtype == object
    by_value, by_address = [0], [0]
    inner_values, inner_objects = backend._factorize_objects, backend._by_object

    def values(v: np.ndarray) -> Any:
        by_value[0] += v.size
        return inner_values(v)

    def objects(v: np.ndarray) -> Any:
        shared = inner_objects(v)
        by_address[0] += 0 if shared is None else v.size
        return shared

    with mock.patch.object(backend, "_factorize_objects", values), \
            mock.patch.object(backend, "_by_object", objects):
        backend.factorize(d)
        assert by_value[0] == by_address[0] == 0  # the str column: Arrow's hashing alone
        backend.factorize(d2)
    work = by_address[0] + BY_VALUE_COST * by_value[0]
    return (math.log(max(work, n) / n), math.log(TIMING_TARGET), 0.0,
            f"{by_value[0]:,} rows by value, {by_address[0]:,} addresses, against {n:,} rows "
            "of the str column (work, not time)")


@contextlib.contextmanager
def by_value_only() -> Iterator[None]:
    """The old reading of an object column: every row by value."""
    from dpframe.backends.blocks import frames as backend

    with pytest.MonkeyPatch.context() as m:
        m.setattr(backend, "_BY_OBJECT_ROWS", 1 << 62)
        yield

