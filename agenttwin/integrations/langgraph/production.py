"""LangGraph / LangChain agents in production: tool calls and the final answer as AgentTwin spans with a claim.

`pip install 'agenttwin[langgraph]'`. A LangChain callback handler sees every tool call (start, end or
error, on whatever thread the graph runs it) and the graph's final state; `langgraph_run` wraps one
invocation in an AgentTwin run (agenttwin/integrations/_production.py says what is recorded):

    from agenttwin import sdk
    from agenttwin.integrations.langgraph import langgraph_run

    sdk.configure(tracer_provider=sdk.tracer_provider(service_name="refund-agent"))
    with langgraph_run("support-refund-agent", "1.3.0", risks={"refund_payment": "WRITE_IRREVERSIBLE"}) as run:
        state = graph.invoke({"messages": [("user", text)]}, config=run.config())
    run.trace_id  # hand it to whatever verifies the refund, or let it report by order id (POST /v1/outcomes)

Inside the `with`, `sdk.current_trace_id()` is the run's trace id (in the graph's tools too: LangChain
copies the context into its worker threads).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from agenttwin.integrations._production import ProductionRun
from streams.span_reading import parse_json

__all__ = ["AgentTwinCallbackHandler", "LangGraphRun", "final_answer", "langgraph_run"]


def _text(message: AIMessage) -> str | None:
    if message.tool_calls:
        return None
    content = message.content
    if isinstance(content, str):
        return content.strip() or None
    parts = [p if isinstance(p, str) else p.get("text") for p in content if isinstance(p, str | dict)]
    text = " ".join(p for p in parts if isinstance(p, str) and p.strip())
    return text.strip() or None


def final_answer(outputs: Any) -> str | None:
    """The final answer in a graph's output: the last AI message that requests no tool (or an `output` text)."""
    messages: Sequence[Any] = []
    if isinstance(outputs, Mapping):
        if isinstance(outputs.get("messages"), Sequence):
            messages = outputs["messages"]
        elif isinstance(outputs.get("output"), str):
            return outputs["output"].strip() or None
    elif isinstance(outputs, Sequence) and not isinstance(outputs, str):
        messages = outputs
    elif isinstance(outputs, AIMessage):
        return _text(outputs)
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return _text(message)
    return None


class AgentTwinCallbackHandler(BaseCallbackHandler):
    """Feeds a ProductionRun from LangChain's callbacks (tools and the root chain's end)."""

    raise_error = False  # instrumentation never fails the graph

    def __init__(self, run: ProductionRun) -> None:
        self.run = run

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        name = str((serialized or {}).get("name") or kwargs.get("name") or "tool")
        arguments: Any = inputs if isinstance(inputs, dict) else parse_json(input_str)
        if not isinstance(arguments, dict):
            arguments = {"input": input_str}
        call_id = (metadata or {}).get("tool_call_id") or kwargs.get("tool_call_id")
        self.run.tool_started(run_id, name, arguments, call_id=call_id if isinstance(call_id, str) else None)

    def on_tool_end(self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        if isinstance(output, ToolMessage):
            result: Any = output.content
            if output.status == "error":
                result = {"error": output.content or "error"}
        else:
            result = output
        self.run.tool_finished(run_id, result)

    def on_tool_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        self.run.tool_finished(run_id, error=error)

    def on_llm_end(
        self, response: LLMResult, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        for generations in response.generations[-1:]:
            for generation in generations[-1:]:
                if isinstance(generation, ChatGeneration) and isinstance(generation.message, AIMessage):
                    self.run.answered(_text(generation.message))

    def on_chain_end(
        self, outputs: dict[str, Any], *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        if parent_run_id is None:  # the graph itself: its final state holds the final answer
            self.run.answered(final_answer(outputs))


class LangGraphRun(ProductionRun):
    """A ProductionRun with the callback handler to pass to the graph (`config()`)."""

    def __init__(self, agent: str, version: str, **options: Any) -> None:
        super().__init__(agent, version, **options)
        self.handler = AgentTwinCallbackHandler(self)

    def config(self, **extra: Any) -> dict[str, Any]:
        """A RunnableConfig with AgentTwin's handler added to `extra`'s callbacks."""
        callbacks = list(extra.pop("callbacks", None) or [])
        return {**extra, "callbacks": [*callbacks, self.handler]}


@contextmanager
def langgraph_run(agent: str, version: str, **options: Any) -> Iterator[LangGraphRun]:
    """One invocation of a LangGraph/LangChain agent as an AgentTwin run (options: see ProductionRun)."""
    with LangGraphRun(agent, version, **options) as run:
        yield run
