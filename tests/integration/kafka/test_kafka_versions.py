"""The version watch on Kafka: the same production traffic as embedded gives the same window rows and the
same alarms, with the outcome join, the tally and the watch as faust workers on a real broker."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from producers.production_traffic import canary_events
from streams.embedded import EmbeddedRuntime
from streams.events import Event, VersionCleared, VersionRegressed, VersionWindowed
from streams.kafka.clients import ensure_topics
from streams.kafka.faust_worker import FaustWorker
from streams.kafka.publisher import KafkaPublisher
from streams.kafka.reading import read_all
from streams.kafka.runner import WorkerGroup
from streams.processors import OutcomeJoin, VersionTally, VersionWatch
from tests.integration.kafka.kafka_pipeline_support import new_naming

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
CUSTOMERS = 700


def _final_windows(events: list[Event]) -> dict[tuple[str, str, datetime], dict[str, object]]:
    latest: dict[tuple[str, str, datetime], VersionWindowed] = {}
    for e in events:
        if isinstance(e, VersionWindowed):
            key = (e.watch_key, e.agent_version, e.window_start)
            if key not in latest or e.revision > latest[key].revision:
                latest[key] = e
    skip = {"event_id", "occurred_at", "revision"}  # which update came last depends on arrival order
    return {k: {n: v for n, v in w.to_record().items() if n not in skip} for k, w in latest.items()}


def _alarms(events: list[Event]) -> set[tuple[str, str, str, str | None]]:
    return {
        (e.event_id, e.baseline_version, e.candidate_version, e.metric)
        for e in events
        if isinstance(e, VersionRegressed | VersionCleared)
    }


@pytest.mark.kafka
def test_kafka_gives_the_embedded_windows_and_alarms(kafka_bootstrap: str, tmp_path: Path) -> None:
    traffic = canary_events(CUSTOMERS, "1.3.0", seed=9, start=T0)
    embedded = EmbeddedRuntime(tmp_path / "embedded", fsync=False)
    try:
        embedded.publish(traffic)
        embedded.run([OutcomeJoin(), VersionTally(), VersionWatch()])
        want_windows = _final_windows(embedded.read_events("version-windows"))
        want_alarms = _alarms(embedded.read_events("version-alerts"))
    finally:
        embedded.close()
    assert any(candidate == "1.3.0" for _, _, candidate, _ in want_alarms)

    naming = new_naming()
    ensure_topics(kafka_bootstrap, naming)

    def windows() -> list[Event]:
        return read_all(kafka_bootstrap, naming, ["version-windows"])

    async def scenario() -> None:
        workers = [
            FaustWorker(p, kafka_bootstrap, naming, tmp_path / "kafka")
            for p in (OutcomeJoin(), VersionTally(), VersionWatch())
        ]
        async with WorkerGroup(workers) as group:
            with KafkaPublisher(kafka_bootstrap, naming) as publisher:
                await asyncio.to_thread(publisher.publish, traffic)
            await group.wait_for(
                lambda: _final_windows(windows()) == want_windows, timeout_s=240, poll_s=2.0, what="the window rows"
            )
            await group.wait_idle(idle_s=3.0, timeout_s=120)

    asyncio.run(scenario())
    assert _final_windows(windows()) == want_windows
    assert _alarms(read_all(kafka_bootstrap, naming, ["version-alerts"])) == want_alarms
