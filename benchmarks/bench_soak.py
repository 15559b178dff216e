"""Soak test of production-trace ingestion: the bench_ingest load for minutes, figures per minute.

Each interval (default 60 s) prints spans/s acknowledged, alert latency p50/p99 of the alerts that arrived
in it (verified outcome published -> alert visible to a tail), and the process's RSS (receiver, join and
clients run in this one process). At the end: lost / duplicated alerts, the last interval against the
first, RSS growth, and the same-run baseline (bench_ingest's raw protobuf decode + append, or on Kafka
confluent-kafka producing the same Avro bytes). JSON goes under benchmarks/results/.

    python benchmarks/bench_soak.py                      # embedded: receiver -> log -> live join, 10 minutes
    python benchmarks/bench_soak.py --minutes 2          # shorter
    python benchmarks/bench_soak.py --kafka 127.0.0.1:9092   # receiver -> Kafka -> `agenttwin worker` -> alerts
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _results
from bench_ingest import API_KEY, SPANS_PER_RUN, TENANT, kafka_ceiling, percentile, raw_append_baseline, send_round

from consumers.alerts import TOPIC, embedded_alerts
from producers.otlp import ApiKeys, make_server
from producers.otlp.live import LiveProcessor
from producers.otlp.publishing import ConcurrentPublisher, GroupCommitPublisher, SerializedPublisher
from streams.embedded import EmbeddedRuntime
from streams.processors.outcome_join import OutcomeJoin
from streams.publisher import Publisher

WORKER_WARMUP_S = 20.0  # the worker process imports, joins its group and is assigned its partitions


@dataclass
class Soak:
    lock: threading.Lock = field(default_factory=threading.Lock)
    spans_acked: int = 0
    runs_sent: int = 0
    in_flight: dict[str, float] = field(default_factory=dict)  # trace -> outcome published at
    early: dict[str, float] = field(default_factory=dict)  # alerts seen before their publish was recorded
    latencies: list[tuple[float, float]] = field(default_factory=list)  # (arrived at, ms)
    seen: set[str] = field(default_factory=set)
    duplicated: int = 0
    other_kinds: int = 0
    errors: list[str] = field(default_factory=list)

    def published(self, traces: list[str], at: float, spans: int) -> None:
        with self.lock:
            self.spans_acked += spans
            self.runs_sent += len(traces)
            for t in traces:
                arrived = self.early.pop(t, None)
                if arrived is None:
                    self.in_flight[t] = at
                else:  # the alert won the race against this bookkeeping: latency ~0
                    self.latencies.append((arrived, max(0.0, (arrived - at) * 1000)))

    def alert(self, trace: str, kind: str) -> None:
        now = time.monotonic()
        with self.lock:
            if kind != "contradiction":
                self.other_kinds += 1
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


def client(
    port: int, publisher: Publisher, tag: str, traces: int, until: float, soak: Soak, first: int, stride: int
) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    n = first
    while time.monotonic() < until:
        try:
            ids = send_round(conn, publisher, tag, n * traces, traces)
        except RuntimeError as exc:
            with soak.lock:
                soak.errors.append(str(exc))
            continue
        finally:
            n += stride
        soak.published(ids, time.monotonic(), len(ids) * SPANS_PER_RUN)
    conn.close()


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def kafka_alerts(bootstrap: str, naming: object, soak: Soak, stop: threading.Event) -> None:
    from confluent_kafka import Consumer

    from streams.kafka.clients import consumer_config
    from streams.kafka.codec import KafkaCodec
    from streams.kafka.naming import Naming

    assert isinstance(naming, Naming)
    codec = KafkaCodec(naming)
    consumer = Consumer(consumer_config(bootstrap, naming.group(f"soak-tail-{uuid.uuid4().hex[:6]}")))
    consumer.subscribe([naming.topic(TOPIC)])
    try:
        while not stop.is_set():
            for msg in consumer.consume(num_messages=1000, timeout=0.05):
                if msg.error() is None:
                    alert = codec.decode(msg.value())
                    soak.alert(getattr(alert, "trace_id", ""), getattr(alert, "kind", "?"))
    finally:
        consumer.close()


def _worker_process(
    bootstrap: str, prefix: str, naming: object, kafka: Any, data_dir: Path, soak: Soak, stop: threading.Event
) -> tuple[Publisher, Callable[[], None]]:
    """`agenttwin worker outcome-join` in its own process, as deployed; ready once its group has joined
    (its first alert would otherwise wait for the join), which a warm-up outcome/span pair shows."""
    env = {**os.environ, "AGENTTWIN_DATA_DIR": str(data_dir)}
    cmd = [sys.executable, "-m", "agenttwin.cli", "worker", "outcome-join", "--kafka", bootstrap]
    proc = subprocess.Popen([*cmd, "--topic-prefix", prefix], env=env, stdout=subprocess.DEVNULL)  # noqa: S603
    tail = threading.Thread(target=kafka_alerts, args=(bootstrap, naming, soak, stop), daemon=True)
    tail.start()

    def close() -> None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        tail.join(10)
        kafka.close()

    time.sleep(WORKER_WARMUP_S)
    return ConcurrentPublisher(kafka), close


def start_kafka(
    bootstrap: str, data_dir: Path, soak: Soak, stop: threading.Event, in_process: bool
) -> tuple[Publisher, Callable[[], None]]:
    """Receiver -> KafkaPublisher; an outcome-join worker (its own process, or this one's loop); an alerts tail."""
    from evaluation.claim_model import claim_classifier
    from streams.kafka.clients import ensure_topics
    from streams.kafka.faust_worker import FaustWorker
    from streams.kafka.naming import Naming
    from streams.kafka.publisher import KafkaPublisher
    from streams.kafka.runner import WorkerGroup

    prefix = f"soak-{uuid.uuid4().hex[:8]}."
    naming = Naming(prefix)
    ensure_topics(bootstrap, naming)
    kafka = KafkaPublisher(bootstrap, naming)
    if not in_process:
        return _worker_process(bootstrap, prefix, naming, kafka, data_dir, soak, stop)
    worker = FaustWorker(OutcomeJoin(classifier=claim_classifier()), bootstrap, naming, data_dir)
    ready = threading.Event()
    done = asyncio.Event()
    loop = asyncio.new_event_loop()

    async def run() -> None:
        async with WorkerGroup([worker]) as group:
            await group.wait_idle(idle_s=2.0, timeout_s=300)
            ready.set()
            await done.wait()

    runner = threading.Thread(target=loop.run_until_complete, args=(run(),), daemon=True)
    runner.start()
    if not ready.wait(300):
        raise RuntimeError("the outcome-join worker did not start")
    tail = threading.Thread(target=kafka_alerts, args=(bootstrap, naming, soak, stop), daemon=True)
    tail.start()

    def close() -> None:
        loop.call_soon_threadsafe(done.set)
        runner.join(60)
        tail.join(10)
        kafka.close()

    return ConcurrentPublisher(kafka), close


def start_embedded(
    data_dir: Path, soak: Soak, stop: threading.Event, join_every: float, serialized: bool
) -> tuple[Publisher, Callable[[], None]]:
    runtime = EmbeddedRuntime(data_dir)
    publisher: GroupCommitPublisher | SerializedPublisher = (
        SerializedPublisher(runtime) if serialized else GroupCommitPublisher(runtime)
    )
    live = LiveProcessor(runtime, OutcomeJoin(), publisher, tick_every_s=1.0)
    live.run_every(join_every, stop)

    def watch() -> None:
        for item in embedded_alerts(data_dir, follow=True, poll_s=0.005, stop=stop.is_set):
            if item.alert is not None:
                soak.alert(item.alert.trace_id, item.alert.kind)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()

    def close() -> None:
        watcher.join(10)
        if isinstance(publisher, GroupCommitPublisher):
            publisher.close()
        runtime.close()

    return publisher, close


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=10.0, help="load duration (default 10)")
    p.add_argument("--interval", type=float, default=60.0, help="seconds per reported interval (default 60)")
    p.add_argument("--clients", type=int, default=4, help="concurrent HTTP clients (default 4)")
    p.add_argument("--traces", type=int, default=20, help="agent runs per request (default 20 = 60 spans)")
    p.add_argument("--join-every", type=float, default=0.02, help="embedded live join step interval (s)")
    p.add_argument("--kafka", metavar="BOOTSTRAP", help="soak receiver -> Kafka -> outcome-join worker instead")
    p.add_argument(
        "--in-process-worker",
        action="store_true",
        help="kafka: run the outcome-join worker in this process (default: `agenttwin worker` beside it)",
    )
    p.add_argument(
        "--serialized", action="store_true", help="embedded: one fsync per request under a lock (no group commit)"
    )
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    load_start = _results.loadavg()
    tag = f"soak-{time.time_ns()}"
    soak, stop = Soak(), threading.Event()
    rows: list[dict[str, float]] = []
    mode = "kafka" if args.kafka else "embedded"
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp:
        if args.kafka:
            publisher, close = start_kafka(args.kafka, Path(tmp), soak, stop, args.in_process_worker)
        else:
            publisher, close = start_embedded(Path(tmp), soak, stop, args.join_every, args.serialized)
        server = make_server("127.0.0.1", 0, publisher, ApiKeys.from_mapping({API_KEY: TENANT}))
        server.start()
        port = server.server_address[1]
        start = time.monotonic()
        until = start + args.minutes * 60
        clients = [
            threading.Thread(
                target=client, args=(port, publisher, tag, args.traces, until, soak, i, args.clients), daemon=True
            )
            for i in range(args.clients)
        ]
        for c in clients:
            c.start()
        print(
            f"soak ({mode}): {args.minutes:g} min, {args.clients} clients x {args.traces * SPANS_PER_RUN} spans/request"
        )
        print(f"{'min':>5} {'spans/s':>9} {'alert p50 ms':>13} {'alert p99 ms':>13} {'RSS MB':>8} {'load':>16}")
        last_spans, last_t, k = 0, start, 0
        while time.monotonic() < until:
            k += 1
            time.sleep(max(0.0, min(start + k * args.interval, until) - time.monotonic()))
            now = time.monotonic()
            with soak.lock:
                spans = soak.spans_acked
                window = [ms for at, ms in soak.latencies if last_t <= at < now]
            row = {
                "minute": (now - start) / 60,
                "spans_per_s": (spans - last_spans) / (now - last_t),
                "alert_p50_ms": percentile(window, 50),
                "alert_p99_ms": percentile(window, 99),
                "rss_mb": rss_mb(),
            }
            rows.append(row)
            print(
                f"{row['minute']:5.1f} {row['spans_per_s']:9,.0f} {row['alert_p50_ms']:13.1f} "
                f"{row['alert_p99_ms']:13.1f} {row['rss_mb']:8.0f} {_results.loadavg():>16}"
            )
            sys.stdout.flush()
            last_spans, last_t = spans, now
        for c in clients:
            c.join()
        elapsed = time.monotonic() - start
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with soak.lock:
                if len(soak.seen) >= soak.runs_sent:
                    break
            time.sleep(0.05)
        time.sleep(1.0)  # a late duplicate would show up here
        stop.set()
        server.close()
        close()
    lost = soak.runs_sent - len(soak.seen)
    all_ms = [ms for _, ms in soak.latencies]
    rate = soak.spans_acked / elapsed
    first, last = rows[0], rows[-1]
    stability = last["spans_per_s"] / first["spans_per_s"] if first["spans_per_s"] else float("nan")
    rss_growth = last["rss_mb"] / first["rss_mb"] - 1
    baseline_s = 10.0
    if args.kafka:
        baseline = kafka_ceiling(args.kafka, baseline_s)
        baseline_what = "confluent-kafka producing the same Avro bytes, acks=all"
    else:
        baseline = raw_append_baseline(baseline_s, args.traces)
        baseline_what = "protobuf decode + append of the span bytes, fsync per request, no mapping"
    print(f"  sustained               {rate:,.0f} spans/s over {elapsed:.0f} s ({soak.spans_acked} spans)")
    print(f"  last / first interval   {stability:.2f}")
    print(f"  RSS growth              {rss_growth * 100:+.1f}% ({first['rss_mb']:.0f} -> {last['rss_mb']:.0f} MB)")
    print(f"  alert latency (all)     p50 {percentile(all_ms, 50):.1f} ms, p99 {percentile(all_ms, 99):.1f} ms")
    print(
        f"  alerts                  {len(soak.seen)} of {soak.runs_sent}; missing {lost} (60 s after the load); "
        f"duplicated {soak.duplicated}; "
        f"other kinds {soak.other_kinds}; HTTP errors {len(soak.errors)}"
    )
    print(f"  baseline                {baseline:,.0f} spans/s ({baseline_what}); ratio {rate / baseline:.2f}")
    print(f"  load average            {load_start} at start, {_results.loadavg()} at end")
    ok = lost == 0 and soak.duplicated == 0 and not soak.errors and soak.other_kinds == 0
    figures = {
        "mode": mode,
        "worker": "in-process" if args.in_process_worker else "process",
        "publisher": "serialized" if args.serialized else "group-commit",
        "minutes": args.minutes,
        "clients": args.clients,
        "spans_per_request": args.traces * SPANS_PER_RUN,
        "intervals": rows,
        "spans_per_s": rate,
        "last_over_first": stability,
        "rss_growth": rss_growth,
        "alert_latency_ms": {"p50": percentile(all_ms, 50), "p99": percentile(all_ms, 99)},
        "alerts": {"lost": lost, "duplicated": soak.duplicated, "other_kinds": soak.other_kinds},
        "baseline_spans_per_s": baseline,
        "baseline": baseline_what,
        "ratio": rate / baseline,
        "ok": ok,
    }
    print(f"  written                 {_results.write(f'bench_soak_{mode}', figures, load_at_start=load_start)}")
    print("  result                  " + ("OK: every alert once" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
