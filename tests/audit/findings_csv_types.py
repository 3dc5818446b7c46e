"""The outside review of ``dpf.scan`` over CSV (issue 31, item 2): one scenario per finding.

A CSV holds text; the scan inferred each column's type from the values of the first block, so
one person's row could decide whether a sum is answered and by which mechanism. Each release
below runs the same sum twice on one fresh session: once on a scan that declares no type for
the column (the call of the finding), once on a scan that declares it (through a
``CsvFileFormat``'s ``column_types``, the path ``types=`` and the CLI's ``[input] types`` share,
so that the module also runs on the code before the fix). Each statistic is taken inside the
release, so a refusal is one coordinate (:data:`~tests.audit.findings.REFUSED`), not the whole
outcome. Both fail on 48a43c2 and pass on the code that fixes them: there the undeclared sum is
refused on both datasets, whatever the rows hold, and the declared one reads an unparsable
value as missing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds

import dpframe as dpf

from .findings import REFUSED, finding
from .findings_scan import _csv_files
from .scenario import Built

#: The bounds of the summed column.
_BOUNDS = {"x": (0, 10)}
#: Each sum's epsilon: small, so that a refusal or a switch of mechanism (a certain tell) stands
#: far above the claim of the two sums.
_EPSILON = 0.25


def _frames(extra: bytes) -> Callable[[], tuple[str, str]]:
    """200 rows ``1,3`` of ``k,x``, and the same with one more row ``extra``."""

    def frames() -> tuple[str, str]:
        rows = b"k,x\n" + b"1,3\n" * 200
        return _csv_files({"a.csv": rows}), _csv_files({"a.csv": rows + extra + b"\n"})

    return frames


@functools.cache
def _scans(glob: str) -> tuple[dpf.Scan, dpf.Scan]:
    """The scan of ``glob`` without declared types, and with ``x`` declared int64."""
    declared = ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(
        column_types={"x": pa.int64()}))
    return dpf.scan(glob), dpf.scan(glob, format=declared)


def _sum(scan: dpf.Scan, s: dpf.Session) -> tuple[float, float]:
    """The noisy sum of ``x`` and whether it is an integer (1.0: the geometric mechanism) or
    not (0.0: granular Laplace); (REFUSED, REFUSED) when the query is refused."""
    try:
        out = scan.dp(s, bounds=_BOUNDS).sum("x", epsilon=_EPSILON)
    except dpf.DPError:
        return REFUSED, REFUSED
    return float(out), float(isinstance(out, dpf.DPInt))


def finding_scan_csv_text_refuses_sum() -> Callable[[int], Built]:
    """53. A CSV of 200 rows ``1,3`` and one more row ``1,abc``: the scan inferred ``x`` as
    text from it, and the sum was refused where it was answered without the row (nothing
    charged, but "refused or released" is one bit about the row). Statistic: the undeclared
    sum (REFUSED on a refusal), then the declared one."""

    def rel(glob: str, s: dpf.Session) -> list[float]:
        plain, declared = _scans(glob)
        return [_sum(plain, s)[0], _sum(declared, s)[0]]

    return finding(_frames(b"1,abc"), rel)


def finding_scan_csv_fraction_switches_mechanism() -> Callable[[int], Built]:
    """54. A CSV of 200 rows ``1,3`` and one more row ``1,1.5``: the scan inferred ``x`` as a
    float from it, and the sum switched from the geometric mechanism (an integer) to granular
    Laplace (a float). Statistic: whether the undeclared sum is an integer (REFUSED on a
    refusal), whether the declared one is, and the declared sum."""

    def rel(glob: str, s: dpf.Session) -> list[float]:
        plain, declared = _scans(glob)
        value, integer = _sum(declared, s)
        return [_sum(plain, s)[1], integer, value]

    return finding(_frames(b"1,1.5"), rel)


__all__ = ["finding_scan_csv_fraction_switches_mechanism", "finding_scan_csv_text_refuses_sum"]
