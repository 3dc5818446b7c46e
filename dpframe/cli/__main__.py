"""``python -m dpframe.cli``."""

from .commands import main

main()
