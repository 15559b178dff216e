"""OpenAI Agents SDK agents for evaluation: `pip install 'agenttwin[openai-agents]'`.

    from agenttwin.eval_adapters.openai_agents import serve

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

from agenttwin.eval_adapters.core import AgentServer, Case, EvaluatedAgent, Outcome, serve_runner

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


def server(
    build: Build, *, name: str, version: str, host: str = "127.0.0.1", port: int = 0, **options: Any
) -> AgentServer:
    """The agent contract's server for `build` (start it, or use it as a context manager)."""
    return AgentServer(runner(build), name=name, version=version, host=host, port=port, **options)


def serve(build: Build, *, name: str, version: str, host: str = "127.0.0.1", port: int = 8090, **options: Any) -> None:
    """Serve `build` for evaluation until Ctrl-C: `agenttwin evaluate --candidate http://host:port`."""
    serve_runner(runner(build), name=name, version=version, host=host, port=port, **options)


def agent(build: Build, *, name: str, version: str) -> EvaluatedAgent:
    """The same agent in process, for a `python:module:attr` spec."""
    return EvaluatedAgent(runner(build), name=name, version=version)
