"""Small formatting and text helpers shared by the evaluators."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from evaluation.results import Evidence
from twin_engine.records import CallRecord


def fold(text: str) -> str:
    """NFKC + casefold: how output text is compared with expected text."""
    return unicodedata.normalize("NFKC", text).casefold()


def num(value: float) -> str:
    """A number as people write it: 3 not 3.0, 0.25 stays 0.25."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def call_ref(record: CallRecord) -> str:
    return f"#{record.seq} {record.tool}"


def call_evidence(record: CallRecord, detail: str) -> Evidence:
    """Tool-call evidence: "#{seq} {tool} → HTTP {status}. {detail}"."""
    return Evidence(
        kind="tool_call",
        detail=f"#{record.seq} {record.tool} → HTTP {record.http_status}. {detail}",
        ref=f"call:{record.seq}",
    )


def calls_list(records: Iterable[CallRecord]) -> str:
    return ", ".join(call_ref(r) for r in records)


def plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"


def more(count: int) -> str:
    """The suffix naming what a one-line reason left out."""
    return f" (+{count} more)" if count > 0 else ""
