"""`agenttwin demo --production`: Demo Co in production, the version watch catching 1.3.0 and clearing it.

Customers arrive two a second (seeded), minute by minute. Each is served by the demo agent's 1.2.4, or by
the 10 % canary: 1.3.0 first. What a version does for a customer is what its agent did on the Demo Co twin
in the customer's situation (producers/production_traffic.py). The trace arrives as spans (tool calls with
their arguments), and a moment later the payment system's verification of the customer's order, by order id:
the subject join brings it to the trace that wrote to the order. After each minute the pipeline (subject
join, outcome join, version tally, version watch) catches up and any new version alarm is printed as
`agenttwin alerts tail` prints it. Once 1.3.0 is flagged, 1.3.1 replaces it as the canary, until 1.3.0's
alarm clears. The story ends with the production page (`agenttwin report --production`). Embedded by
default; on Kafka with --kafka.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agenttwin.errors import CliError
from agenttwin.render import out
from consumers.alerts import alert_line
from evaluation.version_watch import REPLACED
from producers.production_traffic import SituationOutcome, canary_events, situation_outcomes
from streams.events import Event, VersionCleared, VersionRegressed

START = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
PER_MINUTE = 120
SHARE = 0.10
SEED = 28
DETECT_MINUTES = 30  # at most, with 1.3.0 as the canary
CLEAR_MINUTES = 60  # at most, with 1.3.1 as the canary
KAFKA_WAIT_S = 300.0
KAFKA_PAUSE_S = 1.0


def _minute(minute: int, canary: str, outcomes: dict[str, dict[str, SituationOutcome]]) -> list[Any]:
    return canary_events(
        PER_MINUTE,
        canary,
        seed=SEED * 10_000 + minute,
        start=START + timedelta(minutes=minute),
        share=SHARE,
        every=timedelta(seconds=60 / PER_MINUTE),
        outcomes=outcomes,
        by_order=True,
    )


def _story(publish_minute: Callable[[list[Any]], list[Event]]) -> tuple[int, bool, bool]:
    """Minutes of traffic, whether 1.3.0 was flagged, whether its alarm cleared; prints as it goes."""
    outcomes = {v: situation_outcomes(v) for v in ("1.2.4", "1.3.0", "1.3.1")}
    flagged = cleared = False
    minute = 0
    out(f"Minute 0: 1.2.4 serves {1 - SHARE:.0%} of customers, 1.3.0 is the {SHARE:.0%} canary.")
    while minute < DETECT_MINUTES and not flagged:
        for alert in publish_minute(_minute(minute, "1.3.0", outcomes)):
            out(f"  minute {minute + 1}: {alert_line(alert)}")  # type: ignore[arg-type]
            flagged = flagged or isinstance(alert, VersionRegressed)
        minute += 1
    if not flagged:
        return minute, False, False
    out(f"Minute {minute}: 1.3.1 replaces 1.3.0 as the canary.")
    end = minute + CLEAR_MINUTES
    while minute < end and not cleared:
        for alert in publish_minute(_minute(minute, "1.3.1", outcomes)):
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

            def publish_minute(events: list[Any]) -> list[Event]:
                nonlocal seen
                emb.runtime.publish(events)
                emb.runtime.run(steps)
                alerts = emb.runtime.read_events("version-alerts")
                new, seen = alerts[seen:], len(alerts)
                return new

            minutes, flagged, cleared = _story(publish_minute)
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
    from agenttwin.kafka_cli import kafka_data_dir, naming_for, sync_warehouse_from_kafka
    from streams.kafka.clients import ensure_topics
    from streams.kafka.faust_worker import FaustWorker
    from streams.kafka.publisher import KafkaPublisher
    from streams.kafka.reading import TopicTail
    from streams.kafka.runner import WorkerGroup
    from streams.processors import OutcomeJoin, SubjectJoin, VersionTally, VersionWatch

    naming = naming_for(args, settings)
    ensure_topics(bootstrap, naming)
    data_dir = kafka_data_dir(settings)

    async def run() -> tuple[int, bool, bool]:
        workers = [
            FaustWorker(p, bootstrap, naming, data_dir)
            for p in (SubjectJoin(), OutcomeJoin(), VersionTally(), VersionWatch())
        ]
        async with WorkerGroup(workers) as group:
            with (
                KafkaPublisher(bootstrap, naming) as publisher,
                TopicTail(bootstrap, naming, ["version-alerts"]) as tail,
            ):
                tail.read_new()  # alarms of an earlier run are not news
                loop = asyncio.get_running_loop()

                def publish_minute(events: list[Any]) -> list[Event]:
                    publisher.publish(events)
                    # let the workers catch up with this minute before the next one arrives (they start on it
                    # within the pause; then they are idle once the last of it went through the watch)
                    time.sleep(KAFKA_PAUSE_S)
                    asyncio.run_coroutine_threadsafe(group.wait_idle(idle_s=2.0, timeout_s=KAFKA_WAIT_S), loop).result()
                    return list(tail.read_new())

                return await asyncio.to_thread(_story, publish_minute)

    result = asyncio.run(run())
    sync_warehouse_from_kafka(bootstrap, warehouse, naming=naming)
    return result
