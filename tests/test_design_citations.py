"""Code and tests cite only what a person who clones the repository has: the design is
docs/design.md (docs/design.md §13), never a document beside the checkout."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEXT_SUFFIXES = {".py", ".pyi", ".md", ".yaml", ".yml", ".toml", ".html", ".css", ".js", ".txt", ".cfg", ".ini"}
OUTSIDE = re.compile(r"\bDESIGN(\.md)?\s*§|\.\./shared/|shared/DESIGN")
DESIGN = ROOT / "docs" / "design.md"


def outside_citations(text: str) -> list[str]:
    """The lines of ``text`` that cite a document outside the repository."""
    return [line.strip() for line in text.splitlines() if OUTSIDE.search(line)]


def _files(folder: str) -> list[Path]:
    """The text files of ``folder`` (this check's own examples and generated egg-info left out)."""
    return [path for path in (ROOT / folder).rglob("*")
            if path.suffix in TEXT_SUFFIXES and path.is_file() and ".egg-info" not in str(path)
            and path != Path(__file__).resolve()]


@pytest.mark.parametrize("folder", ["src", "tests"])
def test_nothing_cites_a_document_outside_the_repository(folder: str) -> None:
    found = {str(path.relative_to(ROOT)): lines for path in _files(folder)
             if (lines := outside_citations(path.read_text(encoding="utf-8", errors="replace")))}
    assert found == {}, "cite docs/design.md (its section) instead"


def test_every_cited_section_of_the_design_exists() -> None:
    sections = {int(m) for m in re.findall(r"^## (\d+)\. ", DESIGN.read_text(encoding="utf-8"), re.M)}
    cited = {(str(path.relative_to(ROOT)), int(n)) for folder in ("src", "tests") for path in _files(folder)
             for n in re.findall(r"design\.md §(\d+)", path.read_text(encoding="utf-8", errors="replace"))}
    assert cited, "the code cites the design somewhere"
    assert {(file, n) for file, n in cited if n not in sections} == set()


@pytest.mark.parametrize(("line", "outside"), [
    ("floor-v1 (DESIGN §5): bytes", True),
    ("see DESIGN.md §4", True),
    ("data in ../shared/data/liger/", True),
    ("floor-v1 (docs/design.md §5): bytes", False),
    ("DESIGN_NOTES = 1", False),
])
def test_the_check_tells_a_citation_outside_from_one_inside(line: str, outside: bool) -> None:
    assert bool(outside_citations(line)) is outside
