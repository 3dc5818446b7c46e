"""Shows which dpframe the non-interference suite runs against (0.2 here, or 0.1 with
``PYTHONPATH=/work/old pytest --import-mode=importlib tests/noninterference``: ``python -m
pytest`` and the default import mode put this checkout first on ``sys.path``)."""

from __future__ import annotations

import pytest

import dpframe


def pytest_report_header() -> str:
    return f"dpframe under test: {dpframe.__file__}"


@pytest.fixture(autouse=True)
def large_frame_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite's frames are small; large frames take other paths (narrow group codes, the
    one-pass grouped sum: ``SMALL_GROUPED_ROWS``). Here every frame takes those, so the
    properties hold for them too (small frames' paths are the rest of the tests')."""
    from dpframe.backends.blocks import frames as pandas_backend
    from dpframe.core.exact import transform
    monkeypatch.setattr(pandas_backend, "SMALL_GROUPED_ROWS", 0)
    monkeypatch.setattr(transform, "SMALL_GROUPED_ROWS", 0)
