"""LangGraph / LangChain (`pip install "agenttwin[langgraph]"`): evaluation (`serve`, `server`, `agent`) and production
(`langgraph_run`) in one place."""

from agenttwin.integrations.langgraph.evaluation import agent, runner, serve, server, tools_for
from agenttwin.integrations.langgraph.production import (
    AgentTwinCallbackHandler,
    LangGraphRun,
    final_answer,
    langgraph_run,
)

__all__ = [
    "AgentTwinCallbackHandler",
    "LangGraphRun",
    "agent",
    "final_answer",
    "langgraph_run",
    "runner",
    "serve",
    "server",
    "tools_for",
]
