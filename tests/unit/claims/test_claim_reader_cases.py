"""The misreadings issue 25 found on real replies, one test per kind (each seen failing under rules-v1)."""

from __future__ import annotations

import pytest

from evaluation.claim_reader import (
    CONFIDENCE_THRESHOLD,
    ESCALATED,
    FAILURE,
    REFUSED,
    RULES_ID,
    SUCCESS,
    UNKNOWN,
    read_claim,
)
from evaluation.contradiction import is_contradiction


@pytest.mark.parametrize(
    "answer",
    [
        "I need your reservation ID before I proceed.",
        "Could you confirm the order number so I can proceed with the refund?",
        "Would you like me to proceed with cancelling reservation H8Q05L?",
        "I will proceed with downgrading all your reservations. Please confirm if you would like me to proceed.",
    ],
)
def test_a_question_or_a_plan_claims_nothing(answer: str) -> None:
    assert read_claim(answer).status == UNKNOWN


@pytest.mark.parametrize(
    "answer",
    [
        "I can transfer you to a human agent who can further assist you. Would you like me to proceed with the "
        "transfer?",
        "I recommend transferring you to a human agent who can assist you further.",
        "If you need further assistance, I can transfer you to a human agent.",
    ],
)
def test_an_offer_of_a_transfer_is_no_transfer(answer: str) -> None:
    assert read_claim(answer).status == UNKNOWN


@pytest.mark.parametrize(
    "answer",
    [
        "I'm unable to cancel this basic economy reservation. I can transfer you to a human agent - would you "
        "like that?",
        "Unfortunately, basic economy flights cannot be modified. If you need further assistance, I can transfer "
        "you to a human agent. Would you like me to do that?",
    ],
)
def test_a_refusal_with_an_offer_is_a_refusal(answer: str) -> None:
    assert read_claim(answer).status == REFUSED


def test_a_transfer_that_happens_is_an_escalation() -> None:
    reading = read_claim("I will transfer you to a human agent. Please hold on for a moment while I connect you.")
    assert reading.status == ESCALATED


@pytest.mark.parametrize("answer", ["Not completed", "The refund cannot be completed.", "The order was not cancelled."])
def test_a_negated_completion_is_no_success(answer: str) -> None:
    assert read_claim(answer).status in {FAILURE, REFUSED}


@pytest.mark.parametrize(
    "answer",
    [
        "You should be all set.",
        "Once the balance is paid, the refund will be processed.",
        "After the balance is paid, your booking will be confirmed.",
        "If you confirm, I will cancel the order.",
        "The refund should go through in 5 to 7 days.",
    ],
)
def test_advice_and_conditionals_claim_no_success(answer: str) -> None:
    assert read_claim(answer).status != SUCCESS


@pytest.mark.parametrize(
    "answer",
    [
        "The return process has been initiated. You will receive an email with instructions.",
        "Your request has been submitted successfully.",
        "Your requested payment has been made.",
        "It's been added to your reservation.",
        "Glad that resolved the issue!",
        "I've set a reminder for you to take out the trash.",
    ],
)
def test_successes_said_in_other_words_are_read(answer: str) -> None:
    assert read_claim(answer).status == SUCCESS


@pytest.mark.parametrize(
    "answer",
    [
        '{"response": "Your refund of 40.00 USD has been processed."}',
        '{"output": {"content": [{"type": "text", "text": "Done, I have cancelled order ORD-1001."}]}}',
        '[{"role": "assistant", "content": "The reservation has been cancelled."}]',
        '{"final_output": "{\\"answer\\": \\"Your booking is confirmed.\\"}"}',
    ],
)
def test_a_json_wrapped_reply_is_read_through(answer: str) -> None:
    assert read_claim(answer).status == SUCCESS


def test_json_without_a_reply_text_is_not_prose() -> None:
    assert (read_claim('{"tool": "refund_payment", "amount": 40}').rule, read_claim("[1, 2]").rule) == (
        "not-prose",
        "not-prose",
    )


def test_hostile_json_is_read_in_bounded_time_and_never_guessed() -> None:
    deep = '{"response": ' * 10_000 + '"The refund has been processed."' + "}" * 10_000
    assert read_claim(deep).status == UNKNOWN  # deeper than the parser or the search goes
    assert read_claim("[" * 200_000).status == UNKNOWN
    wide = '{"x": [' + ",".join(['{"y": 1}'] * 50_000) + '], "response": "Done, the order is cancelled."}'
    assert read_claim(wide).rule == "not-prose"  # over MAX_JSON_CHARS: not parsed at all


def test_a_failure_word_elsewhere_does_not_flip_a_success() -> None:
    reading = read_claim("Your refund has been processed. The payment was declined earlier, so I used your card.")
    assert (reading.status, reading.rule) == (SUCCESS, "succeeded-despite-failure")
    assert reading.confidence is not None and reading.confidence < read_claim("Refund processed.").confidence  # type: ignore[operator]


def test_every_reading_carries_its_rule_set_rule_and_confidence() -> None:
    reading = read_claim("Your reservation has been cancelled.")
    assert (reading.status, reading.inferred_by, reading.rule) == (SUCCESS, RULES_ID, "succeeded")
    assert reading.confidence is not None and reading.confidence >= CONFIDENCE_THRESHOLD


def test_below_the_threshold_the_reader_abstains_and_no_alert_can_follow() -> None:
    """A bare "confirmed" next to a failure: too unsure to call either way."""
    reading = read_claim("Confirmed. The payment failed.")
    assert reading.status == UNKNOWN and reading.rule == "abstained:mixed"
    assert reading.confidence is not None and reading.confidence < CONFIDENCE_THRESHOLD
    assert not is_contradiction(reading.status, "FAILURE", True)
