"""The ``dpframe`` command line (docs/cli.md), and release specs run from Python:
``run_spec("release.toml")`` does what ``dpframe run release.toml`` does and returns a
:class:`RunReport` instead of printing it."""

from .commands import app, main
from .runner import QueryResult, RunLog, RunReport, run_spec

__all__ = ["QueryResult", "RunLog", "RunReport", "app", "main", "run_spec"]
