"""A finished simulation case: the plain record the grader and the comparator read.

It carries the evidence (twin records, initial and final state) and, separately, the agent's claims
(reply, claimed outcome, its own list of calls). Only the evidence decides verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from twin_engine.records import CallRecord, RetrievalRecord

JSON = Any


@dataclass(frozen=True)
class AgentFinding:
    """Why the agent run itself did not produce a usable answer (spec §7.2 run findings)."""

    label: str  # AGENT_TIMEOUT | AGENT_UNREACHABLE | AGENT_ERROR | ...
    message: str


@dataclass(frozen=True)
class CaseRun:
    # identity and pinning
    case_id: str
    scenario_name: str
    scenario_hash: str
    twin_name: str
    twin_hash: str
    case_seed: int
    agent: str  # the agent spec string, e.g. "demo:1.3.0"
    agent_version: str
    # scenario material the grader needs
    severity: str
    tags: tuple[str, ...]
    input_message: str
    context: dict[str, JSON]
    tenant: str | None
    expectations: tuple[dict[str, JSON], ...]
    secrets: tuple[str, ...]
    # evidence
    records: tuple[CallRecord, ...]
    retrievals: tuple[RetrievalRecord, ...]
    initial_state: dict[str, JSON] | None
    final_state: dict[str, JSON] | None
    state_hash: str | None
    # claims (never graded as evidence)
    output: str | None = None
    claimed_outcome: str | None = None
    business_outcome: str | None = None
    agent_status: str | None = None
    agent_steps: int | None = None
    claimed_calls: tuple[dict[str, JSON], ...] = ()
    tokens: int | None = None
    cost_usd: float | None = None
    model_kind: str = "deterministic-fake"
    agent_finding: AgentFinding | None = None
    # simulated latency: recorded fault delays + the agent's accounted backoff (deterministic)
    latency_ms: float | None = None
    # wall-clock measurements: the only fields allowed to differ between identical runs
    timings: dict[str, JSON] = field(default_factory=dict)

    @property
    def agent_ran(self) -> bool:
        return self.agent_status is not None
