"""Benchmark of the embedded pipeline and the chDB sink, each beside a raw baseline measured in this run.

    python benchmarks/bench_pipeline.py [--evaluations 6]

- pipeline: events the processors consumed per second (planner, simulator, grader, comparator, outcome
  join), beside fastavro's C reader decoding the same event bytes alone (`schemaless_reader` over an
  in-memory buffer, the fastest path of the library the log uses; no processing): the format's ceiling.
- sink: rows per second the ClickHouse sink projects (decode + batching + dedup tokens + chDB insert),
  beside one bulk chDB insert of the same rows per table (no decode, no tokens).

Prints the load average (and each stage's wall and CPU seconds: on a loaded machine wall time is mostly
waiting for a core or the disk) beside the figures and writes them to benchmarks/results/ as JSON. The machines
are shared and noisy: read the ratios, not the absolute numbers. Not a timed test.
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import _results
import fastavro

from agenttwin.pipeline import evaluation_request, judge_refiner, open_embedded, processors
from agenttwin.settings import Settings
from consumers.clickhouse import ChdbWarehouse
from consumers.embedded_sink import sync
from consumers.projections import TABLE_BY_EVENT, columns_of, ddl, row_of
from streams.topics import ALL_TOPICS

PAIRS = (("demo:1.2.4", "demo:1.3.0"), ("demo:1.3.0", "demo:1.3.1"), ("demo:1.2.4", "demo:1.3.1"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluations", type=int, default=6, help="demo evaluations to push through (9 cases a side)")
    args = parser.parse_args()
    start_load = _results.loadavg()
    settings = Settings()
    with tempfile.TemporaryDirectory(prefix="agenttwin-bench-") as tmp:
        root = Path(tmp)
        with open_embedded(settings, root) as emb:
            requests = [
                evaluation_request(
                    b,
                    c,
                    suite=["demo"],
                    twin=None,
                    seed=1000 + n,
                    evaluation_id=f"bench-{n}",
                    evaluator_version="1.1.0",
                )
                for n, (b, c) in ((n, PAIRS[n % len(PAIRS)]) for n in range(args.evaluations))
            ]
            emb.runtime.publish(requests)
            started, cpu = time.perf_counter(), time.process_time()
            stats = emb.runtime.run(processors(["1.1.0"], judge_refiner(settings)))
            pipeline_s, pipeline_cpu = time.perf_counter() - started, time.process_time() - cpu
            consumed = sum(stats.consumed.values())

            pipeline_load = _results.loadavg()
            # Baseline 1: decode every event the processors consumed, and nothing else, with fastavro's C
            # reader over an in-memory buffer of each value's body (past its 10-byte single-object header).
            log = emb.runtime.log
            values = [
                (topic, r.value)
                for p in processors(["1.1.0"], None)
                for topic in p.inputs
                if topic in log.topics()
                for r in log.read(topic)
            ]
            store = emb.runtime.schemas
            parsed = {store.current(n).fingerprint: store.current(n).parsed for n in store.names()}
            started = time.perf_counter()
            for _, value in values:
                fastavro.schemaless_reader(io.BytesIO(value[10:]), parsed[value[2:10]], None)
            decode_s = time.perf_counter() - started

            # The sink, from scratch, into chDB.
            started, cpu = time.perf_counter(), time.process_time()
            sink = sync(emb.runtime, emb.warehouse)
            sink_s, sink_cpu = time.perf_counter() - started, time.process_time() - cpu

            # Baseline 2: the same rows, one bulk insert per table, into a second database.
            by_table: dict[str, list[list[Any]]] = defaultdict(list)
            cols: dict[str, list[str]] = {}
            for topic in ALL_TOPICS:
                for event in emb.runtime.read_events(topic.name):
                    table = TABLE_BY_EVENT[type(event)]
                    by_table[table].append(row_of(event))
                    cols[table] = columns_of(type(event))
            bulk = ChdbWarehouse(root / "clickhouse", database="bench_raw")
            bulk.execute(ddl(bulk.database))
            rows = sum(len(v) for v in by_table.values())
            started = time.perf_counter()
            for table, table_rows in by_table.items():
                bulk.insert(table, cols[table], table_rows, dedup_token=None)
            bulk_s = time.perf_counter() - started
            bulk.close()

    pipe_rate, decode_rate = consumed / pipeline_s, len(values) / decode_s
    sink_rate, bulk_rate = sink.rows / sink_s, rows / bulk_s
    print(f"workload: {args.evaluations} evaluations, {consumed} events consumed by processors, {sink.rows} rows")
    print(
        f"pipeline  {pipe_rate:12,.0f} events/s   fastavro C decode alone {decode_rate:12,.0f} events/s"
        f"   ratio {pipe_rate / decode_rate:.3f}   (load {pipeline_load}; "
        f"{pipeline_s:.2f} s wall, {pipeline_cpu:.2f} s CPU)"
    )
    print(
        f"chDB sink {sink_rate:12,.0f} rows/s     bulk chDB insert        {bulk_rate:12,.0f} rows/s"
        f"     ratio {sink_rate / bulk_rate:.3f}   (load {_results.loadavg()}; "
        f"{sink_s:.2f} s wall, {sink_cpu:.2f} s CPU)"
    )
    path = _results.write(
        "bench_pipeline",
        {
            "evaluations": args.evaluations,
            "events_consumed": consumed,
            "pipeline": {
                "events_per_s": round(pipe_rate),
                "seconds": round(pipeline_s, 3),
                "cpu_seconds": round(pipeline_cpu, 3),
                "loadavg": pipeline_load,
            },
            "baseline_fastavro_c_decode": {"events_per_s": round(decode_rate), "events": len(values)},
            "pipeline_ratio": round(pipe_rate / decode_rate, 4),
            "sink": {
                "rows_per_s": round(sink_rate),
                "rows": sink.rows,
                "seconds": round(sink_s, 3),
                "cpu_seconds": round(sink_cpu, 3),
            },
            "baseline_bulk_insert": {"rows_per_s": round(bulk_rate), "rows": rows},
            "sink_ratio": round(sink_rate / bulk_rate, 4),
            "target_pipeline_events_per_s": 2000,
        },
        load_at_start=start_load,
    )
    print(f"results: {path}")


if __name__ == "__main__":
    main()
