"""Human output: plain-text tables and JSON, the two faces of every command."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO


def to_json(value: Any) -> str:
    """Stable JSON for scripts: sorted keys, so the same result prints the same bytes."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, max_width: int = 80) -> str:
    """A left-aligned text table; long cells are cut with an ellipsis."""

    def cell(v: Any) -> str:
        text = "" if v is None else str(v)
        return text if len(text) <= max_width else text[: max_width - 1] + "…"

    cells = [[cell(h) for h in headers]] + [[cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def out(text: str, stream: TextIO | None = None) -> None:
    print(text, file=stream or sys.stdout)


class Progress:
    """A one-line progress bar on stderr (only when stderr is a terminal, so logs stay clean)."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.label = label
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()

    def advance(self, n: int = 1, note: str = "") -> None:
        self.done += n
        if self.live:
            width = 30
            filled = min(width, int(width * self.done / self.total))
            bar = "#" * filled + "." * (width - filled)
            self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total} {note[:40]:<40}")
            self.stream.flush()

    def close(self) -> None:
        if self.live:
            self.stream.write("\n")
        else:
            self.stream.write(f"{self.label}: {self.done} events processed\n")
        self.stream.flush()
