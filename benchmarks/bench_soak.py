"""Soak test of production-trace ingestion: the load generator for minutes, figures per interval.

The measured system runs in its own processes (`agenttwin ingest`, and on Kafka `agenttwin worker
outcome-join`), the load in its own (benchmarks/loadgen.py: OTLP/HTTP protobuf, 5-15 spans per agent run,
one FAILURE verification per `--verify-every` runs over `POST /v1/outcomes`, so each verified run is one
contradiction alert). Each interval (default 60 s) prints spans/s acknowledged, alert latency p50/p99 of
the alerts that arrived in it (verification acknowledged -> alert visible to a tail), and the measured
processes' RSS. At the end: lost / duplicated alerts, the last interval against the first, RSS growth, and
the same-run baseline (raw protobuf decode + append, or on Kafka confluent-kafka producing the same Avro
bytes). JSON goes under benchmarks/results/.

    python benchmarks/bench_soak.py                        # embedded, 10 minutes, as fast as it answers
    python benchmarks/bench_soak.py --minutes 2 --rate 3000    # shorter, a fixed offered rate
    python benchmarks/bench_soak.py --kafka 127.0.0.1:9092     # receiver -> Kafka -> worker -> alerts
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

import _ingest_run
import _results
from _baselines import kafka_ceiling, raw_append_baseline


def add_load_args(p: argparse.ArgumentParser) -> None:
    """The load generator's flags (and the embedded joins' step), shared by the ingest benchmarks."""
    p.add_argument("--clients", type=int, default=4, help="load generator processes (default 4)")
    p.add_argument("--traces", type=int, default=20, help="agent runs per request (default 20)")
    p.add_argument("--rate", type=float, help="spans/s offered in all (default: as fast as the receiver answers)")
    p.add_argument("--verify-every", type=int, default=5, help="a FAILURE verification for every k-th run (default 5)")
    p.add_argument("--seed", type=int, default=1, help="the load's seed (default 1)")
    p.add_argument("--join-every", type=float, default=0.02, help="embedded: live join step interval (s)")


def load_args(args: argparse.Namespace) -> dict[str, object]:
    return {
        "processes": args.clients,
        "traces_per_request": args.traces,
        "rate": args.rate,
        "verify_every": args.verify_every,
        "seed": args.seed,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=10.0, help="load duration (default 10)")
    p.add_argument("--interval", type=float, default=60.0, help="seconds per reported interval (default 60)")
    add_load_args(p)
    p.add_argument("--kafka", metavar="BOOTSTRAP", help="receiver -> Kafka -> outcome-join worker instead")
    p.add_argument(
        "--in-process-worker",
        action="store_true",
        help="kafka: run the outcome-join worker in this process (default: `agenttwin worker` beside it)",
    )
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    load_start = _results.loadavg()
    drain_s = 60.0
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp:
        result = _ingest_run.run(
            load_args(args),
            seconds=args.minutes * 60,
            interval=args.interval,
            kafka=args.kafka,
            join_every=args.join_every,
            in_process_worker=args.in_process_worker,
            tmp=Path(tmp),
            drain_s=drain_s,
        )
    baseline_s = 10.0
    if args.kafka:
        baseline = kafka_ceiling(args.kafka, baseline_s)
        baseline_what = "confluent-kafka producing the same spans' Avro bytes, acks=all"
    else:
        baseline = raw_append_baseline(baseline_s, args.traces)
        baseline_what = "protobuf decode + append of the span bytes, fsync per request, no mapping"
    _ingest_run.print_summary(result, drain_s)
    rate = result.spans_per_s
    print(f"  baseline                {baseline:,.0f} spans/s ({baseline_what}); ratio {rate / baseline:.2f}")
    print(f"  load average            {load_start} at start, {_results.loadavg()} at end")
    figures = {
        **result.figures(),
        "worker": ("in-process" if args.in_process_worker else "process") if args.kafka else None,
        "minutes": args.minutes,
        "baseline_spans_per_s": baseline,
        "baseline": baseline_what,
        "ratio": rate / baseline,
        "ok": result.ok,
    }
    print(f"  written                 {_results.write(f'bench_soak_{result.mode}', figures, load_at_start=load_start)}")
    print("  result                  " + ("OK: every alert once" if result.ok else "FAILED"))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
