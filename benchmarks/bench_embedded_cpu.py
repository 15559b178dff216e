"""CPU cost of the embedded ingest + live join per span, without HTTP: a figure a loaded machine bends less.

On a machine shared with other work, spans/s of wall time says how much CPU the process was given. This
counts the process's own CPU time (every thread: receiver mapping, group commit, live join) for the same
work bench_soak drives: each request of `--traces` agent runs is mapped (producers/otlp/mapping.py),
published through the GroupCommitPublisher, its runs' FAILURE verifications published, and the live
joins `agenttwin ingest` runs (subject and outcome joins, version tally and watch) stepped; at the end
every run must have exactly one contradiction alert. It also prints the events the joins derived a span,
per topic (each is encoded, indexed, appended and read by the next join). Beside it, the
same-run baseline of bench_ingest (protobuf decode + append of the span bytes) on the same request bytes,
also in CPU time. JSON goes under benchmarks/results/.

    python benchmarks/bench_embedded_cpu.py --requests 300
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import _results
from loadgen import Batch, RequestBuilder
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from agenttwin.traces_cli import live_joins
from consumers.alerts import TOPIC as ALERTS
from evaluation.claim_reader import read_claim
from producers.otlp.codec import PROTOBUF, parse_request
from producers.otlp.mapping import map_request
from producers.otlp.publishing import GroupCommitPublisher
from producers.sdk.outcome import outcome_event
from streams.clock import wall_clock
from streams.embedded import EmbeddedRuntime
from streams.embedded_log import EmbeddedLog, NewRecord
from streams.topics import SPANS, VERIFIED_OUTCOMES

TENANT = "bench"


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def ours(bodies: list[Batch], rss: list[float], written: dict[str, int]) -> tuple[float, float, int]:
    """(CPU s, wall s, alerts) of receiver mapping -> group commit -> live join over `bodies`; the RSS
    every 10th request goes to `rss`, the records of each topic the joins wrote to `written`."""
    with tempfile.TemporaryDirectory(prefix="bench-cpu-") as tmp:
        runtime = EmbeddedRuntime(Path(tmp))
        publisher = GroupCommitPublisher(runtime)
        joins = live_joins(runtime, publisher, read_claim)
        live = next(j for j in joins if j.name == "outcome-join")
        cpu, wall = time.process_time(), time.perf_counter()
        for i, batch_in in enumerate(bodies):
            body, traces = batch_in.body, batch_in.traces
            if i % 10 == 0:
                rss.append(rss_mb())
            batch = map_request(parse_request(body, PROTOBUF), TENANT, received_at=wall_clock())
            publisher.publish(batch.events)
            at = datetime.now(UTC)
            publisher.publish(
                [outcome_event(t, "FAILURE", True, "external_callback", "bench", tenant=TENANT, at=at) for t in traces]
            )
            for join in joins:
                join.step()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        rss.append(rss_mb())
        if getattr(live, "checkpoint", None) is not None:  # (absent before the live joins had checkpoints)
            print(f"  join state              {live.checkpoint.in_memory:,} keys in memory, "
                  f"{sum(1 for _ in live.checkpoint):,} in all (budget {live.state_budget:,})")  # fmt: skip
        publisher.close()
        alerts = sum(1 for _ in runtime.log.read(ALERTS)) if ALERTS in runtime.log.topics() else 0
        inputs = {SPANS.name, VERIFIED_OUTCOMES.name}  # what the bench publishes; the rest the joins derived
        written.update({t: runtime.log.end_offset(t) for t in sorted(runtime.log.topics()) if t not in inputs})
        runtime.close()
    return cpu, wall, alerts


def raw(bodies: list[Batch]) -> float:
    """CPU s of bench_ingest's raw baseline (protobuf decode + append of the span bytes) on `bodies`."""
    with tempfile.TemporaryDirectory(prefix="bench-cpu-raw-") as tmp, EmbeddedLog(Path(tmp)) as log:
        cpu = time.process_time()
        for b in bodies:
            request = ExportTraceServiceRequest.FromString(b.body)
            spans = [span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]
            log.append_many("spans", [NewRecord(span.SerializeToString(), None, {}, None) for span in spans])
        return time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=300, help="requests (default 300)")
    p.add_argument("--traces", type=int, default=20, help="agent runs per request (default 20, 5-15 spans each)")
    p.add_argument("--seed", type=int, default=1, help="the load's seed (default 1)")
    args = p.parse_args(argv)
    load_start = _results.loadavg()
    builder = RequestBuilder(args.seed)  # benchmarks/loadgen.py's agent runs, as every ingest benchmark sends
    bodies = [builder.build(i * args.traces, args.traces, time.time_ns()) for i in range(args.requests)]
    spans = sum(b.spans for b in bodies)
    rss: list[float] = []
    written: dict[str, int] = {}
    cpu, wall, alerts = ours(bodies, rss, written)
    base = raw(bodies)
    rate, base_rate = spans / cpu, spans / base
    runs = args.requests * args.traces
    print(f"embedded ingest + live join, {spans} spans in {args.requests} requests (no HTTP)")
    print(f"  ours                    {rate:,.0f} spans per CPU-second ({spans / wall:,.0f} spans/s wall)")
    print(f"  baseline                {base_rate:,.0f} spans per CPU-second (protobuf decode + append)")
    print(f"  ratio                   {rate / base_rate:.3f}")
    print(f"  alerts                  {alerts} of {runs}")
    derived = ", ".join(f"{topic} {n / spans:.2f}" for topic, n in written.items())
    print(f"  derived events a span   {sum(written.values()) / spans:.2f} ({derived})")
    half = rss[len(rss) // 2]
    print(f"  RSS                     {rss[0]:.0f} MB at start, {half:.0f} MB halfway, {rss[-1]:.0f} MB at the end")
    print(f"  load average            {load_start} at start, {_results.loadavg()} at end")
    figures = {
        "spans": spans,
        "spans_per_cpu_s": rate,
        "spans_per_s_wall": spans / wall,
        "baseline_spans_per_cpu_s": base_rate,
        "ratio": rate / base_rate,
        "alerts": alerts,
        "runs": runs,
        "rss_mb": {"start": rss[0], "half": half, "end": rss[-1], "max": max(rss)},
        "derived_events": written,
    }
    print(f"  written                 {_results.write('bench_embedded_cpu', figures, load_at_start=load_start)}")
    return 0 if alerts == runs else 1


if __name__ == "__main__":
    sys.exit(main())
