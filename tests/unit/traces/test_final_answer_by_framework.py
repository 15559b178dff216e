"""The final answer of a LangGraph trace written by stock tracing (OpenInference's LangChain instrumentor, a
scripted model, no network), read by the receiver's mapping and the outcome join, whether the model is a
LangChain chat model (an LLM span holds the answer) or a plain function (no LLM span: the graph's output
does). AgentTwin's adapters (all three frameworks): tests/unit/integrations/test_adapter_final_answers.py."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from producers.otlp.mapping import map_request
from streams.events import ClaimRead
from streams.processors.outcome_join import OutcomeJoin

AT = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
ANSWER = "Done! I've refunded 40.00 USD for order ORD-1001."


@pytest.fixture
def provider() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": "refund-service"}))
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield tracer_provider, exporter
    tracer_provider.shutdown()


def reading(exporter: InMemorySpanExporter) -> ClaimRead:
    """The outcome join's last reading of the one trace the exporter caught."""
    batch = map_request(encode_spans(exporter.get_finished_spans()), "acme", received_at=AT)
    assert len({e.trace_id for e in batch.events}) == 1  # type: ignore[attr-defined]
    join, store = OutcomeJoin(), dict[str, Any]()
    reads = [o for e in batch.events for o in join.handle(store, e) if isinstance(o, ClaimRead)]
    return reads[-1]


@pytest.mark.parametrize("model_kind", ["chat-model", "plain-function"])
def test_langgraph_with_openinference(provider: tuple[TracerProvider, InMemorySpanExporter], model_kind: str) -> None:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition
    from openinference.instrumentation.langchain import LangChainInstrumentor

    @tool
    def refund_payment(order_id: str, amount: float) -> dict[str, Any]:
        """Refund an order."""
        return {"refund_id": "RF-1", "status": "succeeded"}

    turns = [
        AIMessage(content="", tool_calls=[{"name": "refund_payment", "args": {"order_id": "ORD-1001", "amount": 40.0},
                                           "id": "c1"}]),
        AIMessage(content=ANSWER),
    ]  # fmt: skip

    class Scripted(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:
            return self

    chat = Scripted(messages=iter(list(turns)))
    script = iter(list(turns))

    def call_model(state: MessagesState) -> dict[str, Any]:
        # a LangChain chat model opens an LLM span; a plain function (a model wrapped by hand) opens none
        return {"messages": [chat.invoke(state["messages"]) if model_kind == "chat-model" else next(script)]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", call_model)
    graph.add_node("tools", ToolNode([refund_payment]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    agent = graph.compile(name="support-refund-agent")
    tracer_provider, exporter = provider
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider)
    try:
        agent.invoke({"messages": [("user", "Please refund ORD-1001")]})
    finally:
        instrumentor.uninstrument()
    read = reading(exporter)
    assert read.final_answer == ANSWER
    assert (read.claimed_status, read.claim_inferred_by) == ("SUCCESS", "rules-v2")
    assert "refund_payment" in read.tools and read.subjects == ["order:ORD-1001"]
