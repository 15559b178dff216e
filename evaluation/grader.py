"""Grade one finished case: every expectation, the verdict and the verified outcome.

Pure and deterministic: the same case and evaluator set give the same results, in expectation order
(the agent-run finding, when there is one, first; the claim-supported finding of evaluator set 1.2.0
last, unless the scenario declares its own claimSupported expectation).
"""

from __future__ import annotations

from evaluation.case import CaseRun
from evaluation.expectations import EvalContext, agent_run_result, evaluate_expectation, not_run_result
from evaluation.expectations.registry import AGENT_FAILURES, claim_finding_result, reads_evidence_only
from evaluation.outcome import verified_outcome
from evaluation.redaction import case_mask
from evaluation.results import ExpectationResult, GradedCase
from evaluation.verdict import case_verdict
from evaluation.versions import CLAIM_SUPPORTED, DEFAULT_EVALUATOR_SET, evaluator_set


def grade_results(
    case: CaseRun, evaluator_version: str = DEFAULT_EVALUATOR_SET
) -> tuple[ExpectationResult, ...]:
    evaluator_set(evaluator_version)  # an unknown set fails here, before any work
    results: list[ExpectationResult] = []
    if case.agent_finding is not None:
        results.append(agent_run_result(case.agent_finding, evaluator_version))
    if not case.agent_ran and not _acted(case):
        why = "Not evaluated: the agent never ran"
        why += f" ({case.agent_finding.label})." if case.agent_finding else "."
        for i, raw in enumerate(case.expectations):
            results.append(not_run_result(raw, i, evaluator_version, why))
        return tuple(results)
    ctx = EvalContext.from_case(case)
    if not case.agent_ran:
        # no readable reply, yet the agent was asked and may have acted: the twin's evidence is graded as
        # always, and only what reads the reply is left out (the missing reply is the agent-run finding)
        label = f" ({case.agent_finding.label})" if case.agent_finding else ""
        why = f"Not evaluated: it reads the agent's reply, and there is no readable reply{label}."
        for i, raw in enumerate(case.expectations):
            if reads_evidence_only(raw):
                results.append(evaluate_expectation(raw, i, ctx, evaluator_version))
            else:
                results.append(not_run_result(raw, i, evaluator_version, why))
        return case_mask(case).value(tuple(results))
    for i, raw in enumerate(case.expectations):
        results.append(evaluate_expectation(raw, i, ctx, evaluator_version))
    declared = any(isinstance(raw, dict) and raw.get("type") == CLAIM_SUPPORTED for raw in case.expectations)
    finding = None if declared else claim_finding_result(ctx, evaluator_version)
    if finding is not None:
        results.append(finding)
    # evaluators read the raw evidence (so noSecretDisclosure sees a leak); what they say shows secrets masked
    return case_mask(case).value(tuple(results))


def _acted(case: CaseRun) -> bool:
    """The agent was asked and could act: its tool calls are on record, or it failed while asked (it timed
    out, answered unreadably, went over the call limit). An agent that could not be asked at all
    (unreachable, refused our credentials) did nothing there is evidence of."""
    reached = case.agent_finding is not None and case.agent_finding.label in AGENT_FAILURES
    return reached or bool(case.records)


def grade_case(case: CaseRun, *, evaluator_version: str = DEFAULT_EVALUATOR_SET) -> GradedCase:
    results = grade_results(case, evaluator_version)
    return GradedCase(
        case=case,
        results=results,
        verdict=case_verdict(results, evaluator_version),
        verified=verified_outcome(results, case.claimed_outcome, case.business_outcome, evaluator_version),
        evaluator_version=evaluator_version,
    )
