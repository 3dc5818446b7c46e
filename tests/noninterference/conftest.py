"""Shows which dpframe the non-interference suite runs against (0.2 here, or 0.1 with
``PYTHONPATH=/work/old pytest --import-mode=importlib tests/noninterference``: ``python -m
pytest`` and the default import mode put this checkout first on ``sys.path``)."""

from __future__ import annotations

import dpframe


def pytest_report_header() -> str:
    return f"dpframe under test: {dpframe.__file__}"
