"""Loopback load test of production-trace ingestion: OTLP/HTTP receiver -> log -> live joins -> alerts.

The measured system is `agenttwin ingest` on the embedded runtime, in its own process; the load comes from
benchmarks/loadgen.py's client processes (OTLP/HTTP protobuf, agent runs of 5-15 spans, a FAILURE
verification for every `--verify-every` runs, each one contradiction alert). Measured, as bench_soak does
for longer: spans/s acknowledged (= durable), alert latency p50/p99 (verification acknowledged -> alert
visible to a read-only tail of the log), lost and duplicated alerts. Beside them, same-run baselines on the
same request bytes (benchmarks/_baselines.py): protobuf decode + append of the span bytes, one fsync per
request; the project's mapping + embedded publish; and, when a broker is reachable, confluent-kafka
producing the project's Avro bytes.

    python benchmarks/bench_ingest.py                 # the benchmark: 60 s
    python benchmarks/bench_ingest.py --seconds 5     # a smoke run
    python benchmarks/bench_ingest.py --kafka 127.0.0.1:9092   # also the Kafka produce ceiling
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import _ingest_run
import _results
from _baselines import embedded_mapped, kafka_ceiling, raw_append_baseline
from bench_soak import add_load_args, load_args

from agenttwin.settings import load_settings


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=60.0, help="load duration (default 60)")
    add_load_args(p)
    p.add_argument("--kafka", metavar="BOOTSTRAP", help="broker for the raw produce ceiling")
    args = p.parse_args(argv)
    bootstrap = args.kafka or load_settings().kafka_bootstrap_servers
    load_start = _results.loadavg()
    drain_s = 30.0
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        result = _ingest_run.run(
            load_args(args),
            seconds=args.seconds,
            interval=args.seconds,
            kafka=None,
            join_every=args.join_every,
            in_process_worker=False,
            tmp=Path(tmp),
            drain_s=drain_s,
        )
    _ingest_run.print_summary(result, drain_s)
    rate = result.spans_per_s
    ceiling_s = min(10.0, max(2.0, args.seconds / 6))
    raw = raw_append_baseline(ceiling_s, args.traces)
    mapped = embedded_mapped(ceiling_s, args.traces)
    print(
        f"  baseline                {raw:,.0f} spans/s (protobuf decode + append of the span bytes, fsync per "
        f"request, no mapping); ratio {rate / raw:.2f}"
    )
    print(f"  mapping + publish       {mapped:,.0f} spans/s (the project's mapping + embedded publish, no HTTP)")
    figures: dict[str, object] = {
        **result.figures(),
        "baseline_raw_append_spans_per_s": raw,
        "baseline_spans_per_s": raw,
        "baseline": "protobuf decode + append of the span bytes, fsync per request, no mapping",
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
    print("  result                  " + ("OK: every alert once" if result.ok else "FAILED"))
    figures["ok"] = result.ok
    print(f"  written                 {_results.write('bench_ingest', figures, load_at_start=load_start)}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
