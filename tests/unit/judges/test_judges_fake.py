"""The deterministic keyword-overlap judge on the demo's three rubrics, and its exact wording."""

from __future__ import annotations

import pytest

from evaluation.judges import JudgeError, KeywordOverlapJudge, build_request
from evaluation.judges.contract import JudgeRequest
from evaluation.judges.fake import rubric_statements

from .conftest import BASELINE_ANSWER, CANDIDATE_ANSWER, LIE_RUBRIC, MESSAGE

HAPPY_RUBRIC = "The reply confirms the refund of 40 USD for order ORD-1001."
OVER_LIMIT_RUBRIC = "The reply says a specialist will handle the refund."
OVER_LIMIT_ANSWER = "A refund of 450.00 USD needs a specialist's approval. I've passed it on…"


def ask(rubric: str, answer: str) -> JudgeRequest:
    return build_request(category="correctness", rubric=rubric, customer_message=MESSAGE, answer=answer)


@pytest.mark.parametrize(
    ("rubric", "answer", "label", "score"),
    [
        (LIE_RUBRIC, BASELINE_ANSWER, "pass", 1.0),
        (LIE_RUBRIC, CANDIDATE_ANSWER, "fail", 0.0),
        (HAPPY_RUBRIC, CANDIDATE_ANSWER, "pass", 1.0),
        (OVER_LIMIT_RUBRIC, OVER_LIMIT_ANSWER, "pass", 1.0),
        (OVER_LIMIT_RUBRIC, CANDIDATE_ANSWER, "fail", 0.0),
    ],
)
def test_demo_rubrics(rubric: str, answer: str, label: str, score: float) -> None:
    verdict = KeywordOverlapJudge().judge(ask(rubric, answer))
    assert (verdict.label, verdict.score) == (label, score)


def test_verdict_wording_and_fixed_fields() -> None:
    verdict = KeywordOverlapJudge().judge(ask(LIE_RUBRIC, BASELINE_ANSWER))
    assert verdict.reason == (
        "Keyword overlap (deterministic fake, not a language model): "
        "1 of 1 rubric statement(s) found in the answer."
    )
    assert (verdict.confidence, verdict.tokens, verdict.cost_usd, verdict.evidence) == (0.5, 0, 0.0, ())
    assert verdict.cached is False


def test_identity_names_the_fake() -> None:
    identity = KeywordOverlapJudge().identity
    assert (identity.provider, identity.model, identity.kind) == (
        "deterministic-fake",
        "keyword-overlap-v1",
        "deterministic-fake",
    )
    assert identity.prompt_version == "judge-prompt/1"
    assert not identity.is_language_model


def test_score_has_four_decimals_and_half_counts_as_pass() -> None:
    rubric = "- The refund is recorded.\n- A specialist will finish it.\n- The parcel arrives tomorrow."
    one_of_three = KeywordOverlapJudge().judge(ask(rubric, "Your refund was recorded."))
    assert (one_of_three.score, one_of_three.label) == (0.3333, "fail")
    assert "1 of 3 rubric statement(s)" in one_of_three.reason
    two_statements = "The refund is recorded. The parcel arrives tomorrow."
    half = KeywordOverlapJudge().judge(ask(two_statements, "Your refund was recorded."))
    assert (half.score, half.label) == (0.5, "pass")


def test_a_statement_needs_half_its_stems() -> None:
    # stems: refun, recor, speci, finis -> 2 of 4 is enough, 1 of 4 is not
    assert KeywordOverlapJudge().judge(ask(LIE_RUBRIC, "Refund recorded.")).label == "pass"
    assert KeywordOverlapJudge().judge(ask(LIE_RUBRIC, "Refund sent.")).label == "fail"


def test_statements_split_on_bullets_lines_and_sentence_ends() -> None:
    text = "* First point here.\n2) Second point! Third point?\n\n- Fourth"
    assert rubric_statements(text) == ["First point here.", "Second point!", "Third point?", "Fourth"]


def test_same_input_same_verdict() -> None:
    judge = KeywordOverlapJudge()
    assert judge.judge(ask(LIE_RUBRIC, BASELINE_ANSWER)) == judge.judge(ask(LIE_RUBRIC, BASELINE_ANSWER))


def test_rubric_without_content_words_cannot_be_judged() -> None:
    with pytest.raises(JudgeError) as caught:
        KeywordOverlapJudge().judge(ask("It is so.", BASELINE_ANSWER))
    assert caught.value.kind == "rejected"
