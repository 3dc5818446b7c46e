"""Shared machinery of the non-interference suite (docs/privacy.md, "Behaviour that does not depend
on the data" and "One canonical value model").

* A :class:`Spec` is a small frame described backend-independently: a key column ``g``, an
  optional privacy-unit column ``u``, a float value column ``x`` and an int column ``n``, each
  key / unit column of one *kind* (its public dtype). Builders turn it into a pandas frame, a
  pyarrow Table (with real ``DictionaryArray`` columns holding repeated entries), a Parquet
  file and a Dask frame.
* :func:`observe` gives the hashable structural fingerprint of a result or an exception:
  everything the spec says may depend only on the arguments and the public schema.
* :func:`run` answers one catalogued query on one backend under a fresh seeded session at a
  huge epsilon, and records the result (or exception) and the session's spend.
* An *oracle* (:func:`canon`, :func:`order_key`), written from the spec and independent of
  ``dpframe.core.exact.values``, says what a canonical label is, how labels are ordered, and which
  rows match a declared key.

Nothing here imports a module that only 0.2 has, so the suite runs against 0.1 too
(``PYTHONPATH=/work/old``), where it is expected to fail.
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import itertools
import math
import numbers
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

import dpframe as dpf
from tests.backends import contract
from tests.backends.contract import Data
from tests.engine._releases import recording

#: A huge epsilon: geometric / granular noise of scale ~1e-9 is 0 except with probability
#: about exp(-1e8); the exponential mechanism picks a best-utility candidate.
E = 1e9
DELTA = 1e-6
BUDGET = 1e12
SEED = 20_240_611
MAX_ROWS = 2  # max_rows_per_unit of unit-level frames (max_groups_per_unit is 1)
BINS = (-10.0, -1.0, 0.0, 1.0, 10.0)
N_BOUNDS = (0, 10)
G_BOUNDS = (0, 100)  # the key's numbers, where it is numeric and measured (sum(g))
X_BOUNDS = ((-10.0, 10.0), (0.0, 10.0), (-1.0, 4.0))  # the first is symmetric about 0

#: The backends a loop inside one test runs on: every unmarked backend of the registry. The
#: marked one (Spark) is parametrized with its marker (``contract.params``), on fewer cases.
BACKENDS = contract.LOCAL


# -- examples of values ----------------------------------------------------------------------------

NAN = float("nan")
INF = float("inf")


class _Opaque:
    """An arbitrary object in an object column: hashable, equal only to itself, non-conforming."""

    def __repr__(self) -> str:
        return "<opaque>"


OPAQUE = _Opaque()


class NotUtf8:
    """A text value whose bytes are not UTF-8, in an Arrow string column (``str`` and ``dict``
    kinds only: a Parquet file may hold one, ``pd.read_parquet`` hands it on in pandas' ``str``
    dtype, and Python cannot decode it). It conforms to nothing: missing, like ``None``."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def __repr__(self) -> str:
        return f"NotUtf8({self.raw!r})"


#: Such values: a byte UTF-8 never uses, a truncated character, an encoded surrogate.
NOT_UTF8 = (NotUtf8(b"\xff"), NotUtf8(b"caf\xc3"), NotUtf8(b"\xed\xa0\x80"))

#: Key values by column kind, as classes of equal values (one class: several spellings of one
#: canonical key; the missing class: every missing or non-conforming value). ``dict*`` kinds
#: become Arrow dictionaries with every entry repeated (and -0.0 next to 0.0); pandas and Dask
#: get the decoded values.
MISSING_OBJECTS: list[object] = [None, NAN, pd.NA, np.float64("nan"), [1], {"a": 1}, (1, 2),
                                 complex(1, 0), OPAQUE]
KEY_CLASSES: dict[str, list[list[object]]] = {
    "str": [["a"], ["b"], ["zz"], [""], [None], ["é"]],
    "objstr": [["a"], ["b"], ["zz"], [""], [None], ["é"]],
    "float": [[0.0, -0.0], [1.5], [-2.0], [NAN], [INF], [-INF], [1e300]],
    "int": [[0], [1], [2], [-3], [7], [2**62]],
    "bool": [[True], [False]],
    "dict": [["a"], ["b"], ["zz"], [None]],
    "dictfloat": [[0.0, -0.0], [1.5], [NAN]],
    "mixed": [[True, 1, 1.0, np.int64(1), np.bool_(True), np.float64(1.0), decimal.Decimal("1")],
              [False, 0, 0.0, -0.0, np.float64(-0.0), np.int8(0)],
              [2.5, np.float32(2.5)], [2**70], ["a", np.str_("a")], ["1"], ["zz"], [b"x"],
              [datetime.date(2024, 1, 1)],
              # one date-time, one span: pandas', numpy's and Python's spellings
              [pd.Timestamp("2024-01-01"), np.datetime64("2024-01-01T00:00:00"),
               datetime.datetime(2024, 1, 1)],
              [pd.Timedelta(days=1), np.timedelta64(1, "D"), datetime.timedelta(days=1)],
              MISSING_OBJECTS],
}
UNIT_CLASSES: dict[str, list[list[object]]] = {
    "int": [[1], [2], [3], [4], [5], [6], [7], [8]],
    "float": [[0.0, -0.0], [1.0], [2.5], [-3.0], [7.0], [1e300], [NAN]],
    "str": [["u1"], ["u2"], ["u3"], ["u4"], ["u5"], ["u6"], [None]],
    "dict": [["u1"], ["u2"], ["u3"], ["u4"], ["u5"], [None]],
    "dictfloat": [[0.0, -0.0], [1.0], [2.0], [3.5], [-1.0], [NAN]],
    "mixed": [[1, True, 1.0, np.int64(1)], ["1"], ["u2"], ["u3"], [2, 2.0, np.float32(2.0)],
              [0, -0.0, False], [b"u"],
              # equal, hashed differently: a Timestamp and np.datetime64 with nanoseconds
              [pd.Timestamp("2024-06-01 00:00:00.000000001"),
               np.datetime64(pd.Timestamp("2024-06-01 00:00:00.000000001").value, "ns")],
              MISSING_OBJECTS],
}
X_POOL: list[object] = [NAN, None, INF, -INF, -0.0, 0.0, 1e308, -1e308, 5e-324, 3.25, -7.5,
                        12.0, 1.0, 2.0, 0.1]
N_POOL = [0, 1, 3, 15, -5, 2**62, -(2**62)]

#: Declared public keys, in a deliberately unsorted order, with keys absent from every pool.
DECLARED: dict[str, list[object]] = {
    "str": ["zz", "a", "q", "b"],
    "objstr": ["zz", "a", "q", "b"],
    "dict": ["zz", "a", "q", "b"],
    "float": [1.5, 0.0, 99.0, INF],
    "dictfloat": [1.5, 0.0, 99.0],
    "int": [7, 0, 99, 2],
    "bool": [True, False],
    "mixed": [1, "a", 0, b"x", 2.5, "zz", 99],
}

#: The public kind of each column kind (what the spec calls int / float / bool / other).
PUBLIC_KIND = {"str": "other", "objstr": "other", "dict": "other", "mixed": "other",
               "float": "float", "dictfloat": "float", "int": "int", "bool": "bool"}
INDEX_DTYPE = {"int": "int64", "float": "float64", "bool": "bool", "other": "object"}

ARROW_KEY_KINDS = ("str", "objstr", "float", "int", "bool", "dict", "dictfloat")
ALL_KEY_KINDS = (*ARROW_KEY_KINDS, "mixed")
ARROW_UNIT_KINDS = (None, "int", "float", "str", "dict", "dictfloat")
ALL_UNIT_KINDS = (*ARROW_UNIT_KINDS, "mixed")


# -- the oracle: canonical values and their order (from the spec, not from dpframe) ---------------

def canon(v: object, kind: str) -> object | None:
    """The canonical form of ``v`` in a column of public ``kind``; None when missing or
    non-conforming (docs/privacy.md, "One canonical value model")."""
    if v is None or v is pd.NA or v is pd.NaT or isinstance(v, NotUtf8):
        return None
    if kind == "float":
        f = float(v)  # type: ignore[arg-type]
        return None if math.isnan(f) else f + 0.0
    if kind == "int":
        return int(v)  # type: ignore[call-overload]
    if kind == "bool":
        return bool(v)
    # one spelling per date-time (aware ones in UTC) and per span; numpy's are integers too
    if isinstance(v, datetime.datetime | np.datetime64):
        t = pd.Timestamp(v)
        return None if t is pd.NaT else t.tz_convert("UTC") if t.tzinfo is not None else t
    if isinstance(v, datetime.timedelta | np.timedelta64):
        d = pd.Timedelta(v)
        return None if d is pd.NaT else d
    if isinstance(v, bool | np.bool_):
        return int(v)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, float | np.floating):
        f = float(v)
        if math.isnan(f):
            return None
        return int(f) if f.is_integer() else f
    if isinstance(v, decimal.Decimal):
        if v.is_nan():
            return None
        return int(v) if v == int(v) else float(v)
    if isinstance(v, str):
        return str(v)
    if isinstance(v, bytes):
        return bytes(v)
    if isinstance(v, datetime.date | datetime.datetime | datetime.time | datetime.timedelta):
        return v
    return None  # list, dict, tuple, complex, arbitrary objects: non-conforming


def order_key(v: object) -> tuple[object, ...]:
    """Total order on canonical labels: numbers < str < bytes < other (by type name), then
    value."""
    if isinstance(v, numbers.Number):
        return (0, "", v)
    if isinstance(v, str):
        return (1, "", v)
    if isinstance(v, bytes):
        return (2, "", v)
    for family in (datetime.datetime, datetime.date, datetime.time, datetime.timedelta):
        if isinstance(v, family):  # a Timestamp is a datetime, a Timedelta a timedelta
            return (3, family.__name__, v)
    return (3, type(v).__name__, v)


def is_canonical_label(v: object, kind: str) -> bool:
    """Whether a released private label is in canonical form for a column of ``kind``."""
    if kind == "float":  # a float, never NaN, never -0.0
        return type(v) is float and not math.isnan(v) and not (
            v == 0 and math.copysign(1.0, v) < 0)
    if kind == "int":
        return type(v) is int
    if kind == "bool":
        return type(v) is bool
    if type(v) is float:
        return not math.isnan(v) and not v.is_integer()
    return type(v) in (int, str, bytes, datetime.date, pd.Timestamp, datetime.time,
                       pd.Timedelta)


# -- frames ----------------------------------------------------------------------------------------

Row = tuple[object, object, object, object]  # (g, u, x, n)


@dataclass(frozen=True)
class Spec:
    """A frame, independent of any backend, and how to scan it."""

    key_kind: str
    unit_kind: str | None
    rows: tuple[Row, ...]
    x_bounds: tuple[float, float] = (-10.0, 10.0)
    neighbouring: str = "add_remove"
    batch_size: int = 1 << 20
    partitions: int | None = None
    npartitions: int = 2

    @property
    def key_public_kind(self) -> str:
        return PUBLIC_KIND[self.key_kind]

    @property
    def unit_public_kind(self) -> str:
        return PUBLIC_KIND[self.unit_kind] if self.unit_kind else "other"

    def options(self, *, public_keys: bool = True) -> dict[str, Any]:
        """The ``.dp(...)`` options: bounds, declared keys, unit and contribution bounds."""
        opts: dict[str, Any] = {"bounds": {"x": self.x_bounds, "n": N_BOUNDS, "g": G_BOUNDS}}
        if public_keys:
            opts["keys"] = {"g": list(DECLARED[self.key_kind])}
        if self.unit_kind is not None:
            opts.update(privacy_unit="u", max_rows_per_unit=MAX_ROWS, max_groups_per_unit=1)
        return opts

    # -- oracle facts about the data ---------------------------------------------------------------
    def canonical_keys(self) -> list[object | None]:
        return [_canon_safe(r[0], self.key_public_kind) for r in self.rows]

    def canonical_units(self) -> list[object | None]:
        if self.unit_kind is None:
            return list(range(len(self.rows)))  # every row is its own unit
        return [_canon_safe(r[1], self.unit_public_kind) for r in self.rows]

    def bounding_binds(self, grouped: bool) -> bool:
        """Whether contribution bounding could drop a row (then it is random)."""
        if self.unit_kind is None:
            return False
        rows: dict[object, int] = {}
        groups: dict[object, set[object]] = {}
        for k, u in zip(self.canonical_keys(), self.canonical_units(), strict=True):
            if u is None or (grouped and k is None):
                continue
            rows[u] = rows.get(u, 0) + 1
            groups.setdefault(u, set()).add(k)
        return any(c > MAX_ROWS for c in rows.values()) or (
            grouped and any(len(g) > 1 for g in groups.values()))

    def units_per_key(self) -> dict[object, int]:
        """Distinct canonical units per canonical key (rows with a missing key or unit
        dropped)."""
        seen: dict[object, set[object]] = {}
        for k, u in zip(self.canonical_keys(), self.canonical_units(), strict=True):
            if k is not None and u is not None:
                seen.setdefault(k, set()).add(u)
        return {k: len(v) for k, v in seen.items()}


def _canon_safe(v: object, kind: str) -> object | None:
    try:
        return canon(v, kind)
    except (TypeError, ValueError, OverflowError):
        return None


def text_array(values: Sequence[object], t: pa.DataType | None = None) -> pa.Array:
    """Text (str or None) as an Arrow array of ``t`` (default: string), a :class:`NotUtf8`
    value as its bytes."""
    t = pa.string() if t is None else t
    vals = list(values)
    if not any(isinstance(v, NotUtf8) for v in vals):
        return pa.array(vals, type=t)
    raw = [v.raw if isinstance(v, NotUtf8) else None if v is None else str(v).encode()
           for v in vals]
    return pa.array(raw, type=pa.binary()).cast(t, safe=False)  # unchecked, as a file's bytes


def _pandas_column(values: Sequence[object], kind: str | None) -> pd.Series:
    vals = list(values)
    if kind in ("str", "dict"):
        if any(isinstance(v, NotUtf8) for v in vals):  # pandas' str dtype, as read_parquet
            dtype = pd.Series([], dtype="str").dtype
            return pd.Series(pd.arrays.ArrowStringArray(
                pa.chunked_array([text_array(vals, pa.large_string())]), dtype=dtype))
        return pd.Series(vals, dtype="str")
    if kind in ("objstr", "mixed"):
        s = pd.Series([None] * len(vals), dtype=object)
        for i, v in enumerate(vals):  # element by element: lists and tuples stay objects
            s.iat[i] = v
        return s
    if kind in ("float", "dictfloat"):
        return pd.Series([NAN if v is None else v for v in vals], dtype="float64")
    if kind == "int":
        return pd.Series(vals, dtype="int64")
    if kind == "bool":
        return pd.Series(vals, dtype="bool")
    raise AssertionError(kind)


def to_pandas(spec: Spec) -> pd.DataFrame:
    cols = list(zip(*spec.rows, strict=True)) if spec.rows else [(), (), (), ()]
    data = {"g": _pandas_column(cols[0], spec.key_kind)}
    if spec.unit_kind is not None:
        data["u"] = _pandas_column(cols[1], spec.unit_kind)
    data["x"] = pd.Series([NAN if v is None else v for v in cols[2]], dtype="float64")
    data["n"] = pd.Series(list(cols[3]), dtype="int64")
    return pd.DataFrame(data)


def _repr_key(v: object) -> str:
    return repr(v)


def _dictionary(values: Sequence[object], value_type: pa.DataType) -> pa.DictionaryArray:
    """A dictionary array whose dictionary repeats every entry twice (rows alternate between
    the copies), adds an unused entry, and for floats lists -0.0 and 0.0 apart."""
    distinct: list[object] = []
    for v in values:
        if v is not None and _repr_key(v) not in map(_repr_key, distinct):
            distinct.append(v)
    unused: object = "unused" if pa.types.is_string(value_type) else 123.25
    entries = [e for v in distinct for e in (v, v)] + [unused]
    pos = {_repr_key(v): 2 * i for i, v in enumerate(distinct)}
    idx = [None if v is None else pos[_repr_key(v)] + (i % 2) for i, v in enumerate(values)]
    return pa.DictionaryArray.from_arrays(pa.array(idx, type=pa.int32()),
                                          text_array(entries, value_type)
                                          if pa.types.is_string(value_type)
                                          else pa.array(entries, type=value_type))


def _arrow_column(values: Sequence[object], kind: str) -> pa.Array:
    vals = list(values)
    if kind in ("str", "objstr"):
        return text_array(vals)
    if kind == "dict":
        return _dictionary(vals, pa.string())
    if kind == "dictfloat":
        return _dictionary(vals, pa.float64())
    if kind == "float":
        return pa.array(vals, type=pa.float64(), from_pandas=False)
    if kind == "int":
        return pa.array(vals, type=pa.int64())
    if kind == "bool":
        return pa.array(vals, type=pa.bool_())
    raise AssertionError(f"{kind} columns have no Arrow type")


def to_arrow(spec: Spec) -> pa.Table:
    cols = list(zip(*spec.rows, strict=True)) if spec.rows else [(), (), (), ()]
    data = {"g": _arrow_column(cols[0], spec.key_kind)}
    if spec.unit_kind is not None:
        data["u"] = _arrow_column(cols[1], spec.unit_kind)
    data["x"] = pa.array(list(cols[2]), type=pa.float64(), from_pandas=False)
    data["n"] = pa.array(list(cols[3]), type=pa.int64())
    return pa.table(data)


@contextlib.contextmanager
def built(backend: str, spec: Spec) -> Iterator[Any]:
    """The object whose ``.dp(...)`` answers queries on ``backend`` (kept alive, with its
    temporary files and Dask configuration, for the duration of the block): a factory of the
    registry (``tests/backends/contract.py``), or ``dask-retyped``."""
    if backend == "dask-retyped":
        import dask
        import dask.dataframe as dd

        import dpframe.fronts.dask  # noqa: F401  (registers ddf.dp)

        # partitions typed apart from the frame's meta, as one person's value can type theirs
        # (dd.from_delayed, map_partitions): every other partition's columns are objects
        whole = to_pandas(spec)
        bounds = np.linspace(0, len(whole), spec.npartitions + 1).astype(int)
        parts = [_retyped(whole.iloc[a:b].reset_index(drop=True), i % 2 == 1)
                 for i, (a, b) in enumerate(itertools.pairwise(bounds))]
        with dask.config.set({"dataframe.convert-string": False, "scheduler": "threads"}):
            yield dd.from_delayed([dask.delayed(p) for p in parts], meta=whole.iloc[:0],
                                  verify_meta=False)
        return
    data = Data(lambda: to_pandas(spec), lambda: to_arrow(spec), batch_size=spec.batch_size,
                partitions=spec.partitions, npartitions=spec.npartitions)
    with contract.built(backend, data) as frame:
        yield frame


def _retyped(part: pd.DataFrame, as_objects: bool) -> pd.DataFrame:
    """``part`` with every column as Python objects (``as_objects``), else each column typed
    by pandas from this partition's values alone."""
    cols = {}
    for c in part.columns:
        values = part[c].tolist()
        s = pd.Series([None] * len(values), dtype=object)
        for i, v in enumerate(values):  # element by element: lists and tuples stay objects
            s.iat[i] = v
        cols[c] = s if as_objects else s.infer_objects()
    return pd.DataFrame(cols)


# -- queries ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Query:
    """One catalogued aggregate: ``call(private_frame)``; grouped ones group by ``g``."""

    name: str
    call: Callable[[Any], Any] = field(compare=False, repr=False)
    grouped: bool = False
    private: bool = False


def _grouped(private: bool) -> list[Query]:
    def by(p: Any) -> Any:
        return p.groupby("g", keys="private") if private else p.groupby("g")

    kw: dict[str, float] = {"epsilon": E, "delta": DELTA} if private else {"epsilon": E}
    tag = "private" if private else "public"
    agg = {"x": ["sum", "mean", "max"], "n": ["count", "sum", "min"]}
    return [
        Query(f"{tag}.count", lambda p: by(p).count(**kw), True, private),
        Query(f"{tag}.count(x)", lambda p: by(p).count("x", **kw), True, private),
        Query(f"{tag}.sum(x)", lambda p: by(p).sum("x", **kw), True, private),
        Query(f"{tag}.sum(n)", lambda p: by(p).sum("n", **kw), True, private),
        Query(f"{tag}.mean(x)", lambda p: by(p).mean("x", **kw), True, private),
        Query(f"{tag}.max(x)", lambda p: by(p).max("x", **kw), True, private),
        Query(f"{tag}.min(n)", lambda p: by(p).min("n", **kw), True, private),
        Query(f"{tag}.quantile(x,1/3)", lambda p: by(p).quantile("x", 1 / 3, **kw), True,
              private),
        Query(f"{tag}.agg", lambda p: by(p).agg(agg, **kw), True, private),
        Query(f"{tag}.var(x)", lambda p: by(p).var("x", **kw), True, private),
        Query(f"{tag}.count_distinct(n)", lambda p: by(p).count_distinct("n", **kw), True,
              private),
        # the key measured too: its values identify groups, its numbers are counted
        Query(f"{tag}.count(g)", lambda p: by(p).count("g", **kw), True, private),
        Query(f"{tag}.count_distinct(g)", lambda p: by(p).count_distinct("g", **kw), True,
              private),
    ]


UNGROUPED = [
    Query("count", lambda p: p.count(epsilon=E)),
    Query("count(x)", lambda p: p.count("x", epsilon=E)),
    Query("count(g)", lambda p: p.count("g", epsilon=E)),
    Query("sum(x)", lambda p: p.sum("x", epsilon=E)),
    Query("sum(n)", lambda p: p.sum("n", epsilon=E)),
    Query("mean(x)", lambda p: p.mean("x", epsilon=E)),
    Query("mean(n)", lambda p: p.mean("n", epsilon=E)),
    Query("max(x)", lambda p: p.max("x", epsilon=E)),
    Query("min(x)", lambda p: p.min("x", epsilon=E)),
    Query("median(n)", lambda p: p.median("n", epsilon=E)),
    Query("quantile(x,1/3)", lambda p: p.quantile("x", 1 / 3, epsilon=E)),
    Query("histogram(x)", lambda p: p.histogram("x", BINS, epsilon=E)),
    Query("var(x)", lambda p: p.var("x", epsilon=E)),
    Query("std(n)", lambda p: p.std("n", epsilon=E, ci=0.9)),
    Query("count_distinct(g)", lambda p: p.count_distinct("g", epsilon=E)),
    Query("count_distinct(n)", lambda p: p.count_distinct("n", epsilon=E)),
]
PUBLIC = _grouped(private=False)
PRIVATE = _grouped(private=True)
ALL_QUERIES = [*UNGROUPED, *PUBLIC, *PRIVATE]


def _key_sum(private: bool) -> Query:
    kw: dict[str, float] = {"epsilon": E, "delta": DELTA} if private else {"epsilon": E}

    def call(p: Any) -> Any:
        return (p.groupby("g", keys="private") if private else p.groupby("g")).sum("g", **kw)

    return Query(f"{'private' if private else 'public'}.sum(g)", call, True, private)


#: Queries that measure the key they group by (sum(g) refuses keys that are not numeric, so
#: it is not among ALL_QUERIES, which ordinary data must answer)
MEASURED_KEY = [*(q for q in ALL_QUERIES if q.grouped and q.name.endswith("(g)")),
                _key_sum(False), _key_sum(True)]
QUERY = {q.name: q for q in ALL_QUERIES}


# -- running and observing -------------------------------------------------------------------------

def new_session(spec: Spec | None = None, seed: int = SEED) -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seed's InsecureSeedWarning
        return dpf.Session(BUDGET, 0.5, seed=seed,
                           neighbouring=spec.neighbouring if spec else "add_remove")


@dataclass
class Outcome:
    """What one query did: its result or exception, and the session's spend afterwards."""

    backend: str
    query: str
    result: Any = None
    error: BaseException | None = None
    spent: tuple[float, float] = (0.0, 0.0)
    provenance: Any = None  # a scalar result's provenance (the release published)

    @property
    def value(self) -> Any:
        return self.error if self.error is not None else self.result

    def fingerprint(self) -> tuple[object, ...]:
        return (observe(self.value), self.spent, self.provenance)

    def describe(self) -> str:
        what = (f"{type(self.error).__name__}: {self.error}" if self.error is not None
                else repr(self.result))
        return f"[{self.backend}] {self.query} -> {what} (spent {self.spent})"


def run(backend: str, spec: Spec, query: Query, *, seed: int = SEED) -> Outcome:
    """Answer ``query`` on ``spec`` through ``backend``, in a fresh seeded session."""
    session = new_session(spec, seed)
    out = Outcome(backend, query.name)
    with warnings.catch_warnings(), recording() as published:
        warnings.simplefilter("ignore")
        with built(backend, spec) as frame:
            try:
                out.result = query.call(frame.dp(session, **spec.options(
                    public_keys=not query.private)))
            except Exception as exc:
                out.error = exc
    out.spent = session.spent
    if out.error is None and not isinstance(out.result, pd.Series | pd.DataFrame):
        rel = published.last(session)
        out.provenance = _freeze_provenance(getattr(rel, "provenance", None))
    return out


def _freeze(v: object) -> object:
    if isinstance(v, dict):
        return tuple((str(k), _freeze(x)) for k, x in sorted(v.items(), key=lambda i: str(i[0])))
    if isinstance(v, list | tuple):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, float | np.floating):
        return repr(float(v))
    if isinstance(v, np.integer):
        return int(v)
    try:
        hash(v)
    except TypeError:
        return repr(v)
    return v


#: Provenance entries that identify a ledger row rather than describe the release, and the
#: hints read from the noisy values (core/hints.py: post-processing, as data-dependent as the
#: noisy values themselves, and as private), and the digest of the noisy values
#: (core/digest.py; a derived result names it in ``derived_from``).
_LEDGER_FIELDS = ("ledger_entry", "ledger_head", "warnings", "values_digest", "derived_from")


def _freeze_provenance(dp: object) -> object:
    if not isinstance(dp, dict):
        return None
    return _freeze({k: v for k, v in dp.items() if k not in _LEDGER_FIELDS})


def label(v: object) -> tuple[object, ...]:
    """A label with its exact type: ``repr(-0.0)`` is not ``repr(0.0)``, ``1`` is not ``True``."""
    if isinstance(v, tuple):
        return ("tuple", tuple(label(x) for x in v))
    return (type(v).__name__, repr(v))


def observe_index(idx: pd.Index, *, labels: bool = True) -> tuple[object, ...]:
    dtypes = (tuple(str(t) for t in idx.dtypes) if isinstance(idx, pd.MultiIndex)
              else (str(idx.dtype),))
    out: tuple[object, ...] = (type(idx).__name__, dtypes, tuple(map(repr, idx.names)))
    if labels:
        out += (tuple(label(v) for v in idx),)
    return out


def observe(x: Any, *, labels: bool = True) -> tuple[object, ...]:
    """Structural fingerprint of a result or an exception: the exception's type and message;
    a scalar's Python type; a pandas result's index (type, dtype, names and, with ``labels``,
    every label with its exact type), name, columns, dtypes and ``.attrs["dp"]`` provenance
    (every public field: keys, mechanism, epsilon, delta, noise scale, ...)."""
    if isinstance(x, BaseException):
        return ("error", type(x).__name__, str(x))
    if isinstance(x, pd.Series):
        return ("Series", observe_index(x.index, labels=labels), repr(x.name), str(x.dtype),
                tuple(sorted(map(str, x.attrs))), _freeze_provenance(x.attrs.get("dp")))
    if isinstance(x, pd.DataFrame):
        return ("DataFrame", observe_index(x.index, labels=labels), observe_index(x.columns),
                tuple(str(t) for t in x.dtypes), tuple(sorted(map(str, x.attrs))),
                _freeze_provenance(x.attrs.get("dp")))
    return ("scalar", type(x).__name__)


def released(x: Any) -> list[object]:
    """The released numbers of a result, flat."""
    if isinstance(x, pd.Series):
        return list(x.tolist())
    if isinstance(x, pd.DataFrame):
        return [v for row in x.to_numpy(dtype=object).tolist() for v in row]
    return [x]


def same_number(a: object, b: object) -> bool:
    """Integers exactly; floats to a relative 1e-9 (means divide; NaN equals NaN)."""
    if isinstance(a, int | np.integer) and isinstance(b, int | np.integer):
        return int(a) == int(b)
    fa, fb = float(a), float(b)  # type: ignore[arg-type]
    if math.isnan(fa) or math.isnan(fb):
        return math.isnan(fa) and math.isnan(fb)
    return math.isclose(fa, fb, rel_tol=1e-9, abs_tol=1e-12)


def check_invariants(out: Outcome) -> None:
    """Every error is a DPError raised before the charge (docs/privacy.md, "Budget")."""
    if out.error is not None:
        assert isinstance(out.error, dpf.DPError), (
            f"not a dpframe error: {out.describe()}")
        assert out.spent == (0.0, 0.0), f"raised after the charge: {out.describe()}"
    else:
        assert out.spent[0] > 0, f"released without a charge: {out.describe()}"


def private_labels(result: pd.Series | pd.DataFrame) -> list[object]:
    return list(result.index.tolist())


def check_private_index(out: Outcome, spec: Spec) -> None:
    """Released private keys: canonical labels, in the spec's total order, in an index whose
    dtype follows the key column's public kind."""
    if out.error is not None:
        return
    res = out.result
    kind = spec.key_public_kind
    assert str(res.index.dtype) == INDEX_DTYPE[kind], (
        f"index dtype {res.index.dtype} for a {kind} key column: {out.describe()}")
    labels = private_labels(res)
    bad = [v for v in labels if not is_canonical_label(v, kind)]
    assert not bad, f"non-canonical labels {bad!r} ({[type(v) for v in bad]}): {out.describe()}"
    keys = [order_key(v) for v in labels]
    assert keys == sorted(keys), f"labels not in the total order {labels!r}: {out.describe()}"


# -- hypothesis strategies -------------------------------------------------------------------------

def _pool(pool: list[object]) -> st.SearchStrategy[object]:
    return st.sampled_from(range(len(pool))).map(pool.__getitem__)


def _spelling(classes: Sequence[Sequence[object]]) -> st.SearchStrategy[object]:
    """One value: a class, then one of its spellings."""
    return st.sampled_from(range(len(classes))).flatmap(
        lambda i: st.sampled_from(range(len(classes[i]))).map(lambda j: classes[i][j]))


def _alphabet(classes: Sequence[Sequence[object]], most: int
              ) -> st.SearchStrategy[list[Sequence[object]]]:
    """A few classes a frame draws its values from (so keys and units repeat)."""
    return st.lists(st.sampled_from(range(len(classes))), min_size=1, max_size=most,
                    unique=True).map(lambda ix: [classes[i] for i in ix])


@st.composite
def rows(draw: st.DrawFn, key_kind: str, unit_kind: str | None,
         keys: Sequence[Sequence[object]] | None = None,
         units: Sequence[Sequence[object]] | None = None) -> Row:
    """One row; keys and units from the given classes (default: any class of the kind)."""
    g = draw(_spelling(keys or KEY_CLASSES[key_kind]))
    u = draw(_spelling(units or UNIT_CLASSES[unit_kind])) if unit_kind is not None else None
    x = draw(st.one_of(_pool(X_POOL), st.floats(-30, 30)))
    n = draw(_pool(N_POOL))
    return (g, u, x, n)


def _random_rows(seed: int, key_kind: str, unit_kind: str | None, size: int) -> list[Row]:
    """``size`` pseudo-random rows: a few key classes and units, random spellings. Hypothesis
    alone tends to repeat one value; this gives frames where several keys clear the selection
    threshold (the order and spelling checks need them)."""
    rng = np.random.default_rng(seed)

    def alphabet(classes: list[list[object]], most: int) -> list[list[object]]:
        k = int(rng.integers(1, min(most, len(classes)) + 1))
        return [classes[i] for i in rng.choice(len(classes), size=k, replace=False)]

    def pick(classes: list[list[object]]) -> object:
        c = classes[int(rng.integers(len(classes)))]
        return c[int(rng.integers(len(c)))]

    keys = alphabet(KEY_CLASSES[key_kind], 5)
    units = alphabet(UNIT_CLASSES[unit_kind], 8) if unit_kind is not None else None
    out: list[Row] = []
    for _ in range(size):
        x = X_POOL[int(rng.integers(len(X_POOL)))] if rng.random() < 0.5 else float(
            np.round(rng.uniform(-30, 30), 3))
        out.append((pick(keys), pick(units) if units else None, x,
                    N_POOL[int(rng.integers(len(N_POOL)))]))
    return out


@st.composite
def specs(draw: st.DrawFn, key_kinds: Sequence[str], unit_kinds: Sequence[str | None],
          scan_layout: bool = False) -> Spec:
    """A frame: its rows drawn value by value by hypothesis (which finds and shrinks to corner
    cases), or pseudo-randomly from a drawn seed (diverse frames with many keys and units)."""
    key_kind = draw(st.sampled_from(list(key_kinds)))
    unit_kind = draw(st.sampled_from(list(unit_kinds)))
    if draw(st.booleans()):
        keys = draw(_alphabet(KEY_CLASSES[key_kind], 4))
        units = draw(_alphabet(UNIT_CLASSES[unit_kind], 7)) if unit_kind is not None else None
        size = draw(st.sampled_from([8, 12, 16, 4, 2, 1, 0]))  # shrinks towards 8 rows
        body = [draw(rows(key_kind, unit_kind, keys, units)) for _ in range(size)]
    else:
        body = _random_rows(draw(st.integers(0, 2**32 - 1)), key_kind, unit_kind,
                            draw(st.integers(0, 24)))
    if unit_kind is not None and draw(st.booleans()):
        body = _tidy(body, unit_kind)
    if body and draw(st.integers(0, 3)) == 0:  # all-missing value column
        body = [(g, u, NAN, n) for g, u, _, n in body]
    if body and key_kind not in ("int", "bool") and draw(st.integers(0, 5)) == 0:
        missing = NAN if key_kind in ("float", "dictfloat") else None  # all-missing keys
        body = [(missing, u, x, n) for _, u, x, n in body]
    spec = Spec(key_kind, unit_kind, tuple(body),
                x_bounds=draw(st.sampled_from(X_BOUNDS)),
                neighbouring=draw(st.sampled_from(["add_remove", "change_one"])),
                npartitions=draw(st.sampled_from([2, 3])))
    if scan_layout:
        spec = replace(spec, batch_size=draw(st.sampled_from([1, 2, 3, 1 << 20])),
                       partitions=draw(st.sampled_from([None, 3])))
    return spec


def _tidy(body: list[Row], unit_kind: str) -> list[Row]:
    """Rows where contribution bounding does not bind: each unit keeps the key of its first row
    and at most MAX_ROWS rows (so exact values can be compared)."""
    first: dict[object, object] = {}
    seen: dict[object, int] = {}
    out: list[Row] = []
    for g, u, x, n in body:
        c = _canon_safe(u, PUBLIC_KIND[unit_kind])
        if c is not None:
            g = first.setdefault(c, g)
            seen[c] = seen.get(c, 0) + 1
            if seen[c] > MAX_ROWS:
                continue
        out.append((g, u, x, n))
    return out


@st.composite
def neighbours(draw: st.DrawFn, spec: Spec) -> Spec:
    """A neighbour of ``spec``: one unit's rows (one row at row level) added, removed or
    replaced; added rows go anywhere, so row order changes too."""
    body = list(spec.rows)
    units = spec.canonical_units()
    op = draw(st.sampled_from(["add", "remove", "replace"]))
    if op in ("remove", "replace") and body:
        victim = units[draw(st.integers(0, len(body) - 1))]
        # every row of that unit goes (at row level: that one row)
        body = [r for r, u in zip(body, units, strict=True) if u != victim]
    if op in ("add", "replace") or not spec.rows:
        # keys of the added rows: any of the kind, or ones the frame already holds (which can
        # push a key over the selection threshold)
        held = [[r[0]] for r in spec.rows]
        keys = held if held and draw(st.booleans()) else None
        new = draw(st.lists(rows(spec.key_kind, spec.unit_kind, keys), min_size=1,
                            max_size=1 if spec.unit_kind is None else 3))
        if spec.unit_kind is not None:  # the added rows belong to one unit
            new = [(g, new[0][1], x, n) for g, _, x, n in new]
        for r in new:
            body.insert(draw(st.integers(0, len(body))), r)
    return replace(spec, rows=tuple(body))


def hsettings(examples: int, *, shrink: bool = True) -> settings:
    """Reproducible hypothesis settings (CI runs the same examples every time). ``shrink=False``
    for expensive backends (Dask): a failing example is reported as found."""
    phases = list(Phase) if shrink else [Phase.explicit, Phase.generate]
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    phases=phases,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much],
                    print_blob=True)

