"""Traces that hold an answer: a run traced by an AgentTwin adapter (LangGraph, the OpenAI Agents SDK, the
Anthropic SDK; each real library, a scripted model) carries its final answer on the run's span as GenAI output
messages when the content policy lets content leave the process, so the trace's reading
(v_production_traces.final_answer) shows it; with content off (the default) only the claim read from it
leaves."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from producers.sdk import AgentTwin
from producers.sdk.content import ContentPolicy
from streams.events import ClaimRead
from streams.processors.outcome_join import OutcomeJoin
from tests.unit.integrations.conftest import Captured

ANSWER = "Done! I've refunded 40.00 USD for order ORD-1001."


def captured_with(mode: str) -> Iterator[Captured]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "refund-service"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield Captured(AgentTwin(tracer_provider=provider, content=ContentPolicy(mode)), exporter)  # type: ignore[arg-type]
    provider.shutdown()


@pytest.fixture(params=["full", "off"])
def captured_content(request: pytest.FixtureRequest) -> Iterator[Captured]:
    yield from captured_with(request.param)


def langgraph(captured: Captured) -> None:
    from langchain_core.messages import AIMessage

    from agenttwin.integrations.langgraph import final_answer, langgraph_run
    from tests.unit.integrations.conftest import react_graph
    from tests.unit.integrations.test_langgraph_production import ScriptedModel, lookup_order

    script = [
        AIMessage(content="", tool_calls=[{"name": "lookup_order", "args": {"order_id": "ORD-1001"}, "id": "c1"}]),
        AIMessage(content=ANSWER),
    ]
    graph: Any = react_graph(ScriptedModel(messages=iter(script)), [lookup_order])
    with langgraph_run("support-refund-agent", "1.3.0", twin=captured.twin) as run:
        state = graph.invoke({"messages": [("user", "Refund ORD-1001")]}, config=run.config())
    assert final_answer(state) == ANSWER


def openai_agents(captured: Captured) -> None:
    from agents import Agent, Runner, set_trace_processors

    from agenttwin.integrations.openai_agents import AgentTwinTracingProcessor, openai_agents_run
    from tests.unit.integrations.test_openai_agents_production import ScriptedModel, _call, _say, lookup_order

    model = ScriptedModel([_call("lookup_order", {"order_id": "ORD-1001"}, "c1"), _say(ANSWER)])
    agent = Agent(name="support-refund-agent", instructions="help", tools=[lookup_order], model=model)
    set_trace_processors([AgentTwinTracingProcessor()])

    async def go() -> None:
        with openai_agents_run("support-refund-agent", "1.3.0", twin=captured.twin) as run:
            run.finish(await Runner.run(agent, "Refund ORD-1001"))

    try:
        asyncio.run(go())
    finally:
        set_trace_processors([])


def anthropic(captured: Captured) -> None:
    from agenttwin.integrations.anthropic import anthropic_run
    from tests.unit.integrations.test_anthropic_production import TOOLS, _client, _message, _tool_use

    turns = [_message([_tool_use("lookup_order", {"order_id": "ORD-1001"}, "t1")], "tool_use"),
             _message([{"type": "text", "text": ANSWER}], "end_turn")]  # fmt: skip
    client = _client(turns, [])
    with anthropic_run("support-refund-agent", "1.3.0", twin=captured.twin) as run:
        messages: list[Any] = [{"role": "user", "content": "Refund ORD-1001"}]
        while True:
            response = client.messages.create(model="claude-scripted", max_tokens=256, tools=TOOLS, messages=messages)  # type: ignore[arg-type]
            run.model_turn(response)
            if response.stop_reason != "tool_use":
                break
            results = [run.call_tool(b, lambda **kw: {"status": "delivered"}) for b in response.content
                       if b.type == "tool_use"]  # fmt: skip
            messages += [{"role": "assistant", "content": response.content}, {"role": "user", "content": results}]


@pytest.mark.parametrize("framework", [langgraph, openai_agents, anthropic], ids=lambda f: f.__name__)
def test_the_trace_holds_the_final_answer_as_the_content_policy_allows(
    captured_content: Captured, framework: Any
) -> None:
    framework(captured_content)
    spans, _ = captured_content.events()
    join, store = OutcomeJoin(), dict[str, Any]()
    reads = [o for e in spans for o in join.handle(store, e) if isinstance(o, ClaimRead)]
    read = reads[-1]
    assert (read.claimed_status, read.claim_inferred_by) == ("SUCCESS", "rules-v2")
    full = captured_content.twin.content.mode == "full"
    assert read.final_answer == (ANSWER if full else None)
