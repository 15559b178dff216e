"""The twin's face toward agents: the tool specs it offers and the reply an agent sees of one call.

Lives with the engine (which produces both); the agent contract in producers/agents re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JSON = Any

# Transport-level outcomes a tool client can report instead of an HTTP reply.
TRANSPORT_TIMEOUT = "TIMEOUT"
TRANSPORT_UNREACHABLE = "UNREACHABLE"
TRANSPORT_DROPPED = "CONNECTION_DROPPED"
TRANSPORT_BROKEN = "BROKEN_RESPONSE"
TRANSPORT_MALFORMED = "MALFORMED_RESPONSE"


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
