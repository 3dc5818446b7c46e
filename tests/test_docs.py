"""The documentation's numbers and first example stay true to the code."""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import pandas as pd
import pytest

import dpframe as dpf
from dpframe.datasets import REGIONS

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _section_code(page: str, heading: str) -> str:
    text = (DOCS / page).read_text(encoding="utf-8")
    start = text.index(heading)
    match = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert match is not None
    return match.group(1)


def test_posterior_bound_table_in_concepts() -> None:
    text = (DOCS / "concepts.md").read_text(encoding="utf-8")
    header = re.search(r"^\| prior belief \| epsilon = ([^\n]*)\|$", text, re.M)
    assert header is not None
    eps = [float(c.strip().replace("epsilon = ", "")) for c in header.group(1).split("|")]
    assert eps == [0.1, 0.5, 1, 2, 5]
    rows = re.findall(r"^\| (\d+)% \| ([^\n]*)\|$", text, re.M)
    assert [int(p) for p, _ in rows] == [1, 10, 50]
    for prior, cells in rows:
        for e, cell in zip(eps, cells.split("|"), strict=True):
            shown = float(cell.strip().rstrip("%"))
            true = 100 * dpf.posterior_bound(e, int(prior) / 100)
            # written to 3 significant digits
            assert abs(shown - true) <= 0.5 * 10 ** (math.floor(math.log10(true)) - 2) + 1e-12


@pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")
def test_quickstart_first_release_in_five_lines() -> None:
    code = _section_code("quickstart.md", "## Your first release in five lines")
    lines = [ln for ln in code.splitlines() if ln.strip()]
    assert len(lines) == 5
    tree = ast.parse(code)
    last = tree.body.pop()
    assert isinstance(last, ast.Expr)
    scope: dict[str, object] = {}
    exec(compile(tree, "quickstart.md", "exec"), scope)
    result = eval(compile(ast.Expression(last.value), "quickstart.md", "eval"), scope)
    assert isinstance(result, pd.DataFrame)
    assert list(result.index) == list(REGIONS)
    assert list(result.columns) == ["income", "lower", "upper"]
    assert ((result["lower"] <= result["income"]) & (result["income"] <= result["upper"])).all()
    session = scope["session"]
    assert isinstance(session, dpf.Session)
    assert session.spent == (0.5, 0.0)


def test_package_ships_types_and_license() -> None:
    """Downstream mypy reads dpframe's annotations only with a py.typed marker in the package;
    the Apache-2.0 licence the metadata names is in the repository."""
    import tomllib

    root = Path(__file__).resolve().parent.parent
    assert (Path(dpf.__file__).parent / "py.typed").is_file()
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    assert "py.typed" in meta["tool"]["setuptools"]["package-data"]["dpframe"]
    assert meta["project"]["license"]["text"] == "Apache-2.0"
    assert "Apache License" in (root / "LICENSE").read_text()[:200]


def test_docs_build_hook_draws_the_figures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    """`mkdocs build` from a fresh clone needs no other step: the hook runs make_plots.py when a
    figure is missing (and not when all are fresh)."""
    import importlib.util

    pytest.importorskip("matplotlib")
    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("docs_hooks", root / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    docs = tmp_path / "docs"
    (docs / "img").mkdir(parents=True)
    (docs / "make_plots.py").write_text(
        "from pathlib import Path\n"
        "def main():\n"
        "    for n in ('histogram.png', 'grouped.png', 'budget.png'):\n"
        f"        (Path({str(docs / 'img')!r}) / n).write_bytes(b'png')\n")
    monkeypatch.setattr(hooks, "_DOCS", docs)
    assert hooks._stale()
    hooks.on_pre_build(None)
    assert sorted(p.name for p in (docs / "img").iterdir()) == sorted(hooks._FIGURES)
    assert not hooks._stale()
    (docs / "img" / "budget.png").unlink()
    assert hooks._stale()


def test_the_notebook_page_shows_the_live_html_displays() -> None:
    """docs/notebooks.md gets the HTML a notebook shows, rendered at build by docs/hooks.py."""
    import importlib.util

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("docs_hooks2", root / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    page = (root / "docs" / "notebooks.md").read_text()
    assert hooks.NOTEBOOK_MARKER in page
    out = hooks.on_page_markdown(page)
    assert hooks.NOTEBOOK_MARKER not in out
    for needle in ("% spent", "PrivateFrame", "95% interval", "mean_income", "<table"):
        assert needle in out, needle
    assert hooks.on_page_markdown("# other page") == "# other page"
