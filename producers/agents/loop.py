"""The agent loop (spec §5.2, "Agent loop"): ask the model, run its tool call, repeat.

Time is simulated: the loop's clock advances by the delay each reply reports plus the backoff the
agent accounts for after rate limits. Nothing here reads the wall clock or sleeps, so a run is a pure
function of the model, the request and the twin.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from producers.agents.contract import (
    TRANSPORT_TIMEOUT,
    AgentRequest,
    AgentResult,
    ClaimedCall,
    ToolClient,
    ToolReply,
)
from producers.agents.conversation import (
    KB_SEARCH_TOOL,
    Action,
    Exchange,
    FinalAnswer,
    Model,
    ToolCallAction,
    retry_after_seconds,
)

JSON = Any

TOOL_TIMEOUT_MS = 1500
MAX_BACKOFF_MS = 8000
DEFAULT_RETRY_AFTER_S = 1.0
LIMIT_OUTPUT = "I wasn't able to finish this request; a specialist will follow up."


@dataclass(frozen=True)
class LoopLimits:
    max_steps: int = 30
    max_tool_calls: int = 20
    max_duration_seconds: float | None = 120.0  # None: no time limit


@dataclass(frozen=True)
class LoopOptions:
    prompt: str = ""  # the system prompt, counted in the token estimate
    backoff_scale: float = 1.0
    tool_timeout_ms: int = TOOL_TIMEOUT_MS


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def run_agent_loop(
    model: Model, request: AgentRequest, limits: LoopLimits, options: LoopOptions | None = None
) -> AgentResult:
    opts = options or LoopOptions()
    history: list[Exchange] = []
    claimed_calls: list[ClaimedCall] = []
    elapsed_ms = 0
    backoff_ms = 0
    tokens = 0
    context_chars = len(opts.prompt) + len(request.message)
    deadline_ms = None if limits.max_duration_seconds is None else limits.max_duration_seconds * 1000

    def finish(output: str, claimed: str, business: str | None, status: str, steps: int) -> AgentResult:
        return AgentResult(
            output=output,
            claimed_outcome=claimed,
            business_outcome=business,
            status=status,
            tool_calls=tuple(claimed_calls),
            steps=steps,
            token_estimate=tokens,
            backoff_ms=backoff_ms,
            model=model.name,
            model_kind=model.kind,
        )

    def limit_reached(status: str, steps: int) -> AgentResult:
        return finish(LIMIT_OUTPUT, "FAILURE", "LIMIT_EXCEEDED", status, steps)

    turn = 0
    while True:
        if turn >= limits.max_steps:
            return limit_reached("step_limit", turn)
        if deadline_ms is not None and elapsed_ms >= deadline_ms:
            return limit_reached("time_limit", turn)
        turn += 1
        action = model.next_action(turn, tuple(history))
        # a model turn reads the prompt, the message and every exchange so far, and writes its action
        tokens += math.ceil(context_chars / 4) + estimate_tokens(_render_action(action))
        if isinstance(action, FinalAnswer):
            return finish(action.text, action.claimed_outcome, action.business_outcome, "completed", turn)
        if len(history) >= limits.max_tool_calls:
            return limit_reached("tool_limit", turn)
        wait_ms = _backoff_ms(history, action.tool, opts.backoff_scale)
        backoff_ms += wait_ms
        elapsed_ms += wait_ms
        if deadline_ms is not None and elapsed_ms >= deadline_ms:
            return limit_reached("time_limit", turn)
        reply = _as_seen(_dispatch(request.client, action), opts.tool_timeout_ms)
        elapsed_ms += reply.delay_ms
        exchange = Exchange(call=action, reply=reply)
        claimed_calls.append(
            ClaimedCall(
                name=action.tool,
                arguments=dict(action.arguments),
                status=exchange.status,
                error_code=reply.error_code,
                retry_after=retry_after_seconds(reply),
                attempt=attempt_number(history, action),
            )
        )
        history.append(exchange)
        context_chars += len(_render_exchange(exchange))


def _dispatch(client: ToolClient, action: ToolCallAction) -> ToolReply:
    if action.tool == KB_SEARCH_TOOL:
        query = str(action.arguments.get("query", ""))
        limit = action.arguments.get("limit", 3)
        documents = client.search_kb(query, limit if isinstance(limit, int) else 3)
        return ToolReply(http_status=200, body={"result": {"documents": documents}})
    return client.call(action.tool, dict(action.arguments), action.headers)


def _as_seen(reply: ToolReply, timeout_ms: int) -> ToolReply:
    """A reply slower than the tool timeout never reaches the agent: it sees a TIMEOUT instead."""
    if reply.delay_ms > timeout_ms:
        return ToolReply(http_status=0, transport_error=TRANSPORT_TIMEOUT, delay_ms=reply.delay_ms)
    return reply


def _backoff_ms(history: Sequence[Exchange], tool: str, scale: float) -> int:
    """min(retry_after × 2^(streak−1), 8 s) × scale, where streak = trailing rate limits of this tool."""
    streak = 0
    last: Exchange | None = None
    for exchange in reversed([ex for ex in history if ex.tool == tool]):
        if exchange.status != "rate_limited":
            break
        last = last or exchange
        streak += 1
    if last is None:
        return 0
    retry_after = retry_after_seconds(last.reply)
    base_ms = (DEFAULT_RETRY_AFTER_S if retry_after is None else retry_after) * 1000
    return round(min(base_ms * 2.0 ** (streak - 1), MAX_BACKOFF_MS) * scale)


def attempt_number(history: Sequence[Exchange], action: ToolCallAction) -> int:
    """Consecutive failures of the same tool + arguments since its last success, plus one."""
    key = _call_key(action)
    failures = 0
    for exchange in reversed(history):
        if _call_key(exchange.call) != key:
            continue
        if exchange.reply.ok:
            break
        failures += 1
    return failures + 1


def _call_key(action: ToolCallAction) -> str:
    return action.tool + json.dumps(action.arguments, sort_keys=True, default=str)


def _render_action(action: Action) -> str:
    if isinstance(action, FinalAnswer):
        return action.text
    return json.dumps({"tool": action.tool, "arguments": action.arguments}, sort_keys=True, default=str)


def _render_exchange(exchange: Exchange) -> str:
    reply = exchange.reply
    seen: JSON = reply.body if reply.transport_error is None else reply.transport_error
    return _render_action(exchange.call) + json.dumps(seen, sort_keys=True, default=str)
