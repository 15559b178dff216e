"""A simulated case ended: the twin's evidence and, kept apart, the agent's claims."""

from __future__ import annotations

from dataclasses import dataclass, field

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class CaseFinished(Event):
    """Schema: schemas/avro/case_finished.avsc. Topic `cases`, keyed by `case_id`."""

    SCHEMA = "dev.agenttwin.events.CaseFinished"
    TOPIC = "cases"
    KEY_FIELD = "case_id"

    case_id: str
    side: str
    trace_id: str
    scenario_name: str
    scenario_hash: str
    twin_name: str
    twin_hash: str
    case_seed: int
    agent: str
    agent_version: str
    severity: str
    tags: list[str]
    record_count: int
    input_message: str
    context_json: str
    expectations_json: str
    secrets: list[str]
    claimed_calls_json: str
    model_kind: str
    evaluation_id: str | None = None
    initial_state_json: str | None = None
    final_state_json: str | None = None
    state_hash: str | None = None
    output: str | None = None
    claimed_outcome: str | None = None
    business_outcome: str | None = None
    agent_status: str | None = None
    agent_steps: int | None = None
    tokens: int | None = None
    cost_usd: float | None = None
    agent_finding_label: str | None = None
    agent_finding_message: str | None = None
    latency_ms: float | None = None
    escalation_tools: list[str] = field(default_factory=list)
    claim_findings_json: str | None = None
    conversation_json: str | None = None  # a multi-turn case's turns; None for a single message
