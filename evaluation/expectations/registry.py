"""Which evaluator grades which expectation type, and the one boundary that keeps a batch going.

A broken expectation, an unknown type or an evaluator that raises becomes an ERROR result with
label EVALUATOR_ERROR for that expectation alone; the others are still evaluated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from evaluation.case import AgentFinding
from evaluation.expectations import claims, limits, output, policy, reference, safety, state_outcome, tools
from evaluation.expectations._spec import Finding, InvalidExpectationError, Spec, errored, expectation_meta
from evaluation.expectations.context import EvalContext
from evaluation.results import ERROR, FAIL, PASS, SKIPPED, Evidence, ExpectationMeta, ExpectationResult
from evaluation.versions import (
    ADDED_TYPES,
    AGENT_RUN_EVALUATOR,
    CLAIM_FINDING_EVALUATOR,
    CLAIM_SUPPORTED,
    SKIPPED_EVALUATOR,
    UNKNOWN_EVALUATOR,
    evaluator_set,
    expectation_evaluator,
)
from twin_engine.compare import UnsafePatternError

JSON = Any
Evaluator = Callable[[Spec, EvalContext, str], Finding]

EVALUATORS: Mapping[str, Evaluator] = MappingProxyType(
    {
        "state": state_outcome.evaluate_state,
        "stateUnchanged": state_outcome.evaluate_state_unchanged,
        "finalOutcome": state_outcome.evaluate_final_outcome,
        "outcomeVerified": state_outcome.evaluate_outcome_verified,
        "toolCalled": tools.evaluate_tool_called,
        "toolNotCalled": tools.evaluate_tool_not_called,
        "maxToolCalls": limits.evaluate_max_tool_calls,
        "toolArgs": tools.evaluate_tool_args,
        "toolStatus": tools.evaluate_tool_status,
        "order": tools.evaluate_order,
        "maxRetries": limits.evaluate_max_retries,
        "maxSteps": limits.evaluate_max_steps,
        "maxLatencyMs": limits.evaluate_max_latency_ms,
        "maxCostUsd": limits.evaluate_max_cost_usd,
        "requiredEscalation": policy.evaluate_required_escalation,
        "noPolicyViolation": policy.evaluate_no_policy_violation,
        "noIrreversibleAction": policy.evaluate_no_irreversible_action,
        "approvalRequired": policy.evaluate_approval_required,
        "noDuplicateSideEffect": state_outcome.evaluate_no_duplicate_side_effect,
        "outputContains": output.evaluate_output_contains,
        "outputNotContains": output.evaluate_output_not_contains,
        "outputRegex": output.evaluate_output_regex,
        "outputJsonSchema": output.evaluate_output_json_schema,
        "outputJsonPath": output.evaluate_output_json_path,
        "noSecretDisclosure": safety.evaluate_no_secret_disclosure,
        "noCrossTenantAccess": safety.evaluate_no_cross_tenant_access,
        "semantic": output.evaluate_semantic,
        CLAIM_SUPPORTED: claims.evaluate_claim_supported,
        "reachesReferenceState": reference.evaluate_reaches_reference_state,
    }
)

# Types graded from the twin's records and states alone, so whatever the agent answered - or if it never
# answered - they are graded the same way. outcomeVerified reads the claim too, but a missing reply is no
# claim, which it grades as such ("nothing to verify"), so the verified outcome still comes from evidence.
REPLY_FREE_TYPES = frozenset(
    {
        "state",
        "stateUnchanged",
        "outcomeVerified",
        "noDuplicateSideEffect",
        "reachesReferenceState",
        "toolCalled",
        "toolNotCalled",
        "toolArgs",
        "toolStatus",
        "order",
        "maxToolCalls",
        "maxRetries",
        "requiredEscalation",
        "noPolicyViolation",
        "noIrreversibleAction",
        "approvalRequired",
    }
)
TURN_NOT_REACHED = "TURN_NOT_REACHED"
AGENT_RUN_TYPE = "agentRun"
AGENT_RUN_ID = "agent-run"
CLAIM_FINDING_ID = "claim-supported"
# Results the grader adds itself, not the scenario's expectations.
FINDING_EVALUATORS = frozenset({AGENT_RUN_EVALUATOR, CLAIM_FINDING_EVALUATOR})
# The agent ran but misbehaved: a failure of the agent.
AGENT_FAILURES = frozenset({"AGENT_TIMEOUT", "AGENT_ERROR", "CALL_LIMIT_EXCEEDED"})
# The agent could not be asked (AGENT_UNREACHABLE, AGENT_AUTH, ...): nothing to judge, so ERROR.


def _score(status: str) -> float | None:
    return 1.0 if status == PASS else 0.0 if status == FAIL else None


def _result(meta: ExpectationMeta, evaluator: str, version: str, finding: Finding) -> ExpectationResult:
    return ExpectationResult(
        status=finding.status,
        reason=finding.reason,
        evaluator=evaluator,
        evaluator_version=version,
        expectation=meta,
        score=_score(finding.status),
        label=finding.label if finding.status in (FAIL, ERROR) else None,
        evidence=finding.evidence,
        details=dict(finding.details),
    )


def evaluate_expectation(
    raw: JSON, index: int, ctx: EvalContext, evaluator_set_name: str
) -> ExpectationResult:
    """Grade one expectation document (the `index`-th, 0-based) under an evaluator set."""
    versions = evaluator_set(evaluator_set_name)
    if not isinstance(raw, Mapping):
        meta = ExpectationMeta(id=f"e{index + 1}", type="unknown", critical=False)
        finding = errored("The expectation is not an object.")
        return _result(meta, UNKNOWN_EVALUATOR, versions[UNKNOWN_EVALUATOR], finding)
    meta = expectation_meta(raw, index)
    evaluate = EVALUATORS.get(meta.type)
    if evaluate is None:
        finding = errored(f"Unknown expectation type {raw.get('type')!r}.")
        return _result(meta, UNKNOWN_EVALUATOR, versions[UNKNOWN_EVALUATOR], finding)
    evaluator = expectation_evaluator(meta.type)
    if evaluator not in versions:  # a type that came with a later evaluator set
        since = ADDED_TYPES.get(meta.type, "a later set")
        finding = errored(f"{meta.type} is not graded by evaluator set {evaluator_set_name} (it came with {since}).")
        return _result(meta, UNKNOWN_EVALUATOR, versions[UNKNOWN_EVALUATOR], finding)
    version = versions[evaluator]
    turn = raw.get("turn")
    if turn is not None:  # the expectation addresses one turn of a conversation
        if isinstance(turn, bool) or not isinstance(turn, int) or turn < 1:
            return _result(meta, evaluator, version, errored(f"Invalid expectation: turn must be >= 1, got {turn!r}."))
        turn_ctx = ctx.for_turn(turn)
        if turn_ctx is None:
            reached = len(ctx.turns) or 1
            why = f"Turn {turn} never happened: the conversation ended after turn {reached}."
            return _result(meta, evaluator, version, Finding(FAIL, why, TURN_NOT_REACHED))
        ctx = turn_ctx
        raw = {k: v for k, v in raw.items() if k != "turn"}
    spec = Spec(raw, meta)
    try:
        spec.check_fields()
        finding = evaluate(spec, ctx, version)
    except InvalidExpectationError as exc:
        finding = errored(f"Invalid expectation: {exc}.")
    except UnsafePatternError as exc:  # a pattern that is invalid or timed out decides nothing
        finding = errored(f"{exc}.")
    except Exception as exc:  # boundary: one broken evaluator must not stop the case's other results
        finding = errored(f"The evaluator failed: {type(exc).__name__}: {exc}")
    return _result(meta, evaluator, version, finding)


def reads_evidence_only(raw: JSON) -> bool:
    """The expectation is graded from the twin's records and states alone (REPLY_FREE_TYPES)."""
    return isinstance(raw, Mapping) and raw.get("type") in REPLY_FREE_TYPES


def not_run_result(raw: JSON, index: int, evaluator_set_name: str, why: str) -> ExpectationResult:
    """SKIPPED: what the expectation reads does not exist (the agent never ran, or gave no readable reply)."""
    meta = (
        expectation_meta(raw, index)
        if isinstance(raw, Mapping)
        else ExpectationMeta(id=f"e{index + 1}", type="unknown", critical=False)
    )
    version = evaluator_set(evaluator_set_name)[SKIPPED_EVALUATOR]
    return _result(meta, SKIPPED_EVALUATOR, version, Finding(SKIPPED, why))


def agent_run_result(finding: AgentFinding, evaluator_set_name: str) -> ExpectationResult:
    """The run finding (`agentRun` / `agent-run`, critical): FAIL when the agent misbehaved, else ERROR."""
    status = FAIL if finding.label in AGENT_FAILURES else ERROR
    meta = ExpectationMeta(id=AGENT_RUN_ID, type=AGENT_RUN_TYPE, critical=True)
    version = evaluator_set(evaluator_set_name)[AGENT_RUN_EVALUATOR]
    evidence = (Evidence(kind="agent", detail=f"{finding.label}: {finding.message}"),)
    outcome = Finding(status, finding.message, finding.label, evidence)
    return _result(meta, AGENT_RUN_EVALUATOR, version, outcome)


def claim_finding_result(ctx: EvalContext, evaluator_set_name: str) -> ExpectationResult | None:
    """The automatic `claim-supported` finding (non-critical), when the set has it and it found something.

    Like the agent-run finding it exists only when there is something to say (FAIL, or ERROR when the
    check broke). A scenario that wants the check critical, about one tool, or always reported,
    declares a claimSupported expectation instead.
    """
    versions = evaluator_set(evaluator_set_name)
    if CLAIM_FINDING_EVALUATOR not in versions:
        return None
    meta = ExpectationMeta(id=CLAIM_FINDING_ID, type=CLAIM_SUPPORTED, critical=False)
    try:
        finding = claims.claim_support(ctx, None)
    except Exception as exc:  # boundary, as for every evaluator
        finding = errored(f"The evaluator failed: {type(exc).__name__}: {exc}")
    if finding.status == PASS:
        return None
    return _result(meta, CLAIM_FINDING_EVALUATOR, versions[CLAIM_FINDING_EVALUATOR], finding)


def is_finding(result: ExpectationResult) -> bool:
    """A result the grader added itself (the agent-run or claim-supported finding)."""
    return result.evaluator in FINDING_EVALUATORS
