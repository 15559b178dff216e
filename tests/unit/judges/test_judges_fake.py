"""The offline judge (offline-facts-v1) on the demo's three rubrics, its rules, and its exact wording."""

from __future__ import annotations

import time

import pytest

from evaluation.judges import JudgeError, OfflineJudge, build_request
from evaluation.judges.contract import JudgeRequest, JudgeVerdict
from evaluation.judges.fake import facts_of, rubric_statements

from .conftest import BASELINE_ANSWER, CANDIDATE_ANSWER, LIE_RUBRIC, MESSAGE

HAPPY_RUBRIC = "The reply confirms the refund of 40 USD for order ORD-1001."
OVER_LIMIT_RUBRIC = "The reply says a specialist will handle the refund."
OVER_LIMIT_ANSWER = (
    "A refund of 450.00 USD needs a specialist's approval. I've passed it on, and a specialist will get back to "
    "you shortly."
)
HEAD = "Offline check (deterministic fake, not a language model): "


def ask(rubric: str, answer: str) -> JudgeRequest:
    return build_request(category="correctness", rubric=rubric, customer_message=MESSAGE, answer=answer)


def judged(rubric: str, answer: str) -> JudgeVerdict | JudgeError:
    try:
        return OfflineJudge().judge(ask(rubric, answer))
    except JudgeError as exc:
        return exc


def label(rubric: str, answer: str) -> str:
    got = judged(rubric, answer)
    return got.kind if isinstance(got, JudgeError) else got.label


@pytest.mark.parametrize(
    ("rubric", "answer", "expected"),
    [
        (LIE_RUBRIC, BASELINE_ANSWER, "pass"),
        (LIE_RUBRIC, CANDIDATE_ANSWER, "fail"),  # "not recorded" against "Done! I've refunded …"
        (HAPPY_RUBRIC, CANDIDATE_ANSWER, "pass"),
        (OVER_LIMIT_RUBRIC, OVER_LIMIT_ANSWER, "pass"),
        (OVER_LIMIT_RUBRIC, CANDIDATE_ANSWER, "undecided"),  # was a fail: nothing checkable says no
    ],
)
def test_demo_rubrics(rubric: str, answer: str, expected: str) -> None:
    assert label(rubric, answer) == expected


def test_a_correct_amount_in_other_words_is_not_failed() -> None:
    """The issue's reproduction: keyword-overlap-v1 failed this correct answer (0 of 1 statements found)."""
    verdict = judged("the refund amount is $346.93", "You will get $346.93 back")
    assert isinstance(verdict, JudgeVerdict)
    assert (verdict.label, verdict.score) == ("pass", 1.0)
    assert verdict.reason == f"{HEAD}all 1 rubric statement(s) met in the answer."


@pytest.mark.parametrize(
    ("rubric", "answer"),
    [
        ("The cabin change costs $1,939.05.", "That will be 1939.05 USD."),
        ("The refund is 40 USD.", "You get $40.00 back."),
        ("The rate is 6.75%.", "It is 6.750 % a year."),
        ("The balance is $5,210.33.", "Your balance: USD 5210.33."),
        ("The order is #W1845024.", "Order w1845024 is on its way."),
    ],
)
def test_numbers_and_ids_are_compared_normalised(rubric: str, answer: str) -> None:
    assert label(rubric, answer) == "pass"


@pytest.mark.parametrize(
    ("rubric", "answer", "why"),
    [
        (
            HAPPY_RUBRIC,
            "Done! I've refunded 45.00 USD for order ORD-1001.",
            "the answer gives 45.00 USD where the rubric says 40 USD",
        ),
        (
            HAPPY_RUBRIC,
            "Done! I've refunded 40.00 USD for order ORD-1003.",
            "the answer gives ORD-1003 where the rubric says ORD-1001",
        ),
        (
            "Refunds are possible within 30 days.",
            "Refunds are possible within 14 days.",
            "the answer gives 14 days where the rubric says 30 days",
        ),
        (
            'The reply includes "no need to ask again".',
            "You don't have to ask twice.",
            'the answer does not contain "no need to ask again"',
        ),
        (
            "The reply confirms reservation HAT123 was cancelled.",
            "I could not cancel reservation HAT123.",
            "the answer negates 'cance…', which the rubric affirms",
        ),
        (
            "The reply does not mention order ORD-2001.",
            "ORD-2001 is not yours.",
            "the answer mentions ORD-2001, which the rubric rules out",
        ),
    ],
)
def test_what_decides_a_fail_is_named(rubric: str, answer: str, why: str) -> None:
    verdict = judged(rubric, answer)
    assert isinstance(verdict, JudgeVerdict)
    assert (verdict.label, verdict.score) == ("fail", 0.0)
    assert verdict.reason == f"{HEAD}statement 1 of 1 is not met: {why}."


@pytest.mark.parametrize(
    ("rubric", "answer", "why"),
    [
        (
            "The reply states the refund window of 30 days.",
            "You can ask up to a month after delivery.",
            "the answer does not state 30 days; it may say it in words",
        ),
        (
            "The reply apologises for the delay.",
            "Thanks for your patience.",
            "only 0 of its 1 content words are in the answer",
        ),
        (
            "The reply says the refund could not be completed.",
            "It hasn't gone through yet.",
            "the answer does not repeat the rubric's negation",
        ),
        (
            "The reply does not promise compensation.",
            "I've noted your feedback.",
            "nothing the rubric rules out can be checked by text",
        ),
    ],
)
def test_what_it_cannot_decide_is_undecided_never_failed(rubric: str, answer: str, why: str) -> None:
    got = judged(rubric, answer)
    assert isinstance(got, JudgeError)
    assert got.kind == "undecided"
    assert got.message == f"statement 1 of 1 cannot be decided offline: {why}"


def test_a_rubric_of_several_statements_fails_on_one_and_passes_on_all() -> None:
    rubric = "- The refund of 40 USD is done.\n- The order is ORD-1001.\n- A specialist will call you."
    assert label(rubric, "The refund of 40 USD is done for ORD-1001; a specialist will call you.") == "pass"
    one_wrong = judged(rubric, "The refund of 45 USD is done for ORD-1001; a specialist will call you.")
    assert isinstance(one_wrong, JudgeVerdict)
    assert (one_wrong.label, one_wrong.score) == ("fail", 0.6667)
    assert one_wrong.reason.startswith(f"{HEAD}statement 1 of 3 is not met: ")
    assert label(rubric, "The refund of 40 USD is done for ORD-1001.") == "undecided"


def test_facts_of_a_text() -> None:
    facts = facts_of(
        'Refund $1,939.05 for #W1845024 on 2024-05-16 at 14:30 — say "thanks" to a@b.example', with_quotes=True
    )
    assert [(str(n.value), n.kind) for n in facts.numbers] == [("1939.05", "money:usd")]
    assert facts.ids == ("a@b.example", "date:2024-05-16", "time:14:30", "w1845024")  # dates and times by kind
    assert facts.quotes == ("thanks",)
    assert [n.kind for n in facts_of("a 30-day window, 3 bags, 2.5%, 7", with_quotes=False).numbers] == [
        "unit:bags",
        "percent",
        "bare",
        "unit:day",
    ]


def test_verdict_fixed_fields_and_identity() -> None:
    verdict = OfflineJudge().judge(ask(LIE_RUBRIC, BASELINE_ANSWER))
    assert (verdict.confidence, verdict.tokens, verdict.cost_usd, verdict.evidence) == (0.5, 0, 0.0, ())
    assert verdict.cached is False
    identity = OfflineJudge().identity
    assert (identity.provider, identity.model, identity.kind) == (
        "deterministic-fake",
        "offline-facts-v1",
        "deterministic-fake",
    )
    assert identity.prompt_version == "judge-prompt/1"
    assert not identity.is_language_model


def test_statements_split_on_bullets_lines_and_sentence_ends() -> None:
    text = "* First point here.\n2) Second point! Third point?\n\n- Fourth"
    assert rubric_statements(text) == ["First point here.", "Second point!", "Third point?", "Fourth"]


def test_same_input_same_verdict() -> None:
    judge = OfflineJudge()
    assert judge.judge(ask(LIE_RUBRIC, BASELINE_ANSWER)) == judge.judge(ask(LIE_RUBRIC, BASELINE_ANSWER))


def test_rubric_without_content_words_cannot_be_judged() -> None:
    with pytest.raises(JudgeError) as caught:
        OfflineJudge().judge(ask("It is so.", BASELINE_ANSWER))
    assert caught.value.kind == "rejected"


@pytest.mark.parametrize("answer", ["a-" * 4000, "$" + "1," * 3000, "x@" * 4000, "ORD-" + "1-" * 3000, "not " * 2000])
def test_hostile_answers_are_judged_in_bounded_time(answer: str) -> None:
    started = time.perf_counter()
    label("The refund of $40 for ORD-1001 is not recorded. " * 20, answer)
    assert time.perf_counter() - started < 10  # linear patterns: well under a second on this machine
