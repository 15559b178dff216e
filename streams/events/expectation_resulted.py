"""One expectation graded on one case by one evaluator version."""

from __future__ import annotations

from dataclasses import dataclass

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class ExpectationResulted(Event):
    """Schema: schemas/avro/expectation_resulted.avsc. Topic `expectation-results`, keyed by `case_id`."""

    SCHEMA = "dev.agenttwin.events.ExpectationResulted"
    TOPIC = "expectation-results"
    KEY_FIELD = "case_id"

    case_id: str
    side: str
    scenario_name: str
    evaluator_version: str
    expectation_id: str
    expectation_type: str
    critical: bool
    status: str
    reason: str
    evaluator: str
    evaluator_impl_version: str
    evidence_json: str
    details_json: str
    evaluation_id: str | None = None
    score: float | None = None
    label: str | None = None
