"""MkDocs hook: generate the documentation's figures before the site is built, so
``mkdocs build --strict`` works from a fresh clone with no other step (mkdocs.yml ``hooks``).

The figures (docs/img/, not committed) come from docs/make_plots.py: a seeded demo on built-in
synthetic people. They are made again when a figure is missing or older than make_plots.py.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

_DOCS = Path(__file__).resolve().parent
_FIGURES = ("histogram.png", "grouped.png", "budget.png")


def _stale() -> bool:
    script = (_DOCS / "make_plots.py").stat().st_mtime
    figures = [_DOCS / "img" / name for name in _FIGURES]
    return any(not f.exists() or f.stat().st_mtime < script for f in figures)


def on_pre_build(config: Any, **kwargs: Any) -> None:
    """Run docs/make_plots.py when a figure is missing or stale."""
    if not _stale():
        return
    spec = importlib.util.spec_from_file_location("dpframe_docs_make_plots",
                                                  _DOCS / "make_plots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
