"""OTLP request -> SpanRecorded: ids, kinds, status, service, flattened attributes, source, validity."""

from __future__ import annotations

import json

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from producers.otlp.codec import JSON, PROTOBUF, IngestError, parse_request
from producers.otlp.mapping import map_request
from streams import ids
from tests.unit.traces.conftest import CHILD, RECEIVED, ROOT, START, TRACE, agent_trace, request, span


def test_protobuf_request_maps_every_span_field() -> None:
    body = agent_trace().SerializeToString()
    batch = map_request(parse_request(body, PROTOBUF), "acme", received_at=RECEIVED)
    assert batch.rejected == 0 and batch.error_message == ""
    root, child = batch.events
    assert root.trace_id == TRACE.hex() == "0af7651916cd43dd8448eb211c80319c"
    assert root.span_id == ROOT.hex() and root.parent_span_id is None
    assert child.parent_span_id == ROOT.hex() and child.span_id == CHILD.hex()
    assert (root.kind, child.kind) == ("INTERNAL", "CLIENT")
    assert root.start_unix_nano == START and root.end_unix_nano == START + 5_000_000
    assert root.occurred_at.isoformat() == "2026-01-01T00:00:00.005000+00:00"
    assert root.status_code == "UNSET" and root.status_message is None
    assert root.service_name == "refund-agent" and root.source == "production"
    assert root.tenant == "acme" and root.correlation_id == root.trace_id
    assert root.attributes["agenttwin.outcome.claimed"] == "SUCCESS"
    assert root.attributes["otel.scope.name"] == "agenttwin"
    assert root.resource_attributes == {"service.name": "refund-agent"}
    assert root.event_id == ids.span_event_id("acme", root.trace_id, root.span_id)
    assert root.received_at == RECEIVED and root.clock_skew is None


def test_attribute_values_are_flattened_to_strings() -> None:
    attrs = {
        "s": "text",
        "b": True,
        "i": 42,
        "d": 0.25,
        "raw": b"\x00\x01",
        "arr": ["a", 1, False],
        "kv": {"z": 1, "a": ["x"]},
    }
    batch = map_request(request(span(attrs=attrs)), "acme", received_at=RECEIVED)
    got = batch.events[0].attributes
    assert got["s"] == "text" and got["b"] == "true" and got["i"] == "42" and got["d"] == "0.25"
    assert got["raw"] == "AAE="
    assert json.loads(got["arr"]) == ["a", 1, False] and got["arr"] == '["a",1,false]'
    assert got["kv"] == '{"a":["x"],"z":1}'  # canonical: sorted keys, compact


def test_error_status_and_unknown_service() -> None:
    batch = map_request(
        request(span(status=Status.StatusCode.STATUS_CODE_ERROR), resource={}), "acme", received_at=RECEIVED
    )
    (event,) = batch.events
    assert event.status_code == "ERROR" and event.status_message == "boom"
    assert event.service_name == "unknown_service"


@pytest.mark.parametrize(
    ("where", "value", "expected"),
    [
        ("span", "simulation", "simulation"),
        ("resource", "Simulation", "simulation"),
        ("span", "production", "production"),
        ("span", "anything-else", "production"),
    ],
)
def test_source_is_production_unless_agenttwin_source_says_simulation(where: str, value: str, expected: str) -> None:
    attrs = {"agenttwin.source": value}
    req = request(span(attrs=attrs)) if where == "span" else request(span(), resource=attrs)
    assert map_request(req, "acme", received_at=RECEIVED).events[0].source == expected


def test_tenant_claimed_by_attributes_is_ignored() -> None:
    req = request(span(attrs={"agenttwin.tenant": "beta", "tenant": "beta"}), resource={"agenttwin.tenant": "beta"})
    (event,) = map_request(req, "acme", received_at=RECEIVED).events
    assert event.tenant == "acme"
    assert event.attributes["agenttwin.tenant"] == "beta"  # kept as sent: a claim, not the authority


def test_invalid_spans_are_rejected_and_counted() -> None:
    good = span(CHILD)
    req = request(
        good,
        span(trace_id=b"\x00" * 16),
        span(trace_id=b"\x01" * 3),
        span(b"\x00" * 8),
        span(CHILD, parent=b"\x01\x02"),
        span(CHILD, start=START, end=START - 1),
    )
    batch = map_request(req, "acme", received_at=RECEIVED)
    assert [e.span_id for e in batch.events] == [CHILD.hex()]
    assert batch.rejected == 5
    assert batch.problems == {
        "invalid trace_id": 2,
        "invalid span_id": 1,
        "invalid parent_span_id": 1,
        "end before start": 1,
    }
    assert batch.error_message == (
        "rejected 5 span(s): 1 end before start, 1 invalid parent_span_id, 1 invalid span_id, 2 invalid trace_id"
    )


def _otlp_json(req: ExportTraceServiceRequest) -> bytes:
    """OTLP/JSON as the spec writes it: lowerCamelCase, hex ids, enums as integers."""
    doc = json_format.MessageToDict(req, use_integers_for_enums=True)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                for name in ("traceId", "spanId", "parentSpanId"):
                    if name in s:
                        s[name] = __import__("base64").b64decode(s[name]).hex()
    return json.dumps(doc).encode()


def test_json_request_with_hex_ids_maps_like_protobuf() -> None:
    req = agent_trace()
    from_json = map_request(parse_request(_otlp_json(req), JSON), "acme", received_at=RECEIVED).events
    from_proto = map_request(req, "acme", received_at=RECEIVED).events
    assert from_json == from_proto
    assert from_json[1].parent_span_id == "b7ad6b7169203331"


def test_json_with_a_bad_hex_id_rejects_that_span_only() -> None:
    doc = json.loads(_otlp_json(agent_trace()))
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["spanId"] = "not-hex"
    batch = map_request(parse_request(json.dumps(doc).encode(), JSON), "acme", received_at=RECEIVED)
    assert len(batch.events) == 1 and batch.rejected == 1 and batch.problems == {"invalid span_id": 1}


def test_json_unknown_fields_are_ignored_and_string_kinds_accepted() -> None:
    doc = json.loads(_otlp_json(agent_trace()))
    doc["somethingNew"] = {"x": 1}
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["kind"] = "SPAN_KIND_SERVER"
    batch = map_request(parse_request(json.dumps(doc).encode(), JSON), "acme", received_at=RECEIVED)
    assert batch.events[0].kind == "SERVER"


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"{not json", JSON),
        (b"[1, 2]", JSON),
        (b'{"resourceSpans": "nope"}', JSON),
        (b"\xff\xfe\x00garbage-protobuf\x0a\xff", PROTOBUF),
    ],
)
def test_malformed_bodies_are_400(body: bytes, content_type: str) -> None:
    with pytest.raises(IngestError) as err:
        parse_request(body, content_type)
    assert err.value.status == 400


def test_span_kind_numbers_unknown_to_this_proto_are_unspecified() -> None:
    s = span()
    s.kind = 42  # type: ignore[assignment]
    assert map_request(request(s), "acme", received_at=RECEIVED).events[0].kind == "UNSPECIFIED"
    assert Span.SpanKind.Name(Span.SpanKind.SPAN_KIND_PRODUCER) == "SPAN_KIND_PRODUCER"
