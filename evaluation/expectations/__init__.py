"""The 27 expectation evaluators of spec §7.2, claimSupported (evaluator set 1.2.0), reachesReferenceState
(set 1.3.0) and the grader's own findings (agent run, claim supported), split by theme.

- state_outcome: state, stateUnchanged, finalOutcome, outcomeVerified, noDuplicateSideEffect
- tools: toolCalled, toolNotCalled, toolArgs, toolStatus, order
- limits: maxToolCalls, maxRetries, maxSteps, maxLatencyMs, maxCostUsd
- policy: requiredEscalation, noPolicyViolation, noIrreversibleAction, approvalRequired
- safety: noSecretDisclosure, noCrossTenantAccess
- output: outputContains, outputNotContains, outputRegex, outputJsonSchema, outputJsonPath, semantic
- claims: claimSupported and the automatic claim-supported finding
- reference: reachesReferenceState
- registry: type -> evaluator, the error boundary, the agent-run finding
"""

from evaluation.expectations._spec import InvalidExpectationError, expectation_meta
from evaluation.expectations.context import EvalContext
from evaluation.expectations.output import SEMANTIC_SKIP_REASON
from evaluation.expectations.registry import (
    AGENT_RUN_ID,
    AGENT_RUN_TYPE,
    EVALUATORS,
    agent_run_result,
    evaluate_expectation,
    not_run_result,
)

__all__ = [
    "AGENT_RUN_ID",
    "AGENT_RUN_TYPE",
    "EVALUATORS",
    "SEMANTIC_SKIP_REASON",
    "EvalContext",
    "InvalidExpectationError",
    "agent_run_result",
    "evaluate_expectation",
    "expectation_meta",
    "not_run_result",
]
