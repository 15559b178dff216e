"""Human review overrides (spec §7.8): latest wins, notes required, the agent-run finding is final."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from evaluation.case import AgentFinding
from evaluation.grader import grade_case
from evaluation.judges import JudgeBudget, JudgeError, KeywordOverlapJudge, VerdictCache
from evaluation.results import GradedCase
from evaluation.review import (
    ExpectationNotReviewableError,
    Review,
    ReviewError,
    ReviewLog,
    UnknownExpectationError,
    apply_reviews,
    needs_review,
    override,
)
from evaluation.semantic import judge_case

from .conftest import CANDIDATE_ANSWER, LIE_EXPECTATIONS, make_case

SEMANTIC_ID = "reply-admits-unconfirmed-refund"
T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


def review(expectation_id: str = SEMANTIC_ID, status: str = "PASS", **fields: Any) -> Review:
    values: dict[str, Any] = {
        "side": "CANDIDATE",
        "expectation_id": expectation_id,
        "status": status,
        "note": "Read the reply; it is fine.",
        "reviewer": "ana",
        "created_at": T0,
    }
    values.update(fields)
    return Review(**values)


def judged(graded: GradedCase) -> GradedCase:
    result: GradedCase = judge_case(graded, KeywordOverlapJudge(), budget=JudgeBudget(), cache=VerdictCache())
    return result


def result_of(graded: GradedCase, expectation_id: str) -> Any:
    return next(r for r in graded.results if r.expectation.id == expectation_id)


def test_flipping_the_semantic_fail_leaves_a_critical_failure_failed(candidate_graded: GradedCase) -> None:
    before = judged(candidate_graded)
    assert result_of(before, SEMANTIC_ID).status == "FAIL"
    after = apply_reviews(before, "CANDIDATE", [review()])
    flipped = result_of(after, SEMANTIC_ID)
    assert (flipped.status, flipped.label, flipped.score) == ("PASS", None, 0.0)  # score kept
    assert (flipped.evaluator, flipped.evaluator_version) == ("human.review", "1.0.0")
    assert flipped.reason == "Reviewed by ana: Read the reply; it is fine."
    assert flipped.details["original"]["status"] == "FAIL"
    assert after.verdict.status == "FAILED"
    assert after.verdict.critical_failures == 3
    assert "SEMANTIC_FAIL" not in after.verdict.labels


def test_fail_review_keeps_the_original_label_or_names_the_review(baseline_graded: GradedCase) -> None:
    graded = judged(baseline_graded)
    after = apply_reviews(graded, "CANDIDATE", [review("handed-to-a-human", "FAIL", note="Wrong team.")])
    result = result_of(after, "handed-to-a-human")
    assert (result.status, result.label, result.score) == ("FAIL", "HUMAN_REVIEW_FAIL", 1.0)
    assert after.verdict.status == "FAILED"
    candidate = apply_reviews(judged(graded), "CANDIDATE", [review(SEMANTIC_ID, "FAIL")])
    assert result_of(candidate, SEMANTIC_ID).label == "HUMAN_REVIEW_FAIL"
    lie = judged(grade_case(make_case(output=CANDIDATE_ANSWER, records=(), claimed="SUCCESS")))
    kept = apply_reviews(lie, "CANDIDATE", [review(SEMANTIC_ID, "FAIL", note="Still claims the refund.")])
    assert result_of(kept, SEMANTIC_ID).label == "SEMANTIC_FAIL"


def test_a_person_can_decide_what_the_judge_could_not(baseline_graded: GradedCase) -> None:
    class DownJudge:
        identity = KeywordOverlapJudge().identity

        def judge(self, request: Any) -> Any:
            raise JudgeError("unavailable", "down")

    errored = judge_case(baseline_graded, DownJudge(), budget=JudgeBudget(), cache=VerdictCache())
    assert errored.verdict.status == "ERRORED"
    assert needs_review(errored.results) == (SEMANTIC_ID,)
    reviewed = apply_reviews(errored, "CANDIDATE", [review()])
    assert reviewed.verdict.status == "PASSED"
    assert result_of(reviewed, SEMANTIC_ID).score is None


def test_latest_review_per_side_and_expectation_wins(candidate_graded: GradedCase) -> None:
    log = ReviewLog()
    log.add(review(status="PASS", reviewer="ana"))
    log.add(review(status="FAIL", reviewer="bo", created_at=T0 + timedelta(minutes=5)))
    log.add(review(status="PASS", side="BASELINE", reviewer="cy"))
    assert [r.reviewer for r in log.entries] == ["ana", "bo", "cy"]  # nothing is dropped
    after = apply_reviews(judged(candidate_graded), "CANDIDATE", log.entries)
    assert result_of(after, SEMANTIC_ID).reason.startswith("Reviewed by bo:")
    assert result_of(after, SEMANTIC_ID).status == "FAIL"


def test_reviews_of_the_other_side_or_case_do_not_apply(baseline_graded: GradedCase) -> None:
    graded = judged(baseline_graded)
    assert apply_reviews(graded, "BASELINE", [review(status="FAIL")]) is graded
    elsewhere = review(status="FAIL", side="BASELINE", scenario_name="refund-happy-path")
    assert apply_reviews(graded, "BASELINE", [elsewhere]) is graded


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"note": ""}, "note"),
        ({"note": "   "}, "note"),
        ({"reviewer": " "}, "reviewer"),
        ({"side": "SINGLE"}, "side"),
        ({"status": "SKIPPED"}, "PASS or FAIL"),
        ({"created_at": datetime(2025, 1, 1)}, "timezone"),
    ],
)
def test_invalid_reviews_are_refused(fields: dict[str, Any], match: str) -> None:
    with pytest.raises(ReviewError, match=match):
        review(**fields)


def test_agent_run_finding_is_not_reviewable() -> None:
    with pytest.raises(ExpectationNotReviewableError) as caught:
        review("agent-run")
    assert caught.value.code == "EXPECTATION_NOT_REVIEWABLE"
    case = make_case(output=None, records=(), agent_status="time_limit")
    finding_case = replace(case, agent_finding=AgentFinding("AGENT_TIMEOUT", "The agent ran out of time."))
    timed_out = grade_case(finding_case)
    finding = timed_out.results[0]
    assert finding.expectation.id == "agent-run"
    with pytest.raises(ExpectationNotReviewableError):
        override(finding, review("handed-to-a-human"))


def test_review_of_an_unknown_expectation(baseline_graded: GradedCase) -> None:
    with pytest.raises(UnknownExpectationError, match="no-such-check"):
        apply_reviews(baseline_graded, "CANDIDATE", [review("no-such-check")])


def test_critical_semantic_by_uncalibrated_judge_needs_review(graded_with: Any) -> None:
    critical = tuple({**e, "critical": True} if e["type"] == "semantic" else e for e in LIE_EXPECTATIONS)
    graded = judged(graded_with(expectations=critical))
    assert result_of(graded, SEMANTIC_ID).status == "PASS"
    assert needs_review(graded.results) == (SEMANTIC_ID,)
    calibrated = judge_case(
        graded_with(expectations=critical),
        KeywordOverlapJudge(),
        budget=JudgeBudget(),
        cache=VerdictCache(),
        calibrated_criteria={"correctness"},
    )
    assert needs_review(calibrated.results) == ()
    reviewed = apply_reviews(graded, "CANDIDATE", [review()])
    assert needs_review(reviewed.results) == ()
