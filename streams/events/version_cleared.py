"""A newer agent version cleared against an older one, or an open version alarm closed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class VersionCleared(Event):
    """Schema: schemas/avro/version_cleared.avsc. Topic `version-alerts`, keyed by `watch_key`.

    `reason` "no-regression": the candidate reached the policy's clearAfterTraces with no alarm (metric None).
    `reason` "replaced": the alarm `alarm_id` closed because `replaced_by`, a newer version, cleared against
    the same baseline."""

    SCHEMA = "dev.agenttwin.events.VersionCleared"
    TOPIC = "version-alerts"
    KEY_FIELD = "watch_key"

    watch_key: str
    agent: str
    baseline_version: str
    candidate_version: str
    reason: str
    baseline_traces: int
    candidate_traces: int
    policy: str
    cleared_at: datetime
    detail: str
    alarm_id: str | None = None
    metric: str | None = None
    replaced_by: str | None = None
