"""The attacker's review of the scan front (``dpf.scan``): one scenario per finding.

Each release reads files written once per scenario build; its statistic is what one person's
row could change besides the noise (REFUSED when the release raised, after the charge). Each
one fails on e209f67 and passes on the code that fixes it.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

import dpframe as dpf

from .findings import finding
from .scenario import Built


def _folder() -> Path:
    path = tempfile.mkdtemp(prefix="dpframe-audit-")
    atexit.register(shutil.rmtree, path, True)
    return Path(path)


def _csv_files(files: dict[str, bytes]) -> str:
    """A fresh folder holding ``files``; the glob of its CSV files."""
    d = _folder()
    for name, data in files.items():
        (d / name).write_bytes(data)
    return str(d / "*.csv")


def finding_scan_uint64_ids() -> Callable[[int], Built]:
    """S1. Two Parquet files, the first's ids int64 (the public type), the second's uint64
    ``2**60 + i``: one more id, ``2**64 - 1`` (past int64), sent every value of its batch
    through float64, where the 20 ids were one (statistic: count_distinct)."""

    def files(extra: list[int]) -> str:
        d = _folder()
        pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), d / "a.parquet")
        ids = [2**60 + i for i in range(20)] + extra
        pq.write_table(pa.table({"id": pa.array(ids, pa.uint64())}), d / "b.parquet")
        return str(d / "*.parquet")

    def frames() -> tuple[str, str]:
        return files([]), files([2**64 - 1])

    def rel(glob: str, s: dpf.Session) -> list[float]:
        return [float(dpf.scan(glob).dp(s).count_distinct("id", epsilon=1.0))]

    return finding(frames, rel)


def finding_scan_null_column() -> Callable[[int], Built]:
    """S2. Three CSV files whose unit column is blank in the first (Arrow infers the null
    type), integers in the second, and in the third integers or, with one more row, ``z``:
    other files' values were not conformed, and the unit plan raised on the mixed types after
    the charge (statistic: count at one row per unit). Since finding 53 the unit column is
    declared int64, as every CSV column a query reads must be."""

    def frames() -> tuple[str, str]:
        head = {"a.csv": b"k,x\n,1\n,1\n", "b.csv": b"k,x\n" + b"1,1\n" * 20}
        return (_csv_files({**head, "c.csv": b"k,x\n" + b"2,1\n" * 5}),
                _csv_files({**head, "c.csv": b"k,x\n" + b"2,1\n" * 5 + b"z,1\n"}))

    def rel(glob: str, s: dpf.Session) -> list[float]:
        priv = dpf.scan(glob, types={"k": "int64"}).dp(s, privacy_unit="k",
                                                       max_rows_per_unit=1)
        return [float(priv.count(epsilon=1.0))]

    return finding(frames, rel)


def finding_scan_csv_time() -> Callable[[int], Built]:
    """S3. Two CSV files with a time-of-day column (left to Arrow's CSV parser): one more row
    with a malformed time ``25:99:00`` made its file's column text, where every time was
    missing (statistic: count of the column). Since finding 53 the column is declared
    ``time32[s]``, as every CSV column a query reads must be."""

    def frames() -> tuple[str, str]:
        a = {"a.csv": b"t,x\n01:00:00,1\n02:00:00,1\n"}
        rows = b"t,x\n" + b"03:00:00,1\n" * 20
        return _csv_files({**a, "b.csv": rows}), _csv_files({**a, "b.csv": rows + b"25:99:00,1\n"})

    def rel(glob: str, s: dpf.Session) -> list[float]:
        return [float(dpf.scan(glob, types={"t": "time32[s]"}).dp(s).count("t", epsilon=1.0))]

    return finding(frames, rel)


def finding_scan_union_dataset() -> Callable[[int], Built]:
    """S4. A union of two Parquet datasets pinned to int64, the second file uint64: one more row
    holding ``2**64 - 5`` made pyarrow's strict cast raise after the charge (statistic:
    count)."""

    def union(extra: list[int]) -> Any:
        d = _folder()
        pq.write_table(pa.table({"k": pa.array([1, 2, 3], pa.int64())}), d / "a.parquet")
        pq.write_table(pa.table({"k": pa.array([4] * 10 + extra, pa.uint64())}), d / "b.parquet")
        schema = pa.schema([("k", pa.int64())])
        return ds.dataset([ds.dataset(str(d / "a.parquet"), schema=schema),
                           ds.dataset(str(d / "b.parquet"), schema=schema)])

    def frames() -> tuple[Any, Any]:
        return union([]), union([2**64 - 5])

    def rel(source: Any, s: dpf.Session) -> list[float]:
        return [float(dpf.scan(source).dp(s).count(epsilon=1.0))]

    return finding(frames, rel)


def finding_scan_empty_second_file() -> Callable[[int], Built]:
    """S5. Two CSV files, the second holding one row, or (that row removed, with its header)
    nothing: Arrow refused the empty file, which was opened only after the charge (statistic:
    count)."""

    def frames() -> tuple[str, str]:
        a = {"a.csv": b"region,cost\na,3\nb,4\n"}
        return _csv_files({**a, "b.csv": b"region,cost\na,5\n"}), _csv_files({**a, "b.csv": b""})

    def rel(glob: str, s: dpf.Session) -> list[float]:
        return [float(dpf.scan(glob).dp(s).count(epsilon=1.0))]

    return finding(frames, rel)


def finding_scan_long_field() -> Callable[[int], Built]:
    """S6. A CSV file of 20 rows, and one more whose text field is just over two of Arrow's read
    blocks (1 MiB each; a row spans one block boundary, not two): the reader refused the row
    that did not fit, after the charge (statistic: count)."""

    def frames() -> tuple[str, str]:
        rows = b"g,x\n" + b"b,1\n" * 20
        return (_csv_files({"a.csv": rows}),
                _csv_files({"a.csv": rows + b"a" * ((2 << 20) + 10) + b",1\n"}))

    def rel(glob: str, s: dpf.Session) -> list[float]:
        return [float(dpf.scan(glob).dp(s).count(epsilon=1.0))]

    return finding(frames, rel)


def _csv_format(**read: Any) -> ds.CsvFileFormat:
    import pyarrow.csv as pacsv

    return ds.CsvFileFormat(read_options=pacsv.ReadOptions(**read))


def finding_scan_generated_names() -> Callable[[int], Built]:
    """50. A CSV scan with ``autogenerate_column_names``: the file's first line sets its
    column count, so one person's line of three fields ahead of 20 rows of two made the
    others malformed, skipped (20 fell to 1). Refused at opening now, whatever the data
    (statistic: the count, REFUSED on both sides)."""

    def frames() -> tuple[str, str]:
        rows = b"".join(b"%d,%d\n" % (i, i) for i in range(20))
        return _csv_files({"a.csv": rows}), _csv_files({"a.csv": b"7,8,9\n" + rows})

    def rel(path: str, s: dpf.Session) -> list[float]:
        fmt = _csv_format(autogenerate_column_names=True)
        return [float(dpf.scan(path, format=fmt).dp(s).count(epsilon=1.0))]

    return finding(frames, rel)


def finding_scan_encoding_byte() -> Callable[[int], Built]:
    """51. A CSV scan in another encoding (``cp1252``): the first file's schema was read with
    a strict decoder, so one person's byte that the encoding does not define (0x81) refused
    the whole scan, only when it fell within the block read first. Refused at opening now,
    whatever the data: transcode to UTF-8 first (statistic: the count, REFUSED)."""

    def frames() -> tuple[str, str]:
        rows = b"u,x\n" + b"".join(b"%d,a\n" % i for i in range(20))
        return _csv_files({"a.csv": rows}), _csv_files({"a.csv": rows + b"99,\x81\n"})

    def rel(path: str, s: dpf.Session) -> list[float]:
        fmt = _csv_format(encoding="cp1252")
        return [float(dpf.scan(path, format=fmt).dp(s).count(epsilon=1.0))]

    return finding(frames, rel)
