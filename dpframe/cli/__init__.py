"""The ``dpframe`` command line: commands, the release-spec runner and the ledger viewer."""

from .commands import app, main

__all__ = ["app", "main"]
