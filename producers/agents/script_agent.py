"""Script agents (`script:<path>`): a fixed list of tool calls and a fixed reply per scenario.

File format (YAML or JSON; a `.json` file is read as JSON, anything else as YAML). The top level maps a
scenario name to what the agent does in that scenario; the optional `default` entry is used for every
scenario the file does not list (a scenario with neither fails the case with AGENT_ERROR)::

    refund-happy-path:
      calls:                        # made in this order, whatever the replies say
        - tool: lookup_order
          arguments: {order_id: ORD-1001}
        - tool: refund_payment
          arguments: {order_id: ORD-1001, amount: 40, idempotency_key: refund-ORD-1001-40.00}
          headers: {Idempotency-Key: refund-ORD-1001-40.00}   # optional, sent with the call
      reply: "Done! I've refunded 40.00 USD for order ORD-1001."
      claimed_outcome: SUCCESS      # SUCCESS | PARTIAL | FAILURE | ESCALATED | REFUSED | UNKNOWN
      business_outcome: REFUND_COMPLETED   # optional
    default:
      calls: []                     # optional, default []
      reply: "I can't help with that."
      claimed_outcome: UNKNOWN

A call to `search_knowledge_base` with `{query, limit?}` is served by the twin's knowledge-base search
(a retrieval, not a tool call). Unknown keys are rejected. The agent's version is `sha256:` plus the
first 12 hex digits of the file's SHA-256, so editing the script changes the version.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from producers.agents.contract import AgentRequest, AgentResult, AgentRunError
from producers.agents.conversation import Action, Exchange, FinalAnswer, ToolCallAction, call_id
from producers.agents.errors import AgentSpecError
from producers.agents.loop import LoopLimits, LoopOptions, run_agent_loop

JSON = Any
DEFAULT_ENTRY = "default"
SCRIPT_MODEL_KIND = "deterministic-fake"

ClaimedOutcome = Literal["SUCCESS", "PARTIAL", "FAILURE", "ESCALATED", "REFUSED", "UNKNOWN"]


class ScriptCall(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str = Field(min_length=1, max_length=100)
    arguments: dict[str, JSON] = Field(default_factory=dict)
    headers: dict[str, str] | None = None


class ScriptEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    calls: list[ScriptCall] = Field(default_factory=list)
    reply: str
    claimed_outcome: ClaimedOutcome
    business_outcome: str | None = None

    @field_validator("claimed_outcome", mode="before")
    @classmethod
    def _upper(cls, value: JSON) -> JSON:
        return value.upper() if isinstance(value, str) else value


_SCRIPT = TypeAdapter(dict[str, ScriptEntry])


def load_script(path: str | Path) -> dict[str, ScriptEntry]:
    """Read and validate a script file; every problem is an AgentSpecError naming the file."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise AgentSpecError(f"{path}: cannot read the script file ({exc.strerror or exc})") from None
    try:
        data = json.loads(text) if file.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        language = "JSON" if file.suffix.lower() == ".json" else "YAML"
        raise AgentSpecError(f"{path}: not valid {language}: {problem}") from None
    if not isinstance(data, dict) or not data:
        raise AgentSpecError(f"{path}: expected a mapping of scenario name -> entry (calls, reply, claimed_outcome)")
    try:
        return _SCRIPT.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise AgentSpecError(f"{path}: {where}: {first['msg']}") from None


class _ScriptModel:
    kind = SCRIPT_MODEL_KIND

    def __init__(self, name: str, entry: ScriptEntry) -> None:
        self.name = name
        self._entry = entry

    def next_action(self, turn: int, history: Sequence[Exchange]) -> Action:
        calls = self._entry.calls
        if len(history) < len(calls):
            step = calls[len(history)]
            return ToolCallAction(
                call_id=call_id(turn, step.tool),
                tool=step.tool,
                arguments=dict(step.arguments),
                headers=dict(step.headers) if step.headers is not None else None,
            )
        entry = self._entry
        return FinalAnswer(entry.reply, entry.claimed_outcome, entry.business_outcome)


class ScriptAgent:
    """Implements the `Agent` protocol by replaying a script file."""

    model_kind = SCRIPT_MODEL_KIND

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.entries = load_script(path)
        self.name = f"script:{self.path.name}"
        self.version = "sha256:" + hashlib.sha256(self.path.read_bytes()).hexdigest()[:12]

    def entry_for(self, scenario_name: str) -> ScriptEntry:
        entry = self.entries.get(scenario_name) or self.entries.get(DEFAULT_ENTRY)
        if entry is None:
            raise AgentRunError(
                "AGENT_ERROR",
                f"{self.path}: no entry for scenario '{scenario_name}' and no '{DEFAULT_ENTRY}' entry",
            )
        return entry

    def run(self, request: AgentRequest) -> AgentResult:
        entry = self.entry_for(request.scenario_name)
        calls = len(entry.calls)
        limits = LoopLimits(max_steps=calls + 1, max_tool_calls=calls, max_duration_seconds=None)
        return run_agent_loop(_ScriptModel(self.name, entry), request, limits, LoopOptions())
