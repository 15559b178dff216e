"""Ours beside a real peer: OTLP/HTTP -> durable on Kafka, `agenttwin ingest --kafka` vs the OpenTelemetry
Collector (OTLP receiver -> Kafka exporter), on the same machine, the same broker, the same load.

The collector is built once from Go modules at one pinned release (benchmarks/peer/build.sh, manifest
benchmarks/peer/builder-config.yaml) and cached outside the checkout; its pipeline
(benchmarks/peer/collector.yaml) acknowledges a request only once Kafka has it, as ours does: no sending
queue, no batch processor, acks from all in-sync replicas. Each side in turn, alone on the machine (the
other stopped), is driven by benchmarks/loadgen.py (client processes, OTLP/HTTP protobuf, agent runs of
5-15 spans; no verifications: the collector has no /v1/outcomes). Per side: acknowledged spans/s, the
measured process's CPU seconds (spans per CPU second is the steadier figure on a shared machine), its peak
RSS, and a check that the records are on the topic: ours one Avro SpanRecorded a span (counted by the
topic's offsets), the collector one ExportTraceServiceRequest per request (every record decoded, its spans
counted). Printed: ours / collector. Rounds alternate which side goes first. Not part of `make test`.

    python benchmarks/bench_peer.py --kafka 127.0.0.1:9092              # 30 s a side, one round
    python benchmarks/bench_peer.py --kafka 127.0.0.1:9092 --rounds 2 --rate 5000
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _ingest_run
import _results
from loadgen import Load, LoadSink, LoadSpec, Totals

PEER = Path(__file__).resolve().parent / "peer"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def build_collector() -> Path:
    """The cached peer binary (built on first use: minutes, from the Go module proxy)."""
    build = [shutil.which("bash") or "/bin/bash", str(PEER / "build.sh")]
    out = subprocess.run(build, check=True, capture_output=True, text=True)  # noqa: S603
    return Path(out.stdout.strip().splitlines()[-1])


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its threads so far."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the collector exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port} after {timeout_s:g} s")


def ensure_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined, unused-ignore]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)]).values():
        future.result(60)


def topic_records(bootstrap: str, topic: str) -> int:
    """Records on a topic, from its partitions' offsets (a fresh topic: nothing compacted or expired)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"peer-count-{uuid.uuid4().hex[:6]}"})
    try:
        meta = consumer.list_topics(topic, timeout=30).topics[topic]
        total = 0
        for p in meta.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            total += high - low
        return total
    finally:
        consumer.close()


def otlp_spans_on_topic(bootstrap: str, topic: str, expected_records: int) -> tuple[int, int]:
    """(records, spans) of a topic of ExportTraceServiceRequest records, every record read and decoded."""
    from confluent_kafka import Consumer
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"peer-read-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    records, spans, idle_since = 0, 0, time.monotonic()
    try:
        while records < expected_records and time.monotonic() - idle_since < 20:
            batch = consumer.consume(num_messages=500, timeout=0.5)
            for msg in batch:
                if msg.error() is None:
                    request = ExportTraceServiceRequest.FromString(msg.value())
                    spans += sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
                    records += 1
            if batch:
                idle_since = time.monotonic()
    finally:
        consumer.close()
    return records, spans


@dataclass
class Side:
    name: str
    spans_per_s: float
    spans_acked: int
    seconds: float
    cpu_s: float
    peak_rss_mb: float
    records: int
    spans_on_topic: int
    errors: int
    load: str
    loadgen_cpu_s: float  # the client processes' CPU seconds (all of them)

    @property
    def spans_per_cpu_s(self) -> float:
        return self.spans_acked / self.cpu_s if self.cpu_s else float("nan")

    @property
    def durable(self) -> bool:
        """Every acknowledged span is on the topic (a span sent again after an error may be there twice)."""
        return self.spans_on_topic >= self.spans_acked > 0


class _Acks(LoadSink):
    def __init__(self) -> None:
        self.last = 0.0

    def acked(self, spans: int, runs: int, at: float) -> None:
        self.last = max(self.last, at)


def drive(spec: LoadSpec, pid: int) -> tuple[Totals, float, float]:
    """Runs the load against a started side; returns its totals, seconds (first send -> last ack), CPU s."""
    load = Load(spec)
    acks = _Acks()
    start = load.start()
    cpu_before = cpu_s(pid)
    totals = load.collect(acks)
    cpu = cpu_s(pid) - cpu_before
    return totals, max(acks.last, start + spec.seconds) - start, cpu


def run_ours(bootstrap: str, spec_args: dict[str, Any], seconds: float, tmp: Path) -> Side:
    from streams.topics import SPANS

    prefix = f"peer-{uuid.uuid4().hex[:8]}."
    load_start = _results.loadavg()
    url, proc = _ingest_run.start_ingest(tmp, ["--kafka", bootstrap, "--topic-prefix", prefix])
    try:
        spec = LoadSpec(url=url, seconds=seconds, api_key=_ingest_run.API_KEY, **spec_args)
        totals, elapsed, cpu = drive(spec, proc.pid)
        rss = peak_rss_mb(proc.pid)
    finally:
        _ingest_run.stop_process(proc)
    records = topic_records(bootstrap, prefix + SPANS.name)
    return Side(
        "agenttwin ingest --kafka",
        totals.spans_acked / elapsed,
        totals.spans_acked,
        elapsed,
        cpu,
        rss,
        records,
        records,  # one SpanRecorded per span
        len(totals.errors),
        f"{load_start} -> {_results.loadavg()}",
        totals.cpu_s,
    )


def run_collector(binary: Path, bootstrap: str, spec_args: dict[str, Any], seconds: float, tmp: Path) -> Side:
    from streams.topics import SPANS

    topic = f"peer-otelcol-{uuid.uuid4().hex[:8]}"
    ensure_topic(bootstrap, topic, SPANS.partitions)
    port = free_port()
    env = {**os.environ, "PEER_OTLP_PORT": str(port), "PEER_KAFKA_BOOTSTRAP": bootstrap, "PEER_TOPIC": topic}
    load_start = _results.loadavg()
    with (tmp / "otelcol.log").open("wb") as log:
        proc = subprocess.Popen(  # noqa: S603
            [str(binary), "--config", str(PEER / "collector.yaml")], env=env, stdout=log, stderr=log
        )
    try:
        wait_listening(port, proc)
        spec = LoadSpec(url=f"http://127.0.0.1:{port}", seconds=seconds, **spec_args)
        totals, elapsed, cpu = drive(spec, proc.pid)
        rss = peak_rss_mb(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    records, spans = otlp_spans_on_topic(bootstrap, topic, topic_records(bootstrap, topic))
    return Side(
        "OpenTelemetry Collector v0.165.0",
        totals.spans_acked / elapsed,
        totals.spans_acked,
        elapsed,
        cpu,
        rss,
        records,
        spans,
        len(totals.errors),
        f"{load_start} -> {_results.loadavg()}",
        totals.cpu_s,
    )


def _row(side: Side) -> str:
    check = "all on the topic" if side.durable else "MISSING on the topic"
    return (
        f"  {side.name:<34} {side.spans_per_s:>9,.0f} spans/s  {side.spans_per_cpu_s:>9,.0f} spans/CPU-s  "
        f"peak RSS {side.peak_rss_mb:>5.0f} MB  {side.records:>8,} records, {side.spans_on_topic:,} spans "
        f"({check}; {side.errors} errors)  loadgen CPU {side.loadgen_cpu_s:.0f} s  load {side.load}"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kafka", metavar="BOOTSTRAP", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS"))
    p.add_argument("--seconds", type=float, default=30.0, help="load per side and round (default 30)")
    p.add_argument("--rounds", type=int, default=1, help="rounds; each alternates which side goes first")
    p.add_argument("--clients", type=int, default=4, help="load generator processes (default 4)")
    p.add_argument("--traces", type=int, default=20, help="agent runs per request (default 20)")
    p.add_argument("--rate", type=float, help="spans/s offered (default: as fast as each side answers)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--collector", type=Path, help="a collector binary (default: build or reuse the cached one)")
    args = p.parse_args(argv)
    if not args.kafka:
        p.error("--kafka BOOTSTRAP (or KAFKA_BOOTSTRAP_SERVERS) is needed")
    load_start = _results.loadavg()
    binary = args.collector or build_collector()
    spec_args = {
        "processes": args.clients,
        "traces_per_request": args.traces,
        "rate": args.rate,
        "seed": args.seed,
        "verify_every": 0,
    }
    offered = f"{args.rate:,.0f} spans/s offered" if args.rate else "as fast as each side answers"
    print(
        f"OTLP/HTTP -> durable on Kafka ({args.kafka}), {args.seconds:g} s a side, {args.rounds} round(s); "
        f"loadgen {args.clients} processes x {args.traces} runs (5-15 spans) per request, {offered}"
    )
    ours: list[Side] = []
    peer: list[Side] = []
    with tempfile.TemporaryDirectory(prefix="bench-peer-") as tmp:
        for r in range(args.rounds):
            steps: list[tuple[list[Side], Callable[[], Side]]] = [
                (ours, lambda: run_ours(args.kafka, spec_args, args.seconds, Path(tmp))),
                (peer, lambda: run_collector(binary, args.kafka, spec_args, args.seconds, Path(tmp))),
            ]
            for sides, step in steps if r % 2 == 0 else reversed(steps):
                side = step()
                sides.append(side)
                print(_row(side))
                sys.stdout.flush()

    def mean(values: list[float]) -> float:
        return sum(values) / len(values)

    rate_ratio = mean([s.spans_per_s for s in ours]) / mean([s.spans_per_s for s in peer])
    cpu_ratio = mean([s.spans_per_cpu_s for s in ours]) / mean([s.spans_per_cpu_s for s in peer])
    print(f"  ours / collector        {rate_ratio:.2f} of its spans/s acknowledged; {cpu_ratio:.2f} of its spans/CPU-s")
    print(f"  load average            {load_start} at start, {_results.loadavg()} at end")
    ok = all(s.durable and not s.errors for s in [*ours, *peer])

    def side_doc(s: Side) -> dict[str, Any]:
        return {**vars(s), "spans_per_cpu_s": s.spans_per_cpu_s, "durable": s.durable}

    figures = {
        "kafka": args.kafka,
        "seconds_per_side": args.seconds,
        "rounds": args.rounds,
        "generator": {**spec_args, "offered_spans_per_s": args.rate},
        "collector": {"release": "v0.165.0 (contrib kafkaexporter v0.165.1)", "binary": str(binary)},
        "ours": [side_doc(s) for s in ours],
        "peer": [side_doc(s) for s in peer],
        "spans_per_s": mean([s.spans_per_s for s in ours]),
        "baseline_spans_per_s": mean([s.spans_per_s for s in peer]),
        "baseline": "OpenTelemetry Collector v0.165.0, OTLP receiver -> Kafka exporter, same load, same broker",
        "ratio": rate_ratio,
        "ratio_per_cpu_s": cpu_ratio,
        "ok": ok,
    }
    print(f"  written                 {_results.write('bench_peer', figures, load_at_start=load_start)}")
    print("  result                  " + ("OK: every acknowledged span on the topic" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
