"""A case's verdict under one evaluator version, with what the comparator needs."""

from __future__ import annotations

from dataclasses import dataclass

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class CaseVerdicted(Event):
    """Schema: schemas/avro/case_verdicted.avsc. Topic `verdicts`, keyed by `evaluation_id`."""

    SCHEMA = "dev.agenttwin.events.CaseVerdicted"
    TOPIC = "verdicts"
    KEY_FIELD = "evaluation_id"

    evaluation_id: str
    case_id: str
    side: str
    scenario_name: str
    evaluator_version: str
    status: str
    reason: str
    passed: int
    failed: int
    errored: int
    skipped: int
    critical_failures: int
    labels: list[str]
    case_seed: int
    scenario_hash: str
    agent: str
    agent_version: str
    graded_json: str
    score: float | None = None
