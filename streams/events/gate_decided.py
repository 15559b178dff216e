"""A release gate's decision on one evaluation: PASS, WARN or BLOCK, its reasons and the policy it applied."""

from __future__ import annotations

from dataclasses import dataclass

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class GateDecided(Event):
    """Schema: schemas/avro/gate_decided.avsc. Topic `gate-decisions`, keyed by `evaluation_id`."""

    SCHEMA = "dev.agenttwin.events.GateDecided"
    TOPIC = "gate-decisions"
    KEY_FIELD = "evaluation_id"

    evaluation_id: str
    evaluator_version: str
    baseline_agent: str
    candidate_agent: str
    decision: str
    summary: str
    blocking: int
    warnings: int
    cases: int
    reasons_json: str
    policy_name: str
    policy_hash: str
    policy_json: str
    inputs_hash: str
