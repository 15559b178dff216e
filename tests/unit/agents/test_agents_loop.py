"""The agent loop: limits, simulated clock, tool timeout, backoff, attempts, tokens (spec §5.2)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pytest

from producers.agents.canned_client import CannedToolClient, error_reply, ok_reply
from producers.agents.contract import AgentRequest, AgentResult
from producers.agents.conversation import Action, Exchange, FinalAnswer, ToolCallAction
from producers.agents.loop import LIMIT_OUTPUT, LoopLimits, LoopOptions, run_agent_loop


class ListModel:
    """Calls the given tools in order, then answers."""

    name = "list-model"
    kind = "deterministic-fake"

    def __init__(self, calls: Sequence[tuple[str, Mapping[str, object]]], answer: str = "done") -> None:
        self.calls = list(calls)
        self.answer = answer
        self.seen: list[int] = []

    def next_action(self, turn: int, history: Sequence[Exchange]) -> Action:
        self.seen.append(len(history))
        if len(history) < len(self.calls):
            tool, args = self.calls[len(history)]
            return ToolCallAction(f"call_{turn}_{tool}", tool, dict(args))
        return FinalAnswer(self.answer, "SUCCESS", "ANSWERED")


def run(
    model: ListModel,
    client: CannedToolClient,
    limits: LoopLimits | None = None,
    options: LoopOptions | None = None,
) -> AgentResult:
    request = AgentRequest(
        message="hi", context={}, tenant="t", customer_id=None, tools=(), client=client, session_id="s"
    )
    return run_agent_loop(model, request, limits or LoopLimits(), options)


def limit_ending(result: AgentResult, status: str) -> None:
    assert result.status == status
    assert result.output == LIMIT_OUTPUT
    assert (result.claimed_outcome, result.business_outcome) == ("FAILURE", "LIMIT_EXCEEDED")


def test_step_limit() -> None:
    client = CannedToolClient({"t": [ok_reply(1)]})
    result = run(ListModel([("t", {"n": i}) for i in range(10)]), client, LoopLimits(max_steps=3))
    limit_ending(result, "step_limit")
    assert result.steps == 3
    assert len(client.calls) == 3


def test_tool_limit() -> None:
    client = CannedToolClient({"t": [ok_reply(1)]})
    result = run(ListModel([("t", {"n": i}) for i in range(10)]), client, LoopLimits(max_tool_calls=2))
    limit_ending(result, "tool_limit")
    assert len(client.calls) == 2
    assert result.steps == 3


def test_time_limit_on_simulated_clock() -> None:
    # 1 s of reported delay per call (under the tool timeout), a 2.5 s budget: the third turn never starts
    client = CannedToolClient({"t": [ok_reply(1, delay_ms=1000)]})
    result = run(
        ListModel([("t", {"n": i}) for i in range(10)]),
        client,
        LoopLimits(max_duration_seconds=2.5, max_tool_calls=100),
    )
    limit_ending(result, "time_limit")
    assert len(client.calls) == 3  # 0 -> 1000 -> 2000 -> 3000 ms; the check before turn 4 stops it
    assert result.steps == 3


def test_no_time_limit_when_unbounded() -> None:
    client = CannedToolClient({"t": [ok_reply(1, delay_ms=1400)]})
    result = run(
        ListModel([("t", {"n": i}) for i in range(5)]), client, LoopLimits(max_duration_seconds=None)
    )
    assert result.status == "completed"


def test_slow_reply_reaches_the_agent_as_a_timeout() -> None:
    client = CannedToolClient({"t": [ok_reply({"x": 1}, delay_ms=1501), ok_reply({"x": 1}, delay_ms=1500)]})
    result = run(ListModel([("t", {}), ("t", {})]), client)
    first, second = result.tool_calls
    assert (first.status, first.error_code) == ("timeout", "TIMEOUT")
    assert (second.status, second.error_code) == ("ok", None)
    assert second.attempt == 2  # one failure of the same call before it


def test_tool_timeout_is_configurable() -> None:
    client = CannedToolClient({"t": [ok_reply(1, delay_ms=200)]})
    result = run(ListModel([("t", {})]), client, options=LoopOptions(tool_timeout_ms=100))
    assert result.tool_calls[0].error_code == "TIMEOUT"


def test_backoff_is_exponential_capped_and_scaled() -> None:
    limited = error_reply(429, "RATE_LIMITED", headers={"retry-after": "3"})
    client = CannedToolClient({"t": [limited]})
    calls: list[tuple[str, Mapping[str, object]]] = [("t", {})] * 5
    result = run(ListModel(calls), client)
    # before calls 2..5: min(3 s * 2^(k-1), 8 s) for streaks 1..4
    assert result.backoff_ms == 3000 + 6000 + 8000 + 8000
    scaled = run(ListModel(calls), CannedToolClient({"t": [limited]}), options=LoopOptions(backoff_scale=0.5))
    assert scaled.backoff_ms == (3000 + 6000 + 8000 + 8000) // 2
    assert [c.attempt for c in result.tool_calls] == [1, 2, 3, 4, 5]


def test_backoff_defaults_to_one_second_and_resets_after_success() -> None:
    limited = error_reply(429, "RATE_LIMITED")
    client = CannedToolClient({"t": [limited, ok_reply(1), limited, ok_reply(1)], "u": [ok_reply(1)]})
    result = run(ListModel([("t", {}), ("u", {}), ("t", {}), ("t", {}), ("t", {})]), client)
    # t:429 | u (no backoff: other tool) | t (+1 s) ok | t:429 | t (+1 s, streak reset to 1)
    assert result.backoff_ms == 2000
    assert result.tool_calls[0].retry_after is None


def test_backoff_counts_toward_the_time_limit() -> None:
    client = CannedToolClient({"t": [error_reply(429, "RATE_LIMITED", headers={"Retry-After": "60"})]})
    result = run(ListModel([("t", {})] * 5), client, LoopLimits(max_duration_seconds=10))
    limit_ending(result, "time_limit")
    assert len(client.calls) == 2  # 8 s (capped) backoff fits in 10 s; the next 8 s does not
    assert result.backoff_ms == 16000


def test_attempt_counts_failures_of_the_same_call_since_its_last_success() -> None:
    fail, good = error_reply(500, "UPSTREAM_ERROR"), ok_reply(1)
    client = CannedToolClient({"t": [fail, fail, good, good, fail], "u": [good]})
    calls = [("t", {"a": 1}), ("t", {"a": 1}), ("u", {}), ("t", {"a": 1}), ("t", {"a": 1}), ("t", {"a": 2})]
    result = run(ListModel(calls), client)
    assert [c.attempt for c in result.tool_calls] == [1, 2, 1, 3, 1, 1]


def test_token_estimate_is_ceil_of_chars_over_four() -> None:
    model = ListModel([], answer="x" * 9)
    request = AgentRequest(
        message="hello",
        context={},
        tenant="t",
        customer_id=None,
        tools=(),
        client=CannedToolClient(),
        session_id="s",
    )
    result = run_agent_loop(model, request, LoopLimits(), LoopOptions(prompt="p" * 6))
    assert result.token_estimate == math.ceil(11 / 4) + math.ceil(9 / 4)
    assert result.steps == 1


def test_token_estimate_grows_with_history_and_is_deterministic() -> None:
    def once() -> int:
        client = CannedToolClient({"t": [ok_reply({"x": "y" * 40})]})
        return run(ListModel([("t", {})] * 3), client).token_estimate

    assert once() == once()
    short = run(ListModel([("t", {})]), CannedToolClient({"t": [ok_reply({})]})).token_estimate
    assert once() > short


@pytest.mark.parametrize(
    ("status", "seen"),
    [
        (401, "denied"),
        (403, "denied"),
        (400, "invalid"),
        (409, "invalid"),
        (422, "invalid"),
        (408, "timeout"),
        (504, "timeout"),
        (404, "error"),
        (503, "error"),
    ],
)
def test_status_mapping(status: int, seen: str) -> None:
    client = CannedToolClient({"t": [error_reply(status, "X")]})
    assert run(ListModel([("t", {})]), client).tool_calls[0].status == seen


def test_kb_search_goes_to_the_kb_endpoint() -> None:
    client = CannedToolClient(documents=[{"id": "a", "title": "A", "text": "aa"}])
    result = run(ListModel([("search_knowledge_base", {"query": "refund", "limit": 2})]), client)
    assert client.searches == [("refund", 2)]
    assert client.calls == []
    assert result.tool_calls[0].status == "ok"
