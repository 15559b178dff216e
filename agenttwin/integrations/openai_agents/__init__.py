"""The OpenAI Agents SDK (`pip install "agenttwin[openai-agents]"`): evaluation (`serve`, `server`,
`agent`) and production (`instrument`, `openai_agents_run`, `run_hooks`) in one place."""

from agenttwin.integrations.openai_agents.evaluation import agent, runner, serve, server, tools_for
from agenttwin.integrations.openai_agents.production import (
    AgentTwinTracingProcessor,
    OpenAIAgentsRun,
    instrument,
    openai_agents_run,
    run_hooks,
    tool_output,
)

__all__ = [
    "AgentTwinTracingProcessor",
    "OpenAIAgentsRun",
    "agent",
    "instrument",
    "openai_agents_run",
    "run_hooks",
    "runner",
    "serve",
    "server",
    "tool_output",
    "tools_for",
]
