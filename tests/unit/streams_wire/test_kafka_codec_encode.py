"""KafkaCodec.encode (headers made once per event type) writes what the identity module defines, byte for byte."""

from __future__ import annotations

from datetime import UTC, datetime

from producers.sdk.outcome import outcome_event
from streams.events import ClaimRead, Event
from streams.identity import SINGLE_OBJECT, event_time_ms, record_headers
from streams.kafka.codec import KafkaCodec, SourceRef, dead_letter
from streams.kafka.naming import Naming
from tests.claim_spans import agent_claim_span

AT = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _events() -> list[Event]:
    trace = f"{7:032x}"
    span = agent_claim_span(trace, AT, event_id="span-1")
    letter = dead_letter("outcome-join", "INVALID_EVENT", "bad", SourceRef("p.spans", 2, 40, b"k", b"\x00"))
    claim = ClaimRead(
        event_id="read-1", occurred_at=AT, correlation_id=trace, tenant="acme", trace_id=trace, revision=1,
        agent="a", agent_version="1", tools=["lookup"], failed_tools=[], write_tool=None, subjects=[],
        final_answer="done", claimed_status="SUCCESS", claim_inferred_by=None, claim_rule=None, received_at=AT,
    )  # fmt: skip
    verified = outcome_event(trace, "FAILURE", True, "external_callback", "x", tenant="acme", at=AT)
    return [span, letter, claim, verified, agent_claim_span(f"{8:032x}", AT, event_id="span-2")]


def test_encode_writes_the_defined_topic_key_value_headers_and_timestamp() -> None:
    codec = KafkaCodec(Naming("p."))
    for event in _events() * 2:  # the second time from the per-type cache
        schema = codec.schemas.current(event.SCHEMA)
        message = codec.encode(event)
        assert message.topic == "p." + event.TOPIC
        assert message.key == event.key.encode()
        assert message.value == codec.schemas.encode(event.SCHEMA, event.to_record())
        headers = record_headers(event, event.SCHEMA, schema.fingerprint, content_type=SINGLE_OBJECT)
        assert message.headers == [(name, value.encode()) for name, value in headers.items()]
        assert message.timestamp_ms == event_time_ms(event)
        assert codec.decode(message.value) == event
