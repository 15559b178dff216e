"""Processor stores on Kafka: the compacted changelog, read back per partition, on a real broker."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined, unused-ignore]

from streams.kafka.clients import ensure_changelog, producer_config
from streams.kafka.partition_stores import LEGACY_SEED_KEY, PartitionStores, read_changelog_partition
from streams.kafka.store_codec import dumps
from tests.integration.kafka.kafka_pipeline_support import new_naming

pytestmark = pytest.mark.kafka


def _write(bootstrap: str, topic: str, partition: int, records: list[tuple[str, object | None]]) -> None:
    producer = Producer(producer_config(bootstrap))
    for key, value in records:
        producer.produce(topic, key=key.encode(), value=None if value is None else dumps(value), partition=partition)
    assert producer.flush(30) == 0


def test_changelog_is_created_compacted_once_with_the_input_partition_count(kafka_bootstrap: str) -> None:
    topic = new_naming().changelog("grader-1.1.0")
    assert ensure_changelog(kafka_bootstrap, topic, 6) is True
    assert ensure_changelog(kafka_bootstrap, topic, 6) is False
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    assert len(admin.list_topics(topic, timeout=30).topics[topic].partitions) == 6
    (config,) = admin.describe_configs([ConfigResource("topic", topic)]).values()
    assert config.result(timeout=30)["cleanup.policy"].value == "compact"
    with pytest.raises(RuntimeError, match="has 6 partitions, 3 are declared"):
        ensure_changelog(kafka_bootstrap, topic, 3)


def test_a_partition_reads_back_as_each_keys_last_value_without_tombstones(kafka_bootstrap: str) -> None:
    topic = new_naming().changelog("comparator-1.1.0")
    ensure_changelog(kafka_bootstrap, topic, 6)
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    _write(
        kafka_bootstrap,
        topic,
        2,
        [
            (LEGACY_SEED_KEY, {"seed": True}),  # written by the faust-Table version: not state
            ("case-a", {"n": 1}),
            ("case-b", {"n": 2}),
            ("case-a", {"n": 3, "at": at}),
            ("case-b", None),
        ],
    )
    _write(kafka_bootstrap, topic, 4, [("case-c", True)])
    assert read_changelog_partition(kafka_bootstrap, topic, 2) == {"case-a": {"n": 3, "at": at}}
    assert read_changelog_partition(kafka_bootstrap, topic, 4) == {"case-c": True}
    assert read_changelog_partition(kafka_bootstrap, topic, 0) == {}


def test_forgotten_partitions_must_be_loaded_again() -> None:
    stores = PartitionStores()
    stores.put(1, {"k": 1})
    stores.put(3, {"k": 3})
    stores.forget({1})
    assert not stores.loaded(1) and stores.loaded(3)
    stores.forget()
    assert list(stores.items()) == []
