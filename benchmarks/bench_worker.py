"""Spans/s of outcome-join worker processes on a pre-loaded topic, beside a raw consume of the same topic.

A fresh topic prefix is loaded with `--traces` realistic agent traces (an agent span claiming SUCCESS, LLM
spans with their messages, tool spans with arguments and results: 5-15 spans a trace, seeded) on `spans`
and one verified FAILURE outcome each on `verified-outcomes`, so every trace must yield one contradiction
alert. Then `--workers` `agenttwin worker outcome-join` processes start on it; the clock runs from the first
offsets their group commits until its lag is 0 (the processes' start-up and group join are left out), so
the figure includes the alerts, claim readings, changelog writes and commits they make. Beside it, in the
same run: one confluent-kafka consumer reading the same topics and decoding every value (fastavro), the
least any worker must do. Alerts on `contradictions` are counted (lost / doubled) at the end.

    python benchmarks/bench_worker.py --kafka 127.0.0.1:9092 [--traces 6000] [--workers 1 2] [--profile out.txt]

`--workers 1 2` runs one worker, then two on a second topic loaded alike, and prints two / one; `--faust` first runs
one worker on the faust loop the join used before (same processor), for a same-run before/after. Beside spans/s,
spans per CPU second of the workers: what the work costs whatever share of the cores a loaded machine gave it.

`--profile PATH` samples the first worker with py-spy for the measured span (raw format: one stack a line).

With `--rate R --minutes M` the topic is not pre-loaded: a producer process offers R spans/s (whole traces, each
followed by its verification) for M minutes to the running worker(s); printed are the alert latency p50/p99
(alert visible to a read_committed tail minus the verification's receive time), lost / doubled alerts, and
how long after the load's end the group's lag was back to 0.

    python benchmarks/bench_worker.py --kafka 127.0.0.1:9092 --rate 3000 --minutes 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import _results
from confluent_kafka import Consumer, Producer, TopicPartition
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from producers.otlp.mapping import map_request
from producers.sdk.outcome import outcome_event
from streams.events import ContradictionDetected, Event
from streams.kafka.clients import consumer_config, ensure_topics, producer_config
from streams.kafka.codec import KafkaCodec
from streams.kafka.naming import Naming
from streams.kafka.reading import partition_lags, read_all
from streams.topics import TOPIC_BY_NAME

REPO = Path(__file__).resolve().parent.parent
TENANT = "bench"
GROUP = "outcome-join"
INPUTS = ("spans", "verified-outcomes")
TIMEOUT_S = 900.0
POLL_S = 0.25
TOOLS = (("lookup_order", "READ"), ("search_kb", "READ"), ("refund_payment", "WRITE_IRREVERSIBLE"))


def _kv(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def trace_request(rng: random.Random, trace: bytes, t0: int) -> ExportTraceServiceRequest:
    """One agent run as a stock GenAI exporter sends it: 5-15 spans."""
    root = rng.randbytes(8)
    agent = [_kv("gen_ai.agent.name", "bench-agent"), _kv("agenttwin.agent.version", "1.0.0")]
    spans = [
        Span(
            trace_id=trace, span_id=root, name="invoke_agent bench-agent", start_time_unix_nano=t0,
            end_time_unix_nano=t0 + 9_000_000,
            attributes=[*agent, _kv("gen_ai.operation.name", "invoke_agent"),
                        _kv("agenttwin.outcome.claimed", "SUCCESS"), _kv("agenttwin.outcome.tool", "refund_payment")],
        )
    ]  # fmt: skip
    order = f"ord-{rng.randrange(10**6):06d}"
    for i in range(rng.randrange(4, 15)):
        start = t0 + (i + 1) * 500_000
        if i % 2 == 0:
            question = f"Customer asks about order {order}; step {i}."
            messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}])
            answer = json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": f"Refund issued for {order}."}]}]
            )
            attrs = [
                _kv("gen_ai.operation.name", "chat"), _kv("gen_ai.request.model", "gpt-4o"),
                _kv("gen_ai.input.messages", messages), _kv("gen_ai.output.messages", answer),
            ]  # fmt: skip
            name = "chat gpt-4o"
        else:
            tool, risk = TOOLS[(i // 2) % len(TOOLS)]
            attrs = [
                _kv("gen_ai.operation.name", "execute_tool"), _kv("gen_ai.tool.name", tool),
                _kv("agenttwin.tool.risk", risk),
                _kv("gen_ai.tool.call.arguments", json.dumps({"order_id": order, "amount": rng.randrange(5, 500)})),
                _kv("gen_ai.tool.call.result", json.dumps({"ok": True, "order_id": order})),
            ]  # fmt: skip
            name = f"execute_tool {tool}"
        spans.append(
            Span(
                trace_id=trace, span_id=rng.randbytes(8), parent_span_id=root, name=name,
                start_time_unix_nano=start, end_time_unix_nano=start + 400_000, attributes=attrs,
            )
        )  # fmt: skip
    resource = Resource(attributes=[_kv("service.name", "bench-agent")])
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(resource=resource, scope_spans=[ScopeSpans(spans=spans)])]
    )


def trace_events(rng: random.Random, now: datetime | None = None) -> list[Event]:
    """One trace's spans, then its verified FAILURE outcome, received `now` (the wall clock by default)."""
    now = now or datetime.now(UTC)
    trace = rng.randbytes(16)
    t0 = int(now.timestamp() * 1e9) - 1_000_000_000
    events: list[Event] = list(map_request(trace_request(rng, trace, t0), TENANT, received_at=now).events)
    events.append(outcome_event(trace.hex(), "FAILURE", True, "external_callback", "bench", tenant=TENANT, at=now))
    return events


def load_events(traces: int, seed: int) -> tuple[list[Event], int]:
    """Every trace's spans, then its verified FAILURE outcome; returns the events and the span count."""
    rng = random.Random(seed)
    events = [e for _ in range(traces) for e in trace_events(rng)]
    return events, len(events) - traces


def produce(producer: Producer, codec: KafkaCodec, events: list[Event]) -> None:
    for e in events:
        m = codec.encode(e)
        while True:
            try:
                producer.produce(m.topic, m.value, m.key, headers=m.headers, timestamp=m.timestamp_ms or 0)
                break
            except BufferError:
                producer.poll(0.05)


def preload(bootstrap: str, naming: Naming, events: list[Event]) -> None:
    producer = Producer(producer_config(bootstrap, **{"linger.ms": 20}))
    produce(producer, KafkaCodec(naming), events)
    if producer.flush(120):
        raise RuntimeError("preload not acknowledged")


def offer(bootstrap: str, prefix: str, rate: float, seconds: float, seed: int, sent: Any) -> None:
    """(A process of its own.) Whole traces at `rate` spans/s for `seconds`, flushed each tenth of a second;
    `sent` (a shared array of three) gets the traces and spans acknowledged and the milliseconds taken."""
    naming = Naming(prefix)
    codec = KafkaCodec(naming)
    producer = Producer(producer_config(bootstrap, **{"linger.ms": 5}))
    rng = random.Random(seed)
    started = time.monotonic()
    spans = traces = 0
    while (elapsed := time.monotonic() - started) < seconds:
        batch: list[Event] = []
        due = rate * (elapsed + 0.1) - spans
        while due > 0:
            trace = trace_events(rng)
            batch += trace
            traces += 1
            spans += len(trace) - 1
            due -= len(trace) - 1
        produce(producer, codec, batch)
        producer.flush(30)
        with sent.get_lock():
            sent[0], sent[1], sent[2] = traces, spans, int((time.monotonic() - started) * 1000)
        pause = started + elapsed + 0.1 - time.monotonic()
        if pause > 0:
            time.sleep(pause)


class AlertTail:
    """Contradiction alerts as a read_committed reader sees them: latency from the verification's receive time."""

    def __init__(self, bootstrap: str, naming: Naming) -> None:
        self.latencies_ms: list[float] = []
        self.seen: Counter[str] = Counter()
        self._stop = threading.Event()
        self._codec = KafkaCodec(naming)
        self._consumer = Consumer(consumer_config(bootstrap, naming.group(f"bench-tail-{uuid.uuid4().hex[:6]}")))
        self._consumer.assign(
            [
                TopicPartition(naming.topic("contradictions"), p, 0)
                for p in range(TOPIC_BY_NAME["contradictions"].partitions)
            ]
        )
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for msg in self._consumer.consume(num_messages=1000, timeout=0.1):
                if msg.error() is not None:
                    continue
                now = datetime.now(UTC)
                alert = self._codec.decode(msg.value())
                if isinstance(alert, ContradictionDetected) and alert.kind == "contradiction":
                    self.seen[alert.alert_id] += 1
                    if self.seen[alert.alert_id] == 1:
                        self.latencies_ms.append((now - alert.detected_at).total_seconds() * 1000)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._consumer.close()


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] if ordered else float("nan")


def offered_run(args: argparse.Namespace, naming: Naming, data: Path) -> dict[str, Any]:
    """Worker(s) started and joined, then `args.rate` spans/s offered for `args.minutes`."""
    procs = [start_worker(args.kafka, naming, data, f"worker-{i}") for i in range(args.workers[0])]
    tail = AlertTail(args.kafka, naming)
    try:
        # joined: a warm-up trace went through
        preload(args.kafka, naming, trace_events(random.Random(-1)))
        deadline = time.monotonic() + 120
        while len(tail.seen) < 1:
            if time.monotonic() > deadline:
                raise TimeoutError("the warm-up trace got no alert within 120 s")
            time.sleep(0.2)
        tail.latencies_ms.clear()
        warm = set(tail.seen)
        spawn = multiprocessing.get_context("spawn")  # not a fork of this process's librdkafka threads
        sent = spawn.Array("q", 3)  # traces, spans acknowledged, milliseconds taken
        producer = spawn.Process(
            target=offer, args=(args.kafka, naming.prefix, args.rate, args.minutes * 60, args.seed, sent)
        )
        producer.start()
        producer.join()
        ended = time.monotonic()
        while total_lag(args.kafka, naming):
            if time.monotonic() - ended > 300:
                raise TimeoutError("lag not 0 within 300 s of the load's end")
            time.sleep(POLL_S)
        lag_zero_s = time.monotonic() - ended
        traces, spans, load_s = sent[0], sent[1], sent[2] / 1000
        deadline = time.monotonic() + 30
        while len(set(tail.seen) - warm) < traces and time.monotonic() < deadline:
            time.sleep(0.2)
        alerts = len(set(tail.seen) - warm)
        doubled = sum(n - 1 for n in tail.seen.values())
        return {
            "rate_offered": args.rate,
            "minutes": args.minutes,
            "traces": traces,
            "spans": spans,
            "spans_per_s_sent": round(spans / load_s, 1),
            "alert_p50_ms": round(percentile(tail.latencies_ms, 50), 1),
            "alert_p99_ms": round(percentile(tail.latencies_ms, 99), 1),
            "alert_max_ms": round(max(tail.latencies_ms, default=float("nan")), 1),
            "lag_zero_after_end_s": round(lag_zero_s, 2),
            "alerts": alerts,
            "alerts_doubled": doubled,
        }
    finally:
        tail.close()
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()


def total_lag(bootstrap: str, naming: Naming) -> int:
    return sum(partition_lags(bootstrap, naming, {GROUP: INPUTS}).values())


def start_worker(
    bootstrap: str, naming: Naming, data: Path, label: str, *, faust: bool = False
) -> subprocess.Popen[bytes]:
    """`agenttwin worker outcome-join`, or (faust) this script serving the join on a FaustWorker, as before."""
    env = {**os.environ, "AGENTTWIN_DATA_DIR": str(data / label), "PYTHONWARNINGS": "ignore"}
    env.pop("AGENTTWIN_CLICKHOUSE_URL", None)
    if faust:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--serve-faust", "--kafka", bootstrap, "--prefix",
               naming.prefix]  # fmt: skip
    else:
        cmd = [sys.executable, "-m", "agenttwin.kafka_cli", "worker", "outcome-join", "--kafka", bootstrap,
               "--topic-prefix", naming.prefix, "--log-level", "WARNING"]  # fmt: skip
    log = (data / f"{label}.log").open("ab")
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=log)  # noqa: S603


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system, every thread) a process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve_faust(bootstrap: str, prefix: str, data: Path) -> None:
    """The outcome join on a FaustWorker until SIGTERM (the loop it ran on before BatchWorker)."""
    from agenttwin.kafka_cli import _serve
    from evaluation.claim_model import claim_classifier
    from streams.kafka.faust_worker import FaustWorker
    from streams.processors.outcome_join import OutcomeJoin

    worker = FaustWorker(OutcomeJoin(classifier=claim_classifier()), bootstrap, Naming(prefix), data)
    asyncio.run(_serve([worker]))


def run_workers(
    bootstrap: str,
    naming: Naming,
    data: Path,
    workers: int,
    total: int,
    profile: Path | None,
    *,
    faust: bool = False,
) -> tuple[int, float, float]:
    """(messages handled while timed, seconds, CPU seconds of the workers meanwhile): from the first commit
    below `total` lag to lag 0."""
    procs = [start_worker(bootstrap, naming, data, f"worker-{i}", faust=faust) for i in range(workers)]
    spy: subprocess.Popen[bytes] | None = None
    try:
        deadline = time.monotonic() + TIMEOUT_S
        first: tuple[float, int, float] | None = None
        while time.monotonic() < deadline:
            for p in procs:
                if p.poll() is not None:
                    raise RuntimeError(f"a worker exited ({p.returncode}); see {data}")
            lag = total_lag(bootstrap, naming)
            now = time.monotonic()
            if first is None and lag < total:
                first = (now, lag, sum(cpu_s(p.pid) for p in procs))
                if profile is not None:
                    spy = subprocess.Popen(  # noqa: S603
                        [str(Path(sys.executable).parent / "py-spy"), "record", "--format", "raw", "--rate", "50",
                         "--nonblocking", "-o", str(profile), "-p", str(procs[0].pid)],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    )  # fmt: skip
            if first is not None and lag == 0:
                return first[1], now - first[0], sum(cpu_s(p.pid) for p in procs) - first[2]
            time.sleep(POLL_S)
        raise TimeoutError(f"lag not 0 within {TIMEOUT_S:.0f} s")
    finally:
        if spy is not None:
            spy.send_signal(2)  # SIGINT: py-spy writes what it sampled
            spy.wait(30)
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()


def raw_consume(bootstrap: str, naming: Naming, expected: int) -> tuple[float, float]:
    """Messages/s of one confluent-kafka consumer reading the inputs and decoding every value, and messages per
    CPU second of this process meanwhile."""
    codec = KafkaCodec(naming)
    consumer = Consumer(consumer_config(bootstrap, naming.group(f"bench-raw-{uuid.uuid4().hex[:6]}")))
    consumer.assign([TopicPartition(naming.topic(t), p, 0) for t in INPUTS for p in range(TOPIC_BY_NAME[t].partitions)])
    n, started, cpu_started = 0, 0.0, 0.0
    try:
        while n < expected:
            for msg in consumer.consume(num_messages=5000, timeout=1.0):
                if msg.error() is None:
                    if not n:  # the clock starts at the first message: connecting and joining are left out
                        started, cpu_started = time.perf_counter(), time.process_time()
                    codec.decode_value(msg.value() or b"")
                    n += 1
        return n / (time.perf_counter() - started), n / (time.process_time() - cpu_started)
    finally:
        consumer.close()


def alert_counts(bootstrap: str, naming: Naming) -> tuple[int, int]:
    """(distinct contradiction alerts, messages beyond one per alert id) on `contradictions`."""
    ids = Counter(
        e.alert_id
        for e in read_all(bootstrap, naming, ["contradictions"])
        if isinstance(e, ContradictionDetected) and e.kind == "contradiction"
    )
    return len(ids), sum(ids.values()) - len(ids)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kafka", default="127.0.0.1:9092", metavar="BOOTSTRAP")
    parser.add_argument("--traces", type=int, default=6000, help="agent runs loaded (about 10 spans each)")
    parser.add_argument(
        "--workers", type=int, nargs="+", default=[1], help="outcome-join worker processes; several: a run each"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--profile", type=Path, help="py-spy raw profile of the first worker")
    parser.add_argument("--faust", action="store_true", help="first a run of one worker on the faust loop, as before")
    parser.add_argument("--serve-faust", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--prefix", help=argparse.SUPPRESS)
    parser.add_argument("--rate", type=float, help="offer this many spans/s instead of pre-loading")
    parser.add_argument("--minutes", type=float, default=10.0, help="with --rate: how long (default 10)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    if args.serve_faust:
        serve_faust(args.kafka, args.prefix, Path(os.environ["AGENTTWIN_DATA_DIR"]))
        return 0
    load_start = _results.loadavg()
    naming = Naming(f"bench-worker-{uuid.uuid4().hex[:8]}.")
    ensure_topics(args.kafka, naming)
    figures: dict[str, Any]
    if args.rate:
        with tempfile.TemporaryDirectory(prefix="bench-worker-") as tmp:
            figures = offered_run(args, naming, Path(tmp))
            figures["workers"] = args.workers[0]
        print(f"offered {args.rate:,.0f} spans/s for {args.minutes} min to {args.workers[0]} worker process(es): "
              f"sent {figures['spans_per_s_sent']:,.0f} spans/s ({figures['traces']} traces)")  # fmt: skip
        print(f"alert latency p50 {figures['alert_p50_ms']:,.0f} ms, p99 {figures['alert_p99_ms']:,.0f} ms, "
              f"max {figures['alert_max_ms']:,.0f} ms")  # fmt: skip
        print(f"lag back to 0 {figures['lag_zero_after_end_s']:.1f} s after the load's end")
        print(f"alerts: {figures['alerts']} of {figures['traces']}, {figures['alerts_doubled']} doubled")
        print(f"load average: {load_start} at start, {_results.loadavg()} at end")
        name = f"bench_worker_rate_{args.workers[0]}"
        print(f"written: {_results.write(name, figures, load_at_start=load_start)}")
        return 0 if figures["alerts"] == figures["traces"] and not figures["alerts_doubled"] else 1
    events, spans = load_events(args.traces, args.seed)
    total = len(events)
    print(f"loaded: {args.traces} traces, {spans} spans + {args.traces} verified outcomes ({total} messages)")
    figures = {"traces": args.traces, "spans": spans, "messages": total, "runs": []}
    ok = True
    runs = [("faust", 1)] * args.faust + [("batch", n) for n in args.workers]
    for i, (loop, workers) in enumerate(runs):
        if i:  # each run on a topic of its own, loaded alike
            naming = Naming(f"bench-worker-{uuid.uuid4().hex[:8]}.")
            ensure_topics(args.kafka, naming)
        preload(args.kafka, naming, events)
        raw_rate, raw_per_cpu = raw_consume(args.kafka, naming, total)
        with tempfile.TemporaryDirectory(prefix="bench-worker-") as tmp:
            profile = args.profile if i == 0 else None
            handled, seconds, cpu = run_workers(
                args.kafka, naming, Path(tmp), workers, total, profile, faust=loop == "faust"
            )
        rate = handled / seconds
        alerts, doubled = alert_counts(args.kafka, naming)
        ok = ok and alerts == args.traces and doubled == 0
        run = {
            "loop": loop,
            "workers": workers,
            "timed_messages": handled,
            "timed_s": round(seconds, 3),
            "messages_per_s": round(rate, 1),
            "spans_per_s": round(rate * spans / total, 1),
            "raw_messages_per_s": round(raw_rate, 1),
            "ratio_to_raw": round(rate / raw_rate, 3),
            # load-independent: what the work costs, whatever share of the cores the machine gave it
            "cpu_s": round(cpu, 2),
            "spans_per_cpu_s": round(handled / cpu * spans / total, 1),
            "raw_messages_per_cpu_s": round(raw_per_cpu, 1),
            "alerts": alerts,
            "alerts_doubled": doubled,
            "loadavg": _results.loadavg(),
        }
        if i:
            run["ratio_to_first"] = round(rate / figures["runs"][0]["messages_per_s"], 3)
        figures["runs"].append(run)
        first = f"{runs[0][1]} {runs[0][0]} worker(s)"
        print(f"{workers} {loop} worker process(es): {rate:,.0f} messages/s = {run['spans_per_s']:,.0f} spans/s "
              f"({handled} timed in {seconds:.2f} s); raw consume + decode, one consumer: {raw_rate:,.0f} "
              f"messages/s; ratio to raw {run['ratio_to_raw']:.3f}"
              + (f"; ratio to {first} {run['ratio_to_first']:.2f}" if i else ""))  # fmt: skip
        print(f"  per CPU second: {run['spans_per_cpu_s']:,.0f} spans ({cpu:.1f} CPU s of the workers); raw consume + "
              f"decode {raw_per_cpu:,.0f} messages")  # fmt: skip
        print(f"  alerts: {alerts} of {args.traces} expected, {doubled} doubled; load average {run['loadavg']}")
    print(f"load average: {load_start} at start, {_results.loadavg()} at end")
    name = "bench_worker_" + "_".join(f"{loop}{n}" for loop, n in runs)
    print(f"written: {_results.write(name, figures, load_at_start=load_start)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
