"""The README and the docs point only at files the repository holds: a clone has nothing beside it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
PATHISH = re.compile(r"`((?:\.\./)+[^`\s]+)`")


# pages the site build writes from their sources (docs/gen_pages.py): they exist in the site, not the tree
GENERATED = {ROOT / "docs" / p for p in re.findall(r'"([\w/-]+\.md)"', (ROOT / "docs" / "gen_pages.py").read_text())}


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_every_relative_link_resolves_inside_the_repository() -> None:
    broken = []
    for doc in _documents():
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                continue
            resolved = (doc.parent / target).resolve()
            # the README is read on a code host, not in the site: a page only the site writes is broken there
            generated = resolved in GENERATED and doc != ROOT / "README.md"
            if not resolved.is_relative_to(ROOT) or not (resolved.exists() or generated):
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert broken == []


def test_no_path_outside_the_repository_is_named() -> None:
    outside = [
        f"{doc.relative_to(ROOT)}: {path}"
        for doc in _documents()
        for path in PATHISH.findall(doc.read_text(encoding="utf-8"))
        if not (doc.parent / path).resolve().is_relative_to(ROOT)
    ]
    assert outside == []
