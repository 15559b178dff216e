"""The Anthropic adapter against the real Anthropic SDK client (Messages API over an httpx mock transport:
no network) and a scripted model: a tool loop as users write it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import httpx

from agenttwin.integrations.anthropic import anthropic_run
from tests.unit.integrations.conftest import Captured

TOOLS = [
    {"name": "lookup_order", "description": "Look up", "input_schema": {"type": "object", "properties": {}}},
    {"name": "refund_payment", "description": "Refund", "input_schema": {"type": "object", "properties": {}}},
]


def _message(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-scripted",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _tool_use(name: str, args: dict[str, Any], use_id: str) -> dict[str, Any]:
    return _message([{"type": "tool_use", "id": use_id, "name": name, "input": args}], "tool_use")


def _client(turns: list[dict[str, Any]], seen: list[dict[str, Any]]) -> anthropic.Anthropic:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=turns.pop(0))

    return anthropic.Anthropic(
        api_key="test", max_retries=0, http_client=httpx.Client(transport=httpx.MockTransport(handler))
    )


def _loop(captured: Captured, client: anthropic.Anthropic, tools: dict[str, Callable[..., Any]]) -> str:
    with anthropic_run("support-refund-agent", "1.3.0", twin=captured.twin) as run:
        messages: list[Any] = [{"role": "user", "content": "Refund ORD-1001"}]
        while True:
            response = client.messages.create(model="claude-scripted", max_tokens=256, tools=TOOLS, messages=messages)  # type: ignore[arg-type]
            run.model_turn(response)
            if response.stop_reason != "tool_use":
                break
            results = [run.call_tool(b, tools[b.name]) for b in response.content if b.type == "tool_use"]
            messages += [{"role": "assistant", "content": response.content}, {"role": "user", "content": results}]
        return run.trace_id


def test_a_tool_loop_becomes_spans_with_an_inferred_claim(captured: Captured) -> None:
    turns = [
        _tool_use("lookup_order", {"order_id": "ORD-1001"}, "tu_1"),
        _tool_use("refund_payment", {"order_id": "ORD-1001", "amount": 40}, "tu_2"),
        _message([{"type": "text", "text": "Done! I've refunded 40.00 USD."}], "end_turn"),
    ]
    seen: list[dict[str, Any]] = []
    tools = {
        "lookup_order": lambda order_id: {"order_id": order_id, "status": "delivered"},
        "refund_payment": lambda order_id, amount: {"status": 504, "error": "gateway timeout"},
    }
    trace_id = _loop(captured, _client(turns, seen), tools)
    assert (
        len(seen) == 3
        and seen[2]["messages"][-1]["content"][0]["content"] == '{"status": 504, "error": "gateway timeout"}'
    )
    calls = {s.name: dict(s.attributes or {}) for s in captured.spans() if s.name.startswith("execute_tool")}
    assert calls["execute_tool refund_payment"]["agenttwin.tool.result_status"] == "timeout"
    assert calls["execute_tool refund_payment"]["gen_ai.tool.call.id"] == "tu_2"
    chats = [s for s in captured.spans() if s.name.startswith("chat ")]
    assert len(chats) == 3 and (chats[0].attributes or {})["gen_ai.usage.input_tokens"] == 10
    root = captured.root_attributes()
    assert (root["agenttwin.outcome.claimed"], root["agenttwin.outcome.claim_inferred_by"]) == ("SUCCESS", "rules-v2")
    assert root["agenttwin.subject"] == "order:ORD-1001"
    spans, _ = captured.events()
    assert {s.trace_id for s in spans} == {trace_id}  # type: ignore[attr-defined]


def test_a_raising_tool_is_an_error_result_and_an_error_span(captured: Captured) -> None:
    turns = [
        _tool_use("refund_payment", {"order_id": "ORD-2"}, "tu_1"),
        _message([{"type": "text", "text": "I couldn't refund the order, sorry."}], "end_turn"),
    ]
    seen: list[dict[str, Any]] = []

    def refund(order_id: str) -> None:
        raise ConnectionError("payments down")

    _loop(captured, _client(turns, seen), {"refund_payment": refund})
    result = seen[1]["messages"][-1]["content"][0]
    assert result["is_error"] is True and "payments down" in result["content"]
    (call,) = [s for s in captured.spans() if s.name == "execute_tool refund_payment"]
    assert (call.attributes or {})["agenttwin.tool.result_status"] == "error"
    assert (call.attributes or {})["error.type"] == "ConnectionError"
    assert captured.root_attributes()["agenttwin.outcome.claimed"] == "FAILURE"
