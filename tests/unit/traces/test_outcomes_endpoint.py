"""`POST /v1/outcomes` on the receiver: verifications by trace id or by subject, durable, tenant from the key."""

from __future__ import annotations

import gzip
import json
from typing import Any

import httpx
import pytest

from producers.otlp import IngestServer
from streams.embedded import EmbeddedRuntime
from streams.events import OutcomeVerified, SpanRecorded, SubjectLinked, SubjectVerified
from tests.unit.traces.conftest import CHILD, ROOT, TRACE, request, span

JSON = {"Content-Type": "application/json", "x-agenttwin-api-key": "key-acme"}
TRACE_HEX = TRACE.hex()


def _post(
    server: IngestServer, doc: Any, headers: dict[str, str] | None = None, *, raw: bytes | None = None
) -> httpx.Response:
    body = raw if raw is not None else json.dumps(doc).encode()
    return httpx.post(f"{server.url}/v1/outcomes", content=body, headers=headers or JSON, timeout=10)


def _report(**extra: Any) -> dict[str, Any]:
    return {"status": "FAILURE", "verified": True, "source": "external_callback", **extra}


def test_a_verification_by_trace_id_is_stored_under_the_keys_tenant(
    server: IngestServer, runtime: EmbeddedRuntime
) -> None:
    resp = _post(
        server, _report(trace_id=TRACE_HEX.upper(), evidence={"refund_count": 2}, business_outcome="REFUNDED_TWICE")
    )
    assert resp.status_code == 200, resp.text
    answer = resp.json()
    assert answer["matched_by"] == "trace_id" and answer["trace_id"] == TRACE_HEX and answer["duplicate"] is False
    (event,) = runtime.read_events("verified-outcomes")
    assert isinstance(event, OutcomeVerified)
    assert (event.tenant, event.trace_id, event.status, event.verified, event.source) == (
        "acme",
        TRACE_HEX,
        "FAILURE",
        True,
        "external_callback",
    )
    assert event.reason == '{"refund_count":2}' and event.business_outcome == "REFUNDED_TWICE"
    assert event.received_at is not None and event.event_id == answer["event_id"]


def test_a_verification_by_subject_becomes_a_subject_verification(
    server: IngestServer, runtime: EmbeddedRuntime
) -> None:
    resp = _post(
        server,
        _report(subject="Order:ORD-1001", evidence="refund_count is 2"),
        {**JSON, "x-agenttwin-api-key": "key-beta"},
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["matched_by"] == "subject" and resp.json()["subject"] == "order:ORD-1001"
    (event,) = runtime.read_events("subjects")
    assert isinstance(event, SubjectVerified)
    assert (event.tenant, event.subject, event.status, event.reason) == (
        "beta",
        "order:ORD-1001",
        "FAILURE",
        "refund_count is 2",
    )
    assert "verified-outcomes" not in runtime.log.topics()


def test_an_idempotency_key_makes_a_retry_one_report(server: IngestServer, runtime: EmbeddedRuntime) -> None:
    first = _post(server, _report(subject="order:ORD-1", idempotency_key="sor-42"))
    again = _post(server, _report(subject="order:ORD-1", idempotency_key="sor-42", evidence="retried"))
    assert first.status_code == again.status_code == 200
    assert first.json()["duplicate"] is False and again.json()["duplicate"] is True
    assert first.json()["event_id"] == again.json()["event_id"]
    assert len(runtime.read_events("subjects")) == 1
    # the same key from another tenant is another report
    other = _post(
        server, _report(subject="order:ORD-1", idempotency_key="sor-42"), {**JSON, "x-agenttwin-api-key": "key-beta"}
    )
    assert other.json()["duplicate"] is False and len(runtime.read_events("subjects")) == 2
    # without a key, the same content is one report; a corrected report is a new one
    assert _post(server, _report(trace_id=TRACE_HEX)).json()["duplicate"] is False
    assert _post(server, _report(trace_id=TRACE_HEX)).json()["duplicate"] is True
    assert _post(server, _report(trace_id=TRACE_HEX, status="PARTIAL")).json()["duplicate"] is False


def test_verified_at_is_the_event_time_and_gzip_is_accepted(server: IngestServer, runtime: EmbeddedRuntime) -> None:
    body = gzip.compress(json.dumps(_report(trace_id=TRACE_HEX, verified_at="2020-01-01T00:00:00Z")).encode())
    resp = _post(server, None, {**JSON, "Content-Encoding": "gzip"}, raw=body)
    assert resp.status_code == 200, resp.text
    (event,) = runtime.read_events("verified-outcomes")
    assert event.occurred_at.year == 2020 and event.clock_skew == "too_old"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("doc", "fragment"),
    [
        (_report(), "give either trace_id or subject"),
        (_report(trace_id=TRACE_HEX, subject="order:1"), "give either trace_id or subject"),
        (_report(trace_id="xyz"), "trace_id"),
        (_report(trace_id="0" * 32), "trace_id"),
        (_report(subject="ORD-1001"), "subject"),
        (_report(subject="order: has\nnewline"), "subject"),
        (_report(trace_id=TRACE_HEX, status="DONE"), "status"),
        (_report(trace_id=TRACE_HEX, source="my-crm"), "source"),
        (_report(trace_id=TRACE_HEX, verified="yes"), "verified"),
        (_report(trace_id=TRACE_HEX, tenant="beta"), "tenant"),  # the tenant is the key's, never the body's
        (_report(trace_id=TRACE_HEX, verified_at="yesterday"), "verified_at"),
        (_report(trace_id=TRACE_HEX, verified_at="2026-01-01T00:00:00"), "time zone"),
        (_report(trace_id=TRACE_HEX, business_outcome="x" * 201), "business_outcome"),
        ([_report(trace_id=TRACE_HEX)], "JSON object"),
        ({"status": "FAILURE", "verified": True}, "trace_id or subject"),
    ],
)
def test_bad_reports_are_400_and_store_nothing(
    server: IngestServer, runtime: EmbeddedRuntime, doc: Any, fragment: str
) -> None:
    resp = _post(server, doc)
    assert resp.status_code == 400, resp.text
    assert fragment in resp.json()["message"]
    assert runtime.log.topics() == []


def test_refusals_match_the_spans_endpoint(server: IngestServer, runtime: EmbeddedRuntime) -> None:
    doc = _report(trace_id=TRACE_HEX)
    assert _post(server, doc, {"Content-Type": "application/json"}).status_code == 401
    assert _post(server, doc, {**JSON, "x-agenttwin-api-key": "nope"}).status_code == 401
    assert _post(server, doc, {**JSON, "Content-Type": "application/x-protobuf"}).status_code == 415
    assert _post(server, None, raw=b"{not json").status_code == 400
    assert _post(server, None, raw=b"[" * 10_000 + b"]" * 10_000).status_code == 400
    assert _post(server, None, raw=json.dumps({**doc, "evidence": "x" * 70_000}).encode()).status_code == 413
    assert httpx.get(f"{server.url}/v1/outcomes", timeout=10).status_code == 405
    assert runtime.log.topics() == []


def test_spans_of_a_write_tool_link_the_trace_to_its_subject(server: IngestServer, runtime: EmbeddedRuntime) -> None:
    body = request(
        span(ROOT, name="refund-agent", attrs={"openinference.span.kind": "AGENT"}),
        span(
            CHILD,
            parent=ROOT,
            name="refund_payment",
            attrs={
                "openinference.span.kind": "TOOL",
                "tool.name": "refund_payment",
                "input.value": '{"order_id": "ORD-7"}',
            },
        ),
    ).SerializeToString()
    headers = {"Content-Type": "application/x-protobuf", "x-agenttwin-api-key": "key-acme"}
    for _ in range(2):  # a re-sent batch adds nothing
        assert httpx.post(f"{server.url}/v1/traces", content=body, headers=headers, timeout=10).status_code == 200
    (link,) = runtime.read_events("subjects")
    assert isinstance(link, SubjectLinked)
    assert (link.tenant, link.subject, link.trace_id, link.tool) == (
        "acme",
        "order:ORD-7",
        TRACE.hex(),
        "refund_payment",
    )
    tool = next(s for s in runtime.read_events("spans") if isinstance(s, SpanRecorded) and s.span_id == CHILD.hex())
    assert (tool.span_role, tool.tool_name, tool.tool_error) == ("TOOL", "refund_payment", None)
