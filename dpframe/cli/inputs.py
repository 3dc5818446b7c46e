"""A spec's input: the files (or the built-in synthetic data) it names, opened as a scan."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core.names import close_names
from ..errors import ValidationError
from .spec import ReleaseSpec
from .spec_errors import SpecError

if TYPE_CHECKING:
    from ..fronts.scan import Scan


def input_source(spec: ReleaseSpec) -> Any:
    """What ``dpf.scan`` reads: the input files, or the generated synthetic table."""
    g = spec.input_generate
    if g is not None:
        from ..datasets import synthetic

        return synthetic(g.dataset, g.people, g.seed)
    return spec.input_paths if len(spec.input_paths) > 1 else spec.input_paths[0]


def csv_column_types(spec: ReleaseSpec) -> dict[str, Any]:
    """``[input] types`` as Arrow types, read as ``dpf.scan(types=...)`` reads them
    (:func:`dpframe.backends.arrow.csv.csv_types`: one vocabulary, Arrow's type names); a
    SpecError for a name Arrow does not know."""
    from ..backends.arrow.csv import csv_types

    try:
        return csv_types(spec.csv_types)
    except ValidationError as exc:
        raise SpecError(f"[input] types: {exc}") from None


def _toml_key(column: str) -> str:
    """``column`` as a TOML key: bare, or quoted."""
    bare = column and all(c.isascii() and (c.isalnum() or c in "_-") for c in column)
    return column if bare else json.dumps(column)


def types_line(schema: Any) -> str:
    """The ``[input] types`` line declaring every column of the Arrow ``schema`` (a public
    schema, never read from values): what a spec over a CSV file of that schema copies."""
    import pyarrow as pa

    def name(t: Any) -> str:
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return "string"
        return "float64" if pa.types.is_float64(t) else str(t)

    return "types = { " + ", ".join(f'{_toml_key(f.name)} = "{name(f.type)}"'
                                    for f in schema) + " }"


def input_format(spec: ReleaseSpec) -> Any:
    """The pyarrow file format for the spec's input (the CSV delimiter applied; the column
    types are ``dpf.scan``'s ``types=``, :func:`open_input`)."""
    fmt = spec.input_format
    if fmt == "csv" or (fmt is None and (spec.csv_types or spec.delimiter)):
        import pyarrow.csv as pacsv
        import pyarrow.dataset as ds

        parse = pacsv.ParseOptions(delimiter=spec.delimiter) if spec.delimiter else None
        return ds.CsvFileFormat(parse_options=parse)
    if fmt in ("arrow", "feather"):
        return "ipc"
    return fmt


def reads_csv(spec: ReleaseSpec) -> bool:
    """Whether the spec's input is read as CSV, told from the spec and the file names only
    (as the scan tells it: ``format``, else ``types``/``delimiter``, else the names of the
    files, a folder's too). No file is opened."""
    from ..backends.arrow.source import inferred_format

    if spec.input_generate is not None:
        return False
    if spec.input_format is not None:
        return spec.input_format == "csv"
    if spec.csv_types or spec.delimiter:
        return True
    return inferred_format(spec.input_paths) == "csv"  # None: the scan refuses the paths


def check_csv_types(spec: ReleaseSpec, header: Sequence[str] | None = None) -> None:
    """Refuse a CSV input whose ``[input] types`` does not declare every column the queries
    read: a type inferred from the values would let one row decide whether a query is answered
    and the dtypes and labels of its output. With the files' ``header`` (column names: public
    schema), a column that is not in it is named as a likely typo, with close names, rather
    than asked a type for. The message names the columns, never a value."""
    if not reads_csv(spec):
        return
    csv_column_types(spec)  # an unknown type name first: it is what the spec says wrong
    missing = [c for c in spec.columns_read() if c not in spec.csv_types]
    absent = [c for c in missing if header is not None and c not in header]
    if absent:
        raise SpecError(f"column {absent[0]!r} read by the queries is not in the CSV header"
                        f"{close_names(absent[0], header or [])}")
    if missing:
        example = ", ".join(f'{_toml_key(c)} = "<type>"' for c in missing)
        raise SpecError(
            f"[input] types must declare the type of every CSV column the queries read "
            f"(a CSV holds text: a type inferred from the values would depend on them); "
            f"missing: {', '.join(repr(c) for c in missing)}. Add to [input]: "
            f"types = {{ {example} }} with Arrow type names (int64, float64, string, bool, "
            f"date32, timestamp[s], ...)")


def open_input(spec: ReleaseSpec, progress: bool | None = None) -> Scan:
    """The spec's input as a scan (its schema read, no data): a ValidationError, quoting
    nothing from the files, when it cannot be opened, and a :class:`SpecError` before any
    file is opened when a CSV input does not declare the types of the columns read."""
    import pyarrow as pa

    from ..fronts.scan import scan

    try:
        check_csv_types(spec)  # before any file is opened
    except SpecError:
        header = _header(spec)
        if header is not None:  # a column the files lack: named as a likely typo
            check_csv_types(spec, header)
        raise

    given = (("partitions", spec.partitions), ("partition_rows", spec.partition_rows),
             ("spill_dir", spec.spill_dir))
    tuning: dict[str, Any] = {k: v for k, v in given if v is not None}
    types = spec.csv_types if reads_csv(spec) else None  # the one rule of dpf.scan
    try:
        opened = scan(input_source(spec), types=types, columns=spec.input_columns,
                      format=input_format(spec), batch_size=spec.batch_size,
                      progress=progress, **tuning)
    except (pa.ArrowException, OSError) as exc:
        raise ValidationError(f"cannot open the input ({type(exc).__name__})") from None
    return opened


def _header(spec: ReleaseSpec) -> list[str] | None:
    """The column names of the spec's CSV input (its header: public schema, no value), or None
    when it cannot be opened (the refusal of the undeclared types then stands)."""
    from ..fronts.scan import scan

    try:
        return list(scan(input_source(spec), columns=spec.input_columns,
                         format=input_format(spec), progress=False).columns)
    except Exception:  # any failure: no header to compare with
        return None


#: Arrow type names of ``[input] types`` as Spark SQL types (CSV read through Spark)
_SPARK_TYPES = {"int8": "tinyint", "int16": "smallint", "int32": "int", "int64": "bigint",
                "float": "float", "float32": "float", "double": "double", "float64": "double",
                "string": "string", "str": "string", "utf8": "string", "large_string": "string",
                "bool": "boolean", "boolean": "boolean", "date32": "date", "date32[day]": "date",
                "binary": "binary"}


def _spark_type(name: str) -> str:
    """The Spark SQL type of a declared Arrow type name (a SpecError when it has none)."""
    t = name.strip().lower()
    if t in _SPARK_TYPES:
        return _SPARK_TYPES[t]
    if t.startswith("timestamp"):
        return "timestamp"
    if t.startswith("decimal"):
        return t.replace("decimal128", "decimal").replace("decimal256", "decimal")
    raise SpecError(f"[input] types: Spark cannot read {name!r} from CSV; use one of int64, "
                    "float64, string, bool, date32, timestamp[us], decimal128(p, s)")


def spark_input(spec: ReleaseSpec) -> Any:
    """The spec's input read through Spark (the active SparkSession, e.g. spark-submit's):
    a catalog table, Parquet files, or CSV files typed by ``[input] types`` (every column read
    as text, then converted with ``try_cast``: a value that does not spell its declared type is
    missing, never an error). The schema only is read here; no data."""
    try:
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F

        from ..backends.spark import SparkBackend
    except ImportError:
        raise SpecError('engine = "spark" needs pyspark: pip install "dpframe[spark]"') from None
    spark = SparkSession.builder.getOrCreate()
    if spec.input_table is not None:
        sdf = spark.table(spec.input_table)
    elif spec.input_generate is not None:
        sdf = spark.createDataFrame(input_source(spec).to_pandas())
    elif reads_csv(spec):
        check_csv_types(spec)
        sdf = spark.read.csv(spec.input_paths, header=True, inferSchema=False,
                             sep=spec.delimiter or ",", mode="PERMISSIVE")
        sdf = sdf.select(*[F.col(c).try_cast(_spark_type(spec.csv_types[c])).alias(c)
                           if c in spec.csv_types else F.col(c) for c in sdf.columns])
    elif spec.input_format in (None, "parquet"):
        sdf = spark.read.parquet(*spec.input_paths)
    else:
        raise SpecError(f'engine = "spark" reads Parquet, CSV or a table, not {spec.input_format}')
    if spec.input_columns:
        sdf = sdf.select(*spec.input_columns)
    return SparkBackend(sdf, spec.partitions)


__all__ = ["check_csv_types", "csv_column_types", "input_format", "input_source", "open_input",
           "reads_csv", "spark_input", "types_line"]
