"""A processor's state on Kafka: one dict per input partition, each rebuilt from its own changelog partition.

Why not a faust Table: after a grader was killed with SIGKILL, faust's changelog recovery was seen to
come back without writes that were on the changelog (and to park streams), while the group's offsets
were already past the events that had made them, so cases were never graded (issue 5). Here the worker
reads a partition's changelog itself, to its end offset, before it handles anything of that partition
in an assignment. Every change is acknowledged on the changelog before the event that made it is
acknowledged to faust, so a rebuilt store is never older than the committed offsets; events redelivered
after a crash find their "done" markers (processors are idempotent).

The changelog is compacted, keyed like the store (UTF-8 str keys), values are store_codec bytes and a
removal is a tombstone. Partition p of the changelog holds the state of input partition p.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from streams.kafka.clients import consume_ready, consumer_config
from streams.kafka.store_codec import loads

READ_TIMEOUT_S = 60.0
# Changelogs written while stores were faust Tables carry a marker record under this key; not state.
LEGACY_SEED_KEY = "\x00seed"


class PartitionStores:
    """The loaded partitions' stores; a partition not loaded must be `load`ed before it is used."""

    def __init__(self) -> None:
        self._stores: dict[int, dict[str, Any]] = {}

    def loaded(self, partition: int) -> bool:
        return partition in self._stores

    def __getitem__(self, partition: int) -> dict[str, Any]:
        return self._stores[partition]

    def put(self, partition: int, store: dict[str, Any]) -> None:
        self._stores[partition] = store

    def forget(self, partitions: set[int] | None = None) -> None:
        """Drop partitions (all when None): after a rebalance another member may have written them."""
        for p in list(self._stores) if partitions is None else partitions:
            self._stores.pop(p, None)

    def items(self) -> Iterator[tuple[int, dict[str, Any]]]:
        return iter(sorted(self._stores.items()))


def read_changelog_partition(
    bootstrap: str, topic: str, partition: int, *, timeout_s: float = READ_TIMEOUT_S
) -> dict[str, Any]:
    """The store a changelog partition describes: every key's last value, tombstones removed.

    Reads from the beginning to the high watermark taken at the start; the owner of the partition is
    the only writer, and it does not write while it loads. read_committed: a transactional writer's
    (streams/kafka/batch_worker.py) aborted batches are not state, and one still open (its writer killed)
    is waited for until the broker ends it."""
    consumer = Consumer(consumer_config(bootstrap, topic + "-loader"))
    store: dict[str, Any] = {}
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
        if high <= low:
            return store
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout_s
        while True:
            for msg in consume_ready(consumer, 1000, 0.5):
                err = msg.error()
                if err is not None:
                    if err.code() != KafkaError._PARTITION_EOF:
                        raise RuntimeError(f"reading {topic}/{partition}: {err}")
                    continue
                key = (msg.key() or b"").decode()
                value = msg.value()
                if key == LEGACY_SEED_KEY:
                    pass
                elif value is None:
                    store.pop(key, None)
                else:
                    store[key] = loads(value)
                if int(msg.offset() or 0) + 1 >= high:
                    return store
            # compaction can leave offset gaps; the position passing the end also means done
            if consumer.position([TopicPartition(topic, partition)])[0].offset >= high:
                return store
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}/{partition} not read to offset {high} within {timeout_s:.0f} s")
    finally:
        consumer.close()
