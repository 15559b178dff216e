"""The agent contract: what an agent is handed for one case and what it hands back.

Everything in AgentResult is a *claim*. Grading reads the twin's records, never `tool_calls` here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from evaluation.case import ClaimFinding
from twin_engine.tool_api import (
    TRANSPORT_BROKEN,
    TRANSPORT_DROPPED,
    TRANSPORT_MALFORMED,
    TRANSPORT_TIMEOUT,
    TRANSPORT_UNREACHABLE,
    ToolReply,
    ToolSpec,
)

__all__ = [
    "AGENT_STATUSES",
    "TRANSPORT_BROKEN",
    "TRANSPORT_DROPPED",
    "TRANSPORT_MALFORMED",
    "TRANSPORT_TIMEOUT",
    "TRANSPORT_UNREACHABLE",
    "Agent",
    "AgentRequest",
    "AgentResult",
    "AgentRunError",
    "ClaimFinding",
    "ClaimedCall",
    "ToolClient",
    "ToolReply",
    "ToolSpec",
    "Turn",
]

JSON = Any

AGENT_STATUSES = ("completed", "step_limit", "tool_limit", "time_limit")


class ToolClient(Protocol):
    """Bound to one case: calls go to that case's twin, in order."""

    def call(self, tool: str, arguments: dict[str, JSON], headers: dict[str, str] | None = None) -> ToolReply: ...

    def search_kb(self, query: str, limit: int = 3) -> list[dict[str, JSON]]: ...


@dataclass(frozen=True)
class Turn:
    """One earlier turn of a conversation: what the user said and what the agent answered."""

    user: str
    agent: str


@dataclass(frozen=True)
class AgentRequest:
    """One turn of a case. A single-message case is turn 1 with no conversation; in a multi-turn case the
    agent is asked again each turn, same session and same twin case, with the earlier turns in `conversation`
    and the user's new message in `message`."""

    message: str
    context: dict[str, JSON]
    tenant: str
    customer_id: str | None
    tools: tuple[ToolSpec, ...]
    client: ToolClient
    session_id: str
    scenario_name: str = ""
    turn: int = 1
    conversation: tuple[Turn, ...] = ()
    timeout_s: float | None = None  # the scenario's timeoutSeconds: an agent asked over HTTP waits no longer


@dataclass(frozen=True)
class ClaimedCall:
    """One entry of the agent's self-reported list of calls (a claim, kept for display only)."""

    name: str
    arguments: dict[str, JSON]
    status: str
    error_code: str | None = None
    retry_after: float | None = None
    attempt: int = 1


@dataclass(frozen=True)
class AgentResult:
    output: str | None  # None: the reply held no readable output (a finding says why)
    claimed_outcome: str | None  # SUCCESS | PARTIAL | FAILURE | UNKNOWN; None: nothing readable claimed
    business_outcome: str | None
    status: str  # one of AGENT_STATUSES, or "unknown" when the reply's was not readable
    tool_calls: tuple[ClaimedCall, ...] = ()
    steps: int | None = 0  # None: the reported number was not readable
    token_estimate: int = 0
    backoff_ms: int = 0  # total backoff the agent accounted for (not slept in simulations)
    model: str = ""
    model_kind: str = "deterministic-fake"  # "deterministic-fake" | "llm"
    findings: tuple[ClaimFinding, ...] = ()  # fields of the reply that were malformed (testimony, not graded)


class Agent(Protocol):
    name: str
    version: str
    model_kind: str

    def run(self, request: AgentRequest) -> AgentResult: ...


class AgentRunError(Exception):
    """The agent could not run or answer; `finding` is the agent-run label (AGENT_TIMEOUT, AGENT_ERROR, …)."""

    def __init__(self, finding: str, message: str) -> None:
        super().__init__(message)
        self.finding = finding
        self.message = message
