"""The OTLP/HTTP receiver: `POST /v1/traces` (spans) and `POST /v1/outcomes` (verifications from a system of
record, producers/otlp/outcomes.py) on a standard-library threading HTTP server.

Order of checks (first failure answers, nothing is written): 404 path, 401 API key, 415 content type
or encoding (outcomes: JSON only), 411/413 length, 400 body (malformed, nested too deeply, or an outcome
report that breaks its schema). Spans are acknowledged (200)
only after the Publisher returned, i.e. after they are durable; a Publisher failure answers 503 with
Retry-After so exporters retry, and redelivery is harmless because event ids are deterministic. Any
other failure is a 500 reply, logged: a request always gets an answer, never a dropped connection.

Why threads and not an ASGI server: acknowledging means waiting for fsync (or Kafka's acks) under the
log's single-writer lock, which is blocking work an async server would hand to a thread pool anyway.
One thread per connection, with a listen backlog (LISTEN_BACKLOG) deep enough that a burst of
connections waits in the kernel's queue instead of being reset while the accept loop catches up.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from producers.otlp.codec import (
    DEFAULT_MAX_BODY_BYTES,
    JSON,
    PROTOBUF,
    IngestError,
    decompress,
    media_type,
    parse_request,
    response_body,
    status_body,
)
from producers.otlp.keys import API_KEY_HEADER, ApiKeys, key_from_headers
from producers.otlp.mapping import map_request
from producers.otlp.outcomes import OUTCOMES_PATH, parse_report, report_event
from producers.otlp.publishing import serialized
from streams.clock import wall_clock
from streams.events import Event, OutcomeVerified
from streams.publisher import Publisher

TRACES_PATH = "/v1/traces"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 4318  # the OTLP/HTTP port
LISTEN_BACKLOG = 1024  # socketserver's default is 5; the kernel caps it at net.core.somaxconn
_log = logging.getLogger(__name__)


@dataclass
class IngestStats:
    requests: int = 0
    spans_accepted: int = 0
    spans_written: int = 0  # accepted minus those the log already held (re-sent batches)
    spans_rejected: int = 0
    refused: Counter[int] = field(default_factory=Counter)  # HTTP status -> requests refused
    publish_errors: int = 0
    last_error: str | None = None
    outcomes_accepted: int = 0
    outcomes_written: int = 0  # accepted minus retries of a report already stored


@dataclass
class Accepted:
    tenant: str
    spans: int
    written: int
    rejected: int
    message: str


class Receiver:
    """The request logic apart from HTTP plumbing: headers + body in, Accepted or IngestError out."""

    def __init__(
        self,
        publisher: Publisher,
        keys: ApiKeys,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        clock: Callable[[], datetime] = wall_clock,
        admission: Callable[[], None] | None = None,
    ):
        self.publisher = serialized(publisher)
        self.admission = admission  # backpressure from the live joins (producers/otlp/admission.py)
        self.clock = clock  # the receive time stamped on every span
        self.keys = keys
        self.max_body_bytes = max_body_bytes
        self.stats = IngestStats()
        self._stats_lock = threading.Lock()

    def authenticate(self, api_key: str | None, authorization: str | None) -> str:
        tenant = self.keys.tenant_for(key_from_headers(api_key, authorization))
        if tenant is None:
            raise IngestError(401, f"missing or unknown API key ({API_KEY_HEADER} or Authorization: Bearer)")
        return tenant

    def check_length(self, content_length: str | None) -> int:
        if content_length is None:
            raise IngestError(411, "Content-Length required")
        try:
            length = int(content_length)
        except ValueError:
            raise IngestError(400, "invalid Content-Length") from None
        if length < 0:
            raise IngestError(400, "invalid Content-Length")
        if length > self.max_body_bytes:
            raise IngestError(413, f"body of {length} bytes exceeds {self.max_body_bytes}")
        return length

    def _publish(self, events: list[Event], what: str) -> int:
        try:
            return self.publisher.publish(events)
        except Exception as exc:  # the ingest boundary: record it, answer retryable, keep serving
            with self._stats_lock:
                self.stats.publish_errors += 1
                self.stats.last_error = f"{type(exc).__name__}: {exc}"
            _log.exception("publishing %d %s failed", len(events), what)
            raise IngestError(503, f"{what} could not be stored; retry later") from exc

    def admit(self) -> None:
        """Wait while the live joins are behind, up to a limit (producers/otlp/admission.py); called
        before the body is read, so meanwhile it waits in the kernel's buffers, not in this process."""
        if self.admission is not None:
            self.admission()

    def accept(self, tenant: str, body: bytes, content_type: str, encoding: str | None) -> Accepted:
        data = decompress(body, encoding, self.max_body_bytes)
        batch = map_request(parse_request(data, content_type), tenant, received_at=self.clock())
        written = 0
        if batch.events:
            written = self._publish(list(batch.events), "spans")
        if batch.links:  # after the spans: a retry of a request that failed here re-sends both
            self._publish(list(batch.links), "subject links")
        with self._stats_lock:
            self.stats.spans_accepted += len(batch.events)
            self.stats.spans_written += written
            self.stats.spans_rejected += batch.rejected
        return Accepted(tenant, len(batch.events), written, batch.rejected, batch.error_message)

    def accept_outcome(self, tenant: str, body: bytes, encoding: str | None) -> dict[str, object]:
        """A verification report: checked, stored durably, answered with its event id."""
        doc = parse_report(decompress(body, encoding, self.max_body_bytes))
        event = report_event(doc, tenant, self.clock())
        written = self._publish([event], "the outcome")
        with self._stats_lock:
            self.stats.outcomes_accepted += 1
            self.stats.outcomes_written += written
        by = "trace_id" if isinstance(event, OutcomeVerified) else "subject"
        return {"event_id": event.event_id, "duplicate": written == 0, "matched_by": by, by: getattr(event, by)}

    def refused(self, status: int) -> None:
        with self._stats_lock:
            self.stats.refused[status] += 1

    def counted(self) -> None:
        with self._stats_lock:
            self.stats.requests += 1


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: exporters reuse their connection
    disable_nagle_algorithm = True  # a reply is headers then body: without it a kept-alive client waits 40 ms
    server_version = "agenttwin-ingest"
    timeout = 30  # a stalled client cannot hold a thread forever
    receiver: Receiver  # set on the subclass make_server builds

    def do_POST(self) -> None:
        self.receiver.counted()
        path = self.path.split("?", 1)[0]
        header_type = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        reply_type = PROTOBUF if header_type == PROTOBUF and path == TRACES_PATH else JSON
        try:
            if path not in (TRACES_PATH, OUTCOMES_PATH):
                raise IngestError(
                    404, f"no such endpoint {self.path}; spans go to {TRACES_PATH}, verifications to {OUTCOMES_PATH}"
                )
            tenant = self.receiver.authenticate(self.headers.get(API_KEY_HEADER), self.headers.get("Authorization"))
            content_type = media_type(self.headers.get("Content-Type"))
            if path == OUTCOMES_PATH and content_type != JSON:
                raise IngestError(415, f"unsupported content type {content_type}: outcome reports are {JSON}")
            length = self.receiver.check_length(self.headers.get("Content-Length"))
            if path == TRACES_PATH:
                self.receiver.admit()
            body = self.rfile.read(length)
            if len(body) != length:
                raise IngestError(400, "body shorter than Content-Length")
            encoding = self.headers.get("Content-Encoding")
            if path == OUTCOMES_PATH:
                answer = self.receiver.accept_outcome(tenant, body, encoding)
                reply = json.dumps(answer, sort_keys=True).encode("utf-8")
            else:
                done = self.receiver.accept(tenant, body, content_type, encoding)
                reply = response_body(done.rejected, done.message, content_type)
        except IngestError as exc:
            self.receiver.refused(exc.status)
            self._reply(exc.status, status_body(exc.status, exc.message, reply_type), reply_type, close=True)
            return
        except Exception:  # the request boundary: a bug answers 500 (logged) instead of dropping the connection
            _log.exception("ingest request failed")
            self.receiver.refused(500)
            self._reply(
                500, status_body(500, "internal error; see the receiver's log", reply_type), reply_type, close=True
            )
            return
        self._reply(200, reply, content_type)

    def do_GET(self) -> None:
        self._reply(405, status_body(405, f"use POST {TRACES_PATH} or POST {OUTCOMES_PATH}", JSON), JSON, close=True)

    def _reply(self, status: int, body: bytes, content_type: str, *, close: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if status == 503:
            self.send_header("Retry-After", "1")
        if close:  # the request body may be unread: do not reuse the connection
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        _log.debug("%s - " + format, self.address_string(), *args)


class IngestServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = LISTEN_BACKLOG
    receiver: Receiver

    @property
    def url(self) -> str:
        host, port = self.server_address[0], self.server_address[1]
        return f"http://{host!s}:{port}"

    def start(self) -> threading.Thread:
        """Serve on a background thread (tests, benchmarks); stop with close()."""
        thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, name="agenttwin-ingest", daemon=True
        )
        thread.start()
        return thread

    def close(self) -> None:
        self.shutdown()
        self.server_close()


def make_server(
    host: str,
    port: int,
    publisher: Publisher,
    keys: ApiKeys,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    admission: Callable[[], None] | None = None,
) -> IngestServer:
    """A bound receiver (port 0 picks a free port); call serve_forever() or start(). `admission`, when
    given, is called before a request's spans are read (producers/otlp/admission.py)."""
    receiver = Receiver(publisher, keys, max_body_bytes=max_body_bytes, admission=admission)
    handler = type("IngestHandler", (_Handler,), {"receiver": receiver})
    server = IngestServer((host, port), handler)
    server.receiver = receiver
    return server


def serve(
    host: str,
    port: int,
    publisher: Publisher,
    keys: ApiKeys,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> None:
    """Serve until interrupted."""
    server = make_server(host, port, publisher, keys, max_body_bytes=max_body_bytes)
    try:
        server.serve_forever()
    finally:
        server.server_close()
