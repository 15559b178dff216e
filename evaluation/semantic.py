"""Semantic grading: a judge replaces the SKIPPED `semantic` results of one side of a case.

PASS needs the judge's label `pass` AND a score at or above the threshold. A judge that cannot answer
(error, refusal, garbage, too slow) gives ERROR with no score: never a zero, never a default pass. A
judge that answers it cannot decide (the offline judge, `undecided`) gives SKIPPED with the label
JUDGE_UNDECIDED and no score; past the run's judge budget a semantic result is SKIPPED with the label
JUDGE_BUDGET_SPENT. The verdict never counts either as passed (evaluation.verdict).
Deterministic results are never touched; the side's verdict and verified outcome are recomputed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from typing import Any

from evaluation.case import CaseRun
from evaluation.expectations._spec import expectation_meta
from evaluation.judges.budget import JudgeBudget
from evaluation.judges.cache import VerdictCache, cache_key
from evaluation.judges.calling import DEFAULT_SEMANTIC_TIMEOUT_S, JudgeFailure, ask_judge
from evaluation.judges.contract import KIND_FAKE, LABEL_PASS, Judge, JudgeIdentity, JudgeVerdict
from evaluation.judges.errors import UNDECIDED
from evaluation.judges.fake import NOT_A_LANGUAGE_MODEL
from evaluation.judges.material import build_request
from evaluation.outcome import verified_outcome
from evaluation.redaction import case_mask
from evaluation.results import (
    ERROR,
    FAIL,
    JUDGE_BUDGET_SPENT,
    JUDGE_UNDECIDED,
    PASS,
    SKIPPED,
    Evidence,
    ExpectationResult,
    GradedCase,
)
from evaluation.verdict import case_verdict

JSON = Any

SEMANTIC_TYPE = "semantic"
SEMANTIC_EVALUATOR = "semantic.judge"
SEMANTIC_EVALUATOR_VERSION = "1.0.0"
SEMANTIC_FAIL = "SEMANTIC_FAIL"
EVALUATION_ERROR = "EVALUATION_ERROR"
EVALUATOR_ERROR = "EVALUATOR_ERROR"
DEFAULT_THRESHOLD = 0.7


def semantic_passes(verdict: JudgeVerdict, threshold: float) -> bool:
    """The one pass rule for judged answers (grading and calibration both use it)."""
    return verdict.label == LABEL_PASS and verdict.score >= threshold


def judged_by(identity: JudgeIdentity, calibrated: bool) -> str:
    state = "calibrated" if calibrated else "not calibrated"
    tail = "" if identity.is_language_model else f" — {NOT_A_LANGUAGE_MODEL}"
    return f"Judged by {identity.provider} {identity.model} ({identity.prompt_version}, {state}){tail}."


def judge_case(
    graded: GradedCase,
    judge: Judge,
    *,
    budget: JudgeBudget,
    cache: VerdictCache,
    threshold_default: float = DEFAULT_THRESHOLD,
    calibrated_criteria: Collection[str] = frozenset(),
    semantic_timeout_s: float | None = DEFAULT_SEMANTIC_TIMEOUT_S,
) -> GradedCase:
    """Judge this side's SKIPPED semantic results; only a side where the agent actually ran is judged."""
    case: CaseRun = graded.case
    if not case.agent_ran:
        return graded
    raw_by_id = {expectation_meta(raw, i).id: raw for i, raw in enumerate(case.expectations)}
    grader = _Grader(
        judge, budget, cache, threshold_default, frozenset(calibrated_criteria), semantic_timeout_s
    )
    results = case_mask(case).value(  # a judge's rationale may quote the reply: secrets masked
        tuple(
            grader.grade(result, raw_by_id[result.expectation.id], case)
            if _awaits_judge(result, raw_by_id)
            else result
            for result in graded.results
        )
    )
    if results == graded.results:
        return graded
    return replace(
        graded,
        results=results,
        verdict=case_verdict(results, graded.evaluator_version),
        verified=verified_outcome(
            results, case.claimed_outcome, case.business_outcome, graded.evaluator_version
        ),
    )


def _awaits_judge(result: ExpectationResult, raw_by_id: Mapping[str, JSON]) -> bool:
    return (
        result.expectation.type == SEMANTIC_TYPE
        and result.status == SKIPPED
        and result.expectation.id in raw_by_id
    )


class _Grader:
    def __init__(
        self,
        judge: Judge,
        budget: JudgeBudget,
        cache: VerdictCache,
        threshold_default: float,
        calibrated_criteria: frozenset[str],
        timeout_s: float | None,
    ) -> None:
        self.judge = judge
        self.identity = judge.identity
        self.budget = budget
        self.cache = cache
        self.threshold_default = threshold_default
        self.calibrated_criteria = calibrated_criteria
        self.timeout_s = timeout_s

    def grade(self, original: ExpectationResult, raw: Mapping[str, JSON], case: CaseRun) -> ExpectationResult:
        def result(status: str, reason: str, **fields: Any) -> ExpectationResult:
            return ExpectationResult(
                status=status,
                reason=reason,
                evaluator=SEMANTIC_EVALUATOR,
                evaluator_version=SEMANTIC_EVALUATOR_VERSION,
                expectation=original.expectation,
                **fields,
            )

        asked = raw.get("judge")
        if isinstance(asked, str) and asked and not _names_judge(asked, self.identity):
            mine = f"{self.identity.provider} {self.identity.model}"
            return result(
                SKIPPED, f"Not judged: the expectation asks for judge {asked}; this run's judge is {mine}."
            )
        rubric, threshold = raw.get("rubric"), raw.get("threshold", self.threshold_default)
        if not isinstance(rubric, str) or not rubric.strip():
            return result(ERROR, "A semantic expectation needs a non-empty rubric.", label=EVALUATOR_ERROR)
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold <= 1:
            return result(
                ERROR, f"threshold must be a number in [0, 1], got {threshold!r}.", label=EVALUATOR_ERROR
            )
        if case.output is None or not case.output.strip():
            return result(
                FAIL,
                "The agent gave no answer to judge.",
                score=0.0,
                label=SEMANTIC_FAIL,
                evidence=(Evidence(kind="output", detail="No answer."),),
            )
        category = raw.get("category")
        reference = raw.get("reference")
        request = build_request(
            category=category if isinstance(category, str) else None,
            rubric=rubric,
            customer_message=case.input_message,
            answer=case.output,
            records=case.records,
            reference=reference if isinstance(reference, str) else None,
        )
        calibrated = request.criterion in self.calibrated_criteria
        config = Evidence(kind="config", detail=judged_by(self.identity, calibrated))
        details: dict[str, JSON] = {
            "judge": self.identity.to_dict(),
            "criterion": request.criterion,
            "calibrated": calibrated,
            "threshold": float(threshold),
            "omitted_tool_calls": request.omitted_tool_calls,
        }
        key = cache_key(self.identity, request)
        verdict = self.cache.get(key)
        if verdict is None:
            spent = self.budget.spent_reason()
            if spent is not None:
                details["budget"] = self.budget.usage().to_dict()
                return result(
                    SKIPPED,
                    f"Not judged: this run's judge budget is spent ({spent}).",
                    label=JUDGE_BUDGET_SPENT,
                    evidence=(config,),
                    details=details,
                )
            outcome = ask_judge(self.judge, request, self.timeout_s)
            if isinstance(outcome, JudgeFailure) and outcome.kind == UNDECIDED:
                self.budget.charge(0.0 if not self.identity.is_language_model else None)
                return result(
                    SKIPPED,
                    f"Not decided: the judge could not tell ({outcome.message}).",
                    label=JUDGE_UNDECIDED,
                    evidence=(config,),
                    details=details,
                )
            if isinstance(outcome, JudgeFailure):
                self.budget.charge(None)  # the call was made; what it cost is unknown
                details["error_kind"] = outcome.kind
                return result(
                    ERROR,
                    f"The judge gave no verdict ({outcome.kind}): {outcome.message}",
                    label=EVALUATION_ERROR,
                    evidence=(config,),
                    details=details,
                )
            self.budget.charge(outcome.cost_usd)
            verdict = outcome
            self.cache.put(key, verdict)
        return self._judged(result, verdict, float(threshold), config, details)

    def _judged(
        self,
        result: Callable[..., ExpectationResult],
        verdict: JudgeVerdict,
        threshold: float,
        config: Evidence,
        details: dict[str, JSON],
    ) -> ExpectationResult:
        passed = semantic_passes(verdict, threshold)
        summary = (
            f"(label {verdict.label}, score {verdict.score:.2f}, threshold {threshold:.2f}, "
            f"confidence {verdict.confidence:.2f})"
        )
        quotes = tuple(
            Evidence(kind=_evidence_kind(q.ref), detail=q.quote, ref=q.ref) for q in verdict.evidence
        )
        details.update(
            judge_label=verdict.label,
            confidence=verdict.confidence,
            tokens=verdict.tokens,
            cost_usd=verdict.cost_usd,
            unsupported_quotes=verdict.unsupported_quotes,
        )
        return result(
            PASS if passed else FAIL,
            f"{verdict.reason} {summary}",
            score=verdict.score,
            label=None if passed else SEMANTIC_FAIL,
            evidence=(config, *quotes),
            details=details,
        )


def _names_judge(asked: str, identity: JudgeIdentity) -> bool:
    wanted = asked.strip().casefold()
    names = {
        "fake" if identity.kind == KIND_FAKE else identity.provider,
        identity.provider,
        identity.model,
        identity.kind,
        f"{identity.provider}:{identity.model}",
        f"{identity.provider}/{identity.model}",
    }
    return wanted in {n.casefold() for n in names}


def _evidence_kind(ref: str) -> str:
    if ref == "answer":
        return "output"
    if ref.startswith("tool_call:"):
        return "tool_call"
    return "config"  # the customer message or the reference: scenario material
