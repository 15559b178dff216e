"""Agents written as an Anthropic SDK tool loop, in production: tool calls and the final answer as AgentTwin
spans with a claim.

`pip install 'agenttwin[anthropic]'`. The loop stays yours; the run records each model turn and runs each
tool through `call_tool`, which returns the `tool_result` block to send back (agenttwin/integrations/_production.py
says what is recorded):

    from agenttwin.integrations.anthropic import anthropic_run

    with anthropic_run("support-refund-agent", "1.3.0") as run:
        messages = [{"role": "user", "content": text}]
        while True:
            response = client.messages.create(model=MODEL, max_tokens=1024, tools=TOOLS, messages=messages)
            run.model_turn(response)
            if response.stop_reason != "tool_use":
                break
            results = [run.call_tool(block, IMPLEMENTATIONS[block.name]) for block in response.content
                       if block.type == "tool_use"]
            messages += [{"role": "assistant", "content": response.content}, {"role": "user", "content": results}]

A tool that raises becomes an `is_error` tool result (and an error span), as Anthropic's tool-use guide does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from anthropic.types import Message, ToolUseBlock

from agenttwin.integrations._production import ProductionRun

__all__ = ["AnthropicRun", "anthropic_run"]


def _content(result: Any) -> str:
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(result)


class AnthropicRun(ProductionRun):
    def model_turn(self, response: Message) -> None:
        """Record a model turn: its token usage, and its text as the final answer when it asks for no tool."""

        def record() -> None:
            with self.twin.chat(response.model, provider="anthropic") as turn:
                turn.set_usage(response.usage.input_tokens, response.usage.output_tokens)
            if response.stop_reason == "tool_use" or any(b.type == "tool_use" for b in response.content):
                return
            text = " ".join(b.text for b in response.content if b.type == "text")
            self.answered(text)

        self.twin.guard(record, None)

    def call_tool(self, block: ToolUseBlock, function: Callable[..., Any]) -> dict[str, Any]:
        """Run `function(**block.input)` as the tool call `block` asked for; returns its tool_result block."""
        arguments = block.input if isinstance(block.input, dict) else {"input": block.input}
        self.tool_started(block.id, block.name, arguments, call_id=block.id)
        try:
            result = function(**arguments)
        except Exception as exc:  # the model sees the error, as in Anthropic's tool-use loop; the span says so
            self.tool_finished(block.id, error=exc)
            return {
                "type": "tool_result",
                "tool_use_id": block.id,
                "content": f"{type(exc).__name__}: {exc}",
                "is_error": True,
            }
        self.tool_finished(block.id, result)
        return {"type": "tool_result", "tool_use_id": block.id, "content": _content(result)}


@contextmanager
def anthropic_run(agent: str, version: str, **options: Any) -> Iterator[AnthropicRun]:
    """One run of an Anthropic SDK tool loop as an AgentTwin run (options: see ProductionRun)."""
    with AnthropicRun(agent, version, **options) as run:
        yield run
