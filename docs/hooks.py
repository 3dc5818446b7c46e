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


#: The marker docs/notebooks.md carries where the live HTML of the notebook displays goes.
NOTEBOOK_MARKER = "<!-- dpframe:notebook-html -->"


def notebook_html() -> str:
    """What a notebook shows for a session, a private frame, a number and a grouped result,
    rendered by the code this site is built from (a seeded demo on synthetic people)."""
    import sys
    import warnings

    sys.path.insert(0, str(_DOCS.parent))
    import dpframe as dpf
    from dpframe.datasets import REGIONS, people

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded: insecure, for pictures only
        session = dpf.Session(epsilon=2.0, delta=1e-6, name="survey-2026", seed=7)
        df = people(20_000, seed=7)
        priv = df.dp(session, bounds={"income": (0, 250_000), "age": (0, 100)},
                     keys={"region": list(REGIONS)})
        mean = priv["income"].mean(epsilon=0.3, ci=0.95)
        by_region = priv.groupby("region").agg(mean_income=("income", "mean"),
                                               people=("income", "count"), epsilon=0.5,
                                               ci=0.95)
        priv.histogram("age", bins=[0, 18, 30, 45, 65, 100], accuracy=60)
    parts = [
        ("`session` (a budget bar, the unit, the latest releases)", session._repr_html_()),
        ("`priv` (what the frame declares: never the data)", priv._repr_html_()),
        ('`priv["income"].mean(epsilon=0.3, ci=0.95)`', mean._repr_html_()),
        ('`priv.groupby("region").agg(mean_income=("income", "mean"), ...)`',
         by_region.round(1).to_html()),
    ]
    return "\n\n".join(f"**{title}**\n\n<div class=\"dp-notebook\">\n{html}\n</div>"
                       for title, html in parts)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Put the live notebook displays into the page that asks for them."""
    if NOTEBOOK_MARKER not in markdown:
        return markdown
    return markdown.replace(NOTEBOOK_MARKER, notebook_html())
