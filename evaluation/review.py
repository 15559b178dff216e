"""Human review overrides (spec §7.8): a person's PASS/FAIL, with a mandatory note, replaces one
expectation's result on one side of a case; the side's verdict and verified outcome are recomputed.

Reviews are append-only; the latest per (side, expectation) counts. An override cannot rescue a case
whose other critical checks still fail: the verdict is recomputed over every result, not just this one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from evaluation.case import CaseRun
from evaluation.expectations import AGENT_RUN_ID, AGENT_RUN_TYPE
from evaluation.outcome import verified_outcome
from evaluation.results import ERROR, FAIL, PASS, SKIPPED, ExpectationResult, GradedCase
from evaluation.semantic import SEMANTIC_EVALUATOR, SEMANTIC_TYPE
from evaluation.verdict import case_verdict
from evaluation.versions import AGENT_RUN_EVALUATOR

BASELINE = "BASELINE"
CANDIDATE = "CANDIDATE"
SIDES = (BASELINE, CANDIDATE)
REVIEW_EVALUATOR = "human.review"
REVIEW_EVALUATOR_VERSION = "1.0.0"
HUMAN_REVIEW_FAIL = "HUMAN_REVIEW_FAIL"
MAX_NOTE = 2000


class ReviewError(ValueError):
    """A review that cannot be recorded or applied. `code` is the API error code."""

    code = "INVALID_REVIEW"


class ExpectationNotReviewableError(ReviewError):
    """The agent-run finding says whether the agent ran at all; no person can overrule that."""

    code = "EXPECTATION_NOT_REVIEWABLE"


class UnknownExpectationError(ReviewError):
    code = "EXPECTATION_NOT_FOUND"


@dataclass(frozen=True)
class Review:
    side: str  # BASELINE | CANDIDATE
    expectation_id: str
    status: str  # PASS | FAIL
    note: str
    reviewer: str
    created_at: datetime  # supplied by the caller (timezone-aware); never read from a clock here
    scenario_name: str | None = None  # when set, the review applies to that scenario's case only

    def __post_init__(self) -> None:
        if self.side not in SIDES:
            raise ReviewError(f"side must be BASELINE or CANDIDATE, got {self.side!r}")
        if self.status not in (PASS, FAIL):
            raise ReviewError(f"a review decides PASS or FAIL, got {self.status!r}")
        if not self.note.strip():
            raise ReviewError("a review needs a note saying why")
        if len(self.note) > MAX_NOTE:
            raise ReviewError(f"the note is longer than {MAX_NOTE} characters")
        if not self.reviewer.strip():
            raise ReviewError("a review needs the reviewer's name")
        if self.created_at.tzinfo is None:
            raise ReviewError("created_at must be timezone-aware")
        if self.expectation_id == AGENT_RUN_ID:
            raise ExpectationNotReviewableError("the agent-run finding is not reviewable")


class ReviewLog:
    """Append-only record of reviews, in the order they were made (the audit trail)."""

    def __init__(self, reviews: Iterable[Review] = ()) -> None:
        self._reviews: list[Review] = []
        for review in reviews:
            self.add(review)

    def add(self, review: Review) -> None:
        self._reviews.append(review)

    @property
    def entries(self) -> tuple[Review, ...]:
        return tuple(self._reviews)


def latest_reviews(
    reviews: Iterable[Review], side: str, scenario_name: str | None = None
) -> dict[str, Review]:
    """expectation id -> the latest review of that side (for `scenario_name`'s case, when given)."""
    latest: dict[str, Review] = {}
    for review in reviews:
        if review.side != side:
            continue
        if (
            review.scenario_name is not None
            and scenario_name is not None
            and review.scenario_name != scenario_name
        ):
            continue
        latest[review.expectation_id] = review
    return latest


def _reviewable(result: ExpectationResult) -> bool:
    return result.expectation.type != AGENT_RUN_TYPE and result.evaluator != AGENT_RUN_EVALUATOR


def override(original: ExpectationResult, review: Review) -> ExpectationResult:
    """The result a review puts in place of `original` (score kept; the original is in details)."""
    if not _reviewable(original):
        raise ExpectationNotReviewableError(f"{original.expectation.id} is the agent-run finding")
    label = None if review.status == PASS else (original.label or HUMAN_REVIEW_FAIL)
    return ExpectationResult(
        status=review.status,
        reason=f"Reviewed by {review.reviewer}: {review.note}",
        evaluator=REVIEW_EVALUATOR,
        evaluator_version=REVIEW_EVALUATOR_VERSION,
        expectation=original.expectation,
        score=original.score,
        label=label,
        evidence=original.evidence,
        details={
            "review": {
                "reviewer": review.reviewer,
                "note": review.note,
                "created_at": review.created_at.isoformat(),
                "side": review.side,
            },
            "original": {
                "status": original.status,
                "label": original.label,
                "reason": original.reason,
                "evaluator": original.evaluator,
                "evaluator_version": original.evaluator_version,
            },
        },
    )


def apply_reviews(graded: GradedCase, side: str, reviews: Iterable[Review]) -> GradedCase:
    """Apply the latest review of each expectation of this side; recompute verdict and verified outcome."""
    if side not in SIDES:
        raise ReviewError(f"side must be BASELINE or CANDIDATE, got {side!r}")
    case: CaseRun = graded.case
    latest = latest_reviews(reviews, side, case.scenario_name)
    if not latest:
        return graded
    known = {r.expectation.id for r in graded.results}
    missing = sorted(set(latest) - known)
    if missing:
        raise UnknownExpectationError(f"{case.scenario_name} has no expectation {', '.join(missing)}")
    results = tuple(
        override(r, latest[r.expectation.id]) if r.expectation.id in latest else r for r in graded.results
    )
    return replace(
        graded,
        results=results,
        verdict=case_verdict(results, graded.evaluator_version),
        verified=verified_outcome(
            results, case.claimed_outcome, case.business_outcome, graded.evaluator_version
        ),
    )


def needs_review(results: Sequence[ExpectationResult]) -> tuple[str, ...]:
    """Ids a person should look at: semantic results left ERROR or SKIPPED, and critical semantic
    results graded by a judge not calibrated for that criterion."""
    ids = []
    for r in results:
        if r.expectation.type != SEMANTIC_TYPE or r.evaluator == REVIEW_EVALUATOR:
            continue
        undecided = r.status in (ERROR, SKIPPED)
        unvouched = (
            r.expectation.critical
            and r.evaluator == SEMANTIC_EVALUATOR
            and r.status in (PASS, FAIL)
            and not r.details.get("calibrated", False)
        )
        if undecided or unvouched:
            ids.append(r.expectation.id)
    return tuple(ids)
