"""Loopback load test of production-trace ingestion: OTLP/HTTP receiver -> log -> live outcome join -> alert.

Bounded: `--clients` synchronous HTTP clients (keep-alive), each posting protobuf ExportTraceServiceRequests
of `--traces` agent runs (3 spans each: a root claiming SUCCESS, a READ and a WRITE_IRREVERSIBLE tool).
After each 200 the client publishes one verified FAILURE outcome per run (the OutcomeVerified event the
SDK's reporter builds), so every run must yield exactly one contradiction alert. Measured:

- spans/s sustained (acknowledged = durable) over the run;
- alert latency p50/p99: from the return of the verified outcome's publish to the alert being visible to a
  read-only alerts tail of the log;
- lost and duplicated alerts, counted against the runs sent;
- beside them, the same-run baseline: the raw work on the same request bytes with the fastest path of the
  same libraries and none of the project's code between them — protobuf decode of each request, then every
  span's bytes appended to a log container file, one block and one fsync per request (no mapping, no
  Avro event encoding, no HTTP, no join); and, when a broker is reachable, confluent-kafka producing the
  project's Avro bytes (acks=all, idempotent).

Figures are printed with the load average and written as JSON under benchmarks/results/.

    python benchmarks/bench_ingest.py                 # the benchmark: 60 s
    python benchmarks/bench_ingest.py --seconds 5     # a smoke run
    python benchmarks/bench_ingest.py --kafka 127.0.0.1:9092

The join runs on the embedded runtime (LiveProcessor beside the receiver, fed by the GroupCommitPublisher);
requests that arrive together share one fsync (--serialized: one fsync per request under a lock, as before).
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import _results
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from agenttwin.settings import load_settings
from consumers.alerts import embedded_alerts
from producers.otlp import ApiKeys, make_server
from producers.otlp.live import LiveProcessor
from producers.otlp.mapping import map_request
from producers.otlp.publishing import GroupCommitPublisher, SerializedPublisher
from producers.sdk.outcome import outcome_event
from streams.clock import wall_clock
from streams.embedded import EmbeddedRuntime
from streams.embedded_log import EmbeddedLog, NewRecord
from streams.events import Event
from streams.processors.outcome_join import OutcomeJoin
from streams.publisher import Publisher

API_KEY = "bench-key"
TENANT = "bench"
HEADERS = {"Content-Type": "application/x-protobuf", "x-agenttwin-api-key": API_KEY}
SPANS_PER_RUN = 3


def _kv(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def run_ids(tag: str, n: int) -> tuple[bytes, bytes, bytes, bytes]:
    digest = hashlib.sha256(f"{tag}:{n}".encode()).digest()
    return digest[:16], digest[16:24], digest[24:32], hashlib.sha256(digest).digest()[:8]


def build_request(tag: str, first: int, count: int) -> tuple[bytes, list[str]]:
    # Span times are the wall clock, like a live agent's: the join's one-sided horizon compares event times.
    t0 = time.time_ns() - 1_000_000_000
    spans: list[Span] = []
    traces: list[str] = []
    for n in range(first, first + count):
        trace, root, read, write = run_ids(tag, n)
        traces.append(trace.hex())
        start = t0
        common = [_kv("agenttwin.agent.name", "bench-agent"), _kv("agenttwin.agent.version", "1.0.0")]
        spans.append(
            Span(
                trace_id=trace,
                span_id=root,
                name="invoke_agent bench-agent",
                start_time_unix_nano=start,
                end_time_unix_nano=start + 900_000,
                attributes=[
                    *common,
                    _kv("agenttwin.outcome.claimed", "SUCCESS"),
                    _kv("agenttwin.outcome.tool", "refund_payment"),
                ],
            )
        )
        for span_id, tool, risk in ((read, "lookup_order", "READ"), (write, "refund_payment", "WRITE_IRREVERSIBLE")):
            spans.append(
                Span(
                    trace_id=trace,
                    span_id=span_id,
                    parent_span_id=root,
                    name=f"execute_tool {tool}",
                    kind=Span.SpanKind.SPAN_KIND_CLIENT,
                    start_time_unix_nano=start + 100_000,
                    end_time_unix_nano=start + 200_000,
                    attributes=[*common, _kv("gen_ai.tool.name", tool), _kv("agenttwin.tool.risk", risk)],
                )
            )
    resource = Resource(attributes=[_kv("service.name", "bench-agent")])
    request = ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(resource=resource, scope_spans=[ScopeSpans(spans=spans)])]
    )
    return request.SerializeToString(), traces


@dataclass
class Shared:
    lock: threading.Lock = field(default_factory=threading.Lock)
    spans_acked: int = 0
    runs_sent: int = 0
    published_at: dict[str, float] = field(default_factory=dict)
    arrived_at: dict[str, float] = field(default_factory=dict)
    alerts_seen: int = 0
    other_kinds: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def send_round(conn: http.client.HTTPConnection, publisher: Publisher, tag: str, start: int, traces: int) -> list[str]:
    """POST one request of `traces` runs, then publish each run's FAILURE outcome (a contradiction each);
    returns the runs' trace ids, or raises RuntimeError on a status other than 200."""
    body, ids = build_request(tag, start, traces)
    conn.request("POST", "/v1/traces", body=body, headers=HEADERS)
    resp = conn.getresponse()
    resp.read()
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status}")
    at = datetime.now(UTC)
    publisher.publish(
        [outcome_event(t, "FAILURE", True, "external_callback", "bench", tenant=TENANT, at=at) for t in ids]
    )
    return ids


def client(
    port: int,
    publisher: GroupCommitPublisher | SerializedPublisher,
    tag: str,
    traces: int,
    until: float,
    shared: Shared,
    first: int,
    stride: int,
) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    n = first
    while time.monotonic() < until:
        try:
            ids = send_round(conn, publisher, tag, n * traces, traces)
        except RuntimeError as exc:
            with shared.lock:
                shared.errors.append(str(exc))
            continue
        finally:
            n += stride
        done = time.monotonic()
        with shared.lock:
            shared.spans_acked += len(ids) * SPANS_PER_RUN
            shared.runs_sent += len(ids)
            for t in ids:
                shared.published_at[t] = done
    conn.close()


def watch_alerts(data_dir: Path, shared: Shared, stop: threading.Event) -> None:
    for item in embedded_alerts(data_dir, follow=True, poll_s=0.005, stop=stop.is_set):
        if item.alert is None:
            continue
        now = time.monotonic()
        with shared.lock:
            if item.alert.kind != "contradiction":
                shared.other_kinds[item.alert.kind] = shared.other_kinds.get(item.alert.kind, 0) + 1
                continue
            shared.alerts_seen += 1
            shared.arrived_at.setdefault(item.alert.trace_id, now)


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def sample_events(count_runs: int) -> list[Event]:
    body, _ = build_request("ceiling", 0, count_runs)
    return list(map_request(ExportTraceServiceRequest.FromString(body), TENANT, received_at=wall_clock()).events)


def raw_append_baseline(seconds: float, batch_runs: int) -> float:
    """Spans/s of protobuf decode + append of each span's bytes to the embedded log (one block, one fsync
    per request), on the same request bytes: the raw work without the project's mapping or event encoding."""
    bodies = [build_request(f"raw-{i}", 0, batch_runs)[0] for i in range(64)]
    with tempfile.TemporaryDirectory() as tmp, EmbeddedLog(Path(tmp)) as log:
        n, start, i = 0, time.monotonic(), 0
        while time.monotonic() - start < seconds:
            request = ExportTraceServiceRequest.FromString(bodies[i % len(bodies)])
            i += 1
            records = [
                NewRecord(span.SerializeToString(), None, {}, None)
                for rs in request.resource_spans
                for ss in rs.scope_spans
                for span in ss.spans
            ]
            log.append_many("spans", records)
            n += len(records)
        return n / (time.monotonic() - start)


def embedded_mapped(seconds: float, batch_runs: int) -> float:
    """Spans/s of the project's mapping + embedded publish with no HTTP, no join (where the time goes)."""
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRuntime(Path(tmp)) as runtime:
        n, start, i = 0, time.monotonic(), 0
        while time.monotonic() - start < seconds:
            body, _ = build_request(f"emb-{i}", 0, batch_runs)
            i += 1
            n += runtime.publish(
                map_request(ExportTraceServiceRequest.FromString(body), TENANT, received_at=wall_clock()).events
            )
        return n / (time.monotonic() - start)


def kafka_ceiling(bootstrap: str, seconds: float) -> float:
    """Spans/s confluent-kafka produces of the same Avro bytes (acks=all, idempotent), flushed."""
    from confluent_kafka import Producer

    from streams.kafka.clients import ensure_topics, producer_config
    from streams.kafka.codec import KafkaCodec
    from streams.kafka.naming import Naming

    naming = Naming(f"bench-{int(time.time())}.")
    ensure_topics(bootstrap, naming)
    codec = KafkaCodec(naming)
    messages = [codec.encode(e) for e in sample_events(2000)]
    headers: list[list[tuple[str, str | bytes | None]]] = [list(m.headers) for m in messages]
    producer = Producer(producer_config(bootstrap))
    sent, start = 0, time.monotonic()
    while time.monotonic() - start < seconds:
        for m, h in zip(messages, headers, strict=True):
            while True:
                try:
                    producer.produce(m.topic, key=m.key, value=m.value, headers=h)
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.flush(60)
        sent += len(messages)
    return sent / (time.monotonic() - start)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=60.0, help="load duration (default 60)")
    p.add_argument("--clients", type=int, default=4, help="concurrent HTTP clients (default 4)")
    p.add_argument("--traces", type=int, default=20, help="agent runs per request (default 20 = 60 spans)")
    p.add_argument("--join-every", type=float, default=0.02, help="live join step interval in s (default 0.02)")
    p.add_argument("--kafka", metavar="BOOTSTRAP", help="broker for the raw produce ceiling")
    p.add_argument("--serialized", action="store_true", help="one fsync per request under a lock (no group commit)")
    args = p.parse_args(argv)
    bootstrap = args.kafka or load_settings().kafka_bootstrap_servers
    tag = f"bench-{time.time_ns()}"
    load_start = _results.loadavg()
    shared, stop = Shared(), threading.Event()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        runtime = EmbeddedRuntime(data_dir)
        publisher: GroupCommitPublisher | SerializedPublisher = (
            SerializedPublisher(runtime) if args.serialized else GroupCommitPublisher(runtime)
        )
        server = make_server("127.0.0.1", 0, publisher, ApiKeys.from_mapping({API_KEY: TENANT}))
        server.start()
        live = LiveProcessor(runtime, OutcomeJoin(), publisher, tick_every_s=1.0)
        live.run_every(args.join_every, stop)
        watcher = threading.Thread(target=watch_alerts, args=(data_dir, shared, stop), daemon=True)
        watcher.start()
        port = server.server_address[1]
        start = time.monotonic()
        until = start + args.seconds
        clients = [
            threading.Thread(
                target=client, args=(port, publisher, tag, args.traces, until, shared, i, args.clients), daemon=True
            )
            for i in range(args.clients)
        ]
        for c in clients:
            c.start()
        for c in clients:
            c.join()
        elapsed = time.monotonic() - start
        drain_deadline = time.monotonic() + 30
        while time.monotonic() < drain_deadline:
            with shared.lock:
                if len(shared.arrived_at) >= shared.runs_sent:
                    break
            time.sleep(0.05)
        time.sleep(0.5)  # a late duplicate would show up here
        stop.set()
        watcher.join(5)
        server.close()
        if isinstance(publisher, GroupCommitPublisher):
            publisher.close()
        runtime.close()
    latencies = [
        (shared.arrived_at[t] - shared.published_at[t]) * 1000 for t in shared.published_at if t in shared.arrived_at
    ]
    lost = shared.runs_sent - len(set(shared.arrived_at) & set(shared.published_at))
    duplicated = shared.alerts_seen - len(shared.arrived_at)
    unexpected = len(set(shared.arrived_at) - set(shared.published_at))
    rate = shared.spans_acked / elapsed
    print(
        f"ingest + live join, {elapsed:.1f} s, {args.clients} clients x {args.traces} runs/request "
        f"({args.traces * SPANS_PER_RUN} spans), embedded log fsync'ed"
    )
    print(f"  spans acknowledged      {shared.spans_acked} ({rate:,.0f} spans/s sustained)")
    print(f"  runs sent               {shared.runs_sent}; HTTP errors {len(shared.errors)}")
    print(
        f"  alerts                  {len(shared.arrived_at)} unique; lost {lost}; duplicated {duplicated}; "
        f"unexpected {unexpected}"
    )
    print(
        f"  alert latency           p50 {percentile(latencies, 50):.1f} ms, p99 {percentile(latencies, 99):.1f} ms "
        f"(verified outcome published -> alert visible to a tail)"
    )
    ceiling_s = min(10.0, max(2.0, args.seconds / 6))
    raw = raw_append_baseline(ceiling_s, args.traces)
    mapped = embedded_mapped(ceiling_s, args.traces)
    print(
        f"  baseline                {raw:,.0f} spans/s (protobuf decode + append of the span bytes, fsync per "
        f"request, no mapping); ratio {rate / raw:.2f}"
    )
    print(f"  mapping + publish       {mapped:,.0f} spans/s (the project's mapping + embedded publish, no HTTP)")
    figures: dict[str, object] = {
        "seconds": elapsed,
        "clients": args.clients,
        "publisher": "serialized" if args.serialized else "group-commit",
        "spans_per_request": args.traces * SPANS_PER_RUN,
        "spans_per_s": rate,
        "alert_latency_ms": {"p50": percentile(latencies, 50), "p99": percentile(latencies, 99)},
        "alerts": {"lost": lost, "duplicated": duplicated, "unexpected": unexpected},
        "baseline_raw_append_spans_per_s": raw,
        "ratio": rate / raw,
        "mapping_publish_spans_per_s": mapped,
    }
    if bootstrap:
        try:
            kafka = kafka_ceiling(bootstrap, ceiling_s)
        except Exception as exc:  # the benchmark reports an unreachable broker instead of failing
            print(f"  kafka produce ceiling   unavailable ({type(exc).__name__}: {exc})")
        else:
            figures["kafka_produce_spans_per_s"] = kafka
            print(
                f"  kafka produce ceiling   {kafka:,.0f} spans/s (confluent-kafka, same Avro bytes, acks=all); "
                f"ratio {rate / kafka:.2f}"
            )
    else:
        print("  kafka produce ceiling   not measured: no broker (--kafka or KAFKA_BOOTSTRAP_SERVERS)")
    print(f"  load average            {load_start} at start, {_results.loadavg()} at end")
    if shared.other_kinds:
        print(f"  other alert kinds       {shared.other_kinds}")
    ok = lost == 0 and duplicated == 0 and unexpected == 0 and not shared.errors and not shared.other_kinds
    print("  result                  " + ("OK: every alert once" if ok else "FAILED"))
    figures["ok"] = ok
    print(f"  written                 {_results.write('bench_ingest', figures, load_at_start=load_start)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
