"""A timer processor on Kafka: the outcome join reports a claim nobody verified once receive time passes the
horizon — from the partition stores of the member that owns them, exactly once."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from streams.events import ContradictionDetected, SpanRecorded
from streams.kafka.batch_worker import BatchWorker
from streams.kafka.clients import ensure_topics
from streams.kafka.publisher import KafkaPublisher
from streams.kafka.reading import read_all
from streams.kafka.runner import WorkerGroup
from streams.processors.outcome_join import OutcomeJoin
from tests.claim_spans import agent_claim_span
from tests.integration.kafka.kafka_pipeline_support import new_naming

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _claim(trace_id: str, at: datetime) -> SpanRecorded:
    return agent_claim_span(trace_id, at, event_id=f"span-{trace_id}")


@pytest.mark.kafka
def test_a_claim_never_verified_is_reported_after_the_horizon_once(kafka_bootstrap: str, tmp_path: Path) -> None:
    naming = new_naming()
    ensure_topics(kafka_bootstrap, naming)
    # a dozen traces spread over the six partitions; the last one moves receive time past the horizon
    lonely = [_claim(f"{n:032x}", T0) for n in range(1, 13)]
    later = _claim(f"{99:032x}", T0 + timedelta(minutes=10))

    def alerts() -> list[ContradictionDetected]:
        events = read_all(kafka_bootstrap, naming, ["contradictions"])
        return [e for e in events if isinstance(e, ContradictionDetected)]

    async def scenario() -> list[ContradictionDetected]:
        worker = BatchWorker(
            OutcomeJoin(horizon=timedelta(minutes=5)), kafka_bootstrap, naming, tmp_path, tick_interval_s=0.5
        )
        async with WorkerGroup([worker]) as group:
            with KafkaPublisher(kafka_bootstrap, naming) as publisher:
                await asyncio.to_thread(publisher.publish, lonely)
                await group.wait_idle(idle_s=1.5, timeout_s=60)
                assert await asyncio.to_thread(alerts) == []  # receive time has not passed the horizon yet
                await asyncio.to_thread(publisher.publish, [later])
            await group.wait_for(lambda: len(alerts()) >= len(lonely), timeout_s=60, what="horizon alerts")
            deadline = time.monotonic() + 3  # a few more ticks: nothing is reported twice
            while time.monotonic() < deadline:
                await asyncio.sleep(0.5)
            return await asyncio.to_thread(alerts)

    reported = asyncio.run(scenario())
    assert sorted(a.trace_id for a in reported) == sorted(s.trace_id for s in lonely)
    assert {a.kind for a in reported} == {"claim_never_verified"}
