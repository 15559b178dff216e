"""The release gate on the CLI: decide from the stored evaluation, publish the decision, print it.

`agenttwin evaluate ... --gate [POLICY]` and `agenttwin gate EVALUATION_ID [--policy POLICY]` both decide
from what the projections hold (comparisons after any review, the outcome join's contradictions), so
deciding again after a human review reads the reviewed classifications. The decision is a GateDecided
event on `gate-decisions` (projected to `gate_decisions` / `v_gate_decisions`); its id covers the policy
hash and the facts' hash, so the same decision over the same facts is stored once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agenttwin.command_args import add_gate_args as add_gate_args  # where the parser builds it, no imports
from agenttwin.errors import CliError
from agenttwin.render import table
from agenttwin.stored_evaluation import NotStoredError, StoredEvaluation, load_stored
from consumers.clickhouse import Warehouse
from evaluation.gate import DEFAULT_POLICY, GateDecision, GateError, GatePolicy, decide, facts_from_documents
from streams import ids
from streams.events import Event, GateDecided
from twin_engine.canonical import canonical_json

Publish = Callable[[Sequence[Event]], None]  # append the events and project them


def load_policy(value: str | None) -> GatePolicy:
    if value is None or value == "default":
        return DEFAULT_POLICY
    from evaluation.gate_policy import load_gate_policy

    return load_gate_policy(value)


def decide_stored(stored: StoredEvaluation, policy: GatePolicy) -> GateDecision:
    facts = facts_from_documents(stored.case_docs, [k.for_gate() for k in stored.candidate_contradictions])
    try:
        return decide(policy, facts)
    except GateError as exc:
        raise CliError(str(exc)) from None


def decision_event(stored: StoredEvaluation, decision: GateDecision) -> GateDecided:
    eid, version = stored.evaluation_id, stored.evaluator_version
    return GateDecided(
        event_id=ids.event_id("GateDecided", eid, version, decision.policy.hash, decision.inputs_hash),
        occurred_at=stored.latest_at,
        correlation_id=eid,
        evaluation_id=eid,
        evaluator_version=version,
        baseline_agent=stored.baseline_agent,
        candidate_agent=stored.candidate_agent,
        decision=decision.decision,
        summary=decision.summary,
        blocking=decision.blocking,
        warnings=decision.warnings,
        cases=decision.cases,
        reasons_json=canonical_json([r.to_dict() for r in decision.reasons]),
        policy_name=decision.policy.name,
        policy_hash=decision.policy.hash,
        policy_json=canonical_json(decision.policy.to_dict()),
        inputs_hash=decision.inputs_hash,
    )


@dataclass(frozen=True)
class GateOutcome:
    decision: GateDecision
    stored: StoredEvaluation


def gate_evaluation(
    warehouse: Warehouse, publish: Publish, evaluation_id: str, evaluator_version: str, policy: GatePolicy
) -> GateOutcome:
    """Decide over the stored evaluation, publish the decision event and project it."""
    try:
        stored = load_stored(warehouse, evaluation_id, evaluator_version)
    except NotStoredError as exc:
        raise CliError(str(exc)) from None
    decision = decide_stored(stored, policy)
    publish([decision_event(stored, decision)])
    return GateOutcome(decision, stored)


def render_decision(decision: GateDecision) -> str:
    policy = decision.policy
    lines = [f"Release gate: {decision.decision}  (policy {policy.name} {policy.hash[:12]})", f"  {decision.summary}"]
    if decision.reasons:
        rows = [[r.action, r.scenario or "-", r.rule, r.message] for r in decision.reasons]
        lines.append(table(["action", "scenario", "rule", "why"], rows, max_width=90))
    return "\n".join(lines)
