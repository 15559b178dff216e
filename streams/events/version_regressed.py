"""A newer agent version's rate is higher than an older one's, by the version watch's sequential test."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class VersionRegressed(Event):
    """Schema: schemas/avro/version_regressed.avsc. Topic `version-alerts`, keyed by `watch_key`.

    One per (tenant, agent, baseline, candidate, metric): `alarm_id`. The counts are those when the e-value
    crossed `threshold`; `contradicted_traces` are the candidate's (newest last), for `agenttwin mine`."""

    SCHEMA = "dev.agenttwin.events.VersionRegressed"
    TOPIC = "version-alerts"
    KEY_FIELD = "watch_key"

    watch_key: str
    alarm_id: str
    agent: str
    baseline_version: str
    candidate_version: str
    metric: str
    baseline_traces: int
    baseline_events: int
    baseline_rate: float
    candidate_traces: int
    candidate_events: int
    candidate_rate: float
    e_value: float
    log_e_value: float
    threshold: float
    alpha: float
    policy: str
    detected_at: datetime
    detail: str
    contradicted_traces: list[str] = field(default_factory=list)
