"""The outcome join on traces from stock instrumentation (no AgentTwin attributes): tool calls and the final
answer read from OpenInference/GenAI attributes, the claim inferred from the answer and marked so, and
verifications that name only a business subject matched through the subject join — within the horizon and
never across tenants."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from producers.otlp.mapping import map_request
from producers.sdk.outcome import outcome_event, subject_outcome_event
from streams.events import ClaimRead, ContradictionDetected, Event, OutcomeVerified, SubjectVerified
from streams.processors._expiry import INDEX_PREFIX
from streams.processors.outcome_join import OutcomeJoin
from streams.processors.subject_join import SubjectJoin
from tests.unit.traces.conftest import CHILD, ROOT, START, TRACE, request, span

AT = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
LLM = bytes.fromhex("1111111111111111")
LOOKUP = bytes.fromhex("2222222222222222")
ANSWER = "Done! I've refunded 40.00 USD for order ORD-1001."


def _state(answer: str) -> str:
    return json.dumps(
        {"messages": [{"type": "human", "data": {"content": "refund"}}, {"type": "ai", "data": {"content": answer}}]}
    )


def stock_trace(
    tenant: str = "acme", *, answer: str = ANSWER, trace: bytes = TRACE, at: datetime = AT, result: Any = None
) -> tuple[list[Event], list[Event]]:
    """An OpenInference-shaped LangGraph run: lookup_order, refund_payment (the tool answered 504), an answer."""
    result = {"status": 504, "error": "gateway timeout"} if result is None else result
    req = request(
        span(
            ROOT,
            trace_id=trace,
            name="support-refund-agent",
            attrs={"openinference.span.kind": "AGENT", "output.value": _state(answer)},
            start=START,
            end=START + 90,
        ),
        span(
            LOOKUP,
            trace_id=trace,
            parent=ROOT,
            name="lookup_order",
            attrs={
                "openinference.span.kind": "TOOL",
                "tool.name": "lookup_order",
                "input.value": "ORD-1001",
                "output.value": '{"status": "delivered"}',
            },
            start=START + 10,
            end=START + 20,
        ),
        span(
            CHILD,
            trace_id=trace,
            parent=ROOT,
            name="refund_payment",
            attrs={
                "openinference.span.kind": "TOOL",
                "tool.name": "refund_payment",
                "input.value": '{"order_id": "ORD-1001", "amount": 40.0}',
                "output.value": json.dumps(result),
            },
            start=START + 30,
            end=START + 40,
        ),
        span(
            LLM,
            trace_id=trace,
            parent=ROOT,
            name="ChatModel",
            attrs={
                "openinference.span.kind": "LLM",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": answer,
            },
            start=START + 50,
            end=START + 60,
        ),
        resource={"service.name": "refund-service", "service.version": "1.3.0"},
    )
    batch = map_request(req, tenant, received_at=at)
    return list(batch.events), list(batch.links)


def _run(
    events: list[Event],
    *,
    ticks_at: datetime | None = None,
    outcomes: OutcomeJoin | None = None,
    o_store: dict[str, Any] | None = None,
) -> list[Event]:
    """Both joins, the subject join's outputs fed to the outcome join (as the runtimes do); a test may hand in
    the outcome join and its store to run them again."""
    subjects, outcomes = SubjectJoin(), outcomes or OutcomeJoin()
    s_store: dict[str, Any] = {}
    o_store = {} if o_store is None else o_store
    out: list[Event] = []
    queue = list(events)
    while queue:
        event = queue.pop(0)
        for produced in subjects.handle(s_store, event) + outcomes.handle(o_store, event):
            out.append(produced)
            if isinstance(produced, OutcomeVerified):
                queue.append(produced)
    if ticks_at is not None:
        out += subjects.tick(s_store, ticks_at) + outcomes.tick(o_store, ticks_at)
    return out


def stated_success() -> list[Event]:
    """A span of the stock trace stating the claim SUCCESS outright."""
    claimed = span(bytes.fromhex("3333333333333333"), parent=ROOT, attrs={"agenttwin.outcome.claimed": "SUCCESS"})
    return map_request(request(claimed), "acme", received_at=AT).events


def _entries(store: dict[str, Any]) -> list[str]:
    return [k for k in store if not k.startswith(INDEX_PREFIX)]  # not the time index's own keys


def _alerts(out: list[Event], kind: str = "contradiction") -> list[ContradictionDetected]:
    return [e for e in out if isinstance(e, ContradictionDetected) and e.kind == kind]


def test_a_stock_trace_verified_by_trace_id_gives_an_inferred_contradiction_naming_tool_and_subject() -> None:
    spans, links = stock_trace()
    verification = outcome_event(
        TRACE.hex(), "FAILURE", True, "external_callback", "refund_count: 2", tenant="acme", at=AT
    )
    (alert,) = _alerts(_run([*spans, *links, verification]))
    assert (alert.claimed_status, alert.claim_inferred_by, alert.verified_status) == ("SUCCESS", "rules-v2", "FAILURE")
    assert (alert.tool, alert.subject, alert.tenant) == ("refund_payment", "order:ORD-1001", "acme")
    assert (alert.agent, alert.agent_version) == ("support-refund-agent", "1.3.0")
    assert "inferred by rules-v2 from the final answer" in alert.detail


@pytest.mark.parametrize("verification_first", [True, False])
def test_a_verification_naming_only_the_order_finds_the_trace(verification_first: bool) -> None:
    spans, links = stock_trace()
    assert [(link.subject, link.tool) for link in links] == [("order:ORD-1001", "refund_payment")]  # type: ignore[attr-defined]
    by_subject = subject_outcome_event(
        "order:ORD-1001",
        "FAILURE",
        True,
        "external_callback",
        "refunded twice",
        tenant="acme",
        at=AT + timedelta(minutes=10),
    )
    events: list[Event] = [by_subject, *spans, *links] if verification_first else [*spans, *links, by_subject]
    out = _run(events)
    (alert,) = _alerts(out)
    assert (alert.trace_id, alert.subject, alert.tool, alert.claimed_status) == (
        TRACE.hex(),
        "order:ORD-1001",
        "refund_payment",
        "SUCCESS",
    )
    (derived,) = [e for e in out if isinstance(e, OutcomeVerified)]
    assert derived.subject == "order:ORD-1001" and derived.received_at == by_subject.received_at
    assert _alerts(_run(events + events)) == [alert]  # everything twice: the same single alert


def test_a_subject_never_matches_across_tenants() -> None:
    acme_spans, acme_links = stock_trace("acme")
    beta_verification = subject_outcome_event(
        "order:ORD-1001", "FAILURE", True, "external_callback", "x", tenant="beta", at=AT
    )
    out = _run([*acme_spans, *acme_links, beta_verification], ticks_at=AT + timedelta(hours=3))
    assert _alerts(out) == [] and not [e for e in out if isinstance(e, OutcomeVerified)]
    (unmatched,) = _alerts(out, "verification_without_claim")
    assert (unmatched.tenant, unmatched.subject, unmatched.trace_id) == ("beta", "order:ORD-1001", "")
    # the same trace id under beta is beta's own trace: it does get beta's verification
    beta_spans, beta_links = stock_trace("beta")
    (alert,) = _alerts(_run([*acme_spans, *acme_links, *beta_spans, *beta_links, beta_verification]))
    assert alert.tenant == "beta"


def test_a_subject_matches_only_within_the_horizon() -> None:
    spans, links = stock_trace(at=AT)
    late = subject_outcome_event(
        "order:ORD-1001", "FAILURE", True, "external_callback", "x", tenant="acme", at=AT + timedelta(hours=2)
    )
    out = _run([*spans, *links, late], ticks_at=AT + timedelta(hours=4))
    assert _alerts(out) == []
    (unmatched,) = _alerts(out, "verification_without_claim")
    assert unmatched.subject == "order:ORD-1001"
    # the sender's clock does not matter: only receive times do
    early = subject_outcome_event(
        "order:ORD-1001",
        "FAILURE",
        True,
        "external_callback",
        "x",
        tenant="acme",
        at=AT - timedelta(days=30),
        received_at=AT + timedelta(minutes=59),
    )
    assert len(_alerts(_run([*spans, *links, early]))) == 1


@pytest.mark.parametrize(
    ("answer", "claim"),
    [
        ("I couldn't refund the order: the payment provider timed out.", "FAILURE"),
        ("Could you tell me your order number?", "UNKNOWN"),
        ("I've escalated this to our billing team.", "ESCALATED"),
    ],
)
def test_a_claim_that_is_not_success_is_never_a_contradiction(answer: str, claim: str) -> None:
    spans, links = stock_trace(answer=answer)
    verification = outcome_event(TRACE.hex(), "FAILURE", True, "external_callback", "x", tenant="acme", at=AT)
    out = _run([*spans, *links, verification])
    assert _alerts(out) == []
    reads = [e for e in out if isinstance(e, ClaimRead)]
    assert reads[-1].claimed_status == claim and reads[-1].claim_inferred_by == "rules-v2"


def test_a_stated_claim_wins_over_the_final_answer() -> None:
    spans, links = stock_trace(answer="Sorry, the refund failed.")
    stated = stated_success()
    verification = outcome_event(TRACE.hex(), "FAILURE", True, "external_callback", "x", tenant="acme", at=AT)
    (alert,) = _alerts(_run([*spans, *stated, *links, verification]))
    assert alert.claimed_status == "SUCCESS" and alert.claim_inferred_by is None
    assert "inferred" not in alert.detail


def test_the_trace_reading_is_the_same_in_any_span_order() -> None:
    spans, _ = stock_trace()
    finals = set()
    for order in itertools.permutations(spans):
        reads = [e for e in _run(list(order)) if isinstance(e, ClaimRead)]
        last = max(reads, key=lambda r: r.revision)
        finals.add(
            json.dumps(
                {
                    k: v
                    for k, v in last.to_record().items()
                    if k not in ("event_id", "revision", "occurred_at", "received_at")
                },
                sort_keys=True,
            )
        )
    (final,) = finals
    doc = json.loads(final)
    assert doc["tools"] == ["lookup_order", "refund_payment"] and doc["failed_tools"] == ["refund_payment"]
    assert (doc["agent"], doc["agent_version"], doc["write_tool"]) == (
        "support-refund-agent",
        "1.3.0",
        "refund_payment",
    )
    assert (doc["final_answer"], doc["claimed_status"], doc["claim_rule"]) == (ANSWER, "SUCCESS", "succeeded")
    assert doc["subjects"] == ["order:ORD-1001"]


def test_the_same_spans_again_emit_no_new_reading() -> None:
    spans, _ = stock_trace()
    join, store = OutcomeJoin(), {}
    first = [e for s in spans for e in join.handle(store, s)]
    again = [e for s in spans for e in join.handle(store, s)]
    assert first and again == []


def test_an_inferred_claim_awaits_verification_only_after_a_write() -> None:
    later = AT + timedelta(hours=3)
    spans, links = stock_trace()
    (never,) = _alerts(_run([*spans, *links], ticks_at=later), "claim_never_verified")
    assert never.claim_inferred_by == "rules-v2" and never.tool == "refund_payment"
    read_only = [s for s in spans if s.span_id != CHILD.hex()]  # type: ignore[attr-defined]
    assert _alerts(_run(read_only, ticks_at=later), "claim_never_verified") == []


def test_simulated_traces_get_no_claim_reading() -> None:
    spans, _ = stock_trace("sim:demo-co")
    assert not [e for e in _run(spans) if isinstance(e, ClaimRead)]


def test_the_subject_join_forgets_what_can_no_longer_match() -> None:
    _, links = stock_trace()
    join, store = SubjectJoin(), {}
    for link in links:
        join.handle(store, link)
    verification = subject_outcome_event("order:ORD-9", "FAILURE", True, "external_callback", "x", tenant="acme", at=AT)
    assert isinstance(verification, SubjectVerified)
    join.handle(store, verification)
    assert len(_entries(store)) == 2
    join.tick(store, AT + timedelta(hours=3))
    assert _entries(store) == []
