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
class ClaimFinding:
    """A field of the agent's reply that could not be read as claimed (producers/agents/claims.py).

    A finding about the claim, never about the run: the case is graded on the twin's records as usual.
    """

    field: str  # e.g. `tool_calls[1].status`
    message: str
    label: str = "CLAIM_MALFORMED"

    def to_dict(self) -> dict[str, str]:
        return {"label": self.label, "field": self.field, "message": self.message}


@dataclass(frozen=True)
class TurnRecord:
    """One turn of a conversation: the user's message, the agent's answer (a claim), and which twin records
    it made — those with `first_seq < seq <= last_seq`."""

    turn: int  # 1-based
    user: str
    output: str | None
    claimed_outcome: str | None
    business_outcome: str | None
    agent_status: str | None
    first_seq: int
    last_seq: int
    user_kind: str = "scripted"  # who wrote the user's message: scripted (the scenario) | llm

    def to_dict(self) -> dict[str, JSON]:
        return {
            "turn": self.turn,
            "user": self.user,
            "output": self.output,
            "claimed_outcome": self.claimed_outcome,
            "business_outcome": self.business_outcome,
            "agent_status": self.agent_status,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "user_kind": self.user_kind,
        }

    @classmethod
    def from_dict(cls, data: dict[str, JSON]) -> TurnRecord:
        return cls(
            turn=int(data["turn"]),
            user=str(data["user"]),
            output=data.get("output"),
            claimed_outcome=data.get("claimed_outcome"),
            business_outcome=data.get("business_outcome"),
            agent_status=data.get("agent_status"),
            first_seq=int(data["first_seq"]),
            last_seq=int(data["last_seq"]),
            user_kind=str(data.get("user_kind") or "scripted"),
        )

    def holds(self, seq: int) -> bool:
        return self.first_seq < seq <= self.last_seq


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
    # fields of the agent's reply that could not be read as claimed (CLAIM_MALFORMED): about the claim only
    claim_findings: tuple[ClaimFinding, ...] = ()
    # simulated latency: recorded fault delays + the agent's accounted backoff (deterministic)
    latency_ms: float | None = None
    # wall-clock measurements: the only fields allowed to differ between identical runs
    timings: dict[str, JSON] = field(default_factory=dict)
    # the tools that hand the case to a person, as the scenario or the twin declares them (() = none declared)
    escalation_tools: tuple[str, ...] = ()
    # a multi-turn case's turns, in order (empty for a single-message case); the fields above sum them up
    turns: tuple[TurnRecord, ...] = ()

    @property
    def agent_ran(self) -> bool:
        return self.agent_status is not None

    def turn_of(self, seq: int | None) -> int | None:
        """The turn a twin record (by seq) belongs to; None for a single-message case."""
        if seq is None:
            return None
        return next((t.turn for t in self.turns if t.holds(seq)), None)


def case_run_to_dict(case: CaseRun) -> dict[str, JSON]:
    """Plain JSON of a case (evidence and claims); `timings` is the only wall-clock field.

    `turns` appears only for a multi-turn case, so a single-message case's JSON is what it always was.
    """
    out: dict[str, JSON] = {
        "case_id": case.case_id,
        "scenario": case.scenario_name,
        "scenario_hash": case.scenario_hash,
        "twin": case.twin_name,
        "twin_hash": case.twin_hash,
        "case_seed": case.case_seed,
        "agent": case.agent,
        "agent_version": case.agent_version,
        "severity": case.severity,
        "tags": list(case.tags),
        "input_message": case.input_message,
        "context": case.context,
        "tenant": case.tenant,
        "expectations": [dict(e) for e in case.expectations],
        "secrets": list(case.secrets),
        "records": [r.to_dict() for r in case.records],
        "retrievals": [r.to_dict() for r in case.retrievals],
        "initial_state": case.initial_state,
        "final_state": case.final_state,
        "state_hash": case.state_hash,
        "reply": case.output,
        "claimed_outcome": case.claimed_outcome,
        "business_outcome": case.business_outcome,
        "agent_status": case.agent_status,
        "agent_steps": case.agent_steps,
        "claimed_calls": [dict(c) for c in case.claimed_calls],
        "tokens": case.tokens,
        "cost_usd": case.cost_usd,
        "model_kind": case.model_kind,
        "agent_finding": (
            {"label": case.agent_finding.label, "message": case.agent_finding.message}
            if case.agent_finding
            else None
        ),
        "latency_ms": case.latency_ms,
        "timings": dict(case.timings),
        "escalation_tools": list(case.escalation_tools),
    }
    if case.claim_findings:  # only then: a sound case's document keeps its bytes
        out["claim_findings"] = [n.to_dict() for n in case.claim_findings]
    if case.turns:
        out["turns"] = [t.to_dict() for t in case.turns]
    return out


def case_run_from_dict(data: dict[str, JSON]) -> CaseRun:
    finding = data.get("agent_finding")
    return CaseRun(
        case_id=data["case_id"],
        scenario_name=data["scenario"],
        scenario_hash=data["scenario_hash"],
        twin_name=data["twin"],
        twin_hash=data["twin_hash"],
        case_seed=int(data["case_seed"]),
        agent=data["agent"],
        agent_version=data["agent_version"],
        severity=data["severity"],
        tags=tuple(data.get("tags") or ()),
        input_message=data["input_message"],
        context=dict(data.get("context") or {}),
        tenant=data.get("tenant"),
        expectations=tuple(dict(e) for e in data.get("expectations") or ()),
        secrets=tuple(data.get("secrets") or ()),
        records=tuple(CallRecord.from_dict(r) for r in data.get("records") or ()),
        retrievals=tuple(RetrievalRecord.from_dict(r) for r in data.get("retrievals") or ()),
        initial_state=data.get("initial_state"),
        final_state=data.get("final_state"),
        state_hash=data.get("state_hash"),
        output=data.get("reply"),
        claimed_outcome=data.get("claimed_outcome"),
        business_outcome=data.get("business_outcome"),
        agent_status=data.get("agent_status"),
        agent_steps=data.get("agent_steps"),
        claimed_calls=tuple(dict(c) for c in data.get("claimed_calls") or ()),
        tokens=data.get("tokens"),
        cost_usd=data.get("cost_usd"),
        model_kind=data.get("model_kind") or "deterministic-fake",
        agent_finding=AgentFinding(finding["label"], finding["message"]) if finding else None,
        latency_ms=data.get("latency_ms"),
        timings=dict(data.get("timings") or {}),
        escalation_tools=tuple(data.get("escalation_tools") or ()),
        claim_findings=claim_notes(data.get("claim_findings")),
        turns=tuple(TurnRecord.from_dict(t) for t in data.get("turns") or ()),
    )


def claim_notes(data: JSON) -> tuple[ClaimFinding, ...]:
    return tuple(ClaimFinding(str(n["field"]), str(n["message"]), str(n["label"])) for n in data or ())
