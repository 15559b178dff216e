"""The claim reader's rules on the project's own written answers (docs/guides/claims.md states these figures;
the measure that counts is on real replies: test_real_replies.py).

Three sets, each (answer, truth) per line, written for rules-v1:
- labelled_answers.jsonl (82): written before rules-v1; rules-v1 was written with it in view.
- held_out_answers.jsonl (40): written after rules-v1's first draft; rules-v1 was revised once with it.
- fresh_answers.jsonl (40): written after that revision and never used to change a rule of rules-v1.
rules-v2 was written on the development half of the real replies, then revised with the first two sets in
view (never the fresh set, whose misreadings were printed once while rules-v2 was developed).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from evaluation.claim_reader import CLAIM_STATUSES, RULES_ID, SUCCESS, UNKNOWN, read_claim
from evaluation.contradiction import is_contradiction
from tests.docs_text import documentation

DATA = Path(__file__).parent / "data"
# set -> (answers, read right, read SUCCESS although the truth is not SUCCESS)
MEASURED = {
    "labelled_answers": (82, 80, 0),
    "held_out_answers": (40, 39, 1),
    "fresh_answers": (40, 37, 2),
}


def _rows(name: str) -> list[dict[str, str]]:
    return [json.loads(line) for line in (DATA / f"{name}.jsonl").read_text(encoding="utf-8").splitlines() if line]


@pytest.mark.parametrize("name", sorted(MEASURED))
def test_accuracy_on_each_labelled_set_is_the_stated_figure(name: str) -> None:
    rows = _rows(name)
    assert all(r["truth"] in CLAIM_STATUSES for r in rows)
    readings = [read_claim(r["answer"]) for r in rows]
    right = sum(reading.status == r["truth"] for reading, r in zip(readings, rows, strict=True))
    false_success = sum(
        reading.status == SUCCESS and r["truth"] != SUCCESS for reading, r in zip(readings, rows, strict=True)
    )
    assert (len(rows), right, false_success) == MEASURED[name]


def test_the_sets_cover_every_class_and_hold_at_least_sixty_pairs() -> None:
    rows = [r for name in MEASURED for r in _rows(name)]
    assert len(rows) >= 60
    assert set(Counter(r["truth"] for r in rows)) == set(CLAIM_STATUSES)


@pytest.mark.parametrize(
    ("answer", "status", "rule"),
    [
        (None, UNKNOWN, "empty"),
        ("   ", UNKNOWN, "empty"),
        ('{"tool": "refund_payment"}', UNKNOWN, "not-prose"),
        ("I'm not sure whether the refund went through.", UNKNOWN, "hedged"),
        ("Refunded 20 USD, but the shipping fee could not be refunded.", "PARTIAL", "partial"),
        ("I can\u2019t help with that.", "REFUSED", "refused"),
        ("I've escalated this to our billing team.", "ESCALATED", "escalated"),
        ("The refund has not been processed.", "FAILURE", "failed"),
        ("DONE! I've refunded 40.00 USD.", SUCCESS, "succeeded"),
        ("All set.", SUCCESS, "succeeded-weak"),
        ("The order is cancelled. The first payment attempt failed.", SUCCESS, "succeeded-despite-failure"),
        ("Confirmed, although the card was declined.", "PARTIAL", "partial"),
        ("Confirmed. The card was declined.", UNKNOWN, "abstained:mixed"),
        ("What is your order number?", UNKNOWN, "no-claim"),
    ],
)
def test_each_rule(answer: str | None, status: str, rule: str) -> None:
    reading = read_claim(answer)
    assert (reading.status, reading.rule, reading.inferred_by) == (status, rule, RULES_ID)


def test_an_unclassifiable_answer_is_unknown_and_never_a_disproved_success() -> None:
    reading = read_claim("Here is the weather forecast for Paris.")
    assert reading.status == UNKNOWN
    assert not is_contradiction(reading.status, "FAILURE", True)


def test_huge_and_hostile_answers_are_read_in_bounded_time() -> None:
    # 5 MB of text: only the first and last 10,000 characters are read
    answer = "Refund issued. " + "a" * 5_000_000 + " It failed, but partially."
    assert read_claim(answer) == read_claim(answer[:10_000] + " " + answer[-10_000:])
    assert read_claim(answer).status == SUCCESS
    assert read_claim("(" * 100_000).status == UNKNOWN
    assert read_claim("\x00\ufffd" * 1000).status == UNKNOWN


def test_the_same_answer_always_reads_the_same() -> None:
    rows = _rows("fresh_answers")
    assert [read_claim(r["answer"]) for r in rows] == [read_claim(r["answer"]) for r in rows]


def test_the_guide_states_the_measured_figures() -> None:
    readme = " ".join(documentation().split())
    for name, (answers, right, false_success) in MEASURED.items():
        share = f"{100 * right / answers:.1f} %"
        assert f"`{name}.jsonl`" in readme
        assert f"| {answers} | {right} ({share}) | {false_success} |" in readme or (
            f"| {answers} | **{right} ({share})** | {false_success} |" in readme
        ), name


def test_the_agent_contracts_hook_reads_with_the_rules_and_maps_onto_its_claims(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """producers/agents/inferred_claim.py (an HTTP agent's reply without `claimed_outcome`) calls
    `evaluation.claim_reader.read_claim` by name: the names must line up, and the contract's four claims
    take the reader's six."""
    from producers.agents import inferred_claim

    done = inferred_claim.infer_claim("Done! I've refunded 40.00 USD for order ORD-1001.")
    assert (done.status, done.claimed, done.inferred_by) == ("SUCCESS", "SUCCESS", RULES_ID)
    handed = inferred_claim.infer_claim("I've escalated this to a specialist who will contact you.")
    assert (handed.status, handed.claimed) == ("ESCALATED", "PARTIAL")
    assert handed.describe() == (
        f"not stated; read from the final answer as ESCALATED (claimed as PARTIAL) by {RULES_ID} "
        "(rule escalated, confidence 0.90)"
    )
    assert inferred_claim.infer_claim(None).claimed == "UNKNOWN"
    monkeypatch.setattr(inferred_claim, "CLAIM_READER_MODULE", "evaluation.no_such_reader")
    missing = inferred_claim.infer_claim("Done! I've refunded 40.00 USD.")
    assert (missing.claimed, missing.inferred_by) == ("UNKNOWN", inferred_claim.NO_READER)  # never invents one
