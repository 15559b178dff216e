"""The outcome join's reading of a production trace: agent, tools, final answer and claim (stated or inferred)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class ClaimRead(Event):
    """Schema: schemas/avro/claim_read.avsc. Topic `claims`, keyed by `trace_id`; a higher revision supersedes."""

    SCHEMA = "dev.agenttwin.events.ClaimRead"
    TOPIC = "claims"
    KEY_FIELD = "trace_id"

    trace_id: str
    revision: int
    tools: list[str] = field(default_factory=list)
    failed_tools: list[str] = field(default_factory=list)
    subjects: list[str] = field(default_factory=list)
    agent: str | None = None
    agent_version: str | None = None
    write_tool: str | None = None
    final_answer: str | None = None
    claimed_status: str | None = None
    claim_inferred_by: str | None = None
    claim_rule: str | None = None
    received_at: datetime | None = None
    claim_confidence: float | None = None  # the confidence of the rule that read an inferred claim

    @property
    def received_time(self) -> datetime:
        return self.received_at or self.occurred_at
