"""The ClickHouse sink on Kafka: batches of every topic -> projection tables, offsets committed after.

At-least-once into idempotent tables: a batch is inserted with dedup tokens derived from its offsets
(consumers/sink.py) and its offsets are committed only after the insert returned. While ClickHouse
refuses inserts, the sink pauses its partitions (staying in the group), retries the SAME batch with a
bounded exponential backoff and commits nothing: nothing is dropped, nothing is skipped. Messages that
do not decode are dead-lettered (durably, before the commit) and the sink goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from consumers.clickhouse import Warehouse, WarehouseError
from consumers.embedded_sink import SINK_GROUP
from consumers.sink import Delivered, ensure_schema, write_batch
from streams.embedded import DecodeError
from streams.events import DeadLettered
from streams.kafka.clients import consumer_config, producer_config
from streams.kafka.codec import KafkaCodec, dead_letter
from streams.kafka.naming import Naming
from streams.kafka.planner_loop import source_of
from streams.kafka.thread_loop import ThreadLoop

log = logging.getLogger(__name__)

BATCH_SIZE = 5000
POLL_S = 0.2
FIRST_BACKOFF_S = 0.1
MAX_BACKOFF_S = 5.0
FLUSH_TIMEOUT_S = 60.0
# Commit errors that mean "not now" rather than "not yours" (librdkafka does not flag them retriable).
RETRY_COMMIT = frozenset(
    {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._WAIT_COORD,
    }
)


class SinkStopped(Exception):
    """Asked to stop while a batch was still not durable: its offsets stay uncommitted."""


class SinkLoop(ThreadLoop):
    def __init__(
        self,
        bootstrap: str,
        naming: Naming,
        warehouse: Warehouse,
        *,
        batch_size: int = BATCH_SIZE,
        max_backoff_s: float = MAX_BACKOFF_S,
    ) -> None:
        super().__init__(naming.group(SINK_GROUP))
        self.bootstrap = bootstrap
        self.naming = naming
        self.warehouse = warehouse
        self.codec = KafkaCodec(naming)
        self.batch_size = batch_size
        self.max_backoff_s = max_backoff_s
        self.rows = 0
        self.insert_failures = 0
        self.commits = 0
        self.dead_letters = 0
        self._at_end: dict[tuple[str, int], bool] = {}
        self._committed: dict[tuple[str, int], int] = {}

    @property
    def caught_up(self) -> bool:
        """Every assigned partition read to its end (read_committed: the last stable offset) and written."""
        at_end = dict(self._at_end)
        return bool(at_end) and all(at_end.values())

    def _assigned(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self._at_end[(tp.topic, tp.partition)] = False

    def _revoked(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self._at_end.pop((tp.topic, tp.partition), None)
            self._committed.pop((tp.topic, tp.partition), None)

    def run(self) -> None:
        consumer = Consumer(consumer_config(self.bootstrap, self.name, **{"enable.partition.eof": True}))
        dlq = Producer(producer_config(self.bootstrap))
        try:
            self._retry(consumer, lambda: ensure_schema(self.warehouse))
            consumer.subscribe(self.naming.all_physical(), on_assign=self._assigned, on_revoke=self._revoked)
            while not self.stopping:
                msgs = consumer.consume(num_messages=self.batch_size, timeout=POLL_S)
                if msgs:
                    self._sink(consumer, dlq, msgs)
        except SinkStopped:
            log.info("%s: stopped with a batch not yet written; its offsets stay uncommitted", self.name)
        finally:
            consumer.close()
            dlq.flush(FLUSH_TIMEOUT_S)

    def _sink(self, consumer: Consumer, dlq: Producer, msgs: Sequence[Message]) -> None:
        batch: list[Delivered] = []
        letters: list[DeadLettered] = []
        offsets: dict[tuple[str, int], int] = {}
        ends: list[tuple[str, int]] = []
        for msg in msgs:
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    end = (str(msg.topic()), int(msg.partition() or 0))
                    ends.append(end)
                    # The end offset is past any transaction marker after the last record: committing it
                    # (once everything before it is durable, below) leaves the group with lag 0.
                    offsets[end] = max(offsets.get(end, 0), int(msg.offset() or 0))
                else:
                    log.warning("%s: consumer error: %s", self.name, err)
                continue
            source = source_of(msg)
            self._at_end[(source.topic, source.partition)] = False
            offsets[(source.topic, source.partition)] = source.offset + 1
            try:
                event = self.codec.decode(msg.value())
            except DecodeError as exc:
                letters.append(dead_letter(SINK_GROUP, exc.reason, exc, source))
                continue
            batch.append(Delivered(self.naming.logical(source.topic), source.partition, source.offset, event))
        if letters:
            for letter in letters:
                out = self.codec.encode(letter)
                stamp = out.timestamp_ms or 0
                dlq.produce(out.topic, key=out.key, value=out.value, headers=out.headers, timestamp=stamp)
            if dlq.flush(FLUSH_TIMEOUT_S):
                raise RuntimeError(f"{self.name}: dead letters not acknowledged within {FLUSH_TIMEOUT_S} s")
        if batch:
            self._retry(consumer, lambda: self._write(batch))
        fresh = {tp: o for tp, o in offsets.items() if self._committed.get(tp) != o}
        if fresh and self._commit(consumer, [TopicPartition(t, p, o) for (t, p), o in fresh.items()]):
            self._committed.update(fresh)
        self.dead_letters += len(letters)
        for end in ends:  # only once this batch is durable
            self._at_end[end] = True
        if batch or letters:
            self.progress.tick(handled=len(batch) + len(letters), dead_letters=len(letters))

    def _commit(self, consumer: Consumer, offsets: list[TopicPartition]) -> bool:
        """Commit a durable batch's offsets. While the coordinator moves or the cluster is away the commit
        is retried; if the partitions moved on, the batch is left to be redelivered (harmless)."""
        delay = FIRST_BACKOFF_S
        while True:
            try:
                consumer.commit(offsets=offsets, asynchronous=False)
                self.commits += 1
                return True
            except KafkaException as exc:
                err: KafkaError = exc.args[0]
                if not (err.retriable() or err.code() in RETRY_COMMIT) or self.stopping:
                    log.warning("%s: offsets not committed (%s); the batch will be redelivered", self.name, err)
                    return False
                log.warning("%s: commit failed (%s); retrying in %.1f s", self.name, err, delay)
                self.wait(delay)
                delay = min(delay * 2, self.max_backoff_s)

    def _write(self, batch: Sequence[Delivered]) -> None:
        self.rows += write_batch(self.warehouse, batch)

    def _retry(self, consumer: Consumer, action: Callable[[], None]) -> None:
        """Run `action` until it succeeds; meanwhile pause fetching but keep polling (group membership)."""
        delay = FIRST_BACKOFF_S
        paused: list[TopicPartition] = []
        while True:
            try:
                action()
                break
            except WarehouseError as exc:
                self.insert_failures += 1
                log.warning("%s: ClickHouse refused the batch (%s); retrying in %.1f s", self.name, exc, delay)
                if not paused:
                    paused = consumer.assignment()
                    if paused:
                        consumer.pause(paused)
                self._hold(consumer, delay)
                delay = min(delay * 2, self.max_backoff_s)
        if paused:
            consumer.resume(paused)

    def _hold(self, consumer: Consumer, seconds: float) -> None:
        """Wait while serving the group protocol; paused partitions deliver nothing."""
        if self.wait(0):
            raise SinkStopped
        msg = consumer.poll(seconds)
        if msg is not None and msg.error() is None:
            # pause() purges prefetched messages; should one slip through, rewind so it is re-read later
            consumer.seek(TopicPartition(str(msg.topic()), int(msg.partition() or 0), int(msg.offset() or 0)))
        if self.stopping:
            raise SinkStopped
