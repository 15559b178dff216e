"""The verified outcome of a case (spec §8.1), kept apart from the outcome the agent claimed.

Built from the outcome evidence only: the results of state, stateUnchanged, outcomeVerified,
noDuplicateSideEffect and reachesReferenceState expectations. Trajectory and policy checks decide the verdict,
never the outcome: a refund that landed correctly by the wrong path is a regression, not a contradiction.

- any of them FAIL -> FAILURE, verified, source tool_twin_state
- none present, or any ERROR/SKIPPED -> UNKNOWN, unverified, source unavailable
- otherwise -> SUCCESS, verified, source tool_twin_state

The agent's claim is kept beside it: under the verified outcome 1.1.0 (evaluator set 1.2.0) as
claimed when it is one of CLAIMED_OUTCOMES; before, ESCALATED and REFUSED were stored as UNKNOWN.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluation.results import ERROR, FAIL, SKIPPED, ExpectationResult, VerifiedOutcome
from evaluation.versions import (
    CLAIMS_AS_CLAIMED,
    DEFAULT_EVALUATOR_SET,
    VERIFIED_OUTCOME_EVALUATOR,
)
from evaluation.versions import (
    evaluator_version as version_in,
)

OUTCOME_EVIDENCE_TYPES = frozenset(
    {"state", "stateUnchanged", "outcomeVerified", "noDuplicateSideEffect", "reachesReferenceState"}
)
OUTCOME_STATUSES = ("SUCCESS", "PARTIAL", "FAILURE", "UNKNOWN")
# What an agent may claim (scenario.v1 finalOutcome), kept as claimed from the verified outcome 1.1.0 on.
CLAIMED_OUTCOMES = ("SUCCESS", "PARTIAL", "FAILURE", "ESCALATED", "REFUSED", "UNKNOWN")
TOOL_TWIN_STATE = "tool_twin_state"
UNAVAILABLE = "unavailable"
MAX_BUSINESS_OUTCOME = 200


def normalize_outcome(claimed: str | None, known: tuple[str, ...] = OUTCOME_STATUSES) -> str | None:
    """A claimed outcome upper-cased; anything outside `known` is UNKNOWN."""
    if claimed is None or not claimed.strip():
        return None
    value = claimed.strip().upper()
    return value if value in known else "UNKNOWN"


def claimed_status(claimed: str | None, evaluator_version: str) -> str | None:
    """The claim as the verified outcome of evaluator set `evaluator_version` stores it."""
    as_claimed = version_in(evaluator_version, VERIFIED_OUTCOME_EVALUATOR) == CLAIMS_AS_CLAIMED
    return normalize_outcome(claimed, CLAIMED_OUTCOMES if as_claimed else OUTCOME_STATUSES)


def _ids(results: Sequence[ExpectationResult]) -> str:
    return ", ".join(r.expectation.id for r in results)


def verified_outcome(
    results: Sequence[ExpectationResult],
    claimed: str | None,
    business_outcome: str | None,
    evaluator_version: str = DEFAULT_EVALUATOR_SET,
) -> VerifiedOutcome:
    evidence = [r for r in results if r.expectation.type in OUTCOME_EVIDENCE_TYPES]
    fails = [r for r in evidence if r.status == FAIL]
    undecided = [r for r in evidence if r.status in (ERROR, SKIPPED)]
    if fails:
        status, verified, source = "FAILURE", True, TOOL_TWIN_STATE
        more = f" (+{len(fails) - 1} more: {_ids(fails[1:])})" if len(fails) > 1 else ""
        reason = f"The twin's state disproves success: {fails[0].expectation.id}: {fails[0].reason}{more}"
    elif not evidence:
        status, verified, source = "UNKNOWN", False, UNAVAILABLE
        reason = "No outcome evidence: the scenario checks no state, outcome or side effect."
    elif undecided:
        status, verified, source = "UNKNOWN", False, UNAVAILABLE
        reason = f"The outcome could not be verified: {_ids(undecided)} could not be evaluated."
    else:
        status, verified, source = "SUCCESS", True, TOOL_TWIN_STATE
        reason = f"The twin's state backs the outcome: {_ids(evidence)} passed."
    return VerifiedOutcome(
        status=status,
        verified=verified,
        source=source,
        claimed_status=claimed_status(claimed, evaluator_version),
        business_outcome=business_outcome[:MAX_BUSINESS_OUTCOME] if business_outcome else business_outcome,
        reason=reason,
    )
