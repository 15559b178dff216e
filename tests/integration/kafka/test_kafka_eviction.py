"""Bounded state on Kafka: the outcome join's worker evicts entries past horizon + retention by writing
tombstones to its compacted changelog, and events redelivered after that (Kafka does not dedupe by event
id) neither reopen an entry nor raise an alert a second time."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from producers.sdk.outcome import outcome_event
from streams.events import ContradictionDetected, Event, SpanRecorded
from streams.kafka.batch_worker import BatchWorker
from streams.kafka.clients import consumer_config, ensure_topics
from streams.kafka.partition_stores import read_changelog_partition
from streams.kafka.publisher import KafkaPublisher
from streams.kafka.reading import read_all
from streams.kafka.runner import WorkerGroup
from streams.processors._expiry import INDEX_PREFIX
from streams.processors.outcome_join import OutcomeJoin
from streams.topics import TOPIC_BY_NAME
from tests.claim_spans import agent_claim_span
from tests.integration.kafka.kafka_pipeline_support import new_naming

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
HORIZON = timedelta(minutes=5)


def _claim(n: int, at: datetime) -> SpanRecorded:
    trace = f"{n:032x}"
    return agent_claim_span(trace, at, event_id=f"span-{trace}")


def _changelog(bootstrap: str, topic: str) -> list[tuple[str, bool]]:
    """Every (key, is_tombstone) message of a changelog, all partitions, as written (before compaction)."""
    out: list[tuple[str, bool]] = []
    consumer = Consumer(consumer_config(bootstrap, topic + "-test-reader"))
    try:
        for p in range(TOPIC_BY_NAME["spans"].partitions):
            tp = TopicPartition(topic, p, OFFSET_BEGINNING)
            _low, high = consumer.get_watermark_offsets(tp, timeout=30)
            if high == 0:
                continue
            consumer.assign([tp])
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                msg = consumer.poll(1.0)
                if msg is None or msg.error() is not None:
                    continue
                out.append(((msg.key() or b"").decode(), msg.value() is None))
                if int(msg.offset() or 0) + 1 >= high:
                    break
    finally:
        consumer.close()
    return out


@pytest.mark.kafka
def test_eviction_writes_tombstones_and_duplicates_after_it_change_nothing(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    naming = new_naming()
    ensure_topics(kafka_bootstrap, naming)
    disproved = list(range(1, 13))
    lonely = list(range(13, 19))
    events: list[Event] = [_claim(n, T0) for n in disproved + lonely]
    events += [
        outcome_event(f"{n:032x}", "FAILURE", True, "external_callback", "2 refunds", tenant="acme", at=T0)
        for n in disproved
    ]
    later = _claim(99, T0 + 4 * HORIZON)  # moves receive time past horizon + retention of everything above
    join_keys = {f"acme|{n:032x}" for n in disproved + lonely}
    changelog = naming.changelog("outcome-join")

    def alerts() -> list[ContradictionDetected]:
        return [
            e for e in read_all(kafka_bootstrap, naming, ["contradictions"]) if isinstance(e, ContradictionDetected)
        ]

    async def scenario() -> tuple[list[ContradictionDetected], list[ContradictionDetected]]:
        def worker() -> BatchWorker:
            join = OutcomeJoin(horizon=HORIZON, retention=HORIZON)
            return BatchWorker(join, kafka_bootstrap, naming, tmp_path, tick_interval_s=0.5)

        async with WorkerGroup([worker()]) as group:
            with KafkaPublisher(kafka_bootstrap, naming) as publisher:
                await asyncio.to_thread(publisher.publish, events)
                await group.wait_for(lambda: len(alerts()) >= len(disproved), timeout_s=60, what="contradictions")
                await asyncio.to_thread(publisher.publish, [later])
                expected = len(disproved) + len(lonely)
                await group.wait_for(lambda: len(alerts()) >= expected, timeout_s=60, what="horizon alerts")

                def evicted() -> bool:
                    keys = {k for k, tomb in _changelog(kafka_bootstrap, changelog) if tomb}
                    return join_keys <= keys

                await group.wait_for(evicted, timeout_s=60, what="tombstones of the evicted entries")
                before = await asyncio.to_thread(alerts)
                # the same records again, as a producer retry or a replayed batch would deliver them
                await asyncio.to_thread(publisher.publish, events)
                await group.wait_idle(idle_s=2.0, timeout_s=60)
                deadline = time.monotonic() + 3  # a few more ticks
                while time.monotonic() < deadline:
                    await asyncio.sleep(0.5)
                return before, await asyncio.to_thread(alerts)

    before, after = asyncio.run(scenario())
    kinds = sorted((a.trace_id, a.kind) for a in before)
    assert kinds == sorted(
        [(f"{n:032x}", "contradiction") for n in disproved] + [(f"{n:032x}", "claim_never_verified") for n in lonely]
    )
    assert sorted(a.event_id for a in after) == sorted(a.event_id for a in before)  # nothing alerted twice
    store: dict[str, object] = {}
    for p in range(TOPIC_BY_NAME["spans"].partitions):
        store.update(read_changelog_partition(kafka_bootstrap, changelog, p))
    entries = {k for k in store if not k.startswith(INDEX_PREFIX)}
    assert entries == {f"acme|{99:032x}"}  # the evicted entries stayed evicted; only the latest is open
