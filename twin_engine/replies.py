"""What the caller of a twin gets back, and the record status of a reply (spec §2.8)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from twin_engine.records import CallRecord
from twin_engine.tool_api import TRANSPORT_BROKEN, TRANSPORT_DROPPED, TRANSPORT_MALFORMED, ToolReply

TRANSPORTS = ("dropped", "partial", "malformed")
_TRANSPORT_ERRORS = {
    "dropped": TRANSPORT_DROPPED,
    "partial": TRANSPORT_BROKEN,
    "malformed": TRANSPORT_MALFORMED,
}


def call_status(http_status: int, error_code: str | None, transport: str | None) -> str:
    """The record status (`call_status`) of a reply."""
    if transport is not None:
        return transport
    if 200 <= http_status < 300:
        return "ok"
    if http_status == 429:
        return "rate_limited"
    if http_status in (401, 403):
        return "denied"
    if http_status == 404:
        return "unknown_tool" if error_code == "UNKNOWN_TOOL" else "not_found"
    if http_status in (408, 504):
        return "timeout"
    if http_status in (400, 409, 411, 413, 422):  # 411/413: refused over an input limit (twin_engine/limits.py)
        return "invalid"
    return "error"


@dataclass(frozen=True)
class TwinReply:
    """One reply as it reaches the caller.

    `http_status` 0 means nothing arrived. `body` is the parsed JSON the caller gets (None when the
    body is cut or absent). `raw_body` holds the exact bytes: the canonical JSON of a normal reply,
    the cut JSON of a partial/malformed one. Delays are recorded in `delay_ms`, never slept.
    """

    http_status: int
    body: Any
    headers: Mapping[str, str]
    transport: str | None
    raw_body: bytes | None
    delay_ms: int
    record: CallRecord

    def to_tool_reply(self) -> ToolReply:
        return ToolReply(
            http_status=self.http_status,
            body=self.body,
            headers=dict(self.headers),
            transport_error=_TRANSPORT_ERRORS.get(self.transport) if self.transport else None,
            delay_ms=self.delay_ms,
        )
