"""The Anthropic SDK (`pip install "agenttwin[anthropic]"`): evaluation (`serve`, `server`, `agent`) and production
(`anthropic_run`) in one place."""

from agenttwin.integrations.anthropic.evaluation import agent, runner, serve, server, tools_for
from agenttwin.integrations.anthropic.production import AnthropicRun, anthropic_run

__all__ = ["AnthropicRun", "agent", "anthropic_run", "runner", "serve", "server", "tools_for"]
