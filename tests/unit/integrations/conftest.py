"""Adapters' tests: the real framework, a scripted model, spans caught in memory and read back through the
receiver's own mapping and the joins."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from producers.otlp.mapping import map_request
from producers.sdk import AgentTwin
from streams.events import Event

AT = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)


@dataclass
class Captured:
    twin: AgentTwin
    exporter: InMemorySpanExporter

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def events(self, tenant: str = "acme") -> tuple[list[Event], list[Event]]:
        """The spans as the receiver would store them (and the subject links it would emit)."""
        batch = map_request(encode_spans(self.spans()), tenant, received_at=AT)
        return list(batch.events), list(batch.links)

    def root_attributes(self) -> dict[str, object]:
        (root,) = [s for s in self.spans() if s.parent is None]
        return dict(root.attributes or {})


@pytest.fixture
def captured() -> Iterator[Captured]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "refund-service"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield Captured(AgentTwin(tracer_provider=provider), exporter)
    provider.shutdown()


def react_graph(model: object, tools: list[object], name: str = "support-refund-agent") -> object:
    """The ReAct loop as a LangGraph graph: the model, then its tool calls, until it answers."""
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    def call_model(state: MessagesState) -> dict[str, object]:
        return {"messages": [model.invoke(state["messages"])]}  # type: ignore[attr-defined]

    graph = StateGraph(MessagesState)
    graph.add_node("agent", call_model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(name=name)
