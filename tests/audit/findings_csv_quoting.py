"""The review of CSV quoting in scans (``dpf.scan`` over CSV files): one scenario per finding.

Each release reads files written once per scenario build; its statistic is what one person's
row could change besides the noise (REFUSED when the release raised, after the charge). Each
one fails on 46b588d and passes on the code that fixes it.
"""

from __future__ import annotations

from collections.abc import Callable

import dpframe as dpf

from .findings import finding
from .findings_scan import _csv_files
from .scenario import Built


def finding_scan_unbalanced_quote() -> Callable[[int], Built]:
    """Q1. A CSV file of 20 rows, and one more row before them whose quote does not close
    (``7,"oops``): Arrow's parser read every following line into that row's field, so the 20
    rows counted as one (statistic: count)."""

    def frames() -> tuple[str, str]:
        rows = b"".join(b"%d,v%d\n" % (i, i) for i in range(20))
        return (_csv_files({"a.csv": b"u,x\n" + rows}),
                _csv_files({"a.csv": b'u,x\n7,"oops\n' + rows}))

    def rel(glob: str, s: dpf.Session) -> list[float]:
        return [float(dpf.scan(glob).dp(s).count(epsilon=1.0))]

    return finding(frames, rel)
