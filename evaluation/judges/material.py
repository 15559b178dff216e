"""Builds a JudgeRequest from raw case material: truncation, forged-tag neutralization, call selection."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from evaluation.judges.contract import JudgeRequest, ShownToolCall
from evaluation.judges.prompt import BLOCK_NAMES, criterion_for
from twin_engine.records import CallRecord

MAX_FIELD_CHARS = 8000
MAX_TOOL_CALLS = 30
MAX_CALL_TEXT_CHARS = 300
_ELLIPSIS = "…"

_FORGED_TAG = re.compile(r"<\s*(/?)\s*(" + "|".join(BLOCK_NAMES) + r")\b[^>]*>", re.IGNORECASE)
_SPACES = re.compile(r"\s+")


def neutralize(text: str) -> str:
    """Turn anything that looks like one of our block tags into a harmless bracketed form."""
    return _FORGED_TAG.sub(lambda m: f"[{m.group(1)}{m.group(2).lower()}]", text)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + _ELLIPSIS


def shown_text(text: str, limit: int = MAX_FIELD_CHARS) -> str:
    return clip(neutralize(text), limit)


def normalize_for_match(text: str) -> str:
    """NFKC + casefold + collapsed whitespace: how evidence quotes are matched against material."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def show_call(record: CallRecord) -> ShownToolCall:
    return ShownToolCall(
        seq=record.seq,
        tool=shown_text(record.tool, 100),
        arguments=shown_text(_json_text(record.arguments), MAX_CALL_TEXT_CHARS),
        http_status=record.http_status,
        status=record.status,
        response=shown_text(_json_text(record.response), MAX_CALL_TEXT_CHARS),
    )


def build_request(
    *,
    category: str | None,
    rubric: str,
    customer_message: str,
    answer: str,
    records: Iterable[CallRecord] = (),
    reference: str | None = None,
) -> JudgeRequest:
    """The material shown to a judge: agent calls only (redeliveries excluded), the first 30 shown."""
    calls = [r for r in records if not r.redelivered]
    shown = tuple(show_call(r) for r in calls[:MAX_TOOL_CALLS])
    return JudgeRequest(
        criterion=criterion_for(category),
        rubric=shown_text(rubric),
        customer_message=shown_text(customer_message),
        answer=shown_text(answer),
        tool_calls=shown,
        omitted_tool_calls=len(calls) - len(shown),
        reference=shown_text(reference) if reference is not None else None,
    )
