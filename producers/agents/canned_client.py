"""A ToolClient with canned replies, for testing agents without a twin.

Each tool gets a list of replies served in order (the last one repeats), or a function of the call.
Every call is kept in `calls`, so a test can assert what the agent asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from producers.agents.contract import ToolReply

JSON = Any
Responder = Callable[[str, dict[str, JSON], int], ToolReply]  # (tool, arguments, 1-based call number)


def ok_reply(result: JSON, *, delay_ms: int = 0) -> ToolReply:
    return ToolReply(http_status=200, body={"result": result}, delay_ms=delay_ms)


def error_reply(
    status: int, code: str, message: str = "", *, headers: dict[str, str] | None = None, delay_ms: int = 0
) -> ToolReply:
    body = {"error": {"code": code, "message": message or code}}
    return ToolReply(http_status=status, body=body, headers=dict(headers or {}), delay_ms=delay_ms)


@dataclass
class RecordedCall:
    tool: str
    arguments: dict[str, JSON]
    headers: dict[str, str] | None


@dataclass
class CannedToolClient:
    replies: dict[str, Sequence[ToolReply] | Responder] = field(default_factory=dict)
    documents: list[dict[str, JSON]] = field(default_factory=list)
    calls: list[RecordedCall] = field(default_factory=list)
    searches: list[tuple[str, int]] = field(default_factory=list)
    _counts: dict[str, int] = field(default_factory=dict)

    def call(self, tool: str, arguments: dict[str, JSON], headers: dict[str, str] | None = None) -> ToolReply:
        self.calls.append(RecordedCall(tool, dict(arguments), dict(headers) if headers is not None else None))
        number = self._counts[tool] = self._counts.get(tool, 0) + 1
        canned = self.replies.get(tool)
        if canned is None:
            return error_reply(404, "UNKNOWN_TOOL", f"No canned reply for {tool}.")
        if callable(canned):
            return canned(tool, dict(arguments), number)
        if not canned:
            return ok_reply({})
        return canned[min(number, len(canned)) - 1]

    def search_kb(self, query: str, limit: int = 3) -> list[dict[str, JSON]]:
        self.searches.append((query, limit))
        return [dict(d) for d in self.documents[:limit]]

    @property
    def tool_names(self) -> list[str]:
        return [c.tool for c in self.calls]
