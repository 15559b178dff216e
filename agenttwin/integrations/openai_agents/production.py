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

The final answer is found however the model is wrapped, no `finish` needed when the model opens a span: the
last assistant text of a response span (the SDK's Responses model) or of a generation span (chat-completions
and LiteLLM models) that requests no tool. A model that opens neither (a custom `Model`) gives its final
output through the run's hooks, `Runner.run(agent, text, hooks=run_hooks(run))`, or through `finish(result)`,
whose `final_output` wins over any of them (a structured output as its JSON).

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

from agents import RunHooks, add_trace_processor
from agents.tracing import Span, Trace, TracingProcessor
from agents.tracing.span_data import FunctionSpanData, GenerationSpanData, ResponseSpanData

from agenttwin.integrations._production import ProductionRun
from streams.span_reading import MAX_JSON_CHARS, parse_json

__all__ = [
    "AgentTwinTracingProcessor",
    "OpenAIAgentsRun",
    "instrument",
    "openai_agents_run",
    "run_hooks",
    "tool_output",
]

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
        if run is not None and isinstance(data, ResponseSpanData | GenerationSpanData):
            run.model_answered(_model_answer(data))
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


def _model_answer(data: ResponseSpanData | GenerationSpanData) -> str | None:
    """The assistant's text of one model turn, None when the turn requests a tool (or says nothing)."""
    if isinstance(data, ResponseSpanData):
        items = [_as_dict(item) for item in getattr(data.response, "output", None) or ()]
        if any(
            item.get("type") in ("function_call", "computer_call") or "call" in str(item.get("type")) for item in items
        ):
            return None
        texts = [
            str(part.get("text"))
            for item in items
            if item.get("type") == "message"
            for part in item.get("content") or ()
            if isinstance(part, dict) and part.get("text")
        ]
        return "".join(texts) or None
    messages = [m for m in (_as_dict(m) for m in data.output or ()) if m.get("role") == "assistant"]
    if not messages or messages[-1].get("tool_calls"):
        return None
    content = messages[-1].get("content")
    if isinstance(content, list):
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content if isinstance(content, str) and content.strip() else None


def _as_dict(item: Any) -> dict[str, Any]:
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    value = dump() if callable(dump) else None
    return value if isinstance(value, dict) else {}


def _output_text(output: Any) -> str | None:
    """A final output as text: a string as it is, a structured output (pydantic) as its JSON."""
    if output is None or isinstance(output, str):
        return output
    dump = getattr(output, "model_dump_json", None)
    return str(dump()) if callable(dump) else str(output)


class _AnswerHooks(RunHooks[Any]):
    def __init__(self, run: OpenAIAgentsRun) -> None:
        self._run = run

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        self._run.answered(_output_text(output))


def run_hooks(run: OpenAIAgentsRun) -> RunHooks[Any]:
    """Hooks for `Runner.run(..., hooks=...)` that hand the run the agent's final output, whatever the model."""
    return _AnswerHooks(run)


def instrument() -> AgentTwinTracingProcessor:
    """Add AgentTwin's trace processor to the Agents SDK (once per process; the SDK's own ones stay)."""
    if not _installed:
        processor = AgentTwinTracingProcessor()
        add_trace_processor(processor)
        _installed.append(processor)
    return _installed[0]


class OpenAIAgentsRun(ProductionRun):
    _final = False  # finish() gave the final output: model turns seen later no longer replace it

    def __enter__(self) -> OpenAIAgentsRun:
        super().__enter__()
        self._token = _CURRENT.set(self)
        return self

    def __exit__(self, *exc: Any) -> bool | None:
        _CURRENT.reset(self._token)
        return super().__exit__(*exc)

    def model_answered(self, text: str | None) -> None:
        """A model turn's text, from its span: the answer unless a final output was given."""
        if not self._final:
            self.answered(text)

    def finish(self, result: Any) -> None:
        """Take the run's final output (a RunResult, or the output itself) as its final answer."""
        self.answered(_output_text(getattr(result, "final_output", result)))
        self._final = self._final or self.answer is not None


@contextmanager
def openai_agents_run(agent: str, version: str, **options: Any) -> Iterator[OpenAIAgentsRun]:
    """One run of an Agents SDK agent as an AgentTwin run (options: see ProductionRun)."""
    with OpenAIAgentsRun(agent, version, **options) as run:
        yield run
