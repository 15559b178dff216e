"""One scenario of a pinned pair compared: classification, first divergence, metrics."""

from __future__ import annotations

from dataclasses import dataclass

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class ComparisonMade(Event):
    """Schema: schemas/avro/comparison_made.avsc. Topic `comparisons`, keyed by `evaluation_id`."""

    SCHEMA = "dev.agenttwin.events.ComparisonMade"
    TOPIC = "comparisons"
    KEY_FIELD = "evaluation_id"

    evaluation_id: str
    scenario_name: str
    evaluator_version: str
    classification: str
    reason: str
    baseline_agent: str
    candidate_agent: str
    baseline_case_id: str
    candidate_case_id: str
    baseline_status: str
    candidate_status: str
    severity: str
    tags: list[str]
    metrics_json: str
    document_json: str
    divergence_index: int | None = None
    divergence_kind: str | None = None
    divergence_summary: str | None = None
    divergence_impact: str | None = None
