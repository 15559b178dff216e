"""What verification found about a trace's outcome, apart from what was claimed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class OutcomeVerified(Event):
    """Schema: schemas/avro/outcome_verified.avsc. Topic `verified-outcomes`, keyed by `trace_id`."""

    SCHEMA = "dev.agenttwin.events.OutcomeVerified"
    TOPIC = "verified-outcomes"
    KEY_FIELD = "trace_id"

    trace_id: str
    evaluator_version: str
    status: str
    verified: bool
    source: str
    reason: str
    case_id: str | None = None
    evaluation_id: str | None = None
    claimed_status: str | None = None
    business_outcome: str | None = None
    agent: str | None = None
    agent_version: str | None = None
    received_at: datetime | None = None  # stamped on arrival (streams/clock.py); None in events written before it
    clock_skew: str | None = None  # "future" | "too_old": occurred_at is not to be trusted
    subject: str | None = None  # set when a verification by subject was matched to this trace (SubjectJoin)

    @property
    def received_time(self) -> datetime:
        return self.received_at or self.occurred_at
