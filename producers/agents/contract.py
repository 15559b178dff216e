"""The agent contract: what an agent is handed for one case and what it hands back.

Everything in AgentResult is a *claim*. Grading reads the twin's records, never `tool_calls` here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

JSON = Any

# Transport-level outcomes a tool client can report instead of an HTTP reply.
TRANSPORT_TIMEOUT = "TIMEOUT"
TRANSPORT_UNREACHABLE = "UNREACHABLE"
TRANSPORT_DROPPED = "CONNECTION_DROPPED"
TRANSPORT_BROKEN = "BROKEN_RESPONSE"
TRANSPORT_MALFORMED = "MALFORMED_RESPONSE"

AGENT_STATUSES = ("completed", "step_limit", "tool_limit", "time_limit")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    risk: str
    input_schema: dict[str, JSON] | None = None


@dataclass(frozen=True)
class ToolReply:
    """What the agent sees of one tool call. `body` is the parsed JSON body, if any arrived intact."""

    http_status: int  # 0 when nothing arrived
    body: JSON = None
    headers: dict[str, str] = field(default_factory=dict)
    transport_error: str | None = None  # one of the TRANSPORT_* codes
    delay_ms: int = 0  # latency the twin injected (recorded, not slept, in simulations)

    @property
    def ok(self) -> bool:
        return self.transport_error is None and 200 <= self.http_status < 300

    @property
    def result(self) -> JSON:
        if isinstance(self.body, dict):
            return self.body.get("result")
        return None

    @property
    def error_code(self) -> str | None:
        if self.transport_error is not None:
            return self.transport_error
        if isinstance(self.body, dict) and isinstance(self.body.get("error"), dict):
            code = self.body["error"].get("code")
            return str(code) if code is not None else None
        return None


class ToolClient(Protocol):
    """Bound to one case: calls go to that case's twin, in order."""

    def call(self, tool: str, arguments: dict[str, JSON], headers: dict[str, str] | None = None) -> ToolReply: ...

    def search_kb(self, query: str, limit: int = 3) -> list[dict[str, JSON]]: ...


@dataclass(frozen=True)
class AgentRequest:
    message: str
    context: dict[str, JSON]
    tenant: str
    customer_id: str | None
    tools: tuple[ToolSpec, ...]
    client: ToolClient
    session_id: str
    scenario_name: str = ""


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
    output: str
    claimed_outcome: str  # SUCCESS | PARTIAL | FAILURE | UNKNOWN
    business_outcome: str | None
    status: str  # one of AGENT_STATUSES
    tool_calls: tuple[ClaimedCall, ...] = ()
    steps: int = 0
    token_estimate: int = 0
    backoff_ms: int = 0  # total backoff the agent accounted for (not slept in simulations)
    model: str = ""
    model_kind: str = "deterministic-fake"  # "deterministic-fake" | "llm"


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
