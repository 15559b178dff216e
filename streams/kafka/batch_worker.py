"""A stateful processor on a transactional confluent-kafka loop: a batch at a time, no per-message machinery.

What runs the outcome join (agenttwin/kafka_cli.py says which processors run here and which on faust).
A faust agent paid, per message, for aiokafka's fetch and unpack in Python, an asyncio future and task
hops, and two waits (outputs, then changelog) per batch; the join's own work was under half of the process.
Here one thread consumes what librdkafka has fetched (up to BATCH_MAX messages), hands the batch to the
processor (streams/kafka/batch_step.py), and writes it in ONE Kafka transaction: every output, the batch's
store changes on the changelog, and the input offsets (`send_offsets_to_transaction`). read_committed readers
(the sink, the alerts tail, a store being loaded) see a batch whole or not at all: a worker killed mid-batch
leaves an open transaction that the broker aborts, and whoever owns the partitions next redoes the batch from
the committed offsets with the store of the committed changelog, so no alert is lost or doubled.

Members share the input partitions with the range assignor, which gives partition p of every input to the
same member (the inputs are co-partitioned; a sticky assignor balances partitions over all topics and would
split them). A partition's store is (re)loaded from its changelog partition
(read_committed, to its end: streams/kafka/partition_stores.py) the first time the member touches it after
it was assigned, into a fresh local file that keeps a memory budget of keys (STATE_BUDGET split over the
partitions) and the rest on disk; the changelog stays the source of truth (docs/guides/kafka-workers.md).
Each process has its own transactional id; a killed member is fenced by its group generation
(KIP-447), and its open transaction ends after TRANSACTION_TIMEOUT_S, which the next owner waits for (its
committed offsets and changelog stay unstable until then).

The same group, changelog topic and store codec as the faust worker: a deployment moves from one to the other
once every member of the old kind is stopped (the two kinds cannot share a group: faust has its own assignor).
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from streams.checkpoints import STATE_BUDGET
from streams.kafka.batch_sender import Outgoing
from streams.kafka.batch_step import BatchOutcome, apply_changes, changelog_records, handle_batch
from streams.kafka.clients import consume_ready, consumer_config, ensure_changelog, producer_config
from streams.kafka.codec import KafkaCodec
from streams.kafka.naming import Naming
from streams.kafka.owned_folders import OwnedFolder, sweep
from streams.kafka.partition_stores import PartitionStores, read_changelog_partition
from streams.kafka.planner_loop import source_of
from streams.kafka.reading import committed_positions
from streams.kafka.staged_store import StagedStore
from streams.kafka.thread_loop import ThreadLoop
from streams.kafka.transactions import ClusterWatch, bounded
from streams.processors.base import Processor
from streams.topics import TOPIC_BY_NAME

log = logging.getLogger(__name__)

BATCH_MAX = 2000
POLL_S = 0.05  # the longest a batch waits for its first message
TICK_INTERVAL_S = 5.0
CALL_TIMEOUT_S = 30.0  # a transactional call (init, offsets, commit, abort)
# A killed member's open transaction holds its partitions' offsets and changelog this long before the broker
# aborts it; a batch's transaction lasts only its writes (the processing happens before it begins).
TRANSACTION_TIMEOUT_S = 10.0
MAX_BACKOFF_S = 5.0
# under the data dir: a folder per worker process (streams/kafka/owned_folders.py), a file per partition in it
STORES_DIR = "stores"


class BatchWorker(ThreadLoop):
    def __init__(
        self,
        processor: Processor,
        bootstrap: str,
        naming: Naming,
        data_dir: Path | None = None,  # where the store files go; None: a temporary folder
        *,
        tick_interval_s: float = TICK_INTERVAL_S,
        batch_max: int = BATCH_MAX,
        state_budget: int = STATE_BUDGET,  # store keys in memory over all partitions; the rest on disk
    ) -> None:
        partitions = {TOPIC_BY_NAME[t].partitions for t in processor.inputs}
        if len(partitions) != 1:
            raise ValueError(f"{processor.name}: inputs {processor.inputs} are not co-partitioned")
        super().__init__(naming.group(processor.name))
        self.processor = processor
        self.bootstrap, self.naming = bootstrap, naming
        (self._partitions,) = partitions
        self.changelog = naming.changelog(processor.name)
        self.data_dir = data_dir
        # split over every partition of the inputs, so all of them assigned here stay within the budget
        self.partition_budget = max(1, state_budget // self._partitions)
        self.stores = PartitionStores()  # replaced by disk-backed stores when the loop runs
        self.transactions = 0
        self._codec = KafkaCodec(naming)
        self._inputs = [naming.topic(t) for t in processor.inputs]
        self._version: str | None = getattr(processor, "evaluator_version", None)
        self._tick_interval_s, self._batch_max = tick_interval_s, batch_max
        self._assigned: set[int] = set()
        self._watermark: datetime | None = None
        self._ticked_at: datetime | None = None
        self._next_tick = 0.0
        self._committed: dict[tuple[str, int], int] = {}
        # one per process: members are fenced by their group generation, not by a shared id (KIP-447); the
        # store folder too, so two processes on one data dir never share a file
        self._uid = uuid.uuid4().hex[:12]
        self._transactional_id = naming.transactional_id(f"{processor.name}-{self._uid}")
        self._consumer: Consumer | None = None
        self._cluster = ClusterWatch()

    async def start(self) -> None:
        await asyncio.to_thread(ensure_changelog, self.bootstrap, self.changelog, self._partitions)
        await super().start()

    # --- the loop -------------------------------------------------------------------------------

    def _stores_folder(self) -> tuple[Path, OwnedFolder | None]:
        if self.data_dir is None:
            return Path(tempfile.mkdtemp(prefix=f"{self.name}-{self._uid}-")), None
        parent = self.data_dir / STORES_DIR
        for gone in sweep(parent):  # left by killed workers: caches nobody will read
            log.info("%s: removed %s, left by a worker that is gone", self.name, gone)
        owned = OwnedFolder(parent, f"{self.name}-{self._uid}")
        return owned.path, owned

    def run(self) -> None:
        folder, owned = self._stores_folder()
        self.stores = PartitionStores(folder, budget=self.partition_budget)
        try:
            self._run()
        finally:
            self.stores.close()  # the files are a cache of the changelogs: nothing to keep
            if owned is not None:
                owned.release()

    def _run(self) -> None:
        consumer = Consumer(
            consumer_config(
                self.bootstrap,
                self.name,
                # range: partition p of every input to one member (co-partitioned: one store per p)
                error_cb=self._cluster.on_error,
                **{"enable.partition.eof": True, "partition.assignment.strategy": "range"},
            )
        )
        self._consumer = consumer
        producer = self._fresh_producer()
        consumer.subscribe(self._inputs, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke)
        try:
            while not self.stopping:
                got = consume_ready(consumer, self._batch_max, POLL_S)
                msgs = [m for m in got if m.error() is None]
                ok = True
                producer.poll(0)  # serve the producer's error callback while idle
                if msgs and self._cluster.take():
                    # a broker restart since the last transaction: send_offsets_to_transaction could hang
                    log.warning("%s: the cluster was unreachable; starting a new transactional producer", self.name)
                    producer = self._fresh_producer()
                if msgs:
                    producer, ok = self._batch(producer, consumer, msgs)
                if ok:
                    self._commit_ends(consumer, [m for m in got if _is_end(m)])
                for m in got:
                    err = m.error()
                    if err is not None and err.code() != KafkaError._PARTITION_EOF:
                        log.warning("%s: consumer error: %s", self.name, err)
                if time.monotonic() >= self._next_tick:
                    producer = self._tick(producer)
        finally:
            self._consumer = None
            consumer.close()
            producer.flush(CALL_TIMEOUT_S)

    def _batch(self, producer: Producer, consumer: Consumer, msgs: Sequence[Message]) -> tuple[Producer, bool]:
        sources = [source_of(m) for m in msgs]
        for p in sorted({s.partition for s in sources}):
            self._load(p)
        done = handle_batch(
            self.processor, self._codec, sources, self.stores.__getitem__, stage=self.processor.name,
            evaluator_version=self._version,
        )  # fmt: skip
        if done.watermark is not None and (self._watermark is None or done.watermark > self._watermark):
            self._watermark = done.watermark
        offsets: dict[tuple[str, int], int] = {}
        for s in sources:
            offsets[(s.topic, s.partition)] = s.offset + 1
        producer, ok = self._write(producer, consumer, done, offsets)
        if ok:
            self._committed.update(offsets)
            self.progress.tick(handled=len(msgs), produced=len(done.outputs) - done.letters, dead_letters=done.letters)
        return producer, ok

    def _tick(self, producer: Producer) -> Producer:
        """The processor's timer over every assigned partition, when event time moved since the last one."""
        self._next_tick = time.monotonic() + self._tick_interval_s
        now = self._watermark
        if now is None or now == self._ticked_at or self._consumer is None:
            return producer
        done = BatchOutcome()
        for p in sorted(self._assigned):
            self._load(p)
            done.views[p] = StagedStore(self.stores[p])
            done.outputs += self.processor.tick(done.views[p], now)
        producer, ok = self._write(producer, self._consumer, done, {})
        if ok:
            self._ticked_at = now
            if done.outputs:
                self.progress.tick(produced=len(done.outputs))
        return producer

    # --- writing: one transaction a batch ----------------------------------------------------------

    def _write(
        self, producer: Producer, consumer: Consumer, done: BatchOutcome, offsets: dict[tuple[str, int], int]
    ) -> tuple[Producer, bool]:
        """Outputs, store changes and offsets in one transaction; then the changes go to the stores.

        On failure the transaction is aborted, nothing reaches the stores, and the consumer goes back to the
        committed offsets: the batch is read and handled again (by this member, or by the next owner of its
        partitions if the group moved on meanwhile). Returns the producer to go on with and whether it
        committed."""
        changes = {p: view.changes() for p, view in done.views.items()}
        records = [_outgoing(self._codec.encode(e)) for e in done.outputs]
        records += changelog_records(self.changelog, changes.items())
        if not records and not offsets:
            self.stores.commit(set(done.views))  # nothing changed; the reads are trimmed to the budget
            return producer, True
        try:
            producer.begin_transaction()
            for r in records:
                _produce(producer, r)
            if offsets:
                positions = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
                group = consumer.consumer_group_metadata()
                bounded(CALL_TIMEOUT_S, producer.send_offsets_to_transaction, positions, group, CALL_TIMEOUT_S)
            self._before_commit(len(done.outputs))
            producer.commit_transaction(CALL_TIMEOUT_S)
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            log.warning("%s: transaction failed (%s); going back to the committed offsets", self.name, err)
            return self._recover(producer, consumer, err), False
        self.transactions += 1
        for p, partition_changes in changes.items():
            if partition_changes and self.stores.loaded(p):
                apply_changes(self.stores[p], partition_changes)
        self.stores.commit(set(changes))  # to the local files, keeping the budget in memory
        return producer, True

    def _before_commit(self, outputs: int) -> None:
        """A seam for the fault tests: everything of the batch is written, nothing committed yet."""

    def _recover(self, producer: Producer, consumer: Consumer, err: KafkaError) -> Producer:
        delay = 0.2
        while True:
            try:
                if err.fatal() or not _abort(producer):
                    # a fenced or broken producer cannot go on; its transaction ends with its timeout
                    producer = self._fresh_producer()
                self._rewind(consumer)
                return producer
            except KafkaException as exc:
                err = exc.args[0]
                log.warning("%s: recovering from a failed transaction (%s); again in %.1f s", self.name, err, delay)
                if self.wait(delay):
                    raise
                delay = min(delay * 2, MAX_BACKOFF_S)

    def _rewind(self, consumer: Consumer) -> None:
        """Seek every assigned input partition back to its committed offset (the start if none)."""
        parts = [TopicPartition(t, p) for t in self._inputs for p in sorted(self._assigned)]
        for tp in committed_positions(consumer, parts):
            offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
            consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
        self._committed.clear()

    def _commit_ends(self, consumer: Consumer, ends: Sequence[Message]) -> None:
        """Commit the end offset of partitions read to their end when it lies past what the group committed
        (transaction markers after the last record of a transactional writer), so the group's lag is 0.
        Every record before it was committed in a transaction already; a failure here is harmless."""
        offsets = []
        for m in ends:
            key, offset = (str(m.topic()), int(m.partition() or 0)), int(m.offset() or 0)
            if self._committed.get(key, -1) < offset:
                offsets.append(TopicPartition(key[0], key[1], offset))
        if not offsets:
            return
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            log.info("%s: end offsets not committed (%s); the next end commits them", self.name, exc.args[0])
            return
        for tp in offsets:
            self._committed[(tp.topic, tp.partition)] = tp.offset

    def _fresh_producer(self) -> Producer:
        """A transactional producer, retried while the cluster is unreachable."""
        delay = 0.2
        while True:
            try:
                config = {
                    "transactional.id": self._transactional_id,
                    "transaction.timeout.ms": int(TRANSACTION_TIMEOUT_S * 1000),
                    "linger.ms": 2,
                    "error_cb": self._cluster.on_error,
                }
                self._cluster.take()
                producer = Producer(producer_config(self.bootstrap, **config))
                producer.init_transactions(CALL_TIMEOUT_S)
                return producer
            except KafkaException as exc:
                if self.wait(delay):
                    raise
                log.warning("%s: no transactional producer yet (%s); retrying", self.name, exc.args[0])
                delay = min(delay * 2, MAX_BACKOFF_S)

    # --- partitions and their stores ----------------------------------------------------------------

    def _on_assign(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        added = {tp.partition for tp in partitions}
        # another member may have written these since this one last held them: load them again when used
        self.stores.forget(added)
        self._assigned |= added

    def _on_revoke(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        removed = {tp.partition for tp in partitions}
        self.stores.forget(removed)
        self._assigned -= removed
        for key in [k for k in self._committed if k[1] in removed]:
            del self._committed[key]

    def _load(self, partition: int) -> None:
        delay = 0.2
        while not self.stores.loaded(partition):
            try:
                self.stores.load(
                    partition, lambda store: read_changelog_partition(self.bootstrap, self.changelog, partition, store)
                )
            except (KafkaException, TimeoutError, RuntimeError) as exc:  # the cluster away, or a dead member's
                # transaction still open: wait, read again
                log.warning("%s: could not read %s/%d (%s); retrying in %.1f s", self.name, self.changelog,
                            partition, exc, delay)  # fmt: skip
                if self.wait(delay):
                    raise
                delay = min(delay * 2, MAX_BACKOFF_S)


def _is_end(msg: Message) -> bool:
    err = msg.error()
    return err is not None and err.code() == KafkaError._PARTITION_EOF


def _outgoing(m: Any) -> Outgoing:
    return Outgoing(m.topic, m.key, m.value, m.headers, None, m.timestamp_ms)


def _produce(producer: Producer, m: Outgoing) -> None:
    while True:
        try:
            producer.produce(
                m.topic,
                m.value,
                m.key,
                partition=-1 if m.partition is None else m.partition,
                timestamp=m.timestamp_ms or 0,
                headers=m.headers or None,
            )
            return
        except BufferError:  # the local queue is full: let deliveries drain, then go on
            producer.poll(0.05)


def _abort(producer: Producer, attempts: int = 3) -> bool:
    """Abort the open transaction; False if that did not work (the caller replaces the producer)."""
    for _ in range(attempts):
        try:
            producer.abort_transaction(CALL_TIMEOUT_S)
            return True
        except KafkaException as exc:
            if not exc.args[0].retriable():
                return False
            time.sleep(0.2)
    return False
