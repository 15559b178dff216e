"""Agents on the Anthropic SDK for evaluation: `pip install 'agenttwin[anthropic]'`.

    import anthropic
    from agenttwin.integrations.anthropic import serve

    client = anthropic.Anthropic()
    def run(tools, messages):               # runnable tools bound to this case's twin, the case's messages
        return client.beta.messages.tool_runner(
            model=MODEL, max_tokens=1024, system=PROMPT, tools=tools, messages=messages).until_done()

    serve(run, name="support-bot", version="1.3.0", port=8093)

`run` is called once per case and returns the final message (or its text). The tools are the SDK's
`BetaFunctionTool`s, so the SDK's own tool runner executes them; a hand-written loop can offer
`[t.to_dict() for t in tools]` and call `tool.call(input)` itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from anthropic.lib.tools import BetaFunctionTool

from agenttwin.integrations._evaluation import Case, Faces, Outcome, last_text

Run = Callable[[list[BetaFunctionTool[Any]], list[dict[str, Any]]], Any]  # -> a Message, or its text


def tools_for(case: Case) -> list[BetaFunctionTool[Any]]:
    """The case's tools as runnable Anthropic tools, with the twin's JSON Schemas as input schemas."""

    def bound(name: str) -> Callable[..., str]:
        def invoke(**arguments: Any) -> str:
            return case.call(name, arguments)

        return invoke

    return [
        BetaFunctionTool(bound(tool.name), name=tool.name, description=tool.description, input_schema=tool.input_schema)
        for tool in case.tools
    ]


def runner(run: Run) -> Callable[[Case], Outcome]:
    def run_case(case: Case) -> Outcome:
        message = run(tools_for(case), [dict(m) for m in case.messages])
        if isinstance(message, str):
            return Outcome(message)
        status = "step_limit" if getattr(message, "stop_reason", None) == "tool_use" else "completed"
        return Outcome(last_text(getattr(message, "content", None)), status)

    return run_case


_faces = Faces(runner)
server, serve, agent = _faces.server, _faces.serve, _faces.agent
