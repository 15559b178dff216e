"""Any in-process agent, instrumented with the AgentTwin SDK as a team would instrument its own service.

`TracedAgent(agent, sdk)` runs the agent inside `sdk.agent_run(name, version)`, each tool call it makes inside
`sdk.tool_call` (its risk from the tool's spec, its attempt counted per tool and arguments, its result `ok` or
`error` as the tool answered), and the agent's own claim as `claim_outcome`: what a production trace of that
agent carries. Its final answer goes on the root span as output messages (recorded only as the SDK's content
policy allows). `subject_of(tool, arguments)` names the business subject a call acts on (`order:ORD-1001`),
so that a verification naming only the subject finds the trace.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from producers.agents.contract import Agent, AgentRequest, AgentResult, ToolClient
from producers.sdk.tracing import AgentRun, AgentTwin
from twin_engine.canonical import sha256_hex
from twin_engine.tool_api import ToolReply

JSON = Any
SubjectOf = Callable[[str, dict[str, JSON]], str | None]


class _TracedClient:
    """The agent's tool client, each call a `tool_call` span of the run."""

    def __init__(
        self, inner: ToolClient, sdk: AgentTwin, run: AgentRun, risks: dict[str, str], subject_of: SubjectOf | None
    ) -> None:
        self._inner, self._sdk, self._run, self._risks, self._subject_of = inner, sdk, run, risks, subject_of
        self._attempts: dict[tuple[str, str], int] = {}

    def call(self, tool: str, arguments: dict[str, JSON], headers: dict[str, str] | None = None) -> ToolReply:
        key = (tool, sha256_hex(arguments if arguments is not None else {}))
        self._attempts[key] = attempt = self._attempts.get(key, 0) + 1
        if self._subject_of is not None:
            subject = self._subject_of(tool, arguments)
            if subject:
                self._run.set_subject(subject)
        with self._sdk.tool_call(tool, arguments, risk=self._risks.get(tool), attempt=attempt) as call:
            reply = self._inner.call(tool, arguments, headers)
            call.set_result("ok" if reply.ok else "error", reply.body)
        return reply

    def search_kb(self, query: str, limit: int = 3) -> list[dict[str, JSON]]:
        return self._inner.search_kb(query, limit)


class TracedAgent:
    """Implements `Agent`: the wrapped agent's runs, traced through `sdk`. `last_trace_id`: the latest run's."""

    def __init__(self, agent: Agent, sdk: AgentTwin, *, name: str | None = None, subject_of: SubjectOf | None = None):
        self.agent = agent
        self.sdk = sdk
        self.name = name or agent.name
        self.version = agent.version
        self.model_kind = agent.model_kind
        self._subject_of = subject_of
        self.last_trace_id: str | None = None

    def run(self, request: AgentRequest) -> AgentResult:
        risks = {t.name: t.risk for t in request.tools}
        with self.sdk.agent_run(self.name, self.version, session_id=request.session_id) as run:
            self.last_trace_id = run.trace_id
            client = _TracedClient(request.client, self.sdk, run, risks, self._subject_of)
            result = self.agent.run(dataclasses.replace(request, client=client))
            if result.output is not None:
                run.set_output([{"role": "assistant", "parts": [{"type": "text", "content": result.output}]}])
            if result.claimed_outcome:
                run.claim_outcome(result.claimed_outcome, result.business_outcome)
            return result
