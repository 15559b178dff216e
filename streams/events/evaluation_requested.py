"""An evaluation of a candidate against a baseline was requested."""

from __future__ import annotations

from dataclasses import dataclass

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class EvaluationRequested(Event):
    """Schema: schemas/avro/evaluation_requested.avsc. Topic `evaluations`, keyed by `evaluation_id`."""

    SCHEMA = "dev.agenttwin.events.EvaluationRequested"
    TOPIC = "evaluations"
    KEY_FIELD = "evaluation_id"

    evaluation_id: str
    baseline_agent: str
    candidate_agent: str
    evaluator_version: str
    twin_json: str
    scenarios_json: str
    seed: int | None = None
    trials: int = 1
