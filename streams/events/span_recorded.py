"""An OpenTelemetry span (GenAI semantic conventions, agenttwin.* outcome attributes)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class SpanRecorded(Event):
    """Schema: schemas/avro/span_recorded.avsc. Topic `spans`, keyed by `trace_id`."""

    SCHEMA = "dev.agenttwin.events.SpanRecorded"
    TOPIC = "spans"
    KEY_FIELD = "trace_id"

    trace_id: str
    span_id: str
    name: str
    kind: str
    start_unix_nano: int
    end_unix_nano: int
    status_code: str
    service_name: str
    source: str
    attributes: dict[str, str]
    resource_attributes: dict[str, str]
    parent_span_id: str | None = None
    status_message: str | None = None
    received_at: datetime | None = None  # stamped on arrival (streams/clock.py); None in events written before it
    clock_skew: str | None = None  # "future" | "too_old": occurred_at is not to be trusted
    # What the span says, read at ingest by streams/span_reading.py (null on simulated spans and old events)
    span_role: str | None = None
    tool_name: str | None = None
    tool_error: str | None = None
    agent_name: str | None = None
    agent_version: str | None = None

    @property
    def received_time(self) -> datetime:
        return self.received_at or self.occurred_at
