"""What one production trace counts for in its version's rates (the version watch's first stage)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class TraceTallied(Event):
    """Schema: schemas/avro/trace_tallied.avsc. Topic `version-traces`, keyed by `watch_key` (tenant and agent),
    so one agent's traces meet in one partition; a higher revision of a trace supersedes."""

    SCHEMA = "dev.agenttwin.events.TraceTallied"
    TOPIC = "version-traces"
    KEY_FIELD = "watch_key"

    watch_key: str
    trace_id: str
    revision: int
    agent: str
    agent_version: str
    window_start: datetime
    claimed_status: str
    contradicted: bool
    verified_failure: bool
    tool_errors: int
    escalated: bool
    verified_status: str | None = None
    alert_id: str | None = None
