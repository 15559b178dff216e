"""Bounded state of the joins on production traces read from stock instrumentation: a closed outcome-join
entry keeps what a late claim or verification needs (the write tool and subject an alert names, the
verifications an inferred claim was not the last word on, the reading whose revisions go on) and nothing
else; the subject join finds due entries through its time index, stays flat, never reports a verification
that matched, and ignores what arrives after it dropped it. Processors are called directly, with no dedupe
by event id in between (as on Kafka)."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Any

from producers.sdk.outcome import outcome_event, subject_outcome_event
from streams.events import ClaimRead, ContradictionDetected, Event, OutcomeVerified, SpanRecorded, SubjectLinked
from streams.processors._expiry import INDEX_PREFIX
from streams.processors.outcome_join import CLAIM_ATTRIBUTE, OutcomeJoin
from streams.processors.subject_join import SubjectJoin
from tests.unit.processors.test_bounded_state import _Watched
from tests.unit.processors.test_stock_claims_and_subjects import AT, CHILD, TRACE, stock_trace

HORIZON = timedelta(minutes=5)
KEY = f"acme|{TRACE.hex()}"


def _entries(store: dict[str, Any]) -> list[str]:
    return [k for k in store if not k.startswith(INDEX_PREFIX)]


def _alerts(out: list[Event], kind: str | None = None) -> list[ContradictionDetected]:
    return [e for e in out if isinstance(e, ContradictionDetected) and kind in (None, e.kind)]


def _reads(out: list[Event]) -> list[ClaimRead]:
    return [e for e in out if isinstance(e, ClaimRead)]


def _spans(answer: str | None = None) -> list[SpanRecorded]:
    spans, _ = stock_trace() if answer is None else stock_trace(answer=answer)
    return [s for s in spans if isinstance(s, SpanRecorded)]


def _verified(status: str, at: datetime) -> OutcomeVerified:
    return outcome_event(TRACE.hex(), status, True, "external_callback", "refund_count: 2", tenant="acme", at=at)


def _stated_claim(status: str, at: datetime) -> SpanRecorded:
    """A span of the same trace that states the claim (an SDK's claim_outcome), received at `at`."""
    nanos = int(at.timestamp() * 1e9)
    return SpanRecorded(
        event_id=f"stated-{status}-{nanos}",
        occurred_at=at,
        received_at=at,
        correlation_id=TRACE.hex(),
        tenant="acme",
        trace_id=TRACE.hex(),
        span_id="00000000000000c1",
        name="claim_outcome",
        kind="INTERNAL",
        start_unix_nano=nanos,
        end_unix_nano=nanos,
        status_code="OK",
        service_name="refund-service",
        source="otlp",
        attributes={CLAIM_ATTRIBUTE: status},
        resource_attributes={},
    )


def _feed(join: OutcomeJoin, store: dict[str, Any], events: list[SpanRecorded]) -> list[Event]:
    return [o for e in events for o in join.handle(store, e)]


def test_a_closed_entry_keeps_the_write_tool_and_subject_a_late_alert_names() -> None:
    join, store = OutcomeJoin(horizon=HORIZON), dict[str, Any]()
    _feed(join, store, _spans())
    assert len(store[KEY]["calls"]) == 2 and store[KEY]["answer"]["text"]
    # the claim read from "Done! I've refunded ..." is a success of a trace that wrote: awaited, then reported
    assert [a.kind for a in _alerts(join.tick(store, AT + HORIZON))] == ["claim_never_verified"]
    closed = store[KEY]
    assert closed["closed"] and "answer" not in closed and "inferred" not in closed
    assert [call[1] for call in closed["calls"].values()] == ["refund_payment"]  # the last write only
    (alert,) = _alerts(join.handle(store, _verified("FAILURE", AT + HORIZON + timedelta(minutes=1))), "contradiction")
    assert (alert.tool, alert.subject, alert.claim_inferred_by) == ("refund_payment", "order:ORD-1001", "rules-v2")
    assert alert.claimed_status == "SUCCESS"


def test_a_stated_claim_after_closing_meets_the_verifications_kept_for_it() -> None:
    """An inferred claim is not the last word: its verifications stay through closing, so a claim the agent
    states later is still compared with them. The reading's revisions go on, from the reading as it was."""
    join, store = OutcomeJoin(horizon=HORIZON), dict[str, Any]()
    reads = _reads(_feed(join, store, _spans(answer="Let me look into that for you.")))  # inferred UNKNOWN
    assert _alerts(join.handle(store, _verified("FAILURE", AT + timedelta(seconds=5)))) == []  # UNKNOWN: no claim
    assert join.tick(store, AT + HORIZON + timedelta(seconds=5)) == []
    assert store[KEY]["closed"] and store[KEY]["verified"]  # kept: the claim was only read from the answer
    late = _stated_claim("success", AT + HORIZON + timedelta(minutes=1))
    out = join.handle(store, late)
    (alert,) = _alerts(out, "contradiction")
    assert (alert.claimed_status, alert.claim_inferred_by, alert.tool) == ("SUCCESS", None, "refund_payment")
    (read,) = _reads(out)
    last = reads[-1]
    assert read.revision == last.revision + 1
    assert (read.tools, read.final_answer, read.subjects) == (last.tools, last.final_answer, last.subjects)
    assert (read.claimed_status, read.claim_inferred_by) == ("SUCCESS", None)
    assert not store[KEY]["verified"]  # now a stated claim was compared with them: they go
    assert join.handle(store, late) == []  # the same span again changes nothing
    assert join.tick(store, AT + 4 * HORIZON) == []  # horizon + retention after the late claim: evicted
    assert _entries(store) == []


def _tick_within(join: OutcomeJoin, store: dict[str, Any], now: datetime, seconds: float = 60.0) -> list[Event]:
    """The timer, in a thread that must finish (an entry always due again would spin it for ever)."""
    out: list[Event] = []
    worker = threading.Thread(target=lambda: out.extend(join.tick(store, now)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "the timer never finished: an entry stayed due"
    return out


def test_a_claim_nobody_awaits_closes_and_is_evicted_without_a_report() -> None:
    """A success read from the answer of a trace that wrote nothing awaits no verification: the timer
    neither reports it nor keeps finding it due."""
    join, store = OutcomeJoin(horizon=HORIZON), dict[str, Any]()
    _feed(join, store, [s for s in _spans() if s.span_id != CHILD.hex()])  # no refund_payment call
    assert store[KEY]["claim"]["status"] == "SUCCESS"
    assert _tick_within(join, store, AT + HORIZON + timedelta(seconds=1)) == []
    assert store[KEY]["closed"]
    assert _tick_within(join, store, AT + 2 * HORIZON + timedelta(seconds=1)) == []
    assert _entries(store) == []


def _link(n: int, at: datetime, tenant: str = "acme") -> SubjectLinked:
    trace = f"{n + 1:032x}"
    return SubjectLinked(
        event_id=f"link-{n}",
        occurred_at=at,
        received_at=at,
        correlation_id=trace,
        tenant=tenant,
        subject=f"order:ORD-{n}",
        trace_id=trace,
        tool="refund_payment",
    )


def _by_subject(n: int, at: datetime, status: str = "FAILURE") -> Event:
    return subject_outcome_event(f"order:ORD-{n}", status, True, "external_callback", "x", tenant="acme", at=at)


def test_a_matched_verification_is_never_reported_after_its_link_is_dropped() -> None:
    join, store = SubjectJoin(horizon=HORIZON), dict[str, Any]()
    assert join.handle(store, _link(1, AT)) == []
    matched = join.handle(store, _by_subject(1, AT + timedelta(minutes=4)))
    assert [type(e).__name__ for e in matched] == ["OutcomeVerified"]
    assert join.tick(store, AT + 2 * HORIZON + timedelta(minutes=1)) == []  # the link is dropped, not the verification
    assert list(store["acme|order:ORD-1"]["links"]) == []
    assert join.tick(store, AT + 2 * HORIZON + timedelta(minutes=3)) == []  # never "no trace acted on it"
    assert join.tick(store, AT + 3 * HORIZON) == []
    assert _entries(store) == []


def test_the_subject_join_store_stays_flat_and_every_unmatched_verification_is_reported_once() -> None:
    join, store = SubjectJoin(horizon=HORIZON), dict[str, Any]()
    sizes: dict[int, int] = {}
    matched, unmatched = 0, []
    for n in range(3000):  # a subject a second for 50 minutes; every fifth verification names no linked subject
        at = AT + timedelta(seconds=n)
        if n % 5:
            join.handle(store, _link(n, at))
        out = join.handle(store, _by_subject(n, at + timedelta(seconds=2)))
        matched += sum(isinstance(e, OutcomeVerified) for e in out)
        if n % 10 == 9:
            unmatched += [a.subject for a in _alerts(join.tick(store, at + timedelta(seconds=2)))]
        if n in (1000, 2999):
            sizes[n] = len(store)
    unmatched += [a.subject for a in _alerts(join.tick(store, AT + timedelta(hours=2)))]
    assert matched == 2400
    assert sorted(unmatched) == sorted(f"order:ORD-{n}" for n in range(0, 3000, 5))
    assert abs(sizes[2999] - sizes[1000]) <= 0.05 * sizes[1000]  # flat: two horizons of subjects, not all
    assert sizes[2999] < 3 * 600 + 300


def test_the_subject_join_timer_reads_only_due_entries() -> None:
    join, store = SubjectJoin(horizon=timedelta(hours=1)), _Watched()
    store[f"{INDEX_PREFIX}indexed"] = 1  # a store built by this code (no one-off migration)
    for n in range(3000):
        join.handle(store, _by_subject(n, AT + timedelta(seconds=n % 60)))
    store.entity_reads = 0
    assert join.tick(store, AT + timedelta(minutes=30)) == []
    assert store.entity_reads == 0  # nothing due: no entry is even looked at
    due = join.tick(store, AT + timedelta(hours=1, seconds=9))  # the verifications of seconds 0..9
    assert len(_alerts(due)) == sum(1 for n in range(3000) if n % 60 <= 9)
    assert store.entity_reads <= 4 * len(due) + 4 * 3000 // 120


def test_events_after_the_subject_join_dropped_them_change_nothing() -> None:
    join, store = SubjectJoin(horizon=HORIZON), dict[str, Any]()
    events: list[Event] = []
    for n in range(12):
        at = AT + timedelta(seconds=n)
        if n % 3:
            events.append(_link(n, at))
        if n % 4:
            events.append(_by_subject(n, at + timedelta(seconds=1)))
    first = [o for e in events for o in join.handle(store, e)]
    first += join.tick(store, AT + 3 * HORIZON)  # reported, then dropped
    assert _entries(store) == []
    assert len(_alerts(first)) == sum(1 for n in range(12) if n % 4 and not n % 3)
    for e in events:  # redelivered: no match again, no report again, nothing kept
        assert join.handle(store, e) == []
    assert _entries(store) == []
    assert join.tick(store, AT + 10 * HORIZON) == []
    # a new subject afterwards is joined as usual
    later = AT + 10 * HORIZON
    join.handle(store, _link(99, later))
    assert [type(e).__name__ for e in join.handle(store, _by_subject(99, later))] == ["OutcomeVerified"]
