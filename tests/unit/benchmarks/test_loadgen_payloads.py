"""The load generator's payloads (benchmarks/loadgen.py): stock OTLP protobuf that the project's own decoder
and mapping accept whole, agent runs of 5-15 spans with an agent span, LLM spans and tool spans carrying
arguments and results, the same bytes for the same seed, and the fast builder byte-equal to the reference.
Not timed: nothing here measures speed."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from datetime import UTC, datetime

import pytest

from benchmarks import loadgen
from producers.otlp.codec import PROTOBUF, parse_request
from producers.otlp.mapping import map_request
from producers.otlp.outcomes import parse_report, report_event
from streams.events import ContradictionDetected, Event, SpanRecorded
from streams.processors.outcome_join import CLAIM_ATTRIBUTE, OutcomeJoin
from streams.span_reading import read_span

END = 1_796_000_000_123_456_789  # a send time, fixed: the bytes depend on it
RECEIVED = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def _spans(seed: int, first: int, count: int) -> list[SpanRecorded]:
    batch = loadgen.RequestBuilder(seed).build(first, count, END)
    mapped = map_request(parse_request(batch.body, PROTOBUF), "bench", received_at=RECEIVED)
    assert not mapped.problems  # every span valid
    assert len(mapped.events) == batch.spans
    return list(mapped.events)


def test_the_projects_decoder_reads_every_span_of_a_request() -> None:
    batch = loadgen.RequestBuilder(1).build(0, 20, END)
    request = parse_request(batch.body, PROTOBUF)
    spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert len(spans) == batch.spans
    assert [t.hex() for t in dict.fromkeys(s.trace_id for s in spans)] == batch.traces
    assert request.resource_spans[0].resource.attributes[0].value.string_value == loadgen.AGENT
    events = _spans(1, 0, 20)
    assert {e.trace_id for e in events} == set(batch.traces)


def test_every_run_has_5_to_15_spans_an_agent_span_llm_spans_and_tools_with_arguments_and_results() -> None:
    by_trace: dict[str, list[SpanRecorded]] = defaultdict(list)
    for e in _spans(1, 0, 2 * loadgen.SHAPES):
        by_trace[e.trace_id].append(e)
    assert len(by_trace) == 2 * loadgen.SHAPES
    sizes = Counter(len(spans) for spans in by_trace.values())
    assert min(sizes) >= 5
    assert max(sizes) <= 15
    assert len(sizes) >= 6  # the sizes vary over the range, not one shape repeated
    for spans in by_trace.values():
        roles = Counter(e.span_role for e in spans)
        assert roles["AGENT"] == 1
        assert roles["LLM"] >= 1
        assert roles["TOOL"] >= 1
        agent = next(e for e in spans if e.span_role == "AGENT")
        assert agent.attributes[CLAIM_ATTRIBUTE] == "SUCCESS"
        assert all(e.parent_span_id == agent.span_id for e in spans if e is not agent)
        for tool in (e for e in spans if e.span_role == "TOOL"):
            reading = read_span(tool)
            assert reading.tool_arguments  # JSON arguments, read back
            assert reading.tool_error is None
            assert json.loads(tool.attributes["gen_ai.tool.call.result"])  # a JSON result
        chats = [read_span(e) for e in spans if e.span_role == "LLM"]
        assert all(c.requested_calls for c in chats[:-1])  # each chat but the last asks for tools
        assert chats[-1].answer is not None
        assert "refunded" in chats[-1].answer
        assert [e.tool_name for e in spans if e.span_role == "TOOL"][-1] == loadgen.WRITE_TOOL.name
        assert len({e.span_id for e in spans}) == len(spans)


def test_same_seed_same_bytes_other_seed_other_runs() -> None:
    a = loadgen.build_request(7, 100, 20, END)
    assert loadgen.build_request(7, 100, 20, END) == a
    b = loadgen.build_request(8, 100, 20, END)
    assert b.body != a.body
    assert not set(a.traces) & set(b.traces)
    assert not set(a.traces) & set(loadgen.build_request(7, 120, 20, END).traces)  # runs never repeat ids


@pytest.mark.parametrize(("seed", "first"), [(1, 0), (1, 63), (2, 1000), (99, 123_456_789)])
def test_the_fast_builder_sends_the_reference_encoders_bytes(seed: int, first: int) -> None:
    builder = loadgen.RequestBuilder(seed)
    for end in (END, END + 987_654_321_000):
        assert builder.build(first, 20, end) == loadgen.build_request(seed, first, 20, end)


def test_a_verified_run_is_one_contradiction_alert() -> None:
    """The verification the clients POST passes the receiver's outcome schema and contradicts the run's claim."""
    events: list[Event] = list(_spans(3, 0, 10))
    traces = list(dict.fromkeys(e.trace_id for e in events if isinstance(e, SpanRecorded)))
    verified = [t for n, t in enumerate(traces) if loadgen.is_verified(n, 5)]
    assert len(verified) == 2
    for trace in verified:
        events.append(report_event(parse_report(loadgen.verification(trace)), "bench", RECEIVED))
    join, store = OutcomeJoin(), {}
    out: list[Event] = []
    for e in events:
        out += join.handle(store, e)
    alerts = [a for a in out if isinstance(a, ContradictionDetected)]
    assert sorted(a.trace_id for a in alerts) == sorted(verified)
    assert {a.kind for a in alerts} == {"contradiction"}


def test_alert_clock_counts_latency_duplicates_and_alerts_before_their_verification() -> None:
    clock = loadgen.AlertClock()
    clock.acked(50, 5, at=10.0)
    clock.verified([("t1", 1.0), ("t2", 1.0)])
    clock.alert("t1", "contradiction")
    clock.alert("t1", "contradiction")  # a duplicate
    clock.alert("t3", "contradiction")  # seen before its verification was reported
    clock.verified([("t3", 2.0)])
    clock.alert("t9", "claim_unverified")
    clock.finish()
    assert clock.duplicated == 1
    assert clock.missing() == 1  # t2
    assert not clock.all_alerted()
    assert clock.other_kinds == {"claim_unverified": 1}
    assert len(clock.latencies) == 2
    assert clock.unexpected == 0
    assert clock.spans_between(9.0, 11.0) == 50
    assert clock.spans_between(11.0, 12.0) == 0
