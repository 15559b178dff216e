"""A claimed success that verification disproved, or a one-sided entry past the horizon."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class ContradictionDetected(Event):
    """Schema: schemas/avro/contradiction_detected.avsc. Topic `contradictions`, keyed by `trace_id`."""

    SCHEMA = "dev.agenttwin.events.ContradictionDetected"
    TOPIC = "contradictions"
    KEY_FIELD = "trace_id"

    alert_id: str
    kind: str
    trace_id: str
    verified: bool
    evaluator_version: str
    rule: str
    detected_at: datetime
    detail: str
    case_id: str | None = None
    evaluation_id: str | None = None
    scenario_name: str | None = None
    agent: str | None = None
    agent_version: str | None = None
    tool: str | None = None
    claimed_status: str | None = None
    verified_status: str | None = None
    source: str | None = None
    subject: str | None = None  # the business subject (e.g. order:ORD-1001) the trace acted on
    claim_inferred_by: str | None = None  # None: the agent stated its claim; else the classifier that read it
    claim_rule: str | None = None  # the rule that read an inferred claim ("abstained:<rule>" below the threshold)
    claim_confidence: float | None = None  # that rule's confidence (evaluation/claim_reader.py)
