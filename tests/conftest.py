"""Hypothesis profiles for the whole suite.

``ci`` (the default) derandomizes: the README's test command and CI draw the same examples on
every run, so a red CI names a defect that reproduces, never a draw that a rerun hides.
``explore`` draws fresh random examples on each run, to look for new failures before a change
lands: ``HYPOTHESIS_PROFILE=explore python -m pytest -n 2`` (run it a few times).
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
