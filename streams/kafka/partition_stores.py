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

Memory: given a directory, a partition's store is a `Checkpoint` file there (streams/checkpoints.py) with a
key budget, so the state beyond the budget is on disk (docs/guides/kafka-workers.md). The file is only a
cache: each load deletes it and fills it again from the changelog, committing every COMMIT_EVERY records so
loading is bounded too; its offsets are unused (the group's committed offsets are the durable ones). Without
a directory a store is a dict holding the whole partition (the faust worker).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from streams.checkpoints import Checkpoint
from streams.kafka.clients import consume_ready, consumer_config
from streams.kafka.store_codec import loads

READ_TIMEOUT_S = 60.0
# Changelogs written while stores were faust Tables carry a marker record under this key; not state.
LEGACY_SEED_KEY = "\x00seed"
COMMIT_EVERY = 10_000  # changelog records a disk-backed store takes in between two commits (trims) while loading
CACHE_TAG = "kafka-changelog-cache/1"  # the Checkpoint tag of a store file: a cache of the changelog, nothing more

Store = MutableMapping[str, Any]


class PartitionStores:
    """The loaded partitions' stores; a partition not loaded must be `load`ed before it is used.

    With a `directory` (owned by this object: `close` removes it) each store is a Checkpoint file
    `p<partition>.sqlite` in it that keeps `budget` keys in memory after each `commit`; without one, a dict."""

    def __init__(self, directory: Path | None = None, *, budget: int | None = None) -> None:
        self.directory = directory
        self.budget = budget
        self._stores: dict[int, Store] = {}

    def loaded(self, partition: int) -> bool:
        return partition in self._stores

    def __getitem__(self, partition: int) -> Store:
        return self._stores[partition]

    def put(self, partition: int, store: Store) -> None:
        self.forget({partition})
        self._stores[partition] = store

    def load(self, partition: int, fill: Callable[[Store], object]) -> Store:
        """A fresh, empty store for the partition, filled by `fill` (e.g. from the changelog), then kept.
        If `fill` raises, nothing is kept (a partly read store is never used) and the error goes on."""
        self.forget({partition})
        store = self._fresh(partition)
        try:
            fill(store)
            _commit(store)
        except BaseException:
            self._drop(partition, store)
            raise
        self._stores[partition] = store
        return store

    def commit(self, partitions: set[int]) -> None:
        """After changes reached the stores: write them to the files, keeping only the budget in memory."""
        for p in partitions:
            if p in self._stores:
                _commit(self._stores[p])

    def forget(self, partitions: set[int] | None = None) -> None:
        """Drop partitions (all when None): after a rebalance another member may have written them."""
        for p in list(self._stores) if partitions is None else partitions:
            store = self._stores.pop(p, None)
            if store is not None:
                self._drop(p, store)

    def close(self) -> None:
        """Forget every partition and remove the directory."""
        self.forget()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)

    def items(self) -> Iterator[tuple[int, Store]]:
        return iter(sorted(self._stores.items()))

    def _path(self, partition: int) -> Path:
        assert self.directory is not None
        return self.directory / f"p{partition}.sqlite"

    def _fresh(self, partition: int) -> Store:
        if self.directory is None:
            return {}
        path = self._path(partition)
        _remove(path)  # left by an earlier load: the changelog may have moved on since, start again
        return Checkpoint(path, f"partition-{partition}", CACHE_TAG, budget=self.budget)

    def _drop(self, partition: int, store: Store) -> None:
        if isinstance(store, Checkpoint):
            store.close()
            _remove(self._path(partition))


def _commit(store: Store) -> None:
    if isinstance(store, Checkpoint):
        store.commit({}, None)  # no offsets: the group's committed offsets are the durable ones


def _remove(path: Path) -> None:
    for suffix in ("", "-journal", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


def read_changelog_partition(
    bootstrap: str,
    topic: str,
    partition: int,
    store: Store | None = None,
    *,
    timeout_s: float = READ_TIMEOUT_S,
    commit_every: int = COMMIT_EVERY,
) -> Store:
    """The store a changelog partition describes: every key's last value, tombstones removed.

    Fills `store` (a new dict when None), which should start empty, and returns it; a Checkpoint is
    committed every `commit_every` records, so it never holds more than that beyond its budget.

    Reads from the beginning to the high watermark taken at the start; the owner of the partition is
    the only writer, and it does not write while it loads. read_committed: a transactional writer's
    (streams/kafka/batch_worker.py) aborted batches are not state, and one still open (its writer killed)
    is waited for until the broker ends it."""
    consumer = Consumer(consumer_config(bootstrap, topic + "-loader"))
    if store is None:
        store = {}
    read = 0
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
                read += 1
                if read % commit_every == 0:
                    _commit(store)
                if int(msg.offset() or 0) + 1 >= high:
                    return store
            # compaction can leave offset gaps; the position passing the end also means done
            if consumer.position([TopicPartition(topic, partition)])[0].offset >= high:
                return store
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}/{partition} not read to offset {high} within {timeout_s:.0f} s")
    finally:
        consumer.close()
