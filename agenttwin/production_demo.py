"""`agenttwin demo --production`: Demo Co in production, the version watch catching 1.3.0 and clearing it.

Customers arrive two a second (seeded), minute by minute. Each is served by the demo agent's 1.2.4, or by the
10 % canary: 1.3.0 first. The versions are served as a team would run them (producers/production_service.py):
each customer, with an order of their own, is sent to the demo agent's HTTP interface, which runs the case on
the Demo Co twin (its tools on a twin endpoint) and is instrumented with the AgentTwin SDK; its spans are
exported over OTLP/HTTP to an AgentTwin receiver on 127.0.0.1. Then the payment system posts its verification
of each customer's order, by order id, through the SDK's HTTP reporter. The receiver's clock is the story's:
customers arrive two a second of story time however fast the machine serves them. After each minute the
pipeline (subject join, outcome join, version tally, version watch) catches up and any new version alarm is
printed as `agenttwin alerts tail` prints it. Once 1.3.0 is flagged, 1.3.1 replaces it as the canary, until
1.3.0's alarm clears. The story ends with the production page (`agenttwin report --production`). Embedded by
default; on Kafka with --kafka.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agenttwin.errors import CliError
from agenttwin.render import out
from consumers.alerts import alert_line
from evaluation.version_watch import REPLACED
from producers.production_traffic import DEMO_TENANT, canary_draws
from streams.events import Event, VersionCleared, VersionRegressed

PER_MINUTE = 120
EXPORT_EVERY = 10  # customers: five seconds of story time, the OpenTelemetry SDK's default export delay
SHARE = 0.10
SEED = 28
BASELINE = "1.2.4"
VERSIONS = (BASELINE, "1.3.0", "1.3.1")
DETECT_MINUTES = 30  # at most, with 1.3.0 as the canary
CLEAR_MINUTES = 60  # at most, with 1.3.1 as the canary
KAFKA_WAIT_S = 300.0
KAFKA_PAUSE_S = 1.0


def customers(minute: int, canary: str) -> list[tuple[str, str]]:
    """The version and situation of each customer of `minute` (seeded by the minute)."""
    return canary_draws(SEED * 10_000 + minute, PER_MINUTE, canary, baseline=BASELINE, share=SHARE)


class StoryClock:
    """The receiver's clock: the story time the customer being served arrives at."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


class Production:
    """The served side: a receiver on 127.0.0.1 publishing to `publisher`, the SDK exporting to it, the demo
    agent's versions behind DemoCoService, and the payment system's reporter."""

    def __init__(self, publisher: Any) -> None:
        from producers.otlp.keys import ApiKeys
        from producers.otlp.server import make_server
        from producers.production_service import DemoCoService
        from producers.production_traffic import DEMO_AGENT
        from producers.sdk import AgentTwin, ContentPolicy, http_reporter, tracer_provider

        # story time starts at this minute and runs faster than the wall clock: the spans' own times (the SDK's
        # clock) are at most a minute ahead of their receive time, within the documented skew (streams/clock.py)
        self.start = datetime.now(UTC).replace(second=0, microsecond=0)
        self.clock = StoryClock(self.start)
        key = secrets.token_urlsafe(24)
        self.server = make_server("127.0.0.1", 0, publisher, ApiKeys.from_mapping({key: DEMO_TENANT}))
        self.server.receiver.clock = self.clock
        self.server.start()
        # Demo Co's customers are made up, so the replies go along (the production page shows them)
        content = ContentPolicy("full")
        self.provider = tracer_provider(self.server.url, key, service_name=DEMO_AGENT, content=content)
        self.reporter = http_reporter(self.server.url, key)
        self.served = self.reported = 0
        try:
            self.service = DemoCoService(AgentTwin(tracer_provider=self.provider, content=content), VERSIONS)
        except BaseException:
            self._close_transport()
            raise

    def serve_minute(self, minute: int, canary: str) -> None:
        every = timedelta(seconds=60 / PER_MINUTE)
        drawn = customers(minute, canary)
        for first in range(0, len(drawn), EXPORT_EVERY):
            chunk = range(first, min(first + EXPORT_EVERY, len(drawn)))
            served = [self.service.serve(*drawn[i], minute * PER_MINUTE + i) for i in chunk]
            last = self.start + timedelta(minutes=minute) + chunk[-1] * every  # the chunk's last customer
            # the agent service exports the runs that ended since its last export (a BatchSpanProcessor's 5 s)
            self.clock.at = last + every / 4
            self.provider.force_flush()
            # then the payment system posts what it verified of those customers' orders
            self.clock.at = last + every / 2
            reports = [v for v in (s.verification() for s in served) if v is not None]
            for v in reports:
                self.reporter.report_outcome(**v)
            self.reporter.flush()
            self.served += len(served)
            self.reported += len(reports)
        self._check()

    def _check(self) -> None:
        """A trace or report that did not reach the log would make the story wrong: stop with what happened."""
        stats = self.server.receiver.stats
        sdk = self.reporter.stats()
        if stats.publish_errors or stats.refused or sdk.dropped or sdk.failed or sdk.sent < self.reported:
            raise CliError(
                f"the receiver refused or lost data: {dict(stats.refused)} refused, {stats.publish_errors} publish "
                f"errors ({stats.last_error}); the reporter sent {sdk.sent} of {self.reported} verifications "
                f"({sdk.dropped} dropped, {sdk.failed} failed: {sdk.last_error})"
            )
        if stats.spans_accepted < self.served:  # every customer's run has a root span at least
            raise CliError(f"{stats.spans_accepted} spans reached the receiver for {self.served} customers")

    def close(self) -> None:
        self.service.close()
        self._close_transport()

    def _close_transport(self) -> None:
        self.provider.shutdown()
        self.reporter.close()
        self.server.close()


def _story(step: Callable[[int, str], list[Event]]) -> tuple[int, bool, bool]:
    """Minutes of traffic, whether 1.3.0 was flagged, whether its alarm cleared; prints as it goes.
    `step(minute, canary)` serves the minute's customers and returns the version alarms that came of it."""
    flagged = cleared = False
    minute = 0
    out(f"Minute 0: {BASELINE} serves {1 - SHARE:.0%} of customers, 1.3.0 is the {SHARE:.0%} canary.")
    while minute < DETECT_MINUTES and not flagged:
        for alert in step(minute, "1.3.0"):
            out(f"  minute {minute + 1}: {alert_line(alert)}")  # type: ignore[arg-type]
            flagged = flagged or isinstance(alert, VersionRegressed)
        minute += 1
    if not flagged:
        return minute, False, False
    out(f"Minute {minute}: 1.3.1 replaces 1.3.0 as the canary.")
    end = minute + CLEAR_MINUTES
    while minute < end and not cleared:
        for alert in step(minute, "1.3.1"):
            out(f"  minute {minute + 1}: {alert_line(alert)}")  # type: ignore[arg-type]
            cleared = cleared or (
                isinstance(alert, VersionCleared) and alert.reason == REPLACED and alert.candidate_version == "1.3.0"
            )
        minute += 1
    return minute, flagged, cleared


def production_demo(args: argparse.Namespace) -> int:
    from agenttwin.command_context import kafka_of, kafka_warehouse_of, open_embedded_of
    from agenttwin.report_commands import production_data
    from agenttwin.reports.production import render_production
    from agenttwin.settings import load_settings

    settings = load_settings()
    bootstrap = kafka_of(args, settings)
    root = Path(args.data_dir).expanduser() if args.data_dir else settings.resolved_data_dir
    if bootstrap:
        with kafka_warehouse_of(args, settings) as warehouse:
            out(f"AgentTwin production demo on Kafka ({bootstrap})\n")
            minutes, flagged, cleared = _on_kafka(args, settings, bootstrap, warehouse)
            data = production_data(warehouse)
    else:
        from consumers.embedded_sink import sync
        from streams.processors import OutcomeJoin, SubjectJoin, VersionTally, VersionWatch

        _, emb = open_embedded_of(args)
        with emb:
            out(f"AgentTwin production demo on the embedded runtime (data in {emb.runtime.data_dir})\n")
            steps = [SubjectJoin(), OutcomeJoin(), VersionTally(), VersionWatch()]
            seen = len(emb.runtime.read_events("version-alerts")) if "version-alerts" in emb.runtime.log.topics() else 0
            production = Production(emb.runtime)
            try:

                def step(minute: int, canary: str) -> list[Event]:
                    nonlocal seen
                    production.serve_minute(minute, canary)
                    emb.runtime.run(steps)
                    alerts = emb.runtime.read_events("version-alerts")
                    new, seen = alerts[seen:], len(alerts)
                    return new

                minutes, flagged, cleared = _story(step)
            finally:
                production.close()
            sync(emb.runtime, emb.warehouse)
            data = production_data(emb.warehouse)
    page = root / "production.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(render_production(data), encoding="utf-8")
    out(
        f"\n{minutes} minutes of traffic: 1.3.0 {'flagged' if flagged else 'NOT flagged'}, "
        f"its alarm {'cleared when 1.3.1 replaced it' if cleared else 'NOT cleared'}."
    )
    out(f"Production page: {page}")
    if not (flagged and cleared):
        raise CliError("the production story did not end as it should (see above)")
    return 0


def _on_kafka(args: argparse.Namespace, settings: Any, bootstrap: str, warehouse: Any) -> tuple[int, bool, bool]:
    from agenttwin.kafka_cli import build_workers, kafka_data_dir, naming_for, sync_warehouse_from_kafka
    from streams.kafka.clients import ensure_topics
    from streams.kafka.publisher import KafkaPublisher
    from streams.kafka.reading import TopicTail
    from streams.kafka.runner import WorkerGroup

    naming = naming_for(args, settings)
    ensure_topics(bootstrap, naming)
    kinds = ["subject-join", "outcome-join", "version-tally", "version-watch"]
    workers = build_workers(
        kinds, bootstrap, naming=naming, data_dir=kafka_data_dir(settings), versions=(), refine=None
    )  # each runs as `agenttwin worker` runs it

    async def run() -> tuple[int, bool, bool]:
        async with WorkerGroup(workers) as group:
            with (
                KafkaPublisher(bootstrap, naming) as publisher,
                TopicTail(bootstrap, naming, ["version-alerts"]) as tail,
            ):
                tail.read_new()  # alarms of an earlier run are not news
                loop = asyncio.get_running_loop()
                production = Production(publisher)

                def step(minute: int, canary: str) -> list[Event]:
                    production.serve_minute(minute, canary)
                    # let the workers catch up with this minute before the next one arrives (they start on it
                    # within the pause; then they are idle once the last of it went through the watch)
                    time.sleep(KAFKA_PAUSE_S)
                    asyncio.run_coroutine_threadsafe(group.wait_idle(idle_s=2.0, timeout_s=KAFKA_WAIT_S), loop).result()
                    return list(tail.read_new())

                try:
                    return await asyncio.to_thread(_story, step)
                finally:
                    production.close()

    result = asyncio.run(run())
    sync_warehouse_from_kafka(bootstrap, warehouse, naming=naming)
    return result
