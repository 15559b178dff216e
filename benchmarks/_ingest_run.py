"""One ingest benchmark run, shared by bench_ingest and bench_soak: the measured system in its own
processes, the load generator (loadgen.py) in its own, an alerts tail here, figures per interval.

The measured system is what a user deploys: `agenttwin ingest` (embedded: receiver -> log -> subject and
outcome joins in that process; on Kafka: receiver -> Kafka) and, on Kafka, `agenttwin worker outcome-join`
(its own process, or `in_process_worker`: this process's loop). This process only starts them, tails
the alerts and reads the load's reports; RSS is read from the measured processes' /proc entries.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _results
from loadgen import AlertClock, Load, LoadSpec, Totals, percentile

ROOT = Path(__file__).resolve().parent.parent
API_KEY = "bench-key"
TENANT = "bench"
WORKER_WARMUP_S = 20.0  # the worker process imports, joins its group and is assigned its partitions
_URL = re.compile(r"(http://[0-9.]+:\d+)/v1/traces")


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


@dataclass
class System:
    url: str
    pids: dict[str, int]  # measured process -> pid (RSS)
    closers: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        for close in reversed(self.closers):
            close()


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_ingest(tmp: Path, extra: list[str], env: dict[str, str] | None = None) -> tuple[str, subprocess.Popen[bytes]]:
    """`agenttwin ingest` on a free port; returns its base URL once it listens."""
    out, err = tmp / "ingest.out", tmp / "ingest.err"
    cmd = [sys.executable, "-m", "agenttwin.cli", "ingest", "--port", "0", *extra]
    environ = {**os.environ, "AGENTTWIN_INGEST_API_KEYS": f"{API_KEY}={TENANT}", **(env or {})}
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=environ, stdout=stdout, stderr=stderr)  # noqa: S603
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = _URL.search(out.read_text(encoding="utf-8", errors="replace"))
        if found:
            return found.group(1), proc
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    stop_process(proc)
    raise RuntimeError(f"agenttwin ingest did not start: {err.read_text(encoding='utf-8', errors='replace')[-2000:]}")


def _embedded_tail(data_dir: Path, clock: AlertClock, stop: threading.Event) -> None:
    from consumers.alerts import EMBEDDED_LOG_DIR, embedded_alerts

    while not (data_dir / EMBEDDED_LOG_DIR).exists() and not stop.is_set():  # the ingest process creates it
        time.sleep(0.05)
    for item in embedded_alerts(data_dir, follow=True, poll_s=0.005, stop=stop.is_set):
        if item.alert is not None:
            clock.alert(item.alert.trace_id, item.alert.kind)


def start_embedded(tmp: Path, clock: AlertClock, stop: threading.Event, join_every: float) -> System:
    data_dir = tmp / "data"
    url, proc = start_ingest(tmp, ["--data-dir", str(data_dir), "--join-every", f"{join_every:g}"])
    tail = threading.Thread(target=_embedded_tail, args=(data_dir, clock, stop), daemon=True)
    tail.start()
    return System(url, {"ingest": proc.pid}, [lambda: tail.join(10), lambda: stop_process(proc)])


def kafka_tail(bootstrap: str, prefix: str, clock: AlertClock, stop: threading.Event) -> None:
    from confluent_kafka import Consumer

    from consumers.alerts import TOPIC
    from streams.kafka.clients import consumer_config
    from streams.kafka.codec import KafkaCodec
    from streams.kafka.naming import Naming

    naming = Naming(prefix)
    codec = KafkaCodec(naming)
    consumer = Consumer(consumer_config(bootstrap, naming.group(f"soak-tail-{uuid.uuid4().hex[:6]}")))
    consumer.subscribe([naming.topic(TOPIC)])
    try:
        while not stop.is_set():
            for msg in consumer.consume(num_messages=1000, timeout=0.05):
                if msg.error() is None:
                    alert = codec.decode(msg.value())
                    clock.alert(getattr(alert, "trace_id", ""), getattr(alert, "kind", "?"))
    finally:
        consumer.close()


def _worker_in_process(bootstrap: str, prefix: str, data_dir: Path) -> Callable[[], None]:
    from evaluation.claim_model import claim_classifier
    from streams.kafka.faust_worker import FaustWorker
    from streams.kafka.naming import Naming
    from streams.kafka.runner import WorkerGroup
    from streams.processors.outcome_join import OutcomeJoin

    worker = FaustWorker(OutcomeJoin(classifier=claim_classifier()), bootstrap, Naming(prefix), data_dir)
    ready, done = threading.Event(), asyncio.Event()
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

    def close() -> None:
        loop.call_soon_threadsafe(done.set)
        runner.join(60)

    return close


def start_kafka(tmp: Path, clock: AlertClock, stop: threading.Event, bootstrap: str, in_process_worker: bool) -> System:
    """Receiver -> Kafka; an outcome-join worker (its own process, or this one's loop); an alerts tail."""
    prefix = f"soak-{uuid.uuid4().hex[:8]}."
    url, ingest = start_ingest(tmp, ["--kafka", bootstrap, "--topic-prefix", prefix])
    system = System(url, {"ingest": ingest.pid}, [lambda: stop_process(ingest)])
    data_dir = tmp / "worker"
    if in_process_worker:
        system.closers.append(_worker_in_process(bootstrap, prefix, data_dir))
        system.pids["worker (this process)"] = os.getpid()
    else:
        env = {**os.environ, "AGENTTWIN_DATA_DIR": str(data_dir)}
        cmd = [sys.executable, "-m", "agenttwin.cli", "worker", "outcome-join", "--kafka", bootstrap]
        worker = subprocess.Popen(  # noqa: S603
            [*cmd, "--topic-prefix", prefix], cwd=ROOT, env=env, stdout=subprocess.DEVNULL
        )
        system.pids["worker"] = worker.pid
        system.closers.append(lambda: stop_process(worker))
        time.sleep(WORKER_WARMUP_S)  # its first alert would otherwise wait for the group's join
    tail = threading.Thread(target=kafka_tail, args=(bootstrap, prefix, clock, stop), daemon=True)
    tail.start()
    system.closers.append(lambda: tail.join(10))
    return system


@dataclass
class RunResult:
    mode: str
    spec: LoadSpec
    seconds: float  # first send -> last acknowledgement
    totals: Totals
    clock: AlertClock
    intervals: list[dict[str, float]]
    rss_mb: dict[str, tuple[float, float]]  # process -> (first interval, last interval)

    @property
    def spans_per_s(self) -> float:
        return self.clock.spans_acked / self.seconds if self.seconds else float("nan")

    @property
    def last_over_first(self) -> float:
        first, last = self.intervals[0]["spans_per_s"], self.intervals[-1]["spans_per_s"]
        return last / first if first else float("nan")

    def figures(self) -> dict[str, Any]:
        all_ms = [ms for _, ms in self.clock.latencies]
        return {
            "mode": self.mode,
            "generator": {
                "processes": self.spec.processes,
                "traces_per_request": self.spec.traces_per_request,
                "offered_spans_per_s": self.spec.rate,
                "verify_every": self.spec.verify_every,
                "seed": self.spec.seed,
                "late_sends": self.totals.late_sends,
                "cpu_s": self.totals.cpu_s,
            },
            "seconds": self.seconds,
            "spans_acked": self.clock.spans_acked,
            "spans_per_s": self.spans_per_s,
            "spans_per_request": self.clock.spans_acked / self.totals.requests if self.totals.requests else 0,
            "intervals": self.intervals,
            "last_over_first": self.last_over_first if len(self.intervals) > 1 else None,
            "rss_mb": {k: {"first": a, "last": b} for k, (a, b) in self.rss_mb.items()},
            "alert_latency_ms": {"p50": percentile(all_ms, 50), "p99": percentile(all_ms, 99)},
            "alerts": {
                "verified_runs": len(self.clock.verified_runs),
                "seen": len(self.clock.seen),
                "lost": self.clock.missing(),
                "duplicated": self.clock.duplicated,
                "unexpected": self.clock.unexpected,
                "other_kinds": self.clock.other_kinds,
            },
            "http_errors": len(self.totals.errors),
        }

    @property
    def ok(self) -> bool:
        c = self.clock
        return (
            c.missing() == 0
            and c.duplicated == 0
            and c.unexpected == 0
            and not c.other_kinds
            and not self.totals.errors
            and len(c.verified_runs) > 0
        )


def run(
    spec_args: dict[str, Any],
    *,
    seconds: float,
    interval: float,
    kafka: str | None,
    join_every: float,
    in_process_worker: bool,
    tmp: Path,
    drain_s: float = 60.0,
) -> RunResult:
    """Starts the system, loads it for `seconds`, prints a row per `interval`, waits up to `drain_s` for
    the last alerts, stops everything."""
    clock, stop = AlertClock(), threading.Event()
    mode = "kafka" if kafka else "embedded"
    system = (
        start_kafka(tmp, clock, stop, kafka, in_process_worker)
        if kafka
        else start_embedded(tmp, clock, stop, join_every)
    )
    try:
        spec = LoadSpec(url=system.url, seconds=seconds, api_key=API_KEY, drain_s=drain_s, **spec_args)
        load = Load(spec)
        start = load.start()
        result: list[Totals] = []
        collector = threading.Thread(target=lambda: result.append(load.collect(clock)), daemon=True)
        collector.start()
        rate = f"{spec.rate:,.0f} spans/s offered" if spec.rate else "as fast as it answers"
        print(
            f"{mode}: {seconds:g} s, loadgen {spec.processes} processes x {spec.traces_per_request} runs "
            f"(5-15 spans each) per request, {rate}, a verification every {spec.verify_every} run(s)"
        )
        rss_names = list(system.pids)
        print(
            f"{'min':>5} {'spans/s':>9} {'alert p50 ms':>13} {'alert p99 ms':>13} "
            + " ".join(f"{'RSS ' + n:>12}" for n in rss_names)
            + f" {'load':>16}"
        )
        rows: list[dict[str, float]] = []
        first_rss: dict[str, float] = {}
        until = start + seconds
        last_t, k = start, 0
        time.sleep(max(0.0, start - time.monotonic()))
        while time.monotonic() < until:
            k += 1
            time.sleep(max(0.0, min(start + k * interval, until) - time.monotonic()))
            now = time.monotonic()
            window = clock.latencies_between(last_t, now)
            row = {
                "minute": (now - start) / 60,
                "spans_per_s": clock.spans_between(last_t, now) / (now - last_t),
                "alert_p50_ms": percentile(window, 50),
                "alert_p99_ms": percentile(window, 99),
                **{f"rss_mb_{n}": rss_mb(pid) for n, pid in system.pids.items()},
            }
            for n in rss_names:
                first_rss.setdefault(n, row[f"rss_mb_{n}"])
            rows.append(row)
            print(
                f"{row['minute']:5.1f} {row['spans_per_s']:9,.0f} {row['alert_p50_ms']:13.1f} "
                f"{row['alert_p99_ms']:13.1f} "
                + " ".join(f"{row[f'rss_mb_{n}']:12.0f}" for n in rss_names)
                + f" {_results.loadavg():>16}"
            )
            sys.stdout.flush()
            last_t = now
        collector.join(spec.drain_s + 60)
        totals = result[0] if result else Totals(errors=["the load's reader did not finish"])
        with clock.lock:
            last_ack = max((at for at, _ in clock.acked_at), default=until)
        elapsed = max(last_ack, until) - start
        deadline = time.monotonic() + drain_s
        while time.monotonic() < deadline and not clock.all_alerted():
            time.sleep(0.05)
        time.sleep(1.0)  # a late duplicate would show up here
        clock.finish()
        nan = float("nan")
        rss = {n: (first_rss.get(n, nan), rows[-1][f"rss_mb_{n}"] if rows else nan) for n in rss_names}
    finally:
        stop.set()
        system.close()
    return RunResult(mode, spec, elapsed, totals, clock, rows, rss)


def print_summary(result: RunResult, drain_s: float) -> None:
    c = result.clock
    all_ms = [ms for _, ms in c.latencies]
    rate = result.spans_per_s
    print(f"  sustained               {rate:,.0f} spans/s over {result.seconds:.0f} s ({c.spans_acked} spans)")
    if result.spec.rate:
        print(
            f"  offered                 {result.spec.rate:,.0f} spans/s; {result.totals.late_sends} sends left "
            f"over 0.1 s behind their schedule (the receiver did not keep up)"
        )
    print(f"  load generator CPU      {result.totals.cpu_s:.1f} s in {result.spec.processes} processes")
    if len(result.intervals) > 1:
        print(f"  last / first interval   {result.last_over_first:.2f}")
    for name, (a, b) in result.rss_mb.items():
        growth = (b / a - 1) * 100 if a else float("nan")
        print(f"  RSS {name:<19} {a:.0f} -> {b:.0f} MB ({growth:+.1f}%)")
    print(f"  alert latency (all)     p50 {percentile(all_ms, 50):.1f} ms, p99 {percentile(all_ms, 99):.1f} ms")
    print(
        f"  alerts                  {len(c.seen)} of {len(c.verified_runs)} verified runs; missing {c.missing()} "
        f"({drain_s:g} s after the load); duplicated {c.duplicated}; unexpected {c.unexpected}; "
        f"other kinds {c.other_kinds or 0}; HTTP errors {len(result.totals.errors)}"
    )
    for error in result.totals.errors[:3]:
        print(f"    {error}")
