"""outputContains / outputNotContains 1.1.0 (evaluator set 1.3.0): amounts compared normalised."""

from __future__ import annotations

import pytest
from grading_builders import grade_one

from evaluation.expectations._text import normalize_amounts


@pytest.mark.parametrize(
    ("value", "output"),
    [
        ("1939.05", "Your new total is $1,939.05."),
        ("$1,939.05", "Total: 1939.05 USD"),
        ("346.93", "You will get $346.93 back"),
        ("40 USD", "Done! I've refunded 40.00 USD for order ORD-1001."),
        ("€7.5", "a fee of €7.50"),
        ("30 days", "Delivered orders can be refunded within 30 days."),
        ("refunded 12,345", "We refunded 12345.00 today."),
    ],
)
def test_amounts_match_whatever_their_formatting(value: str, output: str) -> None:
    assert (
        grade_one({"type": "outputContains", "value": value}, output=output, evaluator_version="1.3.0").status == "PASS"
    )
    assert (
        grade_one({"type": "outputNotContains", "value": value}, output=output, evaluator_version="1.3.0").status
        == "FAIL"
    )


@pytest.mark.parametrize(
    ("value", "output"),
    [
        ("40", "We refunded 400 USD."),  # never a number inside a longer one
        ("1939.05", "Your total is $1,939.50."),
        ("1,939.05", "1,939.06"),
        ("40.5", "a fee of 40.55"),
    ],
)
def test_different_amounts_do_not_match(value: str, output: str) -> None:
    assert (
        grade_one({"type": "outputContains", "value": value}, output=output, evaluator_version="1.3.0").status == "FAIL"
    )


def test_the_earlier_version_compares_text_as_written() -> None:
    expectation = {"type": "outputContains", "value": "1939.05"}
    old = grade_one(expectation, output="Your new total is $1,939.05.", evaluator_version="1.2.0")
    assert (old.status, old.evaluator_version) == ("FAIL", "1.0.0")
    new = grade_one(expectation, output="Your new total is $1,939.05.", evaluator_version="1.3.0")
    assert (new.status, new.evaluator_version) == ("PASS", "1.1.0")


def test_identifiers_and_words_are_left_alone() -> None:
    assert normalize_amounts("ZFA04Y on HAT001, seats 1,2,3") == "ZFA04Y on HAT001, seats 1,2,3"
    assert normalize_amounts("$1,939.05 or 40.00 USD") == "\x1f1939.05\x1f or \x1f40\x1f USD"
