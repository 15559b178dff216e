"""Verification reports one after another on a kept-alive connection: the receiver's reply as it is sent now
(TCP_NODELAY) beside the same receiver sending it with Nagle's algorithm on (the baseline, how it was).

A reply is written as headers, then body. With Nagle's algorithm on, the body waits for the client's ACK of the
headers, which a client with nothing to send delays (up to 40 ms on Linux): every report of a payment system
that keeps its connection (the SDK's HTTP reporter does) waited that long. Each round runs `--reports` reports
through the SDK's HttpOutcomePublisher against a receiver on the embedded runtime (a fresh data directory),
alternating the two settings. Results: benchmarks/results/.

    python benchmarks/bench_outcome_reports.py [--reports 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import _results  # benchmarks/ is on the path of a benchmark script

from producers.otlp.keys import ApiKeys
from producers.otlp.server import make_server
from producers.sdk.http_outcomes import HttpOutcomePublisher
from producers.sdk.outcome import subject_outcome_event
from streams.embedded import EmbeddedRuntime

KEY = "bench-key"


def _round(reports: int, nagle_off: bool) -> float:
    """Milliseconds per report."""
    with tempfile.TemporaryDirectory() as tmp:
        runtime = EmbeddedRuntime(Path(tmp))
        server = make_server("127.0.0.1", 0, runtime, ApiKeys.from_mapping({KEY: "bench"}))
        server.RequestHandlerClass.disable_nagle_algorithm = nagle_off  # type: ignore[attr-defined]
        server.start()
        publisher = HttpOutcomePublisher(server.url, KEY)
        try:
            now = datetime.now(UTC)
            events = [
                subject_outcome_event(f"order:ORD-{i}", "FAILURE", True, "external_callback", tenant="bench", at=now)
                for i in range(reports)
            ]
            started = time.perf_counter()
            for event in events:
                publisher.publish([event])
            return (time.perf_counter() - started) * 1000 / reports
        finally:
            publisher.close()
            server.close()
            runtime.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reports", type=int, default=200, help="reports per round (default 200)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each setting, alternated (default 3)")
    args = parser.parse_args()
    load = _results.loadavg()
    now_ms: list[float] = []
    nagle_ms: list[float] = []
    for _ in range(args.rounds):
        nagle_ms.append(_round(args.reports, nagle_off=False))
        now_ms.append(_round(args.reports, nagle_off=True))
    figures = {
        "reports_per_round": args.reports,
        "rounds": args.rounds,
        "ms_per_report": round(statistics.median(now_ms), 2),
        "baseline_ms_per_report_with_nagle": round(statistics.median(nagle_ms), 2),
        "ratio_baseline_over_now": round(statistics.median(nagle_ms) / statistics.median(now_ms), 1),
        "each_round_ms": {"now": [round(x, 2) for x in now_ms], "with_nagle": [round(x, 2) for x in nagle_ms]},
    }
    path = _results.write("bench_outcome_reports", figures, load_at_start=load)
    print(f"verification reports on one kept-alive connection ({args.reports} a round, {args.rounds} rounds each)")
    print(f"  now (TCP_NODELAY):         {figures['ms_per_report']} ms a report")
    print(f"  baseline (Nagle on):       {figures['baseline_ms_per_report_with_nagle']} ms a report")
    print(f"  baseline / now:            {figures['ratio_baseline_over_now']}x   load at start {load}")
    print(f"  written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
