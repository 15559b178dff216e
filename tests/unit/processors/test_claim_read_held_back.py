"""Which changes of a trace's reading the outcome join emits at once (streams/processors/trace_claims.py).

A claimless reading that changes only what the version tally does not count (one more tool in the list) is
held back until the next reading that is emitted, the trace's root span, or the entry's close; every
reading with a claim is emitted. Nothing is lost: the last ClaimRead always has every tool."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from streams.events import ClaimRead, Event, SpanRecorded
from streams.processors.outcome_join import CLAIM_ATTRIBUTE, OutcomeJoin
from streams.processors.trace_claims import claim_read
from streams.processors.version_tally import VersionTally

AT = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
TRACE = "ab" * 16
HORIZON = timedelta(minutes=5)


def _span(
    n: int, tool: str | None, *, failed: bool = False, root: bool = False, claim: str | None = None
) -> SpanRecorded:
    at = AT + timedelta(seconds=n)
    nanos = int(at.timestamp() * 1e9)
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool} if tool else {}
    if claim is not None:
        attributes[CLAIM_ATTRIBUTE] = claim
    return SpanRecorded(
        event_id=f"span-{n}",
        occurred_at=at,
        received_at=at,
        correlation_id=TRACE,
        tenant="acme",
        trace_id=TRACE,
        span_id=f"{n:016x}",
        parent_span_id=None if root else "00000000000000a1",
        name=f"execute_tool {tool}" if tool else "invoke_agent support-refund-agent",
        kind="INTERNAL",
        start_unix_nano=nanos,
        end_unix_nano=nanos,
        status_code="ERROR" if failed else "OK",
        service_name="support-refund-agent",
        source="otlp",
        attributes=attributes,
        resource_attributes={"service.name": "support-refund-agent", "service.version": "1.3.0"},
    )


def _run(join: OutcomeJoin, store: dict[str, object], spans: list[SpanRecorded]) -> list[list[ClaimRead]]:
    """The ClaimReads each span produced, span by span."""
    return [[e for e in join.handle(store, s) if isinstance(e, ClaimRead)] for s in spans]


def test_a_claimless_trace_emits_its_first_reading_then_what_the_tally_counts_then_everything_once_it_ends() -> None:
    join, store = OutcomeJoin(horizon=HORIZON), {}
    spans = [
        _span(1, "lookup_order"),
        _span(2, "get_customer"),  # one more tool: held back
        _span(3, "refund_payment", failed=True),  # a failed tool: the tally counts tool errors
        _span(4, "search_kb"),  # held back
        _span(5, "escalate_to_human"),  # an escalation: counted
        _span(6, "notify"),  # held back
        _span(7, None, root=True),  # the run ended: its full reading now
        _span(8, "late_tool"),  # after the end every change is emitted
    ]
    reads = _run(join, store, spans)
    assert [len(r) for r in reads] == [1, 0, 1, 0, 1, 0, 1, 1]
    emitted = [r[0] for r in reads if r]
    assert [r.revision for r in emitted] == [1, 2, 3, 4, 5]
    assert emitted[0].agent == "support-refund-agent" and emitted[0].agent_version == "1.3.0"
    assert emitted[1].tools == ["lookup_order", "get_customer", "refund_payment"]  # what waited comes along
    assert emitted[1].failed_tools == ["refund_payment"]
    assert emitted[3].tools == [
        "lookup_order",
        "get_customer",
        "refund_payment",
        "search_kb",
        "escalate_to_human",
        "notify",
    ]
    assert emitted[4].tools[-1] == "late_tool"
    assert all(r.claimed_status is None for r in emitted)


def test_a_crashed_agents_held_back_reading_comes_once_when_its_entry_closes() -> None:
    join, store = OutcomeJoin(horizon=HORIZON), {}
    reads = _run(join, store, [_span(1, "lookup_order"), _span(2, "get_customer"), _span(3, "refund_payment")])
    assert [len(r) for r in reads] == [1, 0, 0]  # no root span: the agent never finished
    assert join.tick(store, AT + timedelta(seconds=3) + HORIZON - timedelta(seconds=1)) == []  # not yet
    closing = join.tick(store, AT + timedelta(seconds=3) + HORIZON)
    final = [e for e in closing if isinstance(e, ClaimRead)]
    assert len(final) == 1
    assert final[0].revision == 2 and final[0].tools == ["lookup_order", "get_customer", "refund_payment"]
    assert final[0].occurred_at == AT + timedelta(seconds=3)  # the entry's last event, not the timer's clock
    assert [e for e in join.tick(store, AT + 2 * HORIZON) if isinstance(e, ClaimRead)] == []  # once


def test_a_closed_entry_with_nothing_held_back_emits_nothing_at_close() -> None:
    join, store = OutcomeJoin(horizon=HORIZON), {}
    _run(join, store, [_span(1, "lookup_order"), _span(2, None, root=True)])
    assert [e for e in join.tick(store, AT + 2 * HORIZON) if isinstance(e, ClaimRead)] == []


def test_every_change_of_a_reading_with_a_claim_is_emitted() -> None:
    join, store = OutcomeJoin(horizon=HORIZON), {}
    reads = _run(
        join,
        store,
        [_span(1, "lookup_order"), _span(2, "get_customer"), _span(3, None, claim="success"), _span(4, "notify")],
    )
    assert [len(r) for r in reads] == [1, 0, 1, 1]
    assert reads[2][0].claimed_status == "SUCCESS" and reads[2][0].tools == ["lookup_order", "get_customer"]
    assert reads[3][0].tools == ["lookup_order", "get_customer", "notify"]


def test_the_version_tally_counts_what_it_would_have_counted_from_every_reading() -> None:
    """Held-back readings change nothing the tally counts: its TraceTallied events are the same as when it is
    fed the trace's reading after every span."""
    spans = [
        _span(1, "lookup_order"),
        _span(2, "get_customer"),
        _span(3, "refund_payment", failed=True),
        _span(4, "search_kb"),
        _span(5, "escalate_to_human"),
        _span(6, None, root=True, claim="escalated"),
    ]
    join, store = OutcomeJoin(horizon=HORIZON), {}
    emitted = [e for s in spans for e in join.handle(store, s) if isinstance(e, ClaimRead)]
    assert len(emitted) < len(spans)

    every: list[ClaimRead] = []
    join, store = OutcomeJoin(horizon=HORIZON), {}
    for n, s in enumerate(spans, 1):
        join.handle(store, s)
        entry = dict(store[f"acme|{TRACE}"])  # type: ignore[call-overload]
        entry.pop("reading")  # as if nothing was emitted yet: the reading as it stands after this span
        current = claim_read(entry, AT)
        assert current is not None
        every.append(replace(current, revision=n, event_id=f"read-{n}"))
    assert [len(r.tools) for r in every] == [1, 2, 3, 4, 5, 5]

    def tallies(reads: list[ClaimRead]) -> list[tuple[object, ...]]:
        tally, tally_store = VersionTally(), {}
        out: list[Event] = tally.handle(tally_store, spans[0])  # the trace's first receive time
        for r in reads:
            out += tally.handle(tally_store, r)
        return [(e.claimed_status, e.tool_errors, e.escalated) for e in out]  # type: ignore[attr-defined]

    assert tallies(emitted)[-1] == tallies(every)[-1] == ("ESCALATED", 1, True)
    assert tallies(emitted) == tallies(every)
