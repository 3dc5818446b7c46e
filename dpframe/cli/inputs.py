"""A spec's input: the files (or the built-in synthetic data) it names, opened as a scan."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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


def input_format(spec: ReleaseSpec) -> Any:
    """The pyarrow file format for the spec's input (CSV options applied)."""
    fmt = spec.input_format
    if fmt == "csv" or (fmt is None and (spec.csv_types or spec.delimiter)):
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.dataset as ds

        try:
            types = {c: pa.type_for_alias(t) for c, t in spec.csv_types.items()}
        except (ValueError, KeyError):
            raise SpecError("[input] types: unknown Arrow type name") from None
        parse = pacsv.ParseOptions(delimiter=spec.delimiter) if spec.delimiter else None
        return ds.CsvFileFormat(parse_options=parse,
                                convert_options=pacsv.ConvertOptions(column_types=types))
    if fmt in ("arrow", "feather"):
        return "ipc"
    return fmt


def open_input(spec: ReleaseSpec, progress: bool | None = None) -> Scan:
    """The spec's input as a scan (its schema read, no data): a ValidationError, quoting
    nothing from the files, when it cannot be opened."""
    import pyarrow as pa

    from ..fronts.scan import scan

    given = (("partitions", spec.partitions), ("partition_rows", spec.partition_rows),
             ("spill_dir", spec.spill_dir))
    tuning: dict[str, Any] = {k: v for k, v in given if v is not None}
    try:
        return scan(input_source(spec), columns=spec.input_columns, format=input_format(spec),
                    batch_size=spec.batch_size, progress=progress, **tuning)
    except (pa.ArrowException, OSError) as exc:
        raise ValidationError(f"cannot open the input ({type(exc).__name__})") from None


__all__ = ["input_format", "input_source", "open_input"]
