"""What a system of record verified about a business subject (e.g. order:ORD-1001), not knowing the trace."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class SubjectVerified(Event):
    """Schema: schemas/avro/subject_verified.avsc. Topic `subjects`, keyed by `subject`."""

    SCHEMA = "dev.agenttwin.events.SubjectVerified"
    TOPIC = "subjects"
    KEY_FIELD = "subject"

    subject: str
    evaluator_version: str
    status: str
    verified: bool
    source: str
    reason: str
    business_outcome: str | None = None
    received_at: datetime | None = None
    clock_skew: str | None = None

    @property
    def received_time(self) -> datetime:
        return self.received_at or self.occurred_at
