"""A trace acted on a business subject: keyed by the subject, so a verification naming only it finds the trace."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class SubjectLinked(Event):
    """Schema: schemas/avro/subject_linked.avsc. Topic `subjects`, keyed by `subject`."""

    SCHEMA = "dev.agenttwin.events.SubjectLinked"
    TOPIC = "subjects"
    KEY_FIELD = "subject"

    subject: str
    trace_id: str
    tool: str | None = None
    received_at: datetime | None = None

    @property
    def received_time(self) -> datetime:
        return self.received_at or self.occurred_at
