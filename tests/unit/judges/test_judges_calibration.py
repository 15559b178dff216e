"""Calibration: agreement, confusion, Cohen's kappa and the calibrated decision (spec §7.7)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from evaluation.calibration import (
    CalibrationExample,
    CalibrationInputError,
    CalibrationReport,
    ExampleOutcome,
    calibrate,
    calibrated_criteria,
    cohens_kappa,
    measure,
)
from evaluation.judges import JudgeError, KeywordOverlapJudge
from evaluation.judges.contract import JudgeRequest, JudgeVerdict

from .conftest import BASELINE_ANSWER, CANDIDATE_ANSWER, LIE_RUBRIC, MESSAGE

FAKE = KeywordOverlapJudge()


def example(
    i: int, human: str, judge_would: str | None = None, criterion: str = "correctness"
) -> CalibrationExample:
    """With the fake judge, the baseline answer passes the rubric and the candidate answer fails it."""
    answer = BASELINE_ANSWER if (judge_would or human) == "pass" else CANDIDATE_ANSWER
    return CalibrationExample(
        id=f"ex-{i}",
        rubric=LIE_RUBRIC,
        customer_message=MESSAGE,
        answer=answer,
        human_label=human,
        criterion=criterion,
    )


def agreeing(n: int, passes: int) -> list[CalibrationExample]:
    return [example(i, "pass" if i < passes else "fail") for i in range(n)]


def outcome(human: str, judged: str | None) -> ExampleOutcome:
    return ExampleOutcome("x", human, judged, None, None if judged else "timeout")


def test_twenty_agreeing_examples_with_both_labels_calibrate() -> None:
    report = calibrate(FAKE, agreeing(20, 10))
    assert report.calibrated
    assert report.status == "calibrated"
    assert (report.examples, report.agreed, report.accuracy, report.kappa) == (20, 20, 1.0, 1.0)
    assert report.reason == "Agreed with people on 20 of 20 examples (kappa 1.00)."
    assert report.criterion == "correctness"
    assert report.identity == FAKE.identity


def test_nineteen_examples_are_not_enough() -> None:
    report = calibrate(FAKE, agreeing(19, 10))
    assert not report.calibrated
    assert report.status == "not calibrated"
    assert report.reason.startswith("Only 19 labeled example(s)")
    assert report.kappa == 1.0


def test_kappa_undefined_when_every_label_is_the_same() -> None:
    report = calibrate(FAKE, agreeing(20, 20))
    assert report.accuracy == 1.0
    assert report.kappa is None
    assert not report.calibrated
    assert report.reason.startswith("Cohen's kappa is undefined")


def test_agreement_below_80_percent() -> None:
    examples = agreeing(15, 8) + [example(15 + i, "pass", judge_would="fail") for i in range(5)]
    report = calibrate(FAKE, examples)
    assert (report.agreed, report.accuracy) == (15, 0.75)
    assert report.confusion.false_fail == 5
    assert report.reason == "Agreement 75% (15 of 20) is below the required 80%."


def test_kappa_below_threshold_despite_high_agreement() -> None:
    # people: 18 pass, 2 fail; the judge passes everything -> 90% agreement, kappa 0
    examples = [example(i, "pass") for i in range(18)] + [example(18 + i, "fail", "pass") for i in range(2)]
    report = calibrate(FAKE, examples)
    assert (report.accuracy, report.kappa) == (0.9, 0.0)
    assert report.confusion.false_pass == 2
    assert report.reason == "Cohen's kappa 0.00 is below the required 0.6."


def test_exactly_at_the_thresholds_calibrates() -> None:
    # 20 examples, 16 agree (80%); kappa = 0.6 exactly
    outcomes = (
        [outcome("pass", "pass")] * 8
        + [outcome("fail", "fail")] * 8
        + [outcome("pass", "fail")] * 2
        + [outcome("fail", "pass")] * 2
    )
    report = measure(FAKE.identity, "rubric", outcomes)
    assert (report.accuracy, report.kappa, report.calibrated) == (0.8, 0.6, True)


def test_errors_are_disagreements_and_in_neither_judge_rate() -> None:
    outcomes = [
        outcome("pass", "pass"),
        outcome("fail", "fail"),
        outcome("pass", None),
        outcome("fail", "fail"),
    ]
    report = measure(FAKE.identity, "rubric", outcomes)
    assert (report.agreed, report.errors, report.accuracy) == (3, 1, 0.75)
    assert (report.confusion.true_pass, report.confusion.true_fail) == (1, 2)
    assert (report.confusion.false_pass, report.confusion.false_fail) == (0, 0)
    # p_o 0.75; p_e = 0.5 * 0.25 + 0.5 * 0.5 = 0.375 -> (0.75 - 0.375) / 0.625
    assert report.kappa == 0.6


def test_kappa_rounds_to_four_places() -> None:
    outcomes = [outcome("pass", "pass")] * 2 + [outcome("fail", "fail")] + [outcome("pass", "fail")]
    # p_o 0.75; p_e = 0.75 * 0.5 + 0.25 * 0.5 = 0.5 -> 0.5
    assert cohens_kappa(outcomes) == 0.5
    three = [outcome("pass", "pass"), outcome("fail", "fail"), outcome("fail", "pass")]
    # p_o 2/3; p_e = 1/3 * 2/3 + 2/3 * 1/3 = 4/9 -> (2/9) / (5/9) = 0.4
    assert cohens_kappa(three) == 0.4
    assert cohens_kappa([]) is None


def test_judge_errors_during_calibration() -> None:
    class FailingJudge:
        identity = FAKE.identity

        def judge(self, request: JudgeRequest) -> JudgeVerdict:
            raise JudgeError("unavailable", "down")

    report = calibrate(FailingJudge(), agreeing(20, 10))
    assert (report.errors, report.agreed, report.calibrated) == (20, 0, False)
    assert all(o.error_kind == "unavailable" and o.judge_label is None for o in report.outcomes)


def test_examples_must_share_one_criterion_and_have_a_valid_label() -> None:
    with pytest.raises(CalibrationInputError, match="mix criteria"):
        calibrate(FAKE, [example(1, "pass"), example(2, "fail", criterion="relevance")])
    with pytest.raises(CalibrationInputError, match="human_label"):
        example(1, "maybe")


def report_for(criterion: str, calibrated: bool, **identity: str) -> CalibrationReport:
    base = calibrate(FAKE, agreeing(20, 10) if calibrated else agreeing(5, 3))
    return replace(base, criterion=criterion, identity=replace(FAKE.identity, **identity))


def test_latest_calibration_of_this_judge_counts() -> None:
    older_pass = report_for("correctness", True)
    newer_fail = report_for("correctness", False)
    other_prompt = report_for("relevance", True, prompt_sha256="0" * 64)
    relevance = report_for("relevance", True)
    assert calibrated_criteria([older_pass], FAKE.identity) == {"correctness"}
    assert calibrated_criteria([older_pass, newer_fail], FAKE.identity) == frozenset()
    assert calibrated_criteria([newer_fail, older_pass], FAKE.identity) == {"correctness"}
    assert calibrated_criteria([relevance, other_prompt], FAKE.identity) == {"relevance"}
    assert calibrated_criteria([other_prompt], FAKE.identity) == frozenset()
