"""OpenAI Agents SDK agents for evaluation: `pip install 'agenttwin[openai-agents]'`.

    from agenttwin.integrations.openai_agents import serve

    def build(tools):                                   # FunctionTools bound to this case's twin
        return Agent(name="support", instructions=PROMPT, tools=tools, model=MODEL)

    serve(build, name="support-bot", version="1.3.0", port=8092)

`build` is called once per case; `Runner.run` runs it on the case's messages with tracing off (an
evaluation is not production traffic) and `final_output` is the answer. MaxTurnsExceeded ends the run as
`step_limit`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from agents import Agent, FunctionTool, MaxTurnsExceeded, RunConfig, RunContextWrapper, Runner

from agenttwin.integrations._evaluation import Case, Faces, Outcome

Build = Callable[[list[FunctionTool]], Agent[Any]]
DEFAULT_MAX_TURNS = 30
LIMIT_OUTPUT = "I wasn't able to finish this request."


def tools_for(case: Case) -> list[FunctionTool]:
    """The case's tools as FunctionTools: the twin's JSON Schemas, not strict (they are not all closed)."""

    def bound(name: str) -> Callable[[RunContextWrapper[Any], str], Any]:
        async def invoke(context: RunContextWrapper[Any], arguments: str) -> str:
            parsed = json.loads(arguments) if arguments.strip() else {}
            return case.call(name, parsed if isinstance(parsed, dict) else {})

        return invoke

    return [
        FunctionTool(
            name=tool.name,
            description=tool.description,
            params_json_schema=tool.input_schema,
            on_invoke_tool=bound(tool.name),
            strict_json_schema=False,
        )
        for tool in case.tools
    ]


def runner(build: Build, *, max_turns: int = DEFAULT_MAX_TURNS) -> Callable[[Case], Outcome]:
    def run(case: Case) -> Outcome:
        agent = build(tools_for(case))
        items: Any = case.messages
        try:
            # a loop of its own per case, closed afterwards (run_sync leaves one open in each server thread)
            result = asyncio.run(
                Runner.run(agent, items, max_turns=max_turns, run_config=RunConfig(tracing_disabled=True))
            )
        except MaxTurnsExceeded:
            return Outcome(LIMIT_OUTPUT, "step_limit")
        output = result.final_output
        return Outcome(output if isinstance(output, str) else json.dumps(output, default=str))

    return run


_faces = Faces(runner)
server, serve, agent = _faces.server, _faces.serve, _faces.agent
