"""The OpenAI Agents SDK adapter against the real Agents SDK (Runner, function tools, trace processors) and a
scripted Model: no network, no API key."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent, ModelResponse, Runner, Usage, function_tool, set_trace_processors
from agents.models.interface import Model
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from agenttwin.integrations.openai_agents import AgentTwinTracingProcessor, openai_agents_run, tool_output
from producers.sdk import current_trace_id
from tests.unit.integrations.conftest import Captured

SEEN: dict[str, str | None] = {}


class ScriptedModel(Model):
    """Answers from a script: each turn is the list of output items the model returns."""

    def __init__(self, turns: list[list[Any]]) -> None:
        self.turns = list(turns)

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return ModelResponse(output=self.turns.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def _call(name: str, args: dict[str, Any], call_id: str) -> list[Any]:
    return [ResponseFunctionToolCall(type="function_call", name=name, arguments=json.dumps(args), call_id=call_id)]


def _say(text: str) -> list[Any]:
    content = [ResponseOutputText(type="output_text", text=text, annotations=[])]
    return [ResponseOutputMessage(type="message", id="m1", role="assistant", status="completed", content=content)]


@function_tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order."""
    SEEN["trace"] = current_trace_id()
    return {"order_id": order_id, "status": "delivered"}


@function_tool
def refund_payment(order_id: str, amount: float) -> dict[str, Any]:
    """Refund an order (the provider is rate limiting, and the tool says so in its result)."""
    return {"status": 429, "error": "too many requests"}


@function_tool
def cancel_order(order_id: str) -> str:
    """Cancel an order (it raises)."""
    raise RuntimeError("the order service is down")


@pytest.fixture(autouse=True)
def processors() -> Iterator[None]:
    set_trace_processors([AgentTwinTracingProcessor()])  # only AgentTwin's: nothing leaves for OpenAI
    yield
    set_trace_processors([])


def _run(captured: Captured, turns: list[list[Any]], tools: list[Any]) -> str:
    agent = Agent(name="support-refund-agent", instructions="help", tools=tools, model=ScriptedModel(turns))

    async def go() -> str:
        with openai_agents_run("support-refund-agent", "2.0.0", twin=captured.twin) as run:
            run.finish(await Runner.run(agent, "refund ORD-7"))
            return run.trace_id

    return asyncio.run(go())


def test_tool_calls_and_the_final_output_become_spans_with_an_inferred_claim(captured: Captured) -> None:
    turns = [
        _call("lookup_order", {"order_id": "ORD-7"}, "c1"),
        _call("refund_payment", {"order_id": "ORD-7", "amount": 12.5}, "c2"),
        _say("All set, I've refunded 12.50 USD."),
    ]
    trace_id = _run(captured, turns, [lookup_order, refund_payment])
    assert SEEN["trace"] == trace_id
    calls = {s.name: dict(s.attributes or {}) for s in captured.spans() if s.name.startswith("execute_tool")}
    assert calls["execute_tool lookup_order"]["agenttwin.tool.result_status"] == "ok"
    assert calls["execute_tool refund_payment"]["agenttwin.tool.result_status"] == "rate_limited"
    root = captured.root_attributes()
    assert (root["agenttwin.outcome.claimed"], root["agenttwin.outcome.claim_inferred_by"]) == ("SUCCESS", "rules-v2")
    assert (root["agenttwin.subject"], root["agenttwin.agent.version"]) == ("order:ORD-7", "2.0.0")
    spans, links = captured.events()
    tool = next(s for s in spans if getattr(s, "tool_name", None) == "refund_payment")
    assert tool.tool_error == "rate_limited"  # type: ignore[attr-defined]
    assert {link.subject for link in links} == {"order:ORD-7"}  # type: ignore[attr-defined]


def test_a_tool_that_raised_is_an_error_whatever_the_agent_says(captured: Captured) -> None:
    turns = [_call("cancel_order", {"order_id": "A-1"}, "c1"), _say("Your order is cancelled.")]
    _run(captured, turns, [cancel_order])
    (call,) = [s for s in captured.spans() if s.name == "execute_tool cancel_order"]
    assert (call.attributes or {})["agenttwin.tool.result_status"] == "error"
    assert captured.root_attributes()["agenttwin.outcome.claimed"] == "SUCCESS"  # what it claims, not what happened


def test_outside_a_run_nothing_is_recorded(captured: Captured) -> None:
    agent = Agent(
        name="a",
        instructions="x",
        tools=[lookup_order],
        model=ScriptedModel([_call("lookup_order", {"order_id": "1"}, "c"), _say("ok")]),
    )
    asyncio.run(Runner.run(agent, "x"))
    assert captured.spans() == []


def test_tool_outputs_are_read_as_json_or_python_literals_only() -> None:
    assert tool_output('{"status": 504}') == {"status": 504}
    assert tool_output("{'status': 504, 'error': None}") == {"status": 504, "error": None}
    assert tool_output("{'x': __import__('os')}") == "{'x': __import__('os')}"  # never evaluated
    assert tool_output("plain") == "plain" and tool_output({"a": 1}) == {"a": 1}


class ChatCompletionsStyleModel(ScriptedModel):
    """A model wrapped the way chat-completions and LiteLLM models are: it opens a generation span with the
    messages it returned, and no response span."""

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        from agents.tracing import generation_span

        turn = self.turns.pop(0)
        with generation_span(model="scripted") as span:
            span.span_data.output = [_as_chat_message(item) for item in turn]
        return ModelResponse(output=turn, usage=Usage(), response_id=None)


class ResponsesStyleModel(ScriptedModel):
    """A model that opens a response span, as the SDK's Responses model does."""

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        from agents.tracing import response_span
        from openai.types.responses import Response

        turn = self.turns.pop(0)
        response = Response(
            id="r1", created_at=0, model="scripted", object="response", output=turn, parallel_tool_calls=False,
            tool_choice="auto", tools=[],
        )  # fmt: skip
        with response_span(response=response):
            pass
        return ModelResponse(output=turn, usage=Usage(), response_id=None)


def _as_chat_message(item: Any) -> dict[str, Any]:
    if isinstance(item, ResponseFunctionToolCall):
        call = {"id": item.call_id, "type": "function", "function": {"name": item.name, "arguments": item.arguments}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"role": "assistant", "content": "".join(part.text for part in item.content)}


@pytest.mark.parametrize("wrapping", ["responses", "chat-completions", "no-span-hooks", "finish"])
def test_the_final_answer_is_found_however_the_model_is_wrapped(captured: Captured, wrapping: str) -> None:
    """No finish() needed when the model opens a response or a generation span; a model that opens neither
    (a custom Model) gives its final output through the run's hooks or finish(), which wins."""
    from agenttwin.integrations.openai_agents import run_hooks

    turns = [_call("lookup_order", {"order_id": "ORD-7"}, "c1"), _say("All set, I've refunded 12.50 USD.")]
    model = {"responses": ResponsesStyleModel, "chat-completions": ChatCompletionsStyleModel}.get(
        wrapping, ScriptedModel
    )
    agent = Agent(name="support-refund-agent", instructions="help", tools=[lookup_order], model=model(turns))

    async def go() -> None:
        with openai_agents_run("support-refund-agent", "2.0.0", twin=captured.twin) as run:
            if wrapping == "no-span-hooks":
                await Runner.run(agent, "refund ORD-7", hooks=run_hooks(run))
            else:
                result = await Runner.run(agent, "refund ORD-7")
                if wrapping == "finish":
                    run.finish(result)
            assert run.answer == "All set, I've refunded 12.50 USD."

    asyncio.run(go())
    root = captured.root_attributes()
    assert (root["agenttwin.outcome.claimed"], root["agenttwin.outcome.claim_inferred_by"]) == ("SUCCESS", "rules-v2")


def test_a_tool_requesting_turn_is_no_answer(captured: Captured) -> None:
    turns = [_call("lookup_order", {"order_id": "ORD-7"}, "c1"), _call("lookup_order", {"order_id": "ORD-8"}, "c2")]
    turns.append(_say("Both orders are delivered."))
    agent = Agent(name="a", instructions="x", tools=[lookup_order], model=ChatCompletionsStyleModel(turns))

    async def go() -> str | None:
        with openai_agents_run("a", "1", twin=captured.twin) as run:
            await Runner.run(agent, "x")
            return run.answer

    assert asyncio.run(go()) == "Both orders are delivered."
