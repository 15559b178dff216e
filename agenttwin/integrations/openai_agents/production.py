"""OpenAI Agents SDK agents in production: tool calls and the final answer as AgentTwin spans with a claim.

`pip install 'agenttwin[openai-agents]'`. The Agents SDK reports every function-tool call to its trace
processors; AgentTwin's processor feeds them to the run open in the current context (agenttwin/integrations/
_run.py says what is recorded), and `finish(result)` takes the run's final output:

    from agents import Runner
    from agenttwin.integrations.openai_agents import instrument, openai_agents_run

    instrument()  # once: adds AgentTwin's trace processor beside the SDK's own
    with openai_agents_run("support-refund-agent", "1.3.0") as run:
        result = await Runner.run(agent, text)
        run.finish(result)

The Agents SDK hands its processors a tool's output as `str(output)` — for a dict, its Python repr — so the
result is read as JSON, else as a Python literal (never evaluated beyond literals), to find the `error`
field or HTTP status a thin tool returns. A tool that raised is an error whatever the agent made of it.
"""

from __future__ import annotations

import ast
import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agents import add_trace_processor
from agents.tracing import Span, Trace, TracingProcessor
from agents.tracing.span_data import FunctionSpanData

from agenttwin.integrations._production import ProductionRun
from streams.span_reading import MAX_JSON_CHARS, parse_json

__all__ = ["AgentTwinTracingProcessor", "OpenAIAgentsRun", "instrument", "openai_agents_run", "tool_output"]

_CURRENT: contextvars.ContextVar[OpenAIAgentsRun | None] = contextvars.ContextVar("agenttwin_openai_run", default=None)
_installed: list[AgentTwinTracingProcessor] = []


class ToolFailed(Exception):
    """A function tool the Agents SDK reported as failed (its span's error)."""


def tool_output(output: Any) -> Any:
    """A function span's output as data: JSON, else a Python literal (a dict's repr), else the text."""
    if not isinstance(output, str):
        return output
    parsed = parse_json(output)
    if parsed is not None:
        return parsed
    text = output.strip()
    if text[:1] in "{[" and len(text) <= MAX_JSON_CHARS:
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return output
    return output


def _arguments(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    parsed = parse_json(text)
    return parsed if isinstance(parsed, dict) else {"input": text}


class AgentTwinTracingProcessor(TracingProcessor):
    """Feeds function-tool spans to the OpenAIAgentsRun of the current context (nothing outside one)."""

    def on_trace_start(self, trace: Trace) -> None:
        pass

    def on_trace_end(self, trace: Trace) -> None:
        pass

    def on_span_start(self, span: Span[Any]) -> None:
        run = _CURRENT.get()
        data = span.span_data
        if run is None or not isinstance(data, FunctionSpanData):
            return
        run.tool_started(span.span_id, data.name, _arguments(data.input))

    def on_span_end(self, span: Span[Any]) -> None:
        run = _CURRENT.get()
        data = span.span_data
        if run is None or not isinstance(data, FunctionSpanData):
            return
        error, arguments = span.error, _arguments(data.input)  # the SDK sets the input when the call ends
        if error:
            failed = ToolFailed(str(error.get("message") or error))
            run.tool_finished(span.span_id, error=failed, arguments=arguments)
        else:
            run.tool_finished(span.span_id, tool_output(data.output), arguments=arguments)

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


def instrument() -> AgentTwinTracingProcessor:
    """Add AgentTwin's trace processor to the Agents SDK (once per process; the SDK's own ones stay)."""
    if not _installed:
        processor = AgentTwinTracingProcessor()
        add_trace_processor(processor)
        _installed.append(processor)
    return _installed[0]


class OpenAIAgentsRun(ProductionRun):
    def __enter__(self) -> OpenAIAgentsRun:
        super().__enter__()
        self._token = _CURRENT.set(self)
        return self

    def __exit__(self, *exc: Any) -> bool | None:
        _CURRENT.reset(self._token)
        return super().__exit__(*exc)

    def finish(self, result: Any) -> None:
        """Take the run's final output (a RunResult, or the output itself) as its final answer."""
        output = getattr(result, "final_output", result)
        self.answered(output if isinstance(output, str) else str(output) if output is not None else None)


@contextmanager
def openai_agents_run(agent: str, version: str, **options: Any) -> Iterator[OpenAIAgentsRun]:
    """One run of an Agents SDK agent as an AgentTwin run (options: see ProductionRun)."""
    with OpenAIAgentsRun(agent, version, **options) as run:
        yield run
