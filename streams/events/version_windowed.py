"""One agent version's counts in one one-minute window of production traffic."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class VersionWindowed(Event):
    """Schema: schemas/avro/version_windowed.avsc. Topic `version-windows`, keyed by `watch_key`; a higher
    revision of a (tenant, agent, version, window) supersedes. Counts follow evaluation/version_watch.py."""

    SCHEMA = "dev.agenttwin.events.VersionWindowed"
    TOPIC = "version-windows"
    KEY_FIELD = "watch_key"

    watch_key: str
    agent: str
    agent_version: str
    window_start: datetime
    revision: int
    traces: int = 0
    claimed_success: int = 0
    claimed_failure: int = 0
    claimed_partial: int = 0
    claimed_escalated: int = 0
    claimed_refused: int = 0
    claimed_unknown: int = 0
    verified_traces: int = 0
    verified_success: int = 0
    verified_partial: int = 0
    verified_failure: int = 0
    verified_unknown: int = 0
    contradictions: int = 0
    verified_failures: int = 0
    tool_errors: int = 0
    escalations: int = 0
