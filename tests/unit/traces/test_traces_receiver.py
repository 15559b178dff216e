"""The OTLP/HTTP receiver over a real socket, writing to the real embedded log."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable

import httpx
import pytest
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from producers.otlp import ApiKeys, IngestServer, make_server
from producers.otlp.keys import IngestSettings, KeyFileError, key_digest, load_api_keys, read_key_file
from streams.embedded import EmbeddedRuntime
from streams.events import Event, SpanRecorded
from tests.unit.traces.conftest import CHILD, TRACE, agent_trace, request, span

PB = {"Content-Type": "application/x-protobuf", "x-agenttwin-api-key": "key-acme"}


def _post(server: IngestServer, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/traces", content=body, headers=headers, timeout=10)


def _spans(runtime: EmbeddedRuntime) -> list[SpanRecorded]:
    return [e for e in runtime.read_events("spans") if isinstance(e, SpanRecorded)]


def test_protobuf_export_is_stored_and_answered_with_an_empty_response(
    server: IngestServer, runtime: EmbeddedRuntime
) -> None:
    resp = _post(server, agent_trace().SerializeToString(), PB)
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/x-protobuf"
    answer = ExportTraceServiceResponse.FromString(resp.content)
    assert not answer.HasField("partial_success")
    stored = _spans(runtime)
    assert [(s.trace_id, s.tenant) for s in stored] == [(TRACE.hex(), "acme")] * 2


def test_json_export_answers_json(server: IngestServer, runtime: EmbeddedRuntime) -> None:
    doc = json_format.MessageToDict(agent_trace())
    for s in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for name in ("traceId", "spanId", "parentSpanId"):
            if name in s:
                s[name] = __import__("base64").b64decode(s[name]).hex()
    resp = _post(
        server,
        json.dumps(doc).encode(),
        {"Content-Type": "application/json; charset=utf-8", "Authorization": "Bearer key-beta"},
    )
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
    assert resp.json() == {}
    assert {s.tenant for s in _spans(runtime)} == {"beta"}


def test_gzip_body_is_accepted(server: IngestServer, runtime: EmbeddedRuntime) -> None:
    body = gzip.compress(agent_trace().SerializeToString())
    resp = _post(server, body, {**PB, "Content-Encoding": "gzip"})
    assert resp.status_code == 200 and len(_spans(runtime)) == 2


def test_tenant_comes_from_the_key_even_when_spans_claim_another(
    server: IngestServer, runtime: EmbeddedRuntime
) -> None:
    req = request(span(attrs={"agenttwin.tenant": "beta", "tenant": "beta"}), resource={"agenttwin.tenant": "beta"})
    assert _post(server, req.SerializeToString(), PB).status_code == 200
    assert [s.tenant for s in _spans(runtime)] == ["acme"]


def test_partial_success_reports_rejected_spans(server: IngestServer, runtime: EmbeddedRuntime) -> None:
    req = request(span(), span(CHILD, trace_id=b"\x00" * 16))
    resp = _post(server, req.SerializeToString(), PB)
    assert resp.status_code == 200
    answer = ExportTraceServiceResponse.FromString(resp.content)
    assert answer.partial_success.rejected_spans == 1
    assert answer.partial_success.error_message == "rejected 1 span(s): 1 invalid trace_id"
    assert len(_spans(runtime)) == 1


def test_resending_a_batch_writes_nothing_new(server: IngestServer, runtime: EmbeddedRuntime) -> None:
    body = agent_trace().SerializeToString()
    for _ in range(3):
        assert _post(server, body, PB).status_code == 200
    assert len(_spans(runtime)) == 2
    assert server.receiver.stats.spans_accepted == 6 and server.receiver.stats.spans_written == 2


@pytest.mark.parametrize(
    ("headers", "body", "status"),
    [
        ({"Content-Type": "application/x-protobuf"}, None, 401),
        ({"Content-Type": "application/x-protobuf", "x-agenttwin-api-key": "wrong"}, None, 401),
        ({"Content-Type": "application/x-protobuf", "Authorization": "Basic a2V5LWFjbWU="}, None, 401),
        ({"Content-Type": "text/plain", "x-agenttwin-api-key": "key-acme"}, None, 415),
        ({"x-agenttwin-api-key": "key-acme"}, None, 415),
        ({**PB, "Content-Encoding": "br"}, None, 415),
        (PB, b"\x0a\xff\xff\xff\xff\x0f", 400),
        ({**PB, "Content-Encoding": "gzip"}, b"not gzip at all", 400),
        ({"Content-Type": "application/json", "x-agenttwin-api-key": "key-acme"}, b"{oops", 400),
        (PB, b"\x00" * (64 * 1024 + 1), 413),
        ({**PB, "Content-Encoding": "gzip"}, gzip.compress(b"\x00" * (64 * 1024 + 1)), 413),
    ],
)
def test_refused_requests_write_nothing(
    server: IngestServer,
    runtime: EmbeddedRuntime,
    headers: dict[str, str],
    body: bytes | None,
    status: int,
) -> None:
    resp = _post(server, body if body is not None else agent_trace().SerializeToString(), headers)
    assert resp.status_code == status
    assert "spans" not in runtime.log.topics() or runtime.log.end_offset("spans") == 0
    assert server.receiver.stats.refused[status] == 1
    if resp.headers["content-type"] == "application/x-protobuf":
        assert status_pb2.Status.FromString(resp.content).message
    else:
        assert resp.json()["message"]


def test_unknown_path_is_404_and_get_is_405(server: IngestServer) -> None:
    assert httpx.post(f"{server.url}/v1/logs", content=b"", headers=PB).status_code == 404
    assert httpx.get(f"{server.url}/v1/traces").status_code == 405


class _Broken:
    def publish(self, events: Iterable[Event]) -> int:
        raise OSError("disk full")


def test_a_publisher_failure_is_503_retryable_and_counted() -> None:
    srv = make_server("127.0.0.1", 0, _Broken(), ApiKeys.from_mapping({"k": "t"}))
    srv.start()
    try:
        resp = _post(srv, agent_trace().SerializeToString(), {**PB, "x-agenttwin-api-key": "k"})
    finally:
        srv.close()
    assert resp.status_code == 503 and resp.headers["retry-after"] == "1"
    assert srv.receiver.stats.publish_errors == 1 and "disk full" in (srv.receiver.stats.last_error or "")


def test_key_files_and_settings_keep_only_digests(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "keys.txt"  # type: ignore[operator]
    path.write_text(f"# tenants\nplain-key=acme\nsha256:{key_digest('hashed-key')}=beta\n")
    keys = read_key_file(path)
    assert keys.tenant_for("plain-key") == "acme" and keys.tenant_for("hashed-key") == "beta"
    assert keys.tenant_for("sha256:" + key_digest("hashed-key")) is None
    assert "plain-key" not in repr(vars(keys))
    settings = IngestSettings(api_keys="env-key=gamma,plain-key=delta")  # type: ignore[arg-type]
    merged = load_api_keys(settings, path)
    assert merged.tenant_for("env-key") == "gamma" and merged.tenant_for("plain-key") == "acme"
    js = tmp_path / "keys.json"  # type: ignore[operator]
    js.write_text('{"k1": "t1"}')
    assert read_key_file(js).tenant_for("k1") == "t1"
    bad = tmp_path / "bad.txt"  # type: ignore[operator]
    bad.write_text("no equals sign\n")
    with pytest.raises(KeyFileError, match="expected KEY=TENANT"):
        read_key_file(bad)
