"""Result records of grading: one per expectation, one verdict per case, one verified outcome per case.

Plain frozen dataclasses: the stream processors turn them into Avro events unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JSON = Any

PASS = "PASS"  # noqa: S105 (a result status, not a secret)
FAIL = "FAIL"
ERROR = "ERROR"
SKIPPED = "SKIPPED"
RESULT_STATUSES = (PASS, FAIL, ERROR, SKIPPED)

# The label of a SKIPPED result whose judge looked and could not decide: the case can never pass on it.
JUDGE_UNDECIDED = "JUDGE_UNDECIDED"
# The label of a SKIPPED result no judge looked at because the run's judge budget was spent: an
# expectation the scenario asked for went unchecked, so the case can never pass on it either.
JUDGE_BUDGET_SPENT = "JUDGE_BUDGET_SPENT"
UNJUDGED_LABELS = (JUDGE_UNDECIDED, JUDGE_BUDGET_SPENT)

PASSED = "PASSED"
FAILED = "FAILED"
ERRORED = "ERRORED"
VERDICT_STATUSES = (PASSED, FAILED, ERRORED)


@dataclass(frozen=True)
class Evidence:
    kind: str  # tool_call | state | output | agent | config
    detail: str
    ref: str | None = None
    expected: JSON = None
    actual: JSON = None

    def to_dict(self) -> dict[str, JSON]:
        return {
            "kind": self.kind,
            "detail": self.detail,
            "ref": self.ref,
            "expected": self.expected,
            "actual": self.actual,
        }


@dataclass(frozen=True)
class ExpectationMeta:
    id: str
    type: str
    critical: bool
    description: str | None = None
    category: str | None = None
    tool: str | None = None
    path: str | None = None

    def to_dict(self) -> dict[str, JSON]:
        return {
            "id": self.id,
            "type": self.type,
            "critical": self.critical,
            "description": self.description,
            "category": self.category,
            "tool": self.tool,
            "path": self.path,
        }


@dataclass(frozen=True)
class ExpectationResult:
    status: str  # PASS | FAIL | ERROR | SKIPPED
    reason: str
    evaluator: str  # e.g. "expectation.state", "semantic.judge", "human.review", "simulation.agent_run"
    evaluator_version: str
    expectation: ExpectationMeta
    score: float | None = None
    label: str | None = None
    evidence: tuple[Evidence, ...] = ()
    details: dict[str, JSON] = field(default_factory=dict)  # e.g. judge identity, counts

    def to_dict(self) -> dict[str, JSON]:
        return {
            "status": self.status,
            "reason": self.reason,
            "evaluator": self.evaluator,
            "evaluator_version": self.evaluator_version,
            "score": self.score,
            "label": self.label,
            "evidence": [e.to_dict() for e in self.evidence],
            "expectation": self.expectation.to_dict(),
            "details": dict(self.details),
        }


@dataclass(frozen=True)
class CaseVerdict:
    status: str  # PASSED | FAILED | ERRORED
    reason: str
    passed: int
    failed: int
    errored: int
    skipped: int
    critical_failures: int
    score: float | None
    labels: tuple[str, ...]
    evaluator_version: str

    def to_dict(self) -> dict[str, JSON]:
        return {
            "status": self.status,
            "reason": self.reason,
            "passed": self.passed,
            "failed": self.failed,
            "errored": self.errored,
            "skipped": self.skipped,
            "critical_failures": self.critical_failures,
            "score": self.score,
            "labels": list(self.labels),
            "evaluator_version": self.evaluator_version,
        }


@dataclass(frozen=True)
class VerifiedOutcome:
    """What verification found, kept apart from what the agent claimed (spec §8.1)."""

    status: str  # SUCCESS | PARTIAL | FAILURE | UNKNOWN
    verified: bool
    source: str  # tool_twin_state | state_assertion | ... | unavailable
    claimed_status: str | None
    business_outcome: str | None
    reason: str

    def to_dict(self) -> dict[str, JSON]:
        return {
            "status": self.status,
            "verified": self.verified,
            "source": self.source,
            "claimed_status": self.claimed_status,
            "business_outcome": self.business_outcome,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class GradedCase:
    """One side's case after grading: the case record plus what the evidence says about it.

    `evaluator_version` names the evaluator set that produced `results`, `verdict` and `verified`.
    """

    case: Any  # evaluation.case.CaseRun (typed loosely to keep this module free of imports)
    results: tuple[ExpectationResult, ...]
    verdict: CaseVerdict
    verified: VerifiedOutcome
    evaluator_version: str
