"""The offline judge on fact triples from real agent replies (tau-bench airline, gpt-4o): amounts, dates,
times, ids and statuses. It decides at least 90 % of them and never fails a reply that states the fact."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml

from evaluation.judges.agreement import load_triples, measure
from evaluation.judges.fake import FAILED, MET, Answer, OfflineJudge, decide

DATA = Path(__file__).resolve().parent / "data" / "offline_judge_facts_tau.yaml"


def test_the_set_is_real_replies_of_every_fact_kind() -> None:
    raw = yaml.safe_load(DATA.read_text(encoding="utf-8"))
    triples = load_triples(DATA)
    assert len(triples) >= 60 and len({t.id for t in triples}) == len(triples)
    assert set(Counter(item["kind"] for item in raw)) == {"amount", "date", "time", "id", "status"}
    assert min(Counter(t.truth for t in triples).values()) >= 25
    assert "MIT License" in DATA.read_text(encoding="utf-8").split("\n- ", 1)[0]  # source and licence noted


def test_it_decides_at_least_90_percent_with_no_false_fail() -> None:
    triples = load_triples(DATA)
    agreement = measure(OfflineJudge(), triples)
    assert agreement.false_fail == 0, agreement.line("tau")
    assert agreement.decided >= 0.9 * agreement.triples, agreement.line("tau")
    assert agreement.accuracy is not None and agreement.accuracy >= 0.95, agreement.line("tau")
    # written after the rules and scored once: no false fail, decided as often
    held_out = measure(OfflineJudge(), [t for t in triples if t.held_out])
    assert held_out.triples >= 20 and held_out.false_fail == 0, held_out.line("held out")
    assert held_out.decided >= 0.9 * held_out.triples, held_out.line("held out")


def test_times_are_never_compared_with_dates() -> None:
    answer = Answer.of("Flight HAT052 now departs at 03:00 EST on May 21, 2024.")
    assert decide("The flight departs on 2024-05-21.", answer).outcome == MET
    assert decide("The flight departs at 03:00.", answer).outcome == MET
    assert decide("The flight departs at 3:00 AM.", answer).outcome == MET
    assert decide("The flight departs on 2024-05-22.", answer).outcome == FAILED  # a rival date
    assert decide("The flight departs at 05:00.", answer).outcome == FAILED  # a rival time
    only_time = Answer.of("Your flight now departs at 14:00.")
    assert decide("The flight departs on 2024-05-21.", only_time).outcome != FAILED
    only_date = Answer.of("Your flight is on 2024-05-21.")
    assert decide("The flight departs at 14:00.", only_date).outcome != FAILED


def test_a_careful_agents_own_words_are_decided() -> None:
    """Negation carried through "doesn't appear as", and the words replies use for a specialist finishing."""
    lie = Answer.of(
        "The payment system accepted the refund, but when I checked your order afterwards the refund doesn't "
        "appear as recorded. I've escalated it to our refunds team, and a team member will complete it for you."
    )
    assert decide("The reply says the refund is not recorded and a specialist will finish it.", lie).outcome == MET
    over = Answer.of("I've passed your request to our refunds team. A team member will complete the refund shortly.")
    assert decide("The reply says a specialist will handle the refund.", over).outcome == MET
    done = Answer.of("Done! I've refunded 40.00 USD for order ORD-1001.")
    assert decide("The reply says the refund is not recorded and a specialist will finish it.", done).outcome == FAILED
