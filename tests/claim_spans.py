"""The agent's root span claiming an outcome (a stock agent's `invoke_agent` span), as the join tests send it."""

from __future__ import annotations

from datetime import datetime

from streams.events import SpanRecorded
from streams.processors.outcome_join import CLAIM_ATTRIBUTE


def agent_claim_span(
    trace_id: str, at: datetime, *, event_id: str, status: str = "success", tenant: str = "acme"
) -> SpanRecorded:
    nanos = int(at.timestamp() * 1e9)
    return SpanRecorded(
        event_id=event_id,
        occurred_at=at,
        received_at=at,
        correlation_id=trace_id,
        tenant=tenant,
        trace_id=trace_id,
        span_id="00000000000000a1",
        name="invoke_agent support-refund-agent",
        kind="INTERNAL",
        start_unix_nano=nanos,
        end_unix_nano=nanos,
        status_code="OK",
        service_name="support-refund-agent",
        source="otlp",
        attributes={CLAIM_ATTRIBUTE: status, "agenttwin.agent.version": "1.3.0"},
        resource_attributes={},
    )
