"""The documentation as one text (the README, then every page under docs/), for tests that hold a figure or a
table the documentation states to what the code measures."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def documentation() -> str:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return "\n\n".join(page.read_text(encoding="utf-8") for page in pages)
