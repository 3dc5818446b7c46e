"""Every documentation path the package names (``docs/privacy.md#budget``) exists, with the
section it names: a docstring's privacy argument may point at the docs, never at a file or
heading the repository does not hold (0.2 cited PRIVACY.md and API.md, which it never held)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: A docs path, with the section's anchor when one is named.
DOC_PATH = re.compile(r"\bdocs/([\w./-]+?\.md)(?:#([\w-]+))?")
SOURCES = sorted((ROOT / "dpframe").rglob("*.py"))


def _anchor(heading: str) -> str:
    """mkdocs' anchor of a heading (lower case, punctuation dropped, spaces to hyphens)."""
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"\s+", "-", text)


def _anchors(page: Path) -> set[str]:
    return {_anchor(line.lstrip("#")) for line in page.read_text(encoding="utf-8").splitlines()
            if line.startswith("#")}


def references() -> list[tuple[str, str, str | None]]:
    return [(str(p.relative_to(ROOT)), m.group(1), m.group(2)) for p in SOURCES
            for m in DOC_PATH.finditer(p.read_text(encoding="utf-8"))]


def test_the_package_names_docs_pages() -> None:
    assert len(references()) >= 20  # the privacy arguments point at docs/privacy.md


@pytest.mark.parametrize(("source", "page", "anchor"), references())
def test_every_docs_path_in_the_package_exists(source: str, page: str, anchor: str | None
                                               ) -> None:
    path = ROOT / "docs" / page
    assert path.is_file(), f"{source} names docs/{page}, which does not exist"
    if anchor is not None:
        assert anchor in _anchors(path), f"{source} names docs/{page}#{anchor}: no such section"


def test_no_module_cites_files_the_repository_does_not_hold() -> None:
    stale = [str(p.relative_to(ROOT)) for p in SOURCES
             if re.search(r"\b(PRIVACY|API)\.md", p.read_text(encoding="utf-8"))]
    assert not stale, f"cite docs/privacy.md or docs/reference.md instead: {stale}"
