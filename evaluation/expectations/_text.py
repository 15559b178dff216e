"""Small formatting and text helpers shared by the evaluators."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

from evaluation.results import Evidence
from twin_engine.records import CallRecord


def fold(text: str) -> str:
    """NFKC + casefold: how output text is compared with expected text."""
    return unicodedata.normalize("NFKC", text).casefold()


# An amount as people write it: an optional currency sign, thousands separators, decimals. Not inside a
# word or an identifier (HAT001, ZFA04Y and 2026-01-01's parts next to letters stay as they are).
_AMOUNT = re.compile(r"(?<![\w.,])(?:[$€£¥₹]\s?)?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\w]|[.,]\d)")
_MARK = "\x1f"  # delimits a normalised number, so 40 never matches inside 400


def normalize_amounts(text: str) -> str:
    """Every amount in canonical form: `$1,939.05` -> `1939.05`, `40.00 USD` -> `40 USD`, `€7.50` -> `7.5`."""

    def canonical(match: re.Match[str]) -> str:
        whole, fraction = match.group(1).replace(",", ""), match.group(2)
        try:
            number = Decimal(f"{whole}.{fraction}" if fraction else whole)
        except InvalidOperation:  # pragma: no cover - the pattern only lets digits through
            return match.group(0)
        return f"{_MARK}{format(number.normalize(), 'f')}{_MARK}"

    return _AMOUNT.sub(canonical, text)


def contains_text(haystack: str, needle: str, *, amounts: bool) -> bool:
    """`needle` in `haystack` after NFKC + casefold, and (amounts=True) with amounts normalised."""
    if amounts:
        return fold(normalize_amounts(needle)) in fold(normalize_amounts(haystack))
    return fold(needle) in fold(haystack)


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
