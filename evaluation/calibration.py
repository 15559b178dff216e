"""Calibration (spec §7.7): how often a judge agrees with people on labeled examples, per criterion.

A judge counts as calibrated for a criterion only with at least 20 examples, agreement of at least 80%
and a Cohen's kappa of at least 0.6. A judge error on an example counts as a disagreement and is in
neither of the judge's label rates. Until calibrated, the judge still grades, and says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from evaluation.judges.calling import DEFAULT_SEMANTIC_TIMEOUT_S, JudgeFailure, ask_judge
from evaluation.judges.contract import LABEL_FAIL, LABEL_PASS, Judge, JudgeIdentity
from evaluation.judges.material import build_request
from evaluation.judges.prompt import DEFAULT_CRITERION, criterion_for
from evaluation.semantic import DEFAULT_THRESHOLD, semantic_passes
from twin_engine.records import CallRecord

MIN_EXAMPLES = 20
MIN_ACCURACY = Fraction(4, 5)
MIN_KAPPA = 0.6
CALIBRATED = "calibrated"
NOT_CALIBRATED = "not calibrated"


class CalibrationInputError(ValueError):
    """The labeled examples cannot be used (bad label, mixed criteria)."""


@dataclass(frozen=True)
class CalibrationExample:
    id: str
    rubric: str
    customer_message: str
    answer: str
    human_label: str  # pass | fail
    criterion: str = DEFAULT_CRITERION
    tool_calls: tuple[CallRecord, ...] = ()

    def __post_init__(self) -> None:
        if self.human_label not in (LABEL_PASS, LABEL_FAIL):
            raise CalibrationInputError(f"example {self.id}: human_label must be pass or fail")


@dataclass(frozen=True)
class ExampleOutcome:
    id: str
    human_label: str
    judge_label: str | None  # the judge's grading decision; None when it gave no verdict
    score: float | None
    error_kind: str | None

    @property
    def agreed(self) -> bool:
        return self.judge_label == self.human_label


@dataclass(frozen=True)
class Confusion:
    true_pass: int  # both pass
    true_fail: int  # both fail
    false_pass: int  # judge pass, people fail
    false_fail: int  # judge fail, people pass


@dataclass(frozen=True)
class CalibrationReport:
    identity: JudgeIdentity
    criterion: str
    examples: int
    agreed: int
    accuracy: float
    confusion: Confusion
    errors: int
    kappa: float | None  # None = undefined (chance agreement is 1)
    calibrated: bool
    reason: str
    outcomes: tuple[ExampleOutcome, ...]

    @property
    def status(self) -> str:
        return CALIBRATED if self.calibrated else NOT_CALIBRATED


def calibrate(
    judge: Judge,
    examples: Sequence[CalibrationExample],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    semantic_timeout_s: float | None = DEFAULT_SEMANTIC_TIMEOUT_S,
) -> CalibrationReport:
    """Run the judge on each example, one at a time, and measure its agreement with people."""
    criteria = {criterion_for(e.criterion) for e in examples}
    if len(criteria) > 1:
        raise CalibrationInputError(f"examples mix criteria {sorted(criteria)}; calibrate one at a time")
    criterion = criteria.pop() if criteria else DEFAULT_CRITERION
    outcomes = []
    for example in examples:
        request = build_request(
            category=example.criterion,
            rubric=example.rubric,
            customer_message=example.customer_message,
            answer=example.answer,
            records=example.tool_calls,
        )
        got = ask_judge(judge, request, semantic_timeout_s)
        if isinstance(got, JudgeFailure):
            outcomes.append(ExampleOutcome(example.id, example.human_label, None, None, got.kind))
        else:
            label = LABEL_PASS if semantic_passes(got, threshold) else LABEL_FAIL
            outcomes.append(ExampleOutcome(example.id, example.human_label, label, got.score, None))
    return measure(judge.identity, criterion, outcomes)


def measure(identity: JudgeIdentity, criterion: str, outcomes: Sequence[ExampleOutcome]) -> CalibrationReport:
    """The agreement figures and the calibrated decision for already-judged examples."""
    n = len(outcomes)

    def count(human: str, judged: str) -> int:
        return sum(1 for o in outcomes if o.human_label == human and o.judge_label == judged)

    confusion = Confusion(
        true_pass=count(LABEL_PASS, LABEL_PASS),
        true_fail=count(LABEL_FAIL, LABEL_FAIL),
        false_pass=count(LABEL_FAIL, LABEL_PASS),
        false_fail=count(LABEL_PASS, LABEL_FAIL),
    )
    agreed = confusion.true_pass + confusion.true_fail
    accuracy = Fraction(agreed, n) if n else Fraction(0)
    kappa = cohens_kappa(outcomes)
    reason = _decision(n, agreed, accuracy, kappa)
    return CalibrationReport(
        identity=identity,
        criterion=criterion,
        examples=n,
        agreed=agreed,
        accuracy=round(float(accuracy), 4),
        confusion=confusion,
        errors=sum(1 for o in outcomes if o.judge_label is None),
        kappa=kappa,
        calibrated=reason is None,
        reason=reason or f"Agreed with people on {agreed} of {n} examples (kappa {kappa:.2f}).",
        outcomes=tuple(outcomes),
    )


def cohens_kappa(outcomes: Sequence[ExampleOutcome]) -> float | None:
    """(p_o - p_e) / (1 - p_e), rounded to 4; None when p_e is 1 (or there are no examples)."""
    n = len(outcomes)
    if n == 0:
        return None
    p_o = Fraction(sum(1 for o in outcomes if o.agreed), n)
    human_pass = Fraction(sum(1 for o in outcomes if o.human_label == LABEL_PASS), n)
    judge_pass = Fraction(sum(1 for o in outcomes if o.judge_label == LABEL_PASS), n)
    judge_fail = Fraction(sum(1 for o in outcomes if o.judge_label == LABEL_FAIL), n)
    p_e = human_pass * judge_pass + (1 - human_pass) * judge_fail
    if p_e == 1:
        return None
    return round(float((p_o - p_e) / (1 - p_e)), 4)


def _percent(value: Fraction) -> str:
    return f"{float(value) * 100:.1f}".removesuffix(".0") + "%"


def _decision(n: int, agreed: int, accuracy: Fraction, kappa: float | None) -> str | None:
    """Why the judge is not calibrated, or None when it is."""
    if n < MIN_EXAMPLES:
        return f"Only {n} labeled example(s); calibration needs at least {MIN_EXAMPLES}."
    if accuracy < MIN_ACCURACY:
        return (
            f"Agreement {_percent(accuracy)} ({agreed} of {n}) is below the required "
            f"{_percent(MIN_ACCURACY)}."
        )
    if kappa is None:
        return (
            "Cohen's kappa is undefined: every example got the same label from people and from the "
            "judge, so agreement says nothing beyond chance. Add examples of the other label."
        )
    if kappa < MIN_KAPPA:
        return f"Cohen's kappa {kappa:.2f} is below the required {MIN_KAPPA}."
    return None


def _same_judge(a: JudgeIdentity, b: JudgeIdentity) -> bool:
    return (a.provider, a.model, a.prompt_sha256) == (b.provider, b.model, b.prompt_sha256)


def latest_calibrations(
    reports: Iterable[CalibrationReport], identity: JudgeIdentity
) -> dict[str, CalibrationReport]:
    """Per criterion, the latest report (in the order given) that measured this judge identity."""
    latest: dict[str, CalibrationReport] = {}
    for report in reports:
        if _same_judge(report.identity, identity):
            latest[report.criterion] = report
    return latest


def calibrated_criteria(reports: Iterable[CalibrationReport], identity: JudgeIdentity) -> frozenset[str]:
    """Criteria whose latest calibration of this judge passed; a newer failing one undoes an older pass."""
    return frozenset(c for c, r in latest_calibrations(reports, identity).items() if r.calibrated)
