"""One call (or knowledge-base retrieval) as the twin recorded it: the evidence."""

from __future__ import annotations

from dataclasses import dataclass

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class TwinCallRecorded(Event):
    """Schema: schemas/avro/twin_call_recorded.avsc. Topic `twin-calls`, keyed by `case_id`."""

    SCHEMA = "dev.agenttwin.events.TwinCallRecorded"
    TOPIC = "twin-calls"
    KEY_FIELD = "case_id"

    case_id: str
    seq: int
    kind: str
    call_number: int
    tool: str
    arguments_json: str
    http_status: int
    status: str
    mutated: bool
    expects_mutation: bool
    replayed: bool
    redelivered: bool
    changes_json: str
    delay_ms: int
    retry: bool
    evaluation_id: str | None = None
    error_code: str | None = None
    response_json: str | None = None
    risk: str | None = None
    fault: str | None = None
    effect_key: str | None = None
    cross_tenant: str | None = None
    policy_violation: str | None = None
    idempotency_key: str | None = None
    query: str | None = None
    retrieval_limit: int | None = None
    documents_json: str | None = None
