"""A stored evaluation read back from the ClickHouse projections: what the gate and the reports show.

The same queries run on chDB and a ClickHouse server, so `agenttwin gate` and `agenttwin report` work the
same on both runtimes. Comparisons are read with FINAL: after a human review the re-compared case
replaced the first one, so a gate decided again sees the reviewed classification.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from consumers.clickhouse import Warehouse, qualified
from consumers.clickhouse import sql_literal as lit
from evaluation.claim_status import describe_inference
from evaluation.codec import graded_from_dict
from evaluation.gate import GateContradiction
from evaluation.redaction import SecretMask
from evaluation.results import GradedCase
from streams.ids import PINNED_NOW

JSON = Any


class NotStoredError(LookupError):
    """No comparison of that evaluation (under that evaluator version) is in the projections."""


@dataclass(frozen=True)
class StoredContradiction:
    scenario: str
    side: str  # BASELINE | CANDIDATE ("" when the case is not in the projections)
    agent: str
    claimed: str
    verified: str
    detail: str
    case_id: str
    reply: str | None
    tool: str | None
    trace_id: str
    claim_inferred_by: str | None = None  # None: the agent stated its claim; else the classifier that read it
    claim_rule: str | None = None
    claim_confidence: float | None = None

    @property
    def claimed_as(self) -> str:
        """The claim, and how it was read when the agent did not state it: "SUCCESS (inferred by rules-v2, …)"."""
        if not self.claim_inferred_by:
            return self.claimed
        return f"{self.claimed} ({describe_inference(self.claim_inferred_by, self.claim_rule, self.claim_confidence)})"

    def for_gate(self) -> GateContradiction:
        return GateContradiction(self.scenario, self.agent, self.claimed, self.verified, self.detail, self.case_id)

    def to_dict(self) -> dict[str, JSON]:
        return {
            "scenario": self.scenario,
            "side": self.side,
            "agent": self.agent,
            "claimed": self.claimed,
            "verified": self.verified,
            "detail": self.detail,
            "case_id": self.case_id,
            "reply": self.reply,
            "tool": self.tool,
            "claim_inferred_by": self.claim_inferred_by,
            "claim_rule": self.claim_rule,
            "claim_confidence": self.claim_confidence,
            "trace_id": self.trace_id,
        }


@dataclass(frozen=True)
class StoredEvaluation:
    evaluation_id: str
    evaluator_version: str
    baseline_agent: str
    candidate_agent: str
    run_seed: int | None
    trials: int
    case_docs: tuple[dict[str, JSON], ...]  # CaseComparison.to_dict() per scenario, as the comparator stored it
    contradictions: tuple[StoredContradiction, ...]
    latest_at: datetime  # the latest input's event time: a decision over these facts happened then
    graded: dict[str, GradedCase] = field(default_factory=dict)  # by case id (only when asked for)

    @property
    def candidate_contradictions(self) -> tuple[StoredContradiction, ...]:
        return tuple(k for k in self.contradictions if k.side == "CANDIDATE")


def load_stored(
    warehouse: Warehouse, evaluation_id: str, evaluator_version: str, *, with_cases: bool = False
) -> StoredEvaluation:
    where = f"evaluation_id = {lit(evaluation_id)} AND evaluator_version = {lit(evaluator_version)}"
    comparisons = warehouse.query(
        "SELECT scenario_name, baseline_agent, candidate_agent, occurred_at, document_json "
        f"FROM {qualified(warehouse, 'comparisons')} FINAL WHERE {where} ORDER BY scenario_name"
    ).rows
    if not comparisons:
        raise NotStoredError(
            f"no stored comparison of evaluation {evaluation_id!r} under evaluator {evaluator_version} "
            "(run `agenttwin evaluate` first, with the same --data-dir)"
        )
    pair = warehouse.query(
        f"SELECT run_seed, * FROM {qualified(warehouse, 'pairs')} FINAL WHERE evaluation_id = {lit(evaluation_id)} "
        "LIMIT 1"
    ).as_dicts()
    rows = warehouse.query(
        "SELECT k.scenario_name, c.side, k.agent, k.claimed_status, k.verified_status, k.detail, k.case_id, "
        "c.output, k.tool, k.trace_id, k.occurred_at, c.secrets, k.claim_inferred_by, k.claim_rule, k.claim_confidence "
        f"FROM {qualified(warehouse, 'contradictions')} AS k "
        f"FINAL LEFT JOIN {qualified(warehouse, 'cases')} AS c FINAL ON c.case_id = k.case_id "
        f"WHERE k.kind = 'contradiction' AND k.evaluation_id = {lit(evaluation_id)} "
        f"AND k.evaluator_version = {lit(evaluator_version)} ORDER BY k.scenario_name, k.case_id"
    ).rows
    contradictions = tuple(
        StoredContradiction(
            scenario=str(r[0] or ""),
            side=str(r[1] or ""),
            agent=str(r[2] or ""),
            claimed=str(r[3] or ""),
            verified=str(r[4] or ""),
            detail=str(r[5]),
            case_id=str(r[6] or ""),
            reply=SecretMask(r[11] or ()).text(r[7]) if r[7] else r[7],  # the raw reply, shown masked
            tool=r[8],
            trace_id=str(r[9]),
            claim_inferred_by=r[12],
            claim_rule=r[13],
            claim_confidence=float(r[14]) if r[14] is not None else None,
        )
        for r in rows
    )
    times = [r[3] for r in comparisons] + [r[10] for r in rows]
    graded: dict[str, GradedCase] = {}
    if with_cases:
        for case_id, graded_json in warehouse.query(
            f"SELECT case_id, graded_json FROM {qualified(warehouse, 'verdicts')} FINAL WHERE {where} ORDER BY case_id"
        ).rows:
            graded[str(case_id)] = graded_from_dict(json.loads(graded_json))
    first = comparisons[0]
    trials = pair[0].get("trials", 1) if pair else 1
    return StoredEvaluation(
        evaluation_id=evaluation_id,
        evaluator_version=evaluator_version,
        baseline_agent=str(first[1]),
        candidate_agent=str(first[2]),
        run_seed=int(pair[0]["run_seed"]) if pair else None,
        trials=int(trials or 1),
        case_docs=tuple(json.loads(r[4]) for r in comparisons),
        contradictions=contradictions,
        latest_at=max([t for t in times if isinstance(t, datetime)], default=PINNED_NOW),
        graded=graded,
    )


def latest_gate_decision(warehouse: Warehouse, evaluation_id: str, evaluator_version: str) -> dict[str, JSON] | None:
    rows = warehouse.query(
        "SELECT decision, summary, reasons_json, policy_name, policy_hash, policy_json, occurred_at "
        f"FROM {qualified(warehouse, 'gate_decisions')} FINAL "
        f"WHERE evaluation_id = {lit(evaluation_id)} AND evaluator_version = {lit(evaluator_version)} "
        "ORDER BY occurred_at DESC, event_id DESC LIMIT 1"
    ).as_dicts()
    return rows[0] if rows else None
