"""Processor stores on Kafka: the compacted changelog, read back per partition, on a real broker."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined, unused-ignore]

from streams.checkpoints import Checkpoint
from streams.kafka.clients import ensure_changelog, producer_config
from streams.kafka.partition_stores import CACHE_TAG, LEGACY_SEED_KEY, PartitionStores, read_changelog_partition
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


class _Watched(Checkpoint):
    """A store that records how many keys it held in memory at each commit."""

    held: list[int]

    def commit(self, offsets: dict[str, int], clock: datetime | None) -> None:
        self.held.append(self.in_memory)
        super().commit(offsets, clock)


def test_a_disk_backed_store_loads_in_bounded_memory(kafka_bootstrap: str, tmp_path: Path) -> None:
    topic = new_naming().changelog("outcome-join")
    ensure_changelog(kafka_bootstrap, topic, 6)
    records: list[tuple[str, object | None]] = [(f"k{i}", {"i": i}) for i in range(40)]
    records += [("k3", None), (LEGACY_SEED_KEY, {"seed": True}), ("k5", {"i": -5})]
    _write(kafka_bootstrap, topic, 1, records)
    store = _Watched(tmp_path / "p1.sqlite", "partition-1", CACHE_TAG, budget=2)
    store.held = []
    assert read_changelog_partition(kafka_bootstrap, topic, 1, store, commit_every=10) is store
    store.commit({}, None)
    # committed every 10 records while reading: never more than budget + 10 keys in memory
    assert len(store.held) >= 4 and max(store.held) <= 2 + 10 and store.in_memory <= 2
    assert dict(store.items()) == read_changelog_partition(kafka_bootstrap, topic, 1)  # the same as a dict
    assert "k3" not in store and store["k5"] == {"i": -5} and len(store) == 39
    store.close()


def test_forgotten_partitions_must_be_loaded_again() -> None:
    stores = PartitionStores()
    stores.put(1, {"k": 1})
    stores.put(3, {"k": 3})
    stores.forget({1})
    assert not stores.loaded(1) and stores.loaded(3)
    stores.forget()
    assert list(stores.items()) == []
