"""A person's override of one expectation result on one side (append-only)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class HumanReviewed(Event):
    """Schema: schemas/avro/human_reviewed.avsc. Topic `reviews`, keyed by `evaluation_id`."""

    SCHEMA = "dev.agenttwin.events.HumanReviewed"
    TOPIC = "reviews"
    KEY_FIELD = "evaluation_id"

    review_id: str
    evaluation_id: str
    scenario_name: str
    side: str
    expectation_id: str
    status: str
    note: str
    reviewer: str
    created_at: datetime
