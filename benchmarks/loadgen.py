"""OTLP/HTTP load generator: client processes apart from what they measure, sending stock OTLP payloads.

Every ingest benchmark drives its receiver with this (bench_ingest, bench_soak, bench_peer); run alone it
loads any OTLP/HTTP endpoint and prints what was acknowledged:

    python benchmarks/loadgen.py --url http://127.0.0.1:4318 --seconds 10              # as fast as it can
    python benchmarks/loadgen.py --url http://127.0.0.1:4318 --seconds 10 --rate 3000  # 3,000 spans/s offered

**Payloads.** Each request is an ExportTraceServiceRequest in protobuf, the message the OpenTelemetry SDK's
OTLP/HTTP exporter sends (built with the same opentelemetry-proto messages): one resource (service, SDK
attributes), one scope, `--traces` agent runs. A run is 5-15 spans following the OpenTelemetry GenAI
conventions: an `invoke_agent` span (the agent, its final answer and its claimed outcome), `chat` spans
(model, token usage, the tool calls the model asked for) and `execute_tool` spans (tool name, call id, JSON
arguments and results, risk), children first as a batch span processor exports them. Run `n`'s ids,
shape, arguments and results are a function of (seed, n) alone, its times of the send time: same seed and
same base time, same bytes.

**Clients.** `--processes` processes (multiprocessing, spawned), each with its own keep-alive connection: a
span sender and, with `verify_every`, a verifier thread on a second connection that POSTs one FAILURE
verification per selected run to `/v1/outcomes` once its spans are acknowledged, as a system of record
beside the agent would (every selected run is then one contradiction alert). With a rate, each process
offers its share on a fixed schedule (open loop: a late send goes at once, nothing is skipped); without,
it sends as fast as the endpoint answers. A span counts as acknowledged on HTTP 200, less any the
response's partial_success rejected.

**Alert latency** (AlertClock) is measured as bench_soak always has: from the return of the verified
outcome's publish (here: its 200) to the alert being visible to a tail of the alerts, both on the machine's
monotonic clock (CLOCK_MONOTONIC is one clock for every process).
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import multiprocessing
import os
import queue
import random
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    InstrumentationScope,
    KeyValue,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

API_KEY_HEADER = "x-agenttwin-api-key"  # producers/otlp/keys.py; the collector ignores it
TRACES_PATH = "/v1/traces"
OUTCOMES_PATH = "/v1/outcomes"
MIN_SPANS, MAX_SPANS = 5, 15
AGENT = "support-refund-agent"
MODEL = "gpt-4o-2024-08-06"
CLAIM_ATTRIBUTE = "agenttwin.outcome.claimed"  # streams/processors/outcome_join.py: the agent's stated claim
SHAPES = 64  # distinct runs per seed: run n has the shape, arguments and results of run n % SHAPES
ERROR_PAUSE_S = 0.1  # after a failed connection: an endpoint that is down is not hammered
REPORT_EVERY_S = 0.05  # how often a verifier sends what was stored to the parent


# ---------------------------------------------------------------------------------------------- payloads


def _kv(key: str, value: str | int | list[str]) -> KeyValue:
    if isinstance(value, str):
        return KeyValue(key=key, value=AnyValue(string_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(array_value=ArrayValue(values=[AnyValue(string_value=v) for v in value])))


def _json(doc: object) -> str:
    return json.dumps(doc, separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True)
class Tool:
    name: str
    risk: str
    arguments: Callable[[random.Random, str], dict[str, Any]]
    result: Callable[[random.Random, str], dict[str, Any]]


READ_TOOLS = (
    Tool(
        "lookup_order",
        "READ",
        lambda r, order: {"order_id": order},
        lambda r, order: {
            "order_id": order,
            "status": r.choice(("delivered", "shipped", "returned")),
            "amount": round(r.uniform(5, 900), 2),
            "currency": "EUR",
            "items": r.randint(1, 6),
        },
    ),
    Tool(
        "get_customer",
        "READ",
        lambda r, order: {"customer_id": f"C-{r.randint(10_000, 99_999)}"},
        lambda r, order: {"tier": r.choice(("standard", "plus", "gold")), "open_tickets": r.randint(0, 4)},
    ),
    Tool(
        "search_kb",
        "READ",
        lambda r, order: {"query": r.choice(("refund window", "damaged item", "late delivery", "partial refund"))},
        lambda r, order: {"hits": [{"doc": f"KB-{r.randint(100, 999)}", "score": round(r.random(), 3)}]},
    ),
    Tool(
        "check_refund_policy",
        "READ",
        lambda r, order: {"order_id": order, "reason": r.choice(("damaged", "not_received", "changed_mind"))},
        lambda r, order: {"eligible": True, "max_amount": round(r.uniform(5, 900), 2), "window_days": 30},
    ),
)
WRITE_TOOL = Tool(
    "refund_payment",
    "WRITE_IRREVERSIBLE",
    lambda r, order: {"order_id": order, "amount": round(r.uniform(5, 900), 2), "reason": "damaged"},
    lambda r, order: {"refund_id": f"RF-{r.randint(100_000, 999_999)}", "status": "submitted"},
)


def trace_id(seed: int, n: int) -> bytes:
    return hashlib.sha256(f"agenttwin-loadgen:{seed}:{n}".encode()).digest()[:16]


def _span_id(trace: bytes, i: int) -> bytes:
    # The trace id's first 6 bytes and the span's place: unique within the trace, and one bytes.replace
    # re-stamps them all (RequestBuilder).
    return trace[:6] + i.to_bytes(2, "big")


def _tag(trace: bytes) -> str:
    """The text ids of a run (tool call ids, response ids) start with this."""
    return trace[:6].hex()


def order_of(n: int) -> str:
    return f"ORD-{n % 100_000_000:08d}"


def _roles(r: random.Random, total: int) -> list[str]:
    """The children of the agent span, in order: chat, then its 1-2 tool calls, ... , a closing chat."""
    slots = total - 2  # less the agent span and the closing chat
    roles: list[str] = []
    while len(roles) < slots:
        roles.append("chat")
        for _ in range(min(r.choice((1, 1, 2)), slots - len(roles))):
            roles.append("tool")
    if roles[-1] == "chat":  # a chat must be followed by the tools it asked for
        roles[-1] = "tool"
    return [*roles, "chat"]


def build_trace(seed: int, n: int, end_ns: int) -> list[Span]:
    """Run `n` of the seed: 5-15 spans ending at `end_ns`, children first, the agent span last. Its ids and
    order number are its own; its shape, arguments and results those of run n % SHAPES."""
    r = random.Random(f"{seed}:{n % SHAPES}")
    trace = trace_id(seed, n)
    total = r.randint(MIN_SPANS, MAX_SPANS)
    roles = _roles(r, total)
    order = order_of(n)
    durations = [(r.randint(300, 1500) if role == "chat" else r.randint(5, 120)) * 1_000_000 for role in roles]
    start = end_ns - sum(durations) - 2_000_000
    root_id = _span_id(trace, 0)
    tools_left = roles.count("tool")
    spans: list[Span] = []
    at = start + 1_000_000
    pending: list[tuple[Tool, str]] = []  # tool calls the last chat asked for
    for i, (role, duration) in enumerate(zip(roles, durations, strict=True), start=1):
        common: dict[str, Any] = {
            "trace_id": trace,
            "span_id": _span_id(trace, i),
            "parent_span_id": root_id,
            "start_time_unix_nano": at,
            "end_time_unix_nano": at + duration,
            "status": Status(code=Status.StatusCode.STATUS_CODE_OK),
        }
        if role == "chat":
            asked = 0
            for role_after in roles[i:]:
                if role_after != "tool":
                    break
                asked += 1
            pending = []
            for k in range(asked):
                tools_left -= 1
                tool = WRITE_TOOL if tools_left == 0 else r.choice(READ_TOOLS)  # the run's last tool writes
                pending.append((tool, f"call_{_tag(trace)}{i:02x}{k}"))
            if pending:
                message: dict[str, Any] = {
                    "role": "assistant",
                    "parts": [
                        {"type": "tool_call", "id": cid, "name": tool.name, "arguments": tool.arguments(r, order)}
                        for tool, cid in pending
                    ],
                    "finish_reason": "tool_call",
                }
                finish = "tool_calls"
            else:
                message = {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": f"I have refunded order {order}; the refund is done."}],
                    "finish_reason": "stop",
                }
                finish = "stop"
            attrs = [
                _kv("gen_ai.operation.name", "chat"),
                _kv("gen_ai.provider.name", "openai"),
                _kv("gen_ai.request.model", MODEL),
                _kv("gen_ai.response.model", MODEL),
                _kv("gen_ai.response.id", f"chatcmpl-{_tag(trace)}{i:02x}"),
                _kv("gen_ai.usage.input_tokens", r.randint(400, 6000)),
                _kv("gen_ai.usage.output_tokens", r.randint(20, 400)),
                _kv("gen_ai.response.finish_reasons", [finish]),
                _kv("gen_ai.output.messages", _json([message])),
            ]
            spans.append(Span(name=f"chat {MODEL}", kind=Span.SpanKind.SPAN_KIND_CLIENT, attributes=attrs, **common))
        else:
            tool, cid = pending.pop(0)
            attrs = [
                _kv("gen_ai.operation.name", "execute_tool"),
                _kv("gen_ai.tool.name", tool.name),
                _kv("gen_ai.tool.type", "function"),
                _kv("gen_ai.tool.call.id", cid),
                _kv("gen_ai.tool.call.arguments", _json(tool.arguments(r, order))),
                _kv("gen_ai.tool.call.result", _json(tool.result(r, order))),
                _kv("agenttwin.tool.risk", tool.risk),
            ]
            kind = Span.SpanKind.SPAN_KIND_INTERNAL
            spans.append(Span(name=f"execute_tool {tool.name}", kind=kind, attributes=attrs, **common))
        at += duration
    answer = {
        "role": "assistant",
        "parts": [{"type": "text", "content": f"I have refunded order {order}; the refund is done."}],
        "finish_reason": "stop",
    }
    spans.append(
        Span(
            trace_id=trace,
            span_id=root_id,
            name=f"invoke_agent {AGENT}",
            kind=Span.SpanKind.SPAN_KIND_INTERNAL,
            start_time_unix_nano=start,
            end_time_unix_nano=end_ns,
            status=Status(code=Status.StatusCode.STATUS_CODE_OK),
            attributes=[
                _kv("gen_ai.operation.name", "invoke_agent"),
                _kv("gen_ai.agent.name", AGENT),
                _kv("gen_ai.agent.version", "1.3.0"),
                _kv("gen_ai.request.model", MODEL),
                _kv("gen_ai.output.messages", _json([answer])),
                _kv(CLAIM_ATTRIBUTE, "SUCCESS"),
                _kv("agenttwin.subject", f"order:{order}"),
            ],
        )
    )
    return spans


RESOURCE = Resource(
    attributes=[
        _kv("service.name", AGENT),
        _kv("service.version", "1.3.0"),
        _kv("deployment.environment.name", "production"),
        _kv("telemetry.sdk.name", "opentelemetry"),
        _kv("telemetry.sdk.language", "python"),
        _kv("telemetry.sdk.version", "1.39.0"),
    ]
)
SCOPE = InstrumentationScope(name="opentelemetry.instrumentation.openai_v2", version="2.2b0")


@dataclass(frozen=True)
class Batch:
    body: bytes
    traces: list[str]  # hex trace ids, in order
    spans: int


def request_message(seed: int, first: int, count: int, end_ns: int) -> ExportTraceServiceRequest:
    """Runs first .. first+count-1 of the seed as one ExportTraceServiceRequest (the reference form)."""
    spans = [span for n in range(first, first + count) for span in build_trace(seed, n, end_ns)]
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(resource=RESOURCE, scope_spans=[ScopeSpans(scope=SCOPE, spans=spans)])]
    )


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


_TEMPLATE_END = 1_500_000_000_000_000_000  # template times; a send's times are years later, never equal


@dataclass(frozen=True)
class _Template:
    chunk: bytes  # the run's spans as ScopeSpans.spans fields
    trace: bytes
    order: bytes
    times: tuple[bytes, ...]  # every distinct fixed64 time in the chunk, little-endian
    spans: int


class RequestBuilder:
    """request_message's bytes, fast: each of the SHAPES runs is serialized once, and run n is that run
    with its ids, order number and times re-stamped in place (every re-stamped value has the length of the
    one it replaces, so no length prefix changes). A unit test holds the bytes equal to request_message's."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._templates: dict[int, _Template] = {}
        self._head = _field(1, RESOURCE.SerializeToString())
        self._scope = _field(1, SCOPE.SerializeToString())

    def _template(self, shape: int) -> _Template:
        template = self._templates.get(shape)
        if template is None:
            spans = build_trace(self.seed, shape, _TEMPLATE_END)
            times = sorted({t for s in spans for t in (s.start_time_unix_nano, s.end_time_unix_nano)})
            template = _Template(
                chunk=b"".join(_field(2, s.SerializeToString()) for s in spans),
                trace=spans[0].trace_id,
                order=order_of(shape).encode(),
                times=tuple(t.to_bytes(8, "little") for t in times),
                spans=len(spans),
            )
            self._templates[shape] = template
        return template

    def run(self, n: int, end_ns: int) -> tuple[bytes, bytes, int]:
        """Run n's spans as ScopeSpans.spans fields, its trace id, and its span count."""
        t = self._template(n % SHAPES)
        trace = trace_id(self.seed, n)
        chunk = (
            t.chunk.replace(t.trace, trace)
            .replace(t.trace[:6], trace[:6])
            .replace(_tag(t.trace).encode(), _tag(trace).encode())
            .replace(t.order, order_of(n).encode())
        )
        shift = end_ns - _TEMPLATE_END
        for old in t.times:
            chunk = chunk.replace(old, (int.from_bytes(old, "little") + shift).to_bytes(8, "little"))
        return chunk, trace, t.spans

    def build(self, first: int, count: int, end_ns: int) -> Batch:
        chunks: list[bytes] = []
        traces: list[str] = []
        spans = 0
        for n in range(first, first + count):
            chunk, trace, k = self.run(n, end_ns)
            chunks.append(chunk)
            traces.append(trace.hex())
            spans += k
        scope_spans = _field(2, self._scope + b"".join(chunks))
        body = _field(1, self._head + scope_spans)
        return Batch(body, traces, spans)


def build_request(seed: int, first: int, count: int, end_ns: int) -> Batch:
    """Runs first .. first+count-1 of the seed as protobuf bytes (the reference encoder: slow, exact)."""
    request = request_message(seed, first, count, end_ns)
    spans = request.resource_spans[0].scope_spans[0].spans
    traces = list(dict.fromkeys(s.trace_id.hex() for s in spans))
    return Batch(request.SerializeToString(), traces, len(spans))


def verification(trace: str) -> bytes:
    """The outcome-report.v1 a system of record sends for a run: the refund it claimed is not in the ledger."""
    return _json(
        {
            "trace_id": trace,
            "status": "FAILURE",
            "verified": True,
            "source": "external_callback",
            "evidence": "no refund for the order in the payment ledger",
            "idempotency_key": f"loadgen-{trace}",
        }
    ).encode()


def is_verified(n: int, verify_every: int) -> bool:
    """Whether run n gets a verification (every `verify_every`-th run; none with 0)."""
    return verify_every > 0 and n % verify_every == 0


# ----------------------------------------------------------------------------------------------- clients


@dataclass(frozen=True)
class LoadSpec:
    url: str  # the endpoint's base, e.g. http://127.0.0.1:4318
    seconds: float
    processes: int = 4
    traces_per_request: int = 20
    rate: float | None = None  # spans/s offered by all processes together; None: as fast as it can
    verify_every: int = 0  # POST a FAILURE verification for every k-th run (0: none)
    seed: int = 1
    api_key: str | None = None
    drain_s: float = 60.0  # how long verifiers may take after the load to send what is left


@dataclass
class Totals:
    requests: int = 0
    spans_sent: int = 0
    spans_acked: int = 0
    spans_rejected: int = 0
    runs_acked: int = 0
    verifications: int = 0
    errors: list[str] = field(default_factory=list)
    late_sends: int = 0  # sends that left behind their schedule (fixed rate only)
    cpu_s: float = 0.0  # the client processes' CPU seconds: near processes x seconds, the load is the limit


class LoadSink:
    """What the parent does with the clients' reports; every call comes from one reader thread."""

    def acked(self, spans: int, runs: int, at: float) -> None:
        """`spans` of `runs` acknowledged at `at` (monotonic)."""

    def verified(self, items: Sequence[tuple[str, float]]) -> None:
        """Verifications (trace id, acknowledged at) stored by the receiver."""

    def error(self, message: str) -> None:
        """A request that was not acknowledged."""


def _connection(url: str) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=60)


def _post(conn: http.client.HTTPConnection, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    conn.request("POST", path, body=body, headers=headers)
    resp = conn.getresponse()
    return resp.status, resp.read()


def _rejected(status: int, body: bytes) -> int:
    if status != 200 or not body:
        return 0
    try:
        return int(ExportTraceServiceResponse.FromString(body).partial_success.rejected_spans)
    except Exception:  # a receiver that answers 200 with another body rejected nothing we can count
        return 0


def _verifier(spec: LoadSpec, todo: queue.Queue[str | None], out: multiprocessing.Queue[Any]) -> None:
    headers = {"Content-Type": "application/json"}
    if spec.api_key:
        headers[API_KEY_HEADER] = spec.api_key
    conn = _connection(spec.url)
    done: list[tuple[str, float]] = []
    last = time.monotonic()
    while True:
        try:
            trace = todo.get(timeout=REPORT_EVERY_S)
        except queue.Empty:
            trace = ""
        if trace is None:
            break
        if trace:
            try:
                status, body = _post(conn, OUTCOMES_PATH, verification(trace), headers)
            except (OSError, http.client.HTTPException) as exc:
                out.put(("error", f"outcome: {type(exc).__name__}: {exc}"))
                conn.close()
                conn = _connection(spec.url)
                time.sleep(ERROR_PAUSE_S)
                continue
            if status == 200:
                done.append((trace, time.monotonic()))
            else:
                out.put(("error", f"outcome HTTP {status}: {body[:200]!r}"))
        if done and time.monotonic() - last >= REPORT_EVERY_S:
            out.put(("verified", done))
            done, last = [], time.monotonic()
    if done:
        out.put(("verified", done))
    conn.close()


def client_process(spec: LoadSpec, index: int, go: Any, start: Any, out: multiprocessing.Queue[Any]) -> None:
    """One client: reports ("ready", index) once its runs' templates are built, waits for `go`, then sends
    its share of the runs from `start.value` for `spec.seconds`, reporting to `out`."""
    builder = RequestBuilder(spec.seed)
    for shape in range(SHAPES):
        builder.run(shape, time.time_ns())
    out.put(("ready", index))
    go.wait()
    start_at = float(start.value)
    headers = {"Content-Type": "application/x-protobuf"}
    if spec.api_key:
        headers[API_KEY_HEADER] = spec.api_key
    todo: queue.Queue[str | None] = queue.Queue()
    verifier = threading.Thread(target=_verifier, args=(spec, todo, out), daemon=True)
    if spec.verify_every:
        verifier.start()
    conn = _connection(spec.url)
    share = spec.rate / spec.processes if spec.rate else None
    until = start_at + spec.seconds
    time.sleep(max(0.0, start_at - time.monotonic()))
    sent_spans, k, late = 0, 0, 0
    while True:
        now = time.monotonic()
        if share is not None:
            due = start_at + sent_spans / share
            if due > now:
                if due >= until:
                    break
                time.sleep(due - now)
            elif now - due > 0.1:
                late += 1
        if time.monotonic() >= until:
            break
        first = (k * spec.processes + index) * spec.traces_per_request
        k += 1
        batch = builder.build(first, spec.traces_per_request, time.time_ns())
        sent_spans += batch.spans
        try:
            status, body = _post(conn, TRACES_PATH, batch.body, headers)
        except (OSError, http.client.HTTPException) as exc:
            out.put(("error", f"spans: {type(exc).__name__}: {exc}"))
            conn.close()
            conn = _connection(spec.url)
            time.sleep(ERROR_PAUSE_S)
            continue
        if status != 200:
            out.put(("error", f"spans HTTP {status}: {body[:200]!r}"))
            time.sleep(ERROR_PAUSE_S)
            continue
        rejected = _rejected(status, body)
        out.put(("acked", batch.spans - rejected, len(batch.traces), time.monotonic(), rejected))
        if spec.verify_every:
            for n, trace in enumerate(batch.traces, start=first):
                if is_verified(n, spec.verify_every):
                    todo.put(trace)
    conn.close()
    if spec.verify_every:
        todo.put(None)
        verifier.join(spec.drain_s)
    used = os.times()
    out.put(("done", index, sent_spans, k, late, used.user + used.system))


class Load:
    """The client processes of one LoadSpec: `start()` them, then `collect(sink)` until they are done."""

    def __init__(self, spec: LoadSpec) -> None:
        if spec.processes < 1 or spec.traces_per_request < 1:
            raise ValueError("processes and traces_per_request must be at least 1")
        self.spec = spec
        ctx = multiprocessing.get_context("spawn")  # no fork of a parent's threads (Kafka clients, servers)
        self._out: multiprocessing.Queue[Any] = ctx.Queue()
        self._procs: list[Any] = []
        self._ctx = ctx
        self.started_at = 0.0

    def start(self, ready_timeout_s: float = 300.0) -> float:
        """Starts the processes, waits until each is ready to send, then lets them go together; returns the
        monotonic time the load began."""
        go, start = self._ctx.Event(), self._ctx.Value("d", 0.0)
        self._procs = [
            self._ctx.Process(
                target=client_process, args=(self.spec, i, go, start, self._out), daemon=True, name=f"loadgen-{i}"
            )
            for i in range(self.spec.processes)
        ]
        for p in self._procs:
            p.start()
        ready, deadline = 0, time.monotonic() + ready_timeout_s
        while ready < len(self._procs):
            try:
                msg = self._out.get(timeout=1.0)
            except queue.Empty:
                if time.monotonic() > deadline or not all(p.is_alive() for p in self._procs):
                    self.stop()
                    raise RuntimeError("the load generator's processes did not start") from None
                continue
            ready += msg[0] == "ready"
        self.started_at = time.monotonic() + 0.05
        start.value = self.started_at
        go.set()
        return self.started_at

    def collect(self, sink: LoadSink) -> Totals:
        """Reads the clients' reports into `sink` until every process is done."""
        totals = Totals()
        done = 0
        deadline = self.started_at + self.spec.seconds + self.spec.drain_s + 30
        while done < len(self._procs):
            try:
                msg = self._out.get(timeout=1.0)
            except queue.Empty:
                if time.monotonic() > deadline or not any(p.is_alive() for p in self._procs):
                    totals.errors.append(f"{len(self._procs) - done} client process(es) ended without reporting")
                    break
                continue
            kind = msg[0]
            if kind == "acked":
                _, spans, runs, at, rejected = msg
                totals.requests += 1
                totals.spans_acked += spans
                totals.spans_rejected += rejected
                totals.runs_acked += runs
                sink.acked(spans, runs, at)
            elif kind == "verified":
                totals.verifications += len(msg[1])
                sink.verified(msg[1])
            elif kind == "error":
                totals.errors.append(msg[1])
                sink.error(msg[1])
            elif kind == "done":
                _, _, sent, _, late, cpu = msg
                totals.spans_sent += sent
                totals.late_sends += late
                totals.cpu_s += cpu
                done += 1
        for p in self._procs:
            p.join(10)
            if p.is_alive():
                p.kill()
        return totals

    def stop(self) -> None:
        for p in self._procs:
            if p.is_alive():
                p.kill()
                p.join(5)


# ------------------------------------------------------------------------------------------ alert clock


def percentile(values: Sequence[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


@dataclass
class AlertClock(LoadSink):
    """Acknowledged spans and alert latency: verified outcome acknowledged -> alert seen by a tail.

    Thread-safe: the load's reader thread and an alerts tail call it concurrently. An alert seen before its
    verification's acknowledgement was reported (the tail won the race) counts with latency ~0."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    spans_acked: int = 0
    runs_acked: int = 0
    acked_at: list[tuple[float, int]] = field(default_factory=list)  # (at, spans): per-interval rates
    in_flight: dict[str, float] = field(default_factory=dict)  # trace -> verification acknowledged at
    early: dict[str, float] = field(default_factory=dict)
    latencies: list[tuple[float, float]] = field(default_factory=list)  # (alert seen at, ms)
    verified_runs: set[str] = field(default_factory=set)
    seen: set[str] = field(default_factory=set)
    duplicated: int = 0
    unexpected: int = 0  # alerts for runs never verified
    other_kinds: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def acked(self, spans: int, runs: int, at: float) -> None:
        with self.lock:
            self.spans_acked += spans
            self.runs_acked += runs
            self.acked_at.append((at, spans))

    def verified(self, items: Sequence[tuple[str, float]]) -> None:
        with self.lock:
            for trace, at in items:
                self.verified_runs.add(trace)
                arrived = self.early.pop(trace, None)
                if arrived is None:
                    self.in_flight[trace] = at
                else:
                    self.latencies.append((arrived, max(0.0, (arrived - at) * 1000)))

    def error(self, message: str) -> None:
        with self.lock:
            self.errors.append(message)

    def alert(self, trace: str, kind: str) -> None:
        now = time.monotonic()
        with self.lock:
            if kind != "contradiction":
                self.other_kinds[kind] = self.other_kinds.get(kind, 0) + 1
                return
            if trace in self.seen:
                self.duplicated += 1
                return
            self.seen.add(trace)
            at = self.in_flight.pop(trace, None)
            if at is None:
                self.early[trace] = now
            else:
                self.latencies.append((now, (now - at) * 1000))

    def spans_between(self, start: float, end: float) -> int:
        with self.lock:
            return sum(n for at, n in self.acked_at if start <= at < end)

    def latencies_between(self, start: float, end: float) -> list[float]:
        with self.lock:
            return [ms for at, ms in self.latencies if start <= at < end]

    def all_alerted(self) -> bool:
        with self.lock:
            return self.verified_runs <= self.seen

    def missing(self) -> int:
        with self.lock:
            return len(self.verified_runs - self.seen)

    def finish(self) -> None:
        """Alerts still `early` at the end belong to no verification this load made."""
        with self.lock:
            self.unexpected = len([t for t in self.early if t not in self.verified_runs])


# ---------------------------------------------------------------------------------------------------- CLI


class _Printer(LoadSink):
    def __init__(self) -> None:
        self.errors = 0

    def error(self, message: str) -> None:
        self.errors += 1
        if self.errors <= 5:
            print(f"  error: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True, help="the OTLP/HTTP endpoint's base, e.g. http://127.0.0.1:4318")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--processes", type=int, default=4, help="client processes (default 4)")
    p.add_argument("--traces", type=int, default=20, help="agent runs per request (default 20, ~200 spans)")
    p.add_argument("--rate", type=float, help="spans/s offered in all (default: as fast as it can)")
    p.add_argument("--verify-every", type=int, default=0, help="POST a verification for every k-th run")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--api-key", help=f"sent as {API_KEY_HEADER}")
    args = p.parse_args(argv)
    spec = LoadSpec(
        url=args.url,
        seconds=args.seconds,
        processes=args.processes,
        traces_per_request=args.traces,
        rate=args.rate,
        verify_every=args.verify_every,
        seed=args.seed,
        api_key=args.api_key,
    )
    load = Load(spec)
    load.start()
    totals = load.collect(_Printer())
    elapsed = max(spec.seconds, 1e-9)
    offered = f"{spec.rate:,.0f} spans/s offered" if spec.rate else "as fast as it can"
    print(f"loadgen: {spec.processes} processes x {spec.traces_per_request} runs/request, {offered}")
    rate = totals.spans_acked / elapsed
    print(f"  acknowledged  {totals.spans_acked:,} spans in {elapsed:g} s = {rate:,.0f} spans/s")
    print(f"  requests      {totals.requests:,}; rejected spans {totals.spans_rejected}; errors {len(totals.errors)}")
    print(f"  client CPU    {totals.cpu_s:.1f} s for {spec.processes} x {spec.seconds:g} s")
    if spec.verify_every:
        print(f"  verifications {totals.verifications:,}")
    return 0 if not totals.errors else 1


if __name__ == "__main__":
    sys.exit(main())
