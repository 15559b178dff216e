"""Which write an alert names, by trace id or by subject: the one the evidence disproves (the failed write
the claim rests on, or the one that acted on the subject the verification names), never merely the last;
one agent name per trace in its reading and its alerts; a mined draft states the claim as read."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from agenttwin.demo import TWIN_FILE
from agenttwin.mining import draft, render
from evaluation.contradiction import disproved_write
from producers.otlp.mapping import map_request
from producers.sdk.outcome import outcome_event, subject_outcome_event
from streams.events import ClaimRead, ContradictionDetected, Event, OutcomeVerified, SpanRecorded
from tests.unit.processors.test_stock_claims_and_subjects import _run
from tests.unit.traces.conftest import ROOT, START, TRACE, request, span
from twin_engine.documents import load_twin

AT = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
ANSWER = "Done! I've refunded 40.00 USD for order ORD-1001 and emailed you a confirmation."
REFUND, EMAIL, LLM = (bytes.fromhex(h * 16) for h in ("2", "3", "4"))


def refund_then_email(*, refund_fails: bool = True, root_name: str = "support-refund-agent") -> list[Event]:
    """A stock (OpenInference) trace: refund_payment (504 or ok), then send_email to the customer, an answer."""
    refund_result = {"status": 504, "error": "gateway timeout"} if refund_fails else {"refund_id": "RF-1"}
    tools = [
        (REFUND, "refund_payment", {"order_id": "ORD-1001", "amount": 40.0}, refund_result, 10),
        (EMAIL, "send_email", {"customer_id": "CUS-100", "template": "refund_done"}, {"sent": True}, 30),
    ]
    spans = [
        span(
            ROOT,
            name=root_name,
            attrs={"openinference.span.kind": "AGENT", "output.value": ANSWER},
            start=START,
            end=START + 90,
        ),
        *(
            span(
                sid,
                parent=ROOT,
                name=name,
                attrs={
                    "openinference.span.kind": "TOOL",
                    "tool.name": name,
                    "input.value": json.dumps(args),
                    "output.value": json.dumps(result),
                },
                start=START + t,
                end=START + t + 5,
            )
            for sid, name, args, result, t in tools
        ),
    ]
    batch = map_request(request(*spans, resource={"service.name": "refund-service"}), "acme", received_at=AT)
    return [*batch.events, *batch.links]


run = _run  # both joins, as the runtimes chain them


def contradiction(out: list[Event]) -> ContradictionDetected:
    (alert,) = [e for e in out if isinstance(e, ContradictionDetected) and e.kind == "contradiction"]
    return alert


def by_trace() -> Event:
    return outcome_event(TRACE.hex(), "FAILURE", True, "external_callback", "no refund", tenant="acme", at=AT)


def test_by_trace_id_the_alert_names_the_failed_refund_not_the_last_write() -> None:
    events = refund_then_email()
    assert {(link.subject, link.tool) for link in events if hasattr(link, "tool")} >= {  # both writes named one
        ("order:ORD-1001", "refund_payment"),
        ("customer:CUS-100", "send_email"),
    }
    alert = contradiction(run([*events, by_trace()]))
    assert (alert.tool, alert.subject) == ("refund_payment", "order:ORD-1001")
    assert alert.claim_inferred_by


def test_by_trace_id_with_no_failed_write_the_first_write_is_named() -> None:
    """Every write answered ok: none is disproved more than another; the notification follows the action."""
    alert = contradiction(run([*refund_then_email(refund_fails=False), by_trace()]))
    assert (alert.tool, alert.subject) == ("refund_payment", "order:ORD-1001")


def test_by_subject_the_alert_names_the_write_on_that_subject() -> None:
    for subject, tool in (("order:ORD-1001", "refund_payment"), ("customer:CUS-100", "send_email")):
        verification = subject_outcome_event(subject, "FAILURE", True, "external_callback", "no", tenant="acme", at=AT)
        alert = contradiction(run([*refund_then_email(), verification]))
        assert (alert.tool, alert.subject) == (tool, subject)


def test_the_rule_is_one_pure_function() -> None:
    calls = [("lookup_order", False, False), ("refund_payment", True, True), ("send_email", False, True)]
    subjects = {"order:ORD-1001": "refund_payment", "customer:CUS-100": "send_email"}
    assert disproved_write(calls, subjects, None, None) == ("refund_payment", "order:ORD-1001")
    assert disproved_write(calls, subjects, "customer:CUS-100", None) == ("send_email", "customer:CUS-100")
    assert disproved_write(calls, subjects, None, "send_email") == ("refund_payment", "order:ORD-1001")
    ok = [(t, False, w) for t, _, w in calls]
    assert disproved_write(ok, subjects, None, "send_email") == ("send_email", "customer:CUS-100")
    assert disproved_write(ok, subjects, None, None) == ("refund_payment", "order:ORD-1001")
    assert disproved_write([("lookup_order", False, False)], {}, None, None) == (None, None)
    assert disproved_write([], {}, "order:ORD-9", None) == (None, "order:ORD-9")


def test_one_agent_name_per_trace_in_its_reading_and_its_alert() -> None:
    """The root span is named "triage" and states the claim; a later span names the agent by attribute
    (a stronger name): the trace's reading and its alert both say the stronger one."""
    claim_root = SpanRecorded(
        event_id="root",
        occurred_at=AT,
        received_at=AT,
        correlation_id=TRACE.hex(),
        tenant="acme",
        trace_id=TRACE.hex(),
        span_id=ROOT.hex(),
        name="invoke_agent triage",
        kind="INTERNAL",
        start_unix_nano=START,
        end_unix_nano=START + 90,
        status_code="OK",
        service_name="refund-service",
        source="otlp",
        attributes={"gen_ai.operation.name": "invoke_agent", "agenttwin.outcome.claimed": "SUCCESS"},
        resource_attributes={},
    )
    named = replace(
        claim_root,
        event_id="llm",
        span_id=LLM.hex(),
        parent_span_id=ROOT.hex(),
        name="chat",
        received_at=AT + timedelta(seconds=1),
        attributes={"gen_ai.operation.name": "chat", "gen_ai.agent.name": "support-refund-agent"},
    )
    out = run([claim_root, named, by_trace()])
    reads = [e for e in out if isinstance(e, ClaimRead)]
    assert reads[-1].agent == "support-refund-agent"
    assert contradiction(out).agent == reads[-1].agent


def test_the_mined_draft_states_the_claim_read_from_the_answer() -> None:
    spans = [e for e in refund_then_email() if isinstance(e, SpanRecorded)]
    evidence = json.dumps({"expected": {"orders.ORD-1001.status": "refunded"}})
    verification = outcome_event(TRACE.hex(), "FAILURE", True, "external_callback", evidence, tenant="acme", at=AT)
    assert isinstance(verification, OutcomeVerified)
    d = draft(spans, verification, load_twin(TWIN_FILE))
    assert d.claimed == "SUCCESS"
    text = render(d, load_twin(TWIN_FILE))
    assert "claimed nothing" not in text
    assert "claimed SUCCESS (read from its final answer by rules-v2)" in text, text


def test_a_simulated_contradiction_whose_claim_was_inferred_says_so() -> None:
    """An agent that stated no claim (CLAIM_INFERRED on its case): the simulated trace carries who read the
    claim, and the contradiction alert names it, as production alerts do."""
    from evaluation.case import ClaimFinding
    from producers.agents.inferred_claim import CLAIM_INFERRED, InferredClaim
    from producers.case_spans import case_spans
    from streams import ids
    from tests.unit.grading.grading_builders import case

    finding = ClaimFinding("claimed_outcome", InferredClaim("SUCCESS", "rules-v1").describe(), CLAIM_INFERRED)
    run_ = case([], claim_findings=(finding,), claimed_calls=({"name": "refund_payment", "status": "ok"},))
    spans = case_spans(run_, evaluation_id="ev-1")
    assert spans[0].attributes["agenttwin.outcome.claim_inferred_by"] == "rules-v1"
    verification = OutcomeVerified(
        event_id="v-sim",
        occurred_at=AT,
        correlation_id=spans[0].trace_id,
        tenant=ids.simulation_tenant(run_.tenant),
        trace_id=spans[0].trace_id,
        evaluator_version="grader-v1",
        status="FAILURE",
        verified=True,
        source="twin_state",
        reason="no refund recorded",
    )
    alert = contradiction(run([*spans, verification]))
    assert alert.claim_inferred_by == "rules-v1"
    stated = case_spans(case([]), evaluation_id="ev-1")  # a claim the agent stated is not marked
    assert "agenttwin.outcome.claim_inferred_by" not in stated[0].attributes
