"""The broker the integration tests use is a real Kafka: round trips, transactions, read_committed."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined, unused-ignore]

from tests.integration.kafka_broker import broker_bootstrap, release_broker, unique_name

POLL_DEADLINE_S = 30.0


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    bootstrap = broker_bootstrap()
    yield bootstrap
    release_broker()


def _create_topic(bootstrap: str, partitions: int = 1) -> str:
    topic = unique_name("it-broker")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    futures[topic].result(timeout=30)
    return topic


def _consume(bootstrap: str, topic: str, isolation: str, until: bytes) -> list[bytes]:
    """Read the topic from the start until the value `until` arrives; return every value seen."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique_name("it-broker-group"),
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    seen: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + POLL_DEADLINE_S
        while time.monotonic() < deadline:
            msg: Message | None = consumer.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                assert err.code() == KafkaError._PARTITION_EOF, err
                continue
            value = msg.value()
            assert isinstance(value, bytes)
            seen.append(value)
            if value == until:
                return seen
    finally:
        consumer.close()
    pytest.fail(f"{until!r} not read from {topic} ({isolation}) within {POLL_DEADLINE_S} s; saw {seen}")


@pytest.mark.kafka
def test_broker_round_trips_keyed_messages_in_order(kafka_bootstrap: str) -> None:
    topic = _create_topic(kafka_bootstrap)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    sent = [(f"case-{i}".encode(), f"event-{i}".encode()) for i in range(5)]
    for key, value in sent:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(30) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "group.id": unique_name("it-broker-group"),
            "auto.offset.reset": "earliest",
        }
    )
    received: list[tuple[bytes | None, bytes | None, int | None]] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + POLL_DEADLINE_S
        while len(received) < len(sent) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            received.append((msg.key(), msg.value(), msg.offset()))
    finally:
        consumer.close()

    assert [(k, v) for k, v, _ in received] == sent
    assert [offset for _, _, offset in received] == [0, 1, 2, 3, 4]


@pytest.mark.kafka
def test_read_committed_sees_committed_transactions_and_not_aborted_ones(kafka_bootstrap: str) -> None:
    topic = _create_topic(kafka_bootstrap)
    producer = Producer(
        {"bootstrap.servers": kafka_bootstrap, "transactional.id": unique_name("it-broker-txn")}
    )
    producer.init_transactions(30)

    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, key=b"k", value=f"committed-{i}".encode())
    producer.commit_transaction(30)

    producer.begin_transaction()
    for i in range(2):
        producer.produce(topic, key=b"k", value=f"aborted-{i}".encode())
    producer.flush(30)  # make sure the aborted records really reached the log before the abort
    producer.abort_transaction(30)

    producer.begin_transaction()
    producer.produce(topic, key=b"k", value=b"end")
    producer.commit_transaction(30)

    committed_view = _consume(kafka_bootstrap, topic, "read_committed", until=b"end")
    assert committed_view == [b"committed-0", b"committed-1", b"committed-2", b"end"]

    # The aborted records are in the log; only the isolation level hides them.
    raw_view = _consume(kafka_bootstrap, topic, "read_uncommitted", until=b"end")
    assert raw_view == [
        b"committed-0",
        b"committed-1",
        b"committed-2",
        b"aborted-0",
        b"aborted-1",
        b"end",
    ]
