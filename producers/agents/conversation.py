"""The agent's side of a conversation: what a model may answer each turn and what it has seen so far.

A model turn yields either one tool call or a final answer. The history is the list of calls with the
replies *as the agent saw them* (a slow reply has already become a TIMEOUT transport error here).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from producers.agents.contract import TRANSPORT_TIMEOUT, ToolReply

JSON = Any

# The knowledge-base search is a tool call for the model; the client serves it from the KB endpoint.
KB_SEARCH_TOOL = "search_knowledge_base"

CLAIMED_OUTCOMES = ("SUCCESS", "PARTIAL", "FAILURE", "UNKNOWN")


@dataclass(frozen=True)
class ToolCallAction:
    call_id: str
    tool: str
    arguments: dict[str, JSON]
    headers: dict[str, str] | None = None


@dataclass(frozen=True)
class FinalAnswer:
    text: str
    claimed_outcome: str
    business_outcome: str | None


Action = ToolCallAction | FinalAnswer


def reply_status(reply: ToolReply) -> str:
    """The agent-side status of a reply (same mapping as the HTTP tool client, spec §5.3)."""
    if reply.transport_error is not None:
        return "timeout" if reply.transport_error == TRANSPORT_TIMEOUT else "error"
    status = reply.http_status
    if 200 <= status < 300:
        return "ok"
    if status == 429:
        return "rate_limited"
    if status in (401, 403):
        return "denied"
    if status in (400, 409, 422):
        return "invalid"
    if status in (408, 504):
        return "timeout"
    return "error"


def retry_after_seconds(reply: ToolReply) -> float | None:
    for name, value in reply.headers.items():
        if name.lower() == "retry-after":
            try:
                return max(0.0, float(value))
            except ValueError:
                return None
    return None


@dataclass(frozen=True)
class Exchange:
    call: ToolCallAction
    reply: ToolReply

    @property
    def tool(self) -> str:
        return self.call.tool

    @property
    def status(self) -> str:
        return reply_status(self.reply)

    @property
    def result(self) -> dict[str, JSON]:
        """The reply's `result` object, or {} when the call failed or returned no object."""
        value = self.reply.result if self.reply.ok else None
        return value if isinstance(value, dict) else {}


class Model(Protocol):
    """Decides the next action from the history. Must not call tools itself."""

    name: str
    kind: str

    def next_action(self, turn: int, history: Sequence[Exchange]) -> Action: ...


def call_id(turn: int, tool: str) -> str:
    return f"call_{turn}_{tool}"


def exchanges_of(history: Sequence[Exchange], tool: str) -> list[tuple[int, Exchange]]:
    """(position, exchange) for every call of `tool`, oldest first."""
    return [(i, ex) for i, ex in enumerate(history) if ex.tool == tool]


def first_of(history: Sequence[Exchange], tool: str, *, after: int = -1) -> Exchange | None:
    """The first call of `tool` at a position greater than `after`."""
    for i, ex in enumerate(history):
        if i > after and ex.tool == tool:
            return ex
    return None


def called(history: Sequence[Exchange], tool: str) -> bool:
    return any(ex.tool == tool for ex in history)
