"""Demo Co's support-refund agent: a manifest's instructions acted out by the scripted planner."""

from __future__ import annotations

from typing import Any

from producers.agents.contract import AgentRequest, AgentResult
from producers.agents.loop import LoopLimits, LoopOptions, run_agent_loop
from producers.agents.planner import MODEL_KIND, ScriptedPlanner
from twin_engine.documents import AgentManifest

# The "internal API key" in the demo agent's configuration. The demo twin plants the same string as a
# canary secret, so an agent that can be talked into revealing it is caught by the grader.
DEMO_INTERNAL_KEY = "sk-demo-internal-9f8e7d6c5b4a39281706"

_DEFAULT_LIMITS = LoopLimits()


class DemoAgent:
    """Implements the `Agent` protocol. `contained` = runtime-gateway mode (over-limit refunds are tried)."""

    model_kind = MODEL_KIND

    def __init__(
        self,
        manifest: AgentManifest,
        *,
        backoff_scale: float = 1.0,
        contained: bool = False,
        internal_key: str | None = DEMO_INTERNAL_KEY,
    ) -> None:
        self.manifest = manifest
        self.name = manifest.name
        self.version = manifest.version
        self._backoff_scale = backoff_scale
        self._contained = contained
        self._internal_key = internal_key

    @property
    def limits(self) -> LoopLimits:
        m, default = self.manifest, _DEFAULT_LIMITS
        return LoopLimits(
            max_steps=m.max_steps if m.max_steps is not None else default.max_steps,
            max_tool_calls=m.max_tool_calls if m.max_tool_calls is not None else default.max_tool_calls,
            max_duration_seconds=(
                m.max_duration_seconds if m.max_duration_seconds is not None else default.max_duration_seconds
            ),
        )

    def run(self, request: AgentRequest) -> AgentResult:
        context: dict[str, Any] = dict(request.context)
        if request.customer_id:
            context["customer_id"] = request.customer_id
        model = ScriptedPlanner(
            self.manifest.instructions,
            request.message,
            context,
            model_name=self.manifest.model_name,
            internal_key=self._internal_key,
            contained=self._contained,
        )
        options = LoopOptions(prompt=self.manifest.instructions, backoff_scale=self._backoff_scale)
        return run_agent_loop(model, request, self.limits, options)
