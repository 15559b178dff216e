"""The AgentTwin Python SDK: instrument agent runs (OpenTelemetry spans carrying CLAIMS) and report
verified outcomes from the system of record (OutcomeVerified events carrying EVIDENCE).

The public entry point is `from agenttwin import sdk` (agenttwin/sdk.py); this module is its
implementation and stays importable as `producers.sdk`.

    from agenttwin import sdk
    sdk.configure(tracer_provider=sdk.tracer_provider(url, key, service_name="refund-agent"))
    with sdk.agent_run("refund-agent", "1.3.0", session_id=s) as run:
        with sdk.tool_call("refund_payment", {"order_id": "ORD-1"}, risk="WRITE_IRREVERSIBLE") as call:
            call.set_result("ok")
        sdk.claim_outcome("SUCCESS", "Refunded 40.00 USD")
    # later, in the system of record:
    reporter = sdk.OutcomeReporter(publisher, tenant="acme")  # the tenant whose traces it verifies
    reporter.report_outcome(run.trace_id, "FAILURE", True, "external_callback", {"refund_count": 2})
    # or, from any process, over HTTP, knowing only the order:
    sdk.http_reporter().report_outcome(None, "FAILURE", True, "external_callback", subject="order:ORD-1")

Module-level functions use one default AgentTwin (set by `configure`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Concatenate, ParamSpec, TypeVar

from opentelemetry.trace import TracerProvider

from producers.sdk.content import ContentPolicy
from producers.sdk.http_outcomes import HttpOutcomePublisher, http_reporter
from producers.sdk.outcome import VERIFICATION_SOURCES, normalize_source, normalize_status
from producers.sdk.reporter import OutcomeReporter, SdkStats
from producers.sdk.setup import SdkSettings, otlp_target, tracer_provider
from producers.sdk.tracing import AgentRun, AgentTwin, ModelTurn, ToolCall, current_trace_id

P = ParamSpec("P")
R = TypeVar("R")

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


def set_subject(subject: str) -> None:
    _default.set_subject(subject)


def _on_default(method: Callable[Concatenate[AgentTwin, P], R]) -> Callable[P, R]:
    """`method` called on the process's default AgentTwin (whichever `configure` last set), same signature."""

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        return method(_default, *args, **kwargs)

    signature = inspect.signature(method)  # help() and the docs show the call without `self`
    call.__signature__ = signature.replace(parameters=list(signature.parameters.values())[1:])  # type: ignore[attr-defined]
    return call


report_outcome = _on_default(AgentTwin.report_outcome)


def stats() -> SdkStats:
    return _default.stats()


__all__ = [
    "VERIFICATION_SOURCES",
    "AgentRun",
    "AgentTwin",
    "ContentPolicy",
    "HttpOutcomePublisher",
    "ModelTurn",
    "OutcomeReporter",
    "SdkSettings",
    "SdkStats",
    "ToolCall",
    "agent_run",
    "chat",
    "claim_outcome",
    "configure",
    "current_trace_id",
    "default",
    "http_reporter",
    "normalize_source",
    "normalize_status",
    "otlp_target",
    "report_outcome",
    "set_subject",
    "stats",
    "tool_call",
    "tracer_provider",
]
