"""Same-run baselines of the ingest benchmarks, on the load generator's own request bytes.

- raw_append_baseline: protobuf decode of each request, then every span's bytes appended to a log container
  file, one block and one fsync per request: the raw work with the fastest path of the same libraries and
  none of the project's code between them (no mapping, no Avro event encoding, no HTTP, no join).
- embedded_mapped: the project's mapping + embedded publish, no HTTP, no join (where the time goes).
- kafka_ceiling: confluent-kafka producing the project's Avro bytes of the same spans (acks=all, idempotent).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from loadgen import RequestBuilder
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from producers.otlp.mapping import map_request
from streams.clock import wall_clock
from streams.embedded import EmbeddedRuntime
from streams.embedded_log import EmbeddedLog, NewRecord
from streams.events import Event

TENANT = "bench"
SEED = 9  # not the load's seed: other trace ids


def _bodies(count: int, runs: int) -> list[bytes]:
    builder = RequestBuilder(SEED)
    now = time.time_ns()
    return [builder.build(i * runs, runs, now).body for i in range(count)]


def sample_events(count_runs: int) -> list[Event]:
    events: list[Event] = []
    for body in _bodies(max(1, count_runs // 20), 20):
        request = ExportTraceServiceRequest.FromString(body)
        events.extend(map_request(request, TENANT, received_at=wall_clock()).events)
    return events


def raw_append_baseline(seconds: float, runs_per_request: int) -> float:
    """Spans/s of protobuf decode + append of each span's bytes (one block, one fsync per request)."""
    bodies = _bodies(64, runs_per_request)
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


def embedded_mapped(seconds: float, runs_per_request: int) -> float:
    """Spans/s of the project's mapping + embedded publish, no HTTP, no join."""
    bodies = _bodies(64, runs_per_request)
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRuntime(Path(tmp)) as runtime:
        n, start, i = 0, time.monotonic(), 0
        while time.monotonic() - start < seconds:
            body = bodies[i % len(bodies)]
            i += 1
            n += runtime.publish(
                map_request(ExportTraceServiceRequest.FromString(body), TENANT, received_at=wall_clock()).events
            )
        return n / (time.monotonic() - start)


def kafka_ceiling(bootstrap: str, seconds: float) -> float:
    """Spans/s confluent-kafka produces of the same spans' Avro bytes (acks=all, idempotent), flushed."""
    from confluent_kafka import Producer

    from streams.kafka.clients import ensure_topics, producer_config
    from streams.kafka.codec import KafkaCodec
    from streams.kafka.naming import Naming

    naming = Naming(f"bench-{int(time.time())}.")
    ensure_topics(bootstrap, naming)
    codec = KafkaCodec(naming)
    messages = [codec.encode(e) for e in sample_events(200)]
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
