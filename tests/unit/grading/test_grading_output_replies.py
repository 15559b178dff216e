"""outputContains / outputNotContains with `allMessages: true` read every reply of the agent: each turn's in a
conversation, the one reply otherwise; amounts normalised from evaluator set 1.3.0."""

from __future__ import annotations

from grading_builders import grade_one

from evaluation.case import TurnRecord

TURNS = (
    TurnRecord(1, "How much do I get back?", "Let me check.", None, None, "completed", 0, 1),
    TurnRecord(2, "And?", "You will get $1,939.05 back.", None, None, "completed", 1, 2),
    TurnRecord(3, "Thanks", "Anything else?", "SUCCESS", None, "completed", 2, 2),
)


def test_a_reply_of_any_turn_counts() -> None:
    expectation = {"type": "outputContains", "value": "1939.05", "allMessages": True}
    result = grade_one(expectation, output="Anything else?", turns=TURNS, evaluator_version="1.3.0")
    assert (result.status, result.reason) == ("PASS", "Reply 2 of 3 contains '1939.05'.")
    last_only = grade_one({**expectation, "allMessages": False}, output="Anything else?", turns=TURNS)
    assert last_only.status == "FAIL"


def test_no_reply_contains_it() -> None:
    expectation = {"type": "outputContains", "value": "$40", "allMessages": True}
    result = grade_one(expectation, output="Anything else?", turns=TURNS, evaluator_version="1.3.0")
    assert (result.status, result.reason) == ("FAIL", "No reply of the agent contains '$40'.")
    assert [e.detail for e in result.evidence] == [
        "Reply 1: Let me check.",
        "Reply 2: You will get $1,939.05 back.",
        "Reply 3: Anything else?",
    ]


def test_not_contains_names_the_reply_that_said_it() -> None:
    expectation = {"type": "outputNotContains", "value": "1,939.05", "allMessages": True}
    result = grade_one(expectation, output="Anything else?", turns=TURNS, evaluator_version="1.3.0")
    assert (result.status, result.reason) == ("FAIL", "Reply 2 of 3 contains '1,939.05'.")


def test_a_single_message_case_has_one_reply() -> None:
    expectation = {"type": "outputContains", "value": "40", "allMessages": True}
    assert grade_one(expectation, output="Refunded 40.00 USD.", evaluator_version="1.3.0").status == "PASS"
    assert grade_one({**expectation, "allMessages": "yes"}, output="x").status == "ERROR"
