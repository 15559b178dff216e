"""LangGraph (and LangChain) agents for evaluation: `pip install 'agenttwin[langgraph]'`.

    from agenttwin.integrations.langgraph import serve

    def build(tools):                       # LangChain tools bound to this case's twin
        return my_graph(model, tools)       # the agent you already have, compiled, taking {"messages": [...]}

    serve(build, name="support-bot", version="1.3.0", port=8091)

`build` is called once per case; the graph is invoked with the case's messages and its last AI message is
the answer. A GraphRecursionError ends the run as `step_limit`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.errors import GraphRecursionError

from agenttwin.integrations._evaluation import Case, Faces, Outcome, last_text

Build = Callable[[list[BaseTool]], Any]  # -> a compiled graph (any Runnable taking {"messages": [...]})
DEFAULT_RECURSION_LIMIT = 50
LIMIT_OUTPUT = "I wasn't able to finish this request."


def tools_for(case: Case) -> list[BaseTool]:
    """The case's tools as LangChain tools: the twin's JSON Schemas as their argument schemas."""

    def bound(name: str) -> Callable[..., str]:
        return lambda **arguments: case.call(name, arguments)

    return [
        StructuredTool.from_function(
            func=bound(tool.name), name=tool.name, description=tool.description, args_schema=tool.input_schema
        )
        for tool in case.tools
    ]


def runner(build: Build, *, recursion_limit: int = DEFAULT_RECURSION_LIMIT) -> Callable[[Case], Outcome]:
    def run(case: Case) -> Outcome:
        graph = build(tools_for(case))
        try:
            state = graph.invoke({"messages": case.messages}, config={"recursion_limit": recursion_limit})
        except GraphRecursionError:
            return Outcome(LIMIT_OUTPUT, "step_limit")
        answers = [m for m in state["messages"] if isinstance(m, AIMessage)]
        return Outcome(last_text(answers[-1].content) if answers else "")

    return run


_faces = Faces(runner)
server, serve, agent = _faces.server, _faces.serve, _faces.agent
