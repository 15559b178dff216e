"""The AgentTwin Python SDK: instrument agent runs (OpenTelemetry spans carrying CLAIMS) and report
verified outcomes from the system of record (OutcomeVerified events carrying EVIDENCE).

    from producers import sdk
    sdk.configure(tracer_provider=sdk.tracer_provider(url, key, service_name="refund-agent"))
    with sdk.agent_run("refund-agent", "1.3.0", session_id=s) as run:
        with sdk.tool_call("refund_payment", {"order_id": "ORD-1"}, risk="WRITE_IRREVERSIBLE") as call:
            call.set_result("ok")
        sdk.claim_outcome("SUCCESS", "Refunded 40.00 USD")
    # later, in the system of record:
    reporter = sdk.OutcomeReporter(publisher, tenant="acme")  # the tenant whose traces it verifies
    reporter.report_outcome(run.trace_id, "FAILURE", True, "external_callback", {"refund_count": 2})

Module-level functions use one default AgentTwin (set by `configure`).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from opentelemetry.trace import TracerProvider

from producers.sdk.content import ContentPolicy
from producers.sdk.outcome import VERIFICATION_SOURCES, Evidence, normalize_source, normalize_status
from producers.sdk.reporter import OutcomeReporter, SdkStats
from producers.sdk.setup import SdkSettings, tracer_provider
from producers.sdk.tracing import AgentRun, AgentTwin, ModelTurn, ToolCall

_default = AgentTwin()


def configure(
    *,
    tracer_provider: TracerProvider | None = None,
    content: ContentPolicy | None = None,
    environment: str | None = None,
    source: str = "production",
    reporter: OutcomeReporter | None = None,
) -> AgentTwin:
    """Replace the default AgentTwin the module-level functions use."""
    global _default
    _default = AgentTwin(
        tracer_provider=tracer_provider,
        content=content,
        environment=environment,
        source=source,
        reporter=reporter,
    )
    return _default


def default() -> AgentTwin:
    return _default


def agent_run(name: str, version: str, **options: Any) -> AbstractContextManager[AgentRun]:
    return _default.agent_run(name, version, **options)


def tool_call(name: str, args: Any = None, **options: Any) -> AbstractContextManager[ToolCall]:
    return _default.tool_call(name, args, **options)


def chat(model: str, *, provider: str | None = None) -> AbstractContextManager[ModelTurn]:
    return _default.chat(model, provider=provider)


def claim_outcome(status: str, business_outcome: str | None = None) -> None:
    _default.claim_outcome(status, business_outcome)


def report_outcome(
    trace_id: str,
    status: str,
    verified: bool,
    source: str,
    evidence: Evidence = None,
    *,
    business_outcome: str | None = None,
    claimed_status: str | None = None,
    agent: str | None = None,
    agent_version: str | None = None,
    at: datetime | None = None,
) -> bool:
    return _default.report_outcome(
        trace_id,
        status,
        verified,
        source,
        evidence,
        business_outcome=business_outcome,
        claimed_status=claimed_status,
        agent=agent,
        agent_version=agent_version,
        at=at,
    )


def stats() -> SdkStats:
    return _default.stats()


__all__ = [
    "VERIFICATION_SOURCES",
    "AgentRun",
    "AgentTwin",
    "ContentPolicy",
    "ModelTurn",
    "OutcomeReporter",
    "SdkSettings",
    "SdkStats",
    "ToolCall",
    "agent_run",
    "chat",
    "claim_outcome",
    "configure",
    "default",
    "normalize_source",
    "normalize_status",
    "report_outcome",
    "stats",
    "tool_call",
    "tracer_provider",
]
