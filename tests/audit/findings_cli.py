"""The attacker's review of the CLI (``dpframe run``): one scenario per leak.

A run is expressed as a release: the spec's input opened and its queries priced and released
by the CLI's own code (:func:`~dpframe.cli.inputs.open_input`,
:func:`~dpframe.cli.pricing.price_queries`, :func:`~dpframe.cli.pricing.plan_run`,
:meth:`~dpframe.cli.runner.PricedRun.release`), on the audit's seeded session instead of the
spec's ledger (the only difference from ``run_spec``), so the claim is what that session was
charged. A refusal is the outcome REFUSED (``findings.finding``).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import dpframe as dpf
from dpframe.cli.inputs import open_input
from dpframe.cli.pricing import plan_run, price_queries
from dpframe.cli.runner import PricedRun, ReleaseJob, RunLog
from dpframe.cli.spec import load_spec

from .findings import finding
from .scenario import Built

#: A spec over ``data.csv`` that declares no column types: one sum.
_SPEC = """
[release]
epsilon = 1e12
delta = 0.5
[input]
path = "data.csv"
[output]
dir = "out"
[bounds]
cost = [0, 10]
[[query]]
name = "s"
aggregate = "sum"
column = "cost"
epsilon = 1.0
"""


def _spec_over(rows: Sequence[str]) -> Path:
    """A folder holding ``data.csv`` (``key,cost`` and ``rows``) and the spec; its path."""
    folder = Path(tempfile.mkdtemp(prefix="dpframe-audit-cli-"))
    atexit.register(shutil.rmtree, folder, True)
    (folder / "data.csv").write_text("key,cost\n" + "".join(f"{r}\n" for r in rows))
    (folder / "release.toml").write_text(_SPEC)
    return folder / "release.toml"


def cli_run(spec_path: Path, s: dpf.Session) -> list[float]:
    """``dpframe run spec_path`` on the session ``s``: the sum's noisy value and whether its
    dtype is an integer (1.0) or not (0.0)."""
    spec = load_spec(spec_path)
    backend = open_input(spec, progress=False).backend
    priced = price_queries(s, backend, spec.frame_options(), spec.queries)
    job = ReleaseJob(spec.name, spec.epsilon, spec.delta, backend, spec.frame_options(),
                     spec.queries, spec.output_folder())
    report = PricedRun(job, s, priced, plan_run(s, priced)).release(RunLog())
    release = report.queries[0].release
    assert release is not None
    values = release.measures[0].values
    return [float(values[0]), float(values.dtype.kind in "iu")]


def finding_cli_csv_inferred_types(extra_row: str = "1,abc") -> Callable[[int], Built]:
    """A ``dpframe run`` over a CSV whose spec declares no ``[input] types``: the column types
    were inferred from the first block, so one more row ``1,abc`` made ``cost`` text and the
    sum was refused (exit 2), and ``1,1.5`` made it double (a double sum by granular Laplace
    instead of an int64 one by the geometric mechanism). Statistic: the sum and whether its
    dtype is an integer, REFUSED on a refusal."""

    def frames() -> tuple[Path, Path]:
        base = ["1,3"] * 200
        return _spec_over(base), _spec_over([*base, extra_row])

    return finding(frames, cli_run)


__all__ = ["cli_run", "finding_cli_csv_inferred_types"]
