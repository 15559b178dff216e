"""The pinned pair: one planning step resolved the selection once for both sides."""

from __future__ import annotations

from dataclasses import dataclass

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class PairPlanned(Event):
    """Schema: schemas/avro/pair_planned.avsc. Topic `evaluations`, keyed by `evaluation_id`."""

    SCHEMA = "dev.agenttwin.events.PairPlanned"
    TOPIC = "evaluations"
    KEY_FIELD = "evaluation_id"

    evaluation_id: str
    pair_id: str
    run_seed: int
    baseline_agent: str
    candidate_agent: str
    twin_name: str
    twin_hash: str
    scenario_names: list[str]
    scenario_hashes: list[str]
    case_count: int
    evaluator_version: str
    trials: int = 1
