"""The receiver behaves like one: whole multi-member gzip bodies, depth and size limits answered with
400/413 (always a reply, never a dropped connection), 200 concurrent clients served without a reset, and a
taken port reported in one line with exit status 2."""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import threading
from pathlib import Path

import httpx
import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from agenttwin.cli import main
from producers.otlp import IngestServer
from streams.embedded import EmbeddedRuntime
from streams.events import SpanRecorded
from tests.unit.traces.conftest import request, span

PB = {"Content-Type": "application/x-protobuf", "x-agenttwin-api-key": "key-acme"}
JS = {"Content-Type": "application/json", "x-agenttwin-api-key": "key-acme"}


def _post(server: IngestServer, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/traces", content=body, headers=headers, timeout=30)


def _spans(runtime: EmbeddedRuntime) -> list[SpanRecorded]:
    if "spans" not in runtime.log.topics():
        return []
    return [e for e in runtime.read_events("spans") if isinstance(e, SpanRecorded)]


def _ids(n: int, first: int = 1) -> list[bytes]:
    return [bytes.fromhex(f"{first + i:016x}") for i in range(n)]


def test_a_multi_member_gzip_body_is_decoded_whole(server: IngestServer, runtime: EmbeddedRuntime) -> None:
    # two serialized requests one after the other are one request (protobuf merges repeated fields)
    first = request(*(span(s) for s in _ids(3))).SerializeToString()
    second = request(*(span(s) for s in _ids(4, first=100))).SerializeToString()
    body = gzip.compress(first) + gzip.compress(second)
    resp = _post(server, body, {**PB, "Content-Encoding": "gzip"})
    assert resp.status_code == 200
    assert len(_spans(runtime)) == 7


def test_a_json_body_split_across_gzip_members_is_decoded_whole(server: IngestServer, runtime: EmbeddedRuntime) -> None:
    doc = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "0af7651916cd43dd8448eb211c80319c",
                                "spanId": s.hex(),
                                "name": "x",
                                "startTimeUnixNano": "1767225600000000000",
                                "endTimeUnixNano": "1767225600000000000",
                            }
                            for s in _ids(5)
                        ]
                    }
                ]
            }
        ]
    }
    text = json.dumps(doc).encode()
    half = len(text) // 2
    resp = _post(server, gzip.compress(text[:half]) + gzip.compress(text[half:]), {**JS, "Content-Encoding": "gzip"})
    assert resp.status_code == 200
    assert len(_spans(runtime)) == 5


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (gzip.compress(b"x") + b"trailing garbage", 400, "invalid gzip body"),
        (gzip.compress(b"x") + gzip.compress(b"y")[:-4], 400, "truncated"),
        # many small members inflating past the limit together: too large, though each one is small
        (b"".join(gzip.compress(b"\x00" * 16 * 1024) for _ in range(5)), 413, "exceeds"),
    ],
    ids=["trailing-garbage", "truncated-second-member", "members-inflate-past-the-limit"],
)
def test_bad_or_oversized_multi_member_bodies_are_refused(
    server: IngestServer, runtime: EmbeddedRuntime, body: bytes, status: int, words: str
) -> None:
    resp = _post(server, body, {**JS, "Content-Encoding": "gzip"})
    assert resp.status_code == status and words in resp.json()["message"]
    assert _spans(runtime) == []


@pytest.mark.parametrize("depth", [150, 30_000])  # 30k levels: 60 KB, under the fixture's 64 KiB
def test_deeply_nested_json_gets_a_400_reply(server: IngestServer, runtime: EmbeddedRuntime, depth: int) -> None:
    body = ('{"resourceSpans":' + "[" * depth + "]" * depth + "}").encode()
    resp = _post(server, body, JS)
    assert resp.status_code == 400 and "nested" in resp.json()["message"]
    assert server.receiver.stats.refused[400] == 1


def test_deeply_nested_attribute_values_get_a_400_reply(server: IngestServer, runtime: EmbeddedRuntime) -> None:
    value: dict[str, object] = {"stringValue": "x"}
    for _ in range(60):  # within the bracket limit, deeper than protobuf's message limit
        value = {"arrayValue": {"values": [value]}}
    doc = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "0af7651916cd43dd8448eb211c80319c",
                                "spanId": "b7ad6b7169203331",
                                "name": "x",
                                "attributes": [{"key": "deep", "value": value}],
                            }
                        ]
                    }
                ]
            }
        ]
    }
    resp = _post(server, json.dumps(doc).encode(), JS)
    assert resp.status_code == 400
    assert _spans(runtime) == []


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, data: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def test_deeply_nested_protobuf_gets_a_400_reply(server: IngestServer, runtime: EmbeddedRuntime) -> None:
    value = AnyValue(string_value="x").SerializeToString()
    for _ in range(5000):
        value = _field(5, _field(1, value))  # AnyValue{array_value: {values: [value]}}
    deep_span = span().SerializeToString() + _field(9, _field(1, b"deep") + _field(2, value))
    body = _field(1, _field(2, _field(2, deep_span)))  # request.resource_spans.scope_spans.spans
    resp = _post(server, body, PB)
    assert resp.status_code == 400
    assert _spans(runtime) == []


def test_200_concurrent_clients_are_all_served(server: IngestServer, runtime: EmbeddedRuntime) -> None:
    n = 200
    host, port = str(server.server_address[0]), int(server.server_address[1])
    start = threading.Barrier(n)
    results: list[str] = []
    lock = threading.Lock()

    def client(i: int) -> None:
        body = request(span(trace_id=bytes.fromhex(f"{i + 1:032x}"))).SerializeToString()
        conn = http.client.HTTPConnection(host, port, timeout=60)
        start.wait()
        try:
            # a fresh connection each, all at once: the listen backlog holds what the accept loop has not taken
            conn.request("POST", "/v1/traces", body=body, headers=PB)
            response = conn.getresponse()
            response.read()
            status = str(response.status)
        except OSError as exc:  # a reset, a refused or dropped connection
            status = type(exc).__name__
        finally:
            conn.close()
        with lock:
            results.append(status)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(results) == ["200"] * n
    assert len(_spans(runtime)) == n


def test_ingest_on_a_taken_port_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTTWIN_INGEST_API_KEYS_FILE", raising=False)
    monkeypatch.setenv("AGENTTWIN_INGEST_API_KEYS", "k=acme")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["ingest", "--port", str(port), "--data-dir", str(tmp_path / "data")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and f"127.0.0.1:{port}" in err and "in use" in err


def test_a_bug_in_the_receiver_is_a_500_reply_not_a_dropped_connection(
    server: IngestServer, runtime: EmbeddedRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(server.receiver, "accept", broken)
    resp = _post(server, request(span()).SerializeToString(), PB)
    assert resp.status_code == 500 and resp.headers["connection"] == "close"
    assert server.receiver.stats.refused[500] == 1
