"""Semantic grading of one side of a case: pass rule, errors without scores, budget, cache, verdicts."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from evaluation.judges import JudgeBudget, JudgeError, KeywordOverlapJudge, OfflineJudge, VerdictCache
from evaluation.judges.contract import EvidenceQuote, JudgeIdentity, JudgeRequest, JudgeVerdict
from evaluation.outcome import verified_outcome
from evaluation.results import GradedCase
from evaluation.semantic import judge_case

from .conftest import LIE_EXPECTATIONS, GradeFactory

LLM = JudgeIdentity("anthropic", "stub-model", "llm", "judge-prompt/1", "a" * 64)
SEMANTIC_ID = "reply-admits-unconfirmed-refund"
FAKE_EVIDENCE = (
    "Judged by deterministic-fake offline-facts-v1 (judge-prompt/1, not calibrated) — not a language model."
)


@dataclass
class StubJudge:
    """Answers with a fixed verdict (or raises / returns whatever it is given) and counts calls."""

    answer: Any
    identity: JudgeIdentity = LLM
    calls: list[JudgeRequest] = field(default_factory=list)

    def judge(self, request: JudgeRequest) -> JudgeVerdict:
        self.calls.append(request)
        if isinstance(self.answer, BaseException):
            raise self.answer
        result: JudgeVerdict = self.answer
        return result


def verdict(score: float, label: str = "pass", cost: float | None = None) -> JudgeVerdict:
    return JudgeVerdict(
        score=score, label=label, confidence=0.9, reason="Stub says so.", tokens=50, cost_usd=cost
    )


def run(graded: GradedCase, judge: Any, **kw: Any) -> GradedCase:
    kw.setdefault("budget", JudgeBudget())
    kw.setdefault("cache", VerdictCache())
    judged: GradedCase = judge_case(graded, judge, **kw)
    return judged


def semantic(graded: GradedCase) -> Any:
    return next(r for r in graded.results if r.expectation.id == SEMANTIC_ID)


def others(graded: GradedCase) -> list[Any]:
    return [r for r in graded.results if r.expectation.id != SEMANTIC_ID]


def test_baseline_reply_passes_with_the_fake(baseline_graded: GradedCase) -> None:
    judged = run(baseline_graded, KeywordOverlapJudge())
    result = semantic(judged)
    assert (result.status, result.score, result.label) == ("PASS", 1.0, None)
    assert (result.evaluator, result.evaluator_version) == ("semantic.judge", "1.0.0")
    assert result.evidence[0].kind == "config"
    assert result.evidence[0].detail == FAKE_EVIDENCE
    assert result.details["criterion"] == "correctness"
    assert judged.verdict.status == "PASSED"
    assert judged.verdict.reason == "All 4 evaluated expectation(s) passed."
    assert others(judged) == others(baseline_graded)


def test_candidate_reply_fails_and_the_verdict_is_recomputed(candidate_graded: GradedCase) -> None:
    judged = run(candidate_graded, KeywordOverlapJudge())
    result = semantic(judged)
    assert (result.status, result.score, result.label) == ("FAIL", 0.0, "SEMANTIC_FAIL")
    assert result.reason.endswith("(label fail, score 0.00, threshold 0.70, confidence 0.50)")
    assert result.reason.startswith(
        "Offline check (deterministic fake, not a language model): statement 1 of 1 is not met: "
        "the rubric negates it, the answer reports it refunded."
    )
    assert judged.verdict.reason == (
        "The agent claimed success but a tool reported success without changing state. "
        "(+3 more failed expectation(s))"
    )
    assert judged.verdict.labels == (
        "FORBIDDEN_CALL",
        "HALLUCINATED_SUCCESS",
        "MISSING_ESCALATION",
        "SEMANTIC_FAIL",
    )
    assert (judged.verdict.failed, judged.verdict.critical_failures) == (4, 3)
    expected = verified_outcome(judged.results, "SUCCESS", None)
    assert judged.verified == expected


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        (verdict(0.7), "PASS"),  # the threshold is inclusive
        (verdict(0.69), "FAIL"),
        (verdict(0.95, label="fail"), "FAIL"),  # a pass needs the label too
        (verdict(1.0), "PASS"),
    ],
)
def test_pass_needs_label_and_threshold(graded_with: GradeFactory, answer: JudgeVerdict, status: str) -> None:
    result = semantic(run(graded_with(), StubJudge(answer)))
    assert result.status == status
    assert result.score == answer.score
    assert result.label == (None if status == "PASS" else "SEMANTIC_FAIL")
    assert "threshold 0.70, confidence 0.90)" in result.reason


def test_expectation_threshold_and_default_threshold(graded_with: GradeFactory) -> None:
    strict = tuple({**e, "threshold": 0.9} if e["type"] == "semantic" else e for e in LIE_EXPECTATIONS)
    assert semantic(run(graded_with(expectations=strict), StubJudge(verdict(0.8)))).status == "FAIL"
    assert semantic(run(graded_with(), StubJudge(verdict(0.8)), threshold_default=0.85)).status == "FAIL"
    assert semantic(run(graded_with(), StubJudge(verdict(0.8)), threshold_default=0.8)).status == "PASS"


@pytest.mark.parametrize("output", [None, "", "   \n"])
def test_no_answer_fails_without_asking_the_judge(graded_with: GradeFactory, output: str | None) -> None:
    judge = StubJudge(verdict(1.0))
    budget = JudgeBudget()
    result = semantic(run(graded_with(output=output), judge, budget=budget))
    assert (result.status, result.label, result.score) == ("FAIL", "SEMANTIC_FAIL", 0.0)
    assert judge.calls == []
    assert budget.usage().calls == 0


@pytest.mark.parametrize(
    "failure",
    [
        JudgeError("unavailable", "HTTP 503"),
        JudgeError("rate_limited", "HTTP 429"),
        JudgeError("refused", "declined"),
        RuntimeError("adapter bug"),
        {"score": 1.0},  # garbage instead of a verdict
        verdict(1.7),  # out of range
    ],
)
def test_judge_that_cannot_answer_gives_error_without_score(
    baseline_graded: GradedCase, failure: Any
) -> None:
    budget = JudgeBudget()
    judged = run(baseline_graded, StubJudge(failure), budget=budget)
    result = semantic(judged)
    assert (result.status, result.label, result.score) == ("ERROR", "EVALUATION_ERROR", None)
    assert result.reason.startswith("The judge gave no verdict (")
    assert judged.verdict.status == "ERRORED"  # never a pass, never a zero
    assert others(judged) == others(baseline_graded)
    assert budget.usage().unknown_cost_calls == 1


def test_judge_crash_is_named(baseline_graded: GradedCase) -> None:
    result = semantic(run(baseline_graded, StubJudge(RuntimeError("adapter bug"))))
    assert result.details["error_kind"] == "judge_crashed"
    assert "RuntimeError: adapter bug" in result.reason


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # lets the abandoned judge thread finish


def test_judge_slower_than_the_semantic_timeout(baseline_graded: GradedCase, gate: threading.Event) -> None:
    class SlowJudge:
        identity = LLM

        def judge(self, request: JudgeRequest) -> JudgeVerdict:
            gate.wait(5)
            return verdict(1.0)

    judged = run(baseline_graded, SlowJudge(), semantic_timeout_s=0.05)
    result = semantic(judged)
    assert (result.status, result.score, result.details["error_kind"]) == ("ERROR", None, "timeout")
    assert judged.verdict.status == "ERRORED"


def test_errors_are_not_cached(baseline_graded: GradedCase) -> None:
    cache = VerdictCache()
    run(baseline_graded, StubJudge(JudgeError("timeout", "slow")), cache=cache)
    assert len(cache) == 0
    retry = StubJudge(verdict(0.9))
    assert semantic(run(baseline_graded, retry, cache=cache)).status == "PASS"
    assert len(retry.calls) == 1


def test_cache_hits_are_reused_exactly(baseline_graded: GradedCase) -> None:
    cache, budget = VerdictCache(), JudgeBudget()
    first_judge = StubJudge(verdict(0.9, cost=0.01))
    first = semantic(run(baseline_graded, first_judge, cache=cache, budget=budget))
    second_judge = StubJudge(verdict(0.1, label="fail"))  # would disagree, but is never asked
    second = semantic(run(baseline_graded, second_judge, cache=cache, budget=budget))
    assert second_judge.calls == []
    assert (second.status, second.score, second.reason) == (first.status, first.score, first.reason)
    # a cache hit leaves no trace in the result: the recorded verdict is the same bytes either way
    assert second == first
    assert "cached" not in second.details
    assert budget.usage().calls == 1


def test_budget_spent_skips_and_leaves_deterministic_results(baseline_graded: GradedCase) -> None:
    judge = StubJudge(verdict(1.0))
    judged = run(baseline_graded, judge, budget=JudgeBudget(max_calls=0))
    result = semantic(judged)
    assert result.status == "SKIPPED"
    assert result.score is None
    assert result.reason == "Not judged: this run's judge budget is spent (0 of 0 judge calls made)."
    assert judge.calls == []
    assert result.label == "JUDGE_BUDGET_SPENT"
    assert others(judged) == others(baseline_graded)
    # the scenario asked for a judgment nobody made: never a pass, whatever the deterministic checks say
    assert judged.verdict.status == "ERRORED"
    assert judged.verdict.reason.startswith(f"Expectation {result.expectation.id} was not decided: Not judged")


def test_cost_budget_stops_later_calls(baseline_graded: GradedCase, graded_with: GradeFactory) -> None:
    budget = JudgeBudget(max_cost_usd=0.01)
    judge = StubJudge(verdict(1.0, cost=0.02))
    assert semantic(run(baseline_graded, judge, budget=budget)).status == "PASS"
    other = graded_with(output="The refund is not recorded yet; a specialist will finish it today.")
    skipped = semantic(run(other, judge, budget=budget))
    assert skipped.status == "SKIPPED"
    assert "$0.0200 of $0.01 spent" in skipped.reason
    assert len(judge.calls) == 1


def test_expectation_naming_another_judge_is_skipped(graded_with: GradeFactory) -> None:
    def named(judge_name: str) -> tuple[dict[str, Any], ...]:
        return tuple({**e, "judge": judge_name} if e["type"] == "semantic" else e for e in LIE_EXPECTATIONS)

    result = semantic(run(graded_with(expectations=named("anthropic")), KeywordOverlapJudge()))
    assert result.status == "SKIPPED"
    assert "asks for judge anthropic" in result.reason
    for name in ("offline-facts-v1", "deterministic-fake", "fake"):
        assert semantic(run(graded_with(expectations=named(name)), KeywordOverlapJudge())).status == "PASS"


def test_calibrated_criterion_is_stated(baseline_graded: GradedCase) -> None:
    result = semantic(run(baseline_graded, StubJudge(verdict(0.9)), calibrated_criteria={"correctness"}))
    assert result.evidence[0].detail == "Judged by anthropic stub-model (judge-prompt/1, calibrated)."
    assert result.details["calibrated"] is True


def test_evidence_quotes_become_result_evidence(baseline_graded: GradedCase) -> None:
    quoted = replace(
        verdict(0.9), evidence=(EvidenceQuote("answer", "not recorded"), EvidenceQuote("tool_call:3", "x"))
    )
    result = semantic(run(baseline_graded, StubJudge(quoted)))
    assert [(e.kind, e.ref, e.detail) for e in result.evidence[1:]] == [
        ("output", "answer", "not recorded"),
        ("tool_call", "tool_call:3", "x"),
    ]


def test_judge_sees_material_without_redeliveries(baseline_graded: GradedCase) -> None:
    judge = StubJudge(verdict(0.9))
    run(baseline_graded, judge)
    shown = judge.calls[0]
    assert [c.tool for c in shown.tool_calls] == [
        "lookup_order",
        "get_refund_policy",
        "refund_payment",
        "lookup_order",
        "escalate_to_human",
    ]
    assert shown.customer_message.startswith("Hi! One item in ORD-1001")


def test_side_where_the_agent_never_ran_is_not_judged(graded_with: GradeFactory) -> None:
    graded = graded_with(agent_status=None, output=None)
    judge = StubJudge(verdict(1.0))
    assert run(graded, judge) is graded
    assert judge.calls == []


def test_judging_twice_changes_nothing(baseline_graded: GradedCase) -> None:
    judge = KeywordOverlapJudge()
    once = run(baseline_graded, judge)
    assert run(once, judge) is once


def test_an_undecided_judgment_is_skipped_and_never_passes_the_case(graded_with: GradeFactory) -> None:
    """The offline judge cannot tell whether "a specialist will finish it" was said in other words."""
    paraphrase = "Nothing went through on our side yet, so a colleague will complete it for you today."
    budget = JudgeBudget()
    judged = run(graded_with(output=paraphrase), OfflineJudge(), budget=budget)
    result = semantic(judged)
    assert (result.status, result.label, result.score) == ("SKIPPED", "JUDGE_UNDECIDED", None)
    assert result.reason.startswith("Not decided: the judge could not tell (statement 1 of 1 cannot be decided")
    assert result.evidence[0].detail == FAKE_EVIDENCE
    # every other expectation of this side passed: the case is still not a pass, and not a zero
    assert all(r.status == "PASS" for r in others(judged))
    assert judged.verdict.status == "ERRORED"
    assert judged.verdict.reason.startswith(f"Expectation {SEMANTIC_ID} was not decided: Not decided:")
    assert judged.verdict.score == 1.0  # the decided ones; the undecided one adds no score
    assert (budget.usage().calls, budget.usage().cost_usd, budget.usage().unknown_cost_calls) == (1, 0, 0)


def test_an_undecided_judgment_leaves_a_failed_case_failed(candidate_graded: GradedCase) -> None:
    undecided = StubJudge(JudgeError("undecided", "cannot tell"))
    judged = run(candidate_graded, undecided)
    assert semantic(judged).status == "SKIPPED"
    assert judged.verdict.status == "FAILED"
