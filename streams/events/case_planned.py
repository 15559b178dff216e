"""One side's case of a pinned pair, ready to simulate."""

from __future__ import annotations

from dataclasses import dataclass

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class CasePlanned(Event):
    """Schema: schemas/avro/case_planned.avsc. Topic `case-plans`, keyed by `case_id`."""

    SCHEMA = "dev.agenttwin.events.CasePlanned"
    TOPIC = "case-plans"
    KEY_FIELD = "case_id"

    case_id: str
    evaluation_id: str
    pair_id: str
    side: str
    agent: str
    scenario_name: str
    scenario_hash: str
    scenario_json: str
    twin_name: str
    twin_hash: str
    twin_json: str
    case_seed: int
    run_seed: int
