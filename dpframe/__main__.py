"""``python -m dpframe``: the command line, as ``python -m dpframe.cli`` and ``dpframe``."""

from .cli.commands import main

main()
