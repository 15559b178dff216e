"""The load generator's client processes against a stub OTLP/HTTP endpoint in this test: what they report as
acknowledged is what the endpoint received, each selected run gets one verification the receiver's schema
accepts, and a fixed rate never sends more than it offers. Not timed: no figure is asserted."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from benchmarks import loadgen
from producers.otlp.codec import PROTOBUF, parse_request
from producers.otlp.outcomes import parse_report


@dataclass
class Received:
    lock: threading.Lock = field(default_factory=threading.Lock)
    spans: int = 0
    traces: list[str] = field(default_factory=list)
    verified: list[str] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)


@pytest.fixture
def endpoint() -> Iterator[tuple[str, Received]]:
    received = Received()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with received.lock:
                received.keys.add(self.headers.get(loadgen.API_KEY_HEADER, ""))
                if self.path == loadgen.TRACES_PATH:
                    request = parse_request(body, PROTOBUF)
                    spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
                    received.spans += len(spans)
                    received.traces += [t.hex() for t in dict.fromkeys(s.trace_id for s in spans)]
                else:
                    received.verified.append(parse_report(body)["trace_id"])
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", received
    server.shutdown()
    server.server_close()


class Sink(loadgen.LoadSink):
    def __init__(self) -> None:
        self.acked_spans = 0
        self.verified_traces: list[str] = []

    def acked(self, spans: int, runs: int, at: float) -> None:
        self.acked_spans += spans

    def verified(self, items: Sequence[tuple[str, float]]) -> None:
        self.verified_traces += [t for t, _ in items]


def test_what_the_clients_report_is_what_the_endpoint_received(endpoint: tuple[str, Received]) -> None:
    url, received = endpoint
    spec = loadgen.LoadSpec(url=url, seconds=1.0, processes=2, traces_per_request=5, verify_every=3, api_key="k1")
    load = loadgen.Load(spec)
    load.start()
    sink = Sink()
    totals = load.collect(sink)
    assert totals.errors == []
    assert totals.spans_acked > 0
    assert totals.spans_acked == received.spans == sink.acked_spans == totals.spans_sent
    assert len(set(received.traces)) == len(received.traces)  # runs are never sent twice
    # every third run of those sent, by its number, is verified once, after its spans
    highest = spec.processes * (len(received.traces) + spec.traces_per_request)  # runs interleave by process
    number = {loadgen.trace_id(spec.seed, n).hex(): n for n in range(highest)}
    expected = [t for t in received.traces if number[t] % 3 == 0]
    assert expected
    assert sorted(received.verified) == sorted(expected)
    assert sorted(sink.verified_traces) == sorted(expected)
    assert received.keys == {"k1"}


def test_a_fixed_rate_never_offers_more_than_its_rate(endpoint: tuple[str, Received]) -> None:
    url, received = endpoint
    spec = loadgen.LoadSpec(url=url, seconds=1.0, processes=2, traces_per_request=2, rate=300.0)
    load = loadgen.Load(spec)
    load.start()
    totals = load.collect(loadgen.LoadSink())
    assert totals.errors == []
    # a send goes only when its schedule is due within the load: at most one request a process beyond the rate
    assert 0 < totals.spans_sent <= 300 * 1.0 + spec.processes * 2 * loadgen.MAX_SPANS
    assert received.spans == totals.spans_acked == totals.spans_sent
