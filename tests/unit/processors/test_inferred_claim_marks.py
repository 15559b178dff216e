"""Claims read from a final answer (no claim stated): every alert says how it was read (rule set, rule,
confidence) in the line, the webhook body and the event; a reading below the threshold raises no alert; and
a new rule set reads again while the readings of the old one stay as they were."""

from __future__ import annotations

from typing import Any

from consumers.alerts import alert_document, alert_line
from evaluation.claim_reader import CONFIDENCE_THRESHOLD, RULES_ID, read_claim
from producers.sdk.outcome import outcome_event
from streams.events import ClaimRead
from streams.processors.outcome_join import OutcomeJoin
from tests.unit.processors.test_stock_claims_and_subjects import AT, _alerts, _run, stated_success, stock_trace
from tests.unit.traces.conftest import TRACE

OFFER = "I'm sorry, I can transfer you to a human agent who can help with the refund. Would you like that?"


def test_an_inferred_alert_says_its_rule_set_rule_and_confidence_in_the_line_and_the_webhook() -> None:
    spans, links = stock_trace()
    verification = outcome_event(
        TRACE.hex(), "FAILURE", True, "external_callback", "refund_count: 2", tenant="acme", at=AT
    )
    (alert,) = _alerts(_run([*spans, *links, verification]))
    assert (alert.claim_inferred_by, alert.claim_rule, alert.claim_confidence) == (RULES_ID, "succeeded", 0.9)
    assert f"claimed SUCCESS (inferred by {RULES_ID}, rule succeeded, confidence 0.90), verified FAILURE" in (
        alert_line(alert)
    )
    document = alert_document(alert)  # the webhook body
    assert (document["claim_inferred_by"], document["claim_rule"], document["claim_confidence"]) == (
        RULES_ID,
        "succeeded",
        0.9,
    )
    assert "rule succeeded, confidence 0.90" in alert.detail


def test_a_stated_claim_carries_no_rule_or_confidence() -> None:
    spans, links = stock_trace()
    stated = stated_success()
    verification = outcome_event(TRACE.hex(), "FAILURE", True, "external_callback", "x", tenant="acme", at=AT)
    (alert,) = _alerts(_run([*spans, *stated, *links, verification]))
    assert (alert.claim_inferred_by, alert.claim_rule, alert.claim_confidence) == (None, None, None)
    assert "inferred" not in alert_line(alert)


def test_a_reading_below_the_threshold_is_unknown_and_raises_no_alert() -> None:
    answer = "Confirmed. The refund failed."  # a bare "confirmed" next to a failure
    assert read_claim(answer).confidence is not None and read_claim(answer).confidence < CONFIDENCE_THRESHOLD  # type: ignore[operator]
    spans, links = stock_trace(answer=answer)
    verification = outcome_event(TRACE.hex(), "FAILURE", True, "external_callback", "x", tenant="acme", at=AT)
    out = _run([*spans, *links, verification])
    assert _alerts(out) == []
    read = [e for e in out if isinstance(e, ClaimRead)][-1]
    assert (read.claimed_status, read.claim_inferred_by, read.claim_rule) == ("UNKNOWN", RULES_ID, "abstained:mixed")
    assert read.claim_confidence == 0.5


def test_a_new_rule_set_reads_again_and_the_old_readings_stay() -> None:
    """The join ran with rules-v1 (which took an offer of a transfer for a hand-over); it restarts with the
    current rules on its kept state and the trace's spans come again (a redelivery, or a replay): the answer
    is read again and a new ClaimRead revision says so; the rules-v1 events already emitted are unchanged."""
    spans, links = stock_trace(answer=OFFER)
    store: dict[str, Any] = {}
    rules_v1 = OutcomeJoin(classifier=lambda a: read_claim(a, "rules-v1"))
    before = _run([*spans, *links], outcomes=rules_v1, o_store=store)
    old = [e for e in before if isinstance(e, ClaimRead)][-1]
    assert (old.claimed_status, old.claim_inferred_by, old.claim_confidence) == ("ESCALATED", "rules-v1", None)
    kept = old.to_record()

    after = _run(spans, outcomes=OutcomeJoin(), o_store=store)
    new = [e for e in after if isinstance(e, ClaimRead)][-1]
    assert (new.claimed_status, new.claim_inferred_by, new.claim_rule) == ("UNKNOWN", RULES_ID, "no-claim")
    assert new.revision > old.revision and new.event_id != old.event_id
    assert old.to_record() == kept

    again = _run(spans, outcomes=OutcomeJoin(), o_store=store)  # the same rules: read once, nothing new
    assert [e for e in again if isinstance(e, ClaimRead)] == []
