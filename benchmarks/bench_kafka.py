"""End-to-end events/s of the Kafka runtime beside the raw ceiling measured in the same run.

End to end: evaluation requests published -> planner (transactional) -> simulator -> grader ->
comparator / outcome join -> ClickHouse sink (chDB), all workers in this process; the clock runs from
the first publish until every event is in ClickHouse. Raw ceiling: the same events, read back with one
confluent-kafka consumer, decoded (fastavro) and bulk-inserted into a fresh database.

    python benchmarks/bench_kafka.py --kafka 127.0.0.1:9092 [--evaluations 10]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time
import uuid
from pathlib import Path

import _results
from confluent_kafka import Consumer

from agenttwin.kafka_cli import build_workers
from agenttwin.pipeline import evaluation_request, judge_refiner
from agenttwin.settings import Settings
from consumers.clickhouse import ChdbWarehouse, Warehouse, qualified
from consumers.projections import TABLE_BY_EVENT
from consumers.sink import Delivered, ensure_schema, write_batch
from streams.events import EvaluationRequested
from streams.gc_policy import long_running_gc
from streams.kafka.clients import consumer_config, ensure_topics
from streams.kafka.codec import KafkaCodec
from streams.kafka.naming import Naming
from streams.kafka.publisher import KafkaPublisher
from streams.kafka.runner import WorkerGroup
from streams.kafka.sink_loop import SinkLoop
from streams.topics import ALL_TOPICS

PAIRS = (("demo:1.2.4", "demo:1.3.0"), ("demo:1.3.0", "demo:1.3.1"))
VERSION = "1.1.0"
TIMEOUT_S = 600.0


def requests(n: int, run: str) -> list[EvaluationRequested]:
    return [
        evaluation_request(
            *PAIRS[i % 2],
            suite=["demo"],
            twin=None,
            seed=42,
            evaluation_id=f"bench-{run}-{i}",
            evaluator_version=VERSION,
        )
        for i in range(n)
    ]


def rows_in(warehouse: Warehouse) -> int:
    return sum(
        int(warehouse.query(f"SELECT count() FROM {qualified(warehouse, t)}").rows[0][0])
        for t in TABLE_BY_EVENT.values()
    )


def end_to_end(
    bootstrap: str, naming: Naming, warehouse: Warehouse, reqs: list[EvaluationRequested], data: Path
) -> tuple[int, float, float]:
    """Events in ClickHouse, seconds from the first publish until the last is in, CPU seconds of this
    process meanwhile (all threads: beside the wall time it says how busy the workers kept the cores)."""
    workers = build_workers(
        ("all",), bootstrap, naming=naming, data_dir=data, versions=(VERSION,), refine=judge_refiner(Settings()),
        warehouse=warehouse,
    )  # fmt: skip
    sink = next(w for w in workers if isinstance(w, SinkLoop))
    comparisons_wanted = 9 * len(reqs)

    def comparisons() -> int:
        return int(warehouse.query(f"SELECT count() FROM {qualified(warehouse, 'comparisons')}").rows[0][0])

    cpu = [0.0]

    async def run() -> float:
        async with WorkerGroup(workers) as group:
            await group.wait_idle(idle_s=3.0, timeout_s=TIMEOUT_S)  # joined, recovered, nothing to do
            # the sink's tables exist and it reads every partition (a loaded machine can take longer than 3 s)
            await group.wait_for(lambda: sink.caught_up, timeout_s=TIMEOUT_S, poll_s=0.1, what="sink ready")
            started, cpu_started = time.perf_counter(), time.process_time()
            with KafkaPublisher(bootstrap, naming) as publisher:
                await asyncio.to_thread(publisher.publish, reqs)
            await group.wait_for(lambda: comparisons() >= comparisons_wanted, timeout_s=TIMEOUT_S, poll_s=0.1)
            # trailing events (alerts, the last batches): done when the sink is at the end and idle
            while not (sink.caught_up and time.monotonic() - sink.last_progress > 0.5):
                await asyncio.sleep(0.05)
            cpu[0] = time.process_time() - cpu_started
            return time.perf_counter() - started - 0.5

    with long_running_gc():  # as `agenttwin worker all` runs these workers
        elapsed = asyncio.run(run())
    return rows_in(warehouse), elapsed, cpu[0]


def raw_ceiling(bootstrap: str, naming: Naming, warehouse: Warehouse, expected: int) -> tuple[int, float]:
    """confluent-kafka consume + fastavro decode + bulk insert of the same events."""
    codec = KafkaCodec(naming)
    ensure_schema(warehouse)
    consumer = Consumer(consumer_config(bootstrap, naming.group(f"bench-raw-{uuid.uuid4().hex[:6]}")))
    consumer.subscribe([naming.topic(t.name) for t in ALL_TOPICS])
    batch: list[Delivered] = []
    started = time.perf_counter()
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(batch) < expected and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10000, timeout=0.2):
                if msg.error() is None:
                    event = codec.decode(msg.value())
                    batch.append(
                        Delivered(naming.logical(str(msg.topic())), msg.partition() or 0, msg.offset() or 0, event)
                    )
        write_batch(warehouse, batch)
        return len(batch), time.perf_counter() - started
    finally:
        consumer.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kafka", default="127.0.0.1:9092", metavar="BOOTSTRAP")
    parser.add_argument("--evaluations", type=int, default=10, help="demo evaluation requests (about 288 events each)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    load_start = _results.loadavg()
    run = uuid.uuid4().hex[:8]
    naming = Naming(f"bench-{run}.")
    ensure_topics(args.kafka, naming)
    with tempfile.TemporaryDirectory(prefix="bench-kafka-") as tmp:
        root = Path(tmp)
        with ChdbWarehouse(root / "chdb", "e2e") as e2e_wh, ChdbWarehouse(root / "chdb", "raw") as raw_wh:
            events, e2e_s, e2e_cpu_s = end_to_end(args.kafka, naming, e2e_wh, requests(args.evaluations, run), root)
            raw_events, raw_s = raw_ceiling(args.kafka, naming, raw_wh, events)
    e2e_rate, raw_rate = events / e2e_s, raw_events / raw_s
    print(f"evaluations: {args.evaluations}, events: {events} (raw pass read {raw_events})")
    print(
        f"end to end (produce -> processors -> ClickHouse): {e2e_rate:,.0f} events/s ({e2e_s:.2f} s, "
        f"{e2e_cpu_s:.2f} s CPU)"
    )
    print(f"raw ceiling (consume + decode + bulk insert):     {raw_rate:,.0f} events/s ({raw_s:.2f} s)")
    print(f"ratio end to end / raw: {e2e_rate / raw_rate:.3f}")
    print(f"load average: {load_start} at start, {_results.loadavg()} at end")
    figures = {
        "evaluations": args.evaluations,
        "events": events,
        "end_to_end_s": round(e2e_s, 3),
        "end_to_end_events_per_s": round(e2e_rate, 1),
        "end_to_end_cpu_s": round(e2e_cpu_s, 3),
        "raw_events": raw_events,
        "raw_s": round(raw_s, 3),
        "raw_events_per_s": round(raw_rate, 1),
        "ratio": round(e2e_rate / raw_rate, 3),
    }
    print(f"written: {_results.write('bench_kafka', figures, load_at_start=load_start)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
