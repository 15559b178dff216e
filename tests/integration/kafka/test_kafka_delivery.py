"""Partitioning parity, idempotent topic creation, and the planner's one-transaction pair."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined, unused-ignore]

from streams.events import CasePlanned, EvaluationRequested, Event, PairPlanned
from streams.kafka.clients import consumer_config, ensure_topics, producer_config
from streams.kafka.naming import Naming
from streams.kafka.planner_loop import PlannerLoop
from streams.kafka.publisher import KafkaPublisher
from streams.kafka.reading import read_all
from streams.topics import ALL_TOPICS
from tests.integration.kafka.kafka_pipeline_support import demo_requests, new_naming
from tests.integration.kafka_broker import unique_name

KEYS = [f"case-{i}" for i in range(120)] + ["ev-17db381359a50edb", "7a322a8bb242403a5e58a84105e3c4b6", "ü-é"]


def _partitions_seen(bootstrap: str, topic: str, count: int) -> dict[bytes, int]:
    consumer = Consumer(consumer_config(bootstrap, unique_name("it-part")))
    consumer.subscribe([topic])
    seen: dict[bytes, int] = {}
    deadline = time.monotonic() + 30
    try:
        while len(seen) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            key = msg.key()
            assert key is not None
            seen[key] = int(msg.partition() or 0)
    finally:
        consumer.close()
    return seen


async def _produce_aiokafka(bootstrap: str, topic: str, keys: Sequence[str]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)  # faust's client, default murmur2 partitioner
    await producer.start()
    try:
        for key in keys:
            await producer.send_and_wait(topic, b"x", key=key.encode())
    finally:
        await producer.stop()


@pytest.mark.kafka
def test_confluent_murmur2_and_aiokafka_put_a_key_on_the_same_partition(kafka_bootstrap: str) -> None:
    naming = new_naming()
    ensure_topics(kafka_bootstrap, naming)
    by_confluent, by_aiokafka = naming.topic("cases"), naming.topic("twin-calls")  # both 6 partitions
    producer = Producer(producer_config(kafka_bootstrap))
    for key in KEYS:
        producer.produce(by_confluent, key=key.encode(), value=b"x")
    assert producer.flush(30) == 0
    asyncio.run(_produce_aiokafka(kafka_bootstrap, by_aiokafka, KEYS))

    confluent = _partitions_seen(kafka_bootstrap, by_confluent, len(KEYS))
    aiokafka = _partitions_seen(kafka_bootstrap, by_aiokafka, len(KEYS))
    assert len(confluent) == len(KEYS)
    assert confluent == aiokafka
    assert len(set(confluent.values())) == 6  # the keys spread: the comparison is not trivially all-zero

    # librdkafka's default partitioner (CRC32) would not agree: the setting is what makes it work
    plain = Producer({"bootstrap.servers": kafka_bootstrap})
    crc_topic = naming.topic("spans")
    for key in KEYS:
        plain.produce(crc_topic, key=key.encode(), value=b"x")
    assert plain.flush(30) == 0
    assert _partitions_seen(kafka_bootstrap, crc_topic, len(KEYS)) != aiokafka


@pytest.mark.kafka
def test_topics_are_created_once_with_declared_partitions_and_retention(kafka_bootstrap: str) -> None:
    naming = new_naming()
    created = ensure_topics(kafka_bootstrap, naming)
    assert sorted(created) == sorted(naming.all_physical())
    assert ensure_topics(kafka_bootstrap, naming) == []  # idempotent
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    meta = admin.list_topics(timeout=30).topics
    for topic in ALL_TOPICS:
        assert len(meta[naming.topic(topic.name)].partitions) == topic.partitions
    resource = ConfigResource("topic", naming.topic("verdicts"))
    config = admin.describe_configs([resource])[resource].result(timeout=30)
    assert config["retention.ms"].value == "-1"
    assert config["cleanup.policy"].value == "delete"


def _plans(events: Sequence[Event]) -> tuple[list[PairPlanned], list[CasePlanned]]:
    return [e for e in events if isinstance(e, PairPlanned)], [e for e in events if isinstance(e, CasePlanned)]


async def _run_planner(planner: PlannerLoop, bootstrap: str, naming: Naming, expect_pairs: int) -> None:
    await planner.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert planner.failure is None
            pairs, _ = _plans(await asyncio.to_thread(read_all, bootstrap, naming, ["evaluations"]))
            if len(pairs) >= expect_pairs and time.monotonic() - planner.last_progress > 1.5:
                return
            await asyncio.sleep(0.3)
        raise AssertionError("planner did not plan in time")
    finally:
        await planner.stop()


@pytest.mark.kafka
def test_a_retried_request_yields_one_pair_even_across_a_planner_restart(kafka_bootstrap: str) -> None:
    naming = new_naming()
    ensure_topics(kafka_bootstrap, naming)
    request: EvaluationRequested = demo_requests()[0]
    with KafkaPublisher(kafka_bootstrap, naming) as publisher:
        publisher.publish([request, request])  # Kafka keeps both: no event-id dedup on the broker
        asyncio.run(_run_planner(PlannerLoop(kafka_bootstrap, naming), kafka_bootstrap, naming, 1))
        publisher.publish([request])  # retried again, after the planner restarted with an empty store
        asyncio.run(_run_planner(PlannerLoop(kafka_bootstrap, naming), kafka_bootstrap, naming, 1))

    evaluations = read_all(kafka_bootstrap, naming, ["evaluations"])
    pairs, _ = _plans(evaluations)
    _, plans = _plans(read_all(kafka_bootstrap, naming, ["case-plans"]))  # read_committed
    n = len(pairs[0].scenario_names)
    assert sum(isinstance(e, EvaluationRequested) for e in evaluations) == 3
    assert len(pairs) == 1
    assert len(plans) == 2 * n == pairs[0].case_count
    assert len({p.case_id for p in plans}) == 2 * n
