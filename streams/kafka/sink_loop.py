"""The ClickHouse sink on Kafka: batches of every topic -> projection tables, progress kept in the warehouse.

At-least-once into idempotent tables: a batch is inserted with dedup tokens derived from its offsets
(consumers/sink.py), its range recorded in the warehouse's `sink_offsets` before and after
(consumers/sink_progress.py). Where to read from comes from the warehouse, not from a consumer group:
on every assignment the sink seeks each partition to the warehouse's offset (0 for a new or rebuilt
warehouse, so it is backfilled with the whole history), and first redoes, exactly, a batch the
warehouse shows unfinished. The consumer group, `clickhouse-sink-<warehouse id>`, only shares the
partitions between the sinks of one warehouse and carries committed offsets for lag reporting; two
warehouses never share a group, so they never split the history.

While ClickHouse refuses inserts, the sink pauses its partitions (staying in the group), retries the
SAME batch with a bounded exponential backoff: nothing is dropped, nothing is skipped. Messages that do
not decode are dead-lettered (durably, before the batch's rows) and the sink goes on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined, unused-ignore]

from consumers import sink_progress
from consumers.clickhouse import Warehouse, WarehouseError
from consumers.embedded_sink import SINK_GROUP
from consumers.sink import Delivered, MissingProjectionError, ensure_schema, sink_batch
from streams.embedded import DecodeError
from streams.events import DeadLettered
from streams.kafka.clients import NOT_NOW, consumer_config, producer_config
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
REDO_TIMEOUT_S = 60.0


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
        self.redone = 0
        self.source = ""  # "kafka:<cluster id>", known once running
        self.group_name = SINK_GROUP  # logical: clickhouse-sink-<warehouse id> once running
        self.group = ""  # its physical name on the cluster
        self._at_end: dict[tuple[str, int], bool] = {}
        self._committed: dict[tuple[str, int], int] = {}
        self._positions: dict[tuple[str, int], sink_progress.Position] = {}
        self._redo: dict[tuple[str, int], tuple[int, int]] = {}

    @property
    def caught_up(self) -> bool:
        """Every assigned partition read to its end (read_committed: the last stable offset) and written."""
        at_end = dict(self._at_end)
        return bool(at_end) and all(at_end.values()) and not self._redo

    def _assigned(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Start each partition where the warehouse says; a batch it shows unfinished is redone first."""
        try:  # another sink of this warehouse may have moved on while the partition was not ours
            self._positions.update(sink_progress.load(self.warehouse, self.source))
        except WarehouseError as exc:
            log.warning("%s: warehouse offsets unreadable (%s); using the ones known to this sink", self.name, exc)
        for tp in partitions:
            key = (tp.topic, tp.partition)
            self._at_end[key] = False
            position = self._positions.get(key)
            if position is None:
                tp.offset = OFFSET_BEGINNING
                continue
            tp.offset = position.next
            if not position.done:
                self._redo[key] = (position.first, position.next)
        consumer.assign(partitions)

    def _revoked(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self._at_end.pop((tp.topic, tp.partition), None)
            self._committed.pop((tp.topic, tp.partition), None)
            self._redo.pop((tp.topic, tp.partition), None)
        consumer.unassign()

    def _identify(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 3})
        self.source = sink_progress.kafka_source(str(admin.list_topics(timeout=FLUSH_TIMEOUT_S).cluster_id))
        self.group_name = f"{SINK_GROUP}-{sink_progress.warehouse_id(self.warehouse)}"
        self.group = self.naming.group(self.group_name)
        self._positions = sink_progress.load(self.warehouse, self.source)

    def run(self) -> None:
        dlq = Producer(producer_config(self.bootstrap))
        consumer: Consumer | None = None
        try:
            self._retry(None, lambda: ensure_schema(self.warehouse))
            self._retry(None, self._identify)
            consumer = Consumer(consumer_config(self.bootstrap, self.group, **{"enable.partition.eof": True}))
            consumer.subscribe(self.naming.all_physical(), on_assign=self._assigned, on_revoke=self._revoked)
            while not self.stopping:
                msgs = consumer.consume(num_messages=self.batch_size, timeout=POLL_S)
                self._redo_unfinished(consumer, dlq)
                if msgs:
                    self._sink(consumer, dlq, msgs)
        except SinkStopped:
            log.info("%s: stopped with a batch not yet written; the warehouse shows it unfinished", self.name)
        finally:
            if consumer is not None:
                consumer.close()
            dlq.flush(FLUSH_TIMEOUT_S)

    def _sink(self, consumer: Consumer, dlq: Producer, msgs: Sequence[Message]) -> None:
        ends: list[tuple[str, int]] = []
        eof: dict[tuple[str, int], int] = {}
        records: list[Message] = []
        for msg in msgs:
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    end = (str(msg.topic()), int(msg.partition() or 0))
                    ends.append(end)
                    # The end offset is past any transaction marker after the last record: committing it
                    # (once everything before it is durable, below) leaves the group with lag 0.
                    eof[end] = max(eof.get(end, 0), int(msg.offset() or 0))
                else:
                    log.warning("%s: consumer error: %s", self.name, err)
                continue
            records.append(msg)
        offsets = self._write_records(consumer, dlq, records)
        for end, offset in eof.items():
            offsets[end] = max(offsets.get(end, 0), offset)
        # the group's offsets only report lag (progress is in the warehouse): commit what changed
        fresh = {tp: o for tp, o in offsets.items() if self._committed.get(tp) != o}
        if fresh and self._commit(consumer, [TopicPartition(t, p, o) for (t, p), o in fresh.items()]):
            self._committed.update(fresh)
        for end in ends:  # only once this batch is durable
            self._at_end[end] = True

    def _write_records(
        self, consumer: Consumer | None, dlq: Producer, records: Sequence[Message]
    ) -> dict[tuple[str, int], int]:
        """Dead-letter what does not decode, then sink the rest as one batch; returns the next offsets."""
        batch: list[Delivered] = []
        letters: list[DeadLettered] = []
        ranges: dict[tuple[str, int], tuple[int, int]] = {}
        for msg in records:
            source = source_of(msg)
            key = (source.topic, source.partition)
            self._at_end[key] = False
            ranges[key] = (ranges[key][0] if key in ranges else source.offset, source.offset + 1)
            try:
                event = self.codec.decode(msg.value())
            except DecodeError as exc:
                letters.append(dead_letter(SINK_GROUP, exc.reason, exc, source))
                continue
            batch.append(Delivered(self.naming.logical(source.topic), source.partition, source.offset, event))
        if letters:  # a redone batch letters again: same ids, so the same rows under FINAL
            for letter in letters:
                out = self.codec.encode(letter)
                stamp = out.timestamp_ms or 0
                dlq.produce(out.topic, key=out.key, value=out.value, headers=out.headers, timestamp=stamp)
            if dlq.flush(FLUSH_TIMEOUT_S):
                raise RuntimeError(f"{self.name}: dead letters not acknowledged within {FLUSH_TIMEOUT_S} s")
        if ranges:
            self._retry(consumer, lambda: self._write(batch, ranges))
            for key, (first, nxt) in ranges.items():
                self._positions[key] = sink_progress.Position(first, nxt, True)
        self.dead_letters += len(letters)
        if ranges:
            self.progress.tick(handled=len(batch) + len(letters), dead_letters=len(letters))
        return {key: nxt for key, (_first, nxt) in ranges.items()}

    def _redo_unfinished(self, consumer: Consumer, dlq: Producer) -> None:
        """Re-sink, exactly, each batch the warehouse shows begun but not finished (the sink died mid-batch)."""
        for key, (first, nxt) in list(self._redo.items()):
            records = self._read_range(key, first, nxt)
            log.info("%s: redoing the unfinished batch %s[%d] offsets %d..%d", self.name, *key, first, nxt - 1)
            self._write_records(consumer, dlq, records)
            self.redone += 1
            self._redo.pop(key, None)

    def _read_range(self, key: tuple[str, int], first: int, nxt: int) -> list[Message]:
        """The messages at offsets [first, nxt) of one partition, read by a consumer of its own."""
        reader = Consumer(consumer_config(self.bootstrap, self.group, **{"enable.partition.eof": True}))
        records: list[Message] = []
        deadline = time.monotonic() + REDO_TIMEOUT_S
        try:
            reader.assign([TopicPartition(key[0], key[1], first)])
            while time.monotonic() < deadline:
                if self.stopping:
                    raise SinkStopped
                msg = reader.poll(POLL_S)
                if msg is None:
                    continue
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        return records  # the range ends before nxt (it was cut: retention)
                    continue
                offset = int(msg.offset() or 0)
                if offset < nxt:
                    records.append(msg)
                if offset >= nxt - 1:
                    return records
        finally:
            reader.close()
        raise RuntimeError(f"{self.name}: could not re-read {key[0]}[{key[1]}] {first}..{nxt - 1} in time")

    def _commit(self, consumer: Consumer, offsets: list[TopicPartition]) -> bool:
        """Commit a durable batch's offsets to the group (lag reporting; the sink reads from the warehouse's).
        While the coordinator moves or the cluster is away the commit is retried; otherwise it is skipped."""
        delay = FIRST_BACKOFF_S
        while True:
            try:
                consumer.commit(offsets=offsets, asynchronous=False)
                self.commits += 1
                return True
            except KafkaException as exc:
                err: KafkaError = exc.args[0]
                if not (err.retriable() or err.code() in NOT_NOW) or self.stopping:
                    log.warning("%s: offsets not committed (%s); the group's lag stays behind", self.name, err)
                    return False
                log.warning("%s: commit failed (%s); retrying in %.1f s", self.name, err, delay)
                self.wait(delay)
                delay = min(delay * 2, self.max_backoff_s)

    def _write(self, batch: Sequence[Delivered], ranges: sink_progress.Ranges) -> None:
        self.rows += sink_batch(self.warehouse, self.source, batch, ranges)

    def _retry(self, consumer: Consumer | None, action: Callable[[], None]) -> None:
        """Run `action` until it succeeds; meanwhile pause fetching but keep polling (group membership)."""
        delay = FIRST_BACKOFF_S
        paused: list[TopicPartition] = []
        while True:
            try:
                action()
                break
            except MissingProjectionError:
                raise  # not a passing outage: waiting would not bring the table back (`agenttwin rebuild`)
            except WarehouseError as exc:
                self.insert_failures += 1
                log.warning("%s: ClickHouse refused the batch (%s); retrying in %.1f s", self.name, exc, delay)
                if not paused and consumer is not None:
                    paused = consumer.assignment()
                    if paused:
                        consumer.pause(paused)
                self._hold(consumer, delay)
                delay = min(delay * 2, self.max_backoff_s)
        if paused and consumer is not None:
            consumer.resume(paused)

    def _hold(self, consumer: Consumer | None, seconds: float) -> None:
        """Wait while serving the group protocol; paused partitions deliver nothing."""
        if self.wait(0):
            raise SinkStopped
        if consumer is None:
            if self.wait(seconds):
                raise SinkStopped
            return
        msg = consumer.poll(seconds)
        if msg is not None and msg.error() is None:
            # pause() purges prefetched messages; should one slip through, rewind so it is re-read later
            consumer.seek(TopicPartition(str(msg.topic()), int(msg.partition() or 0), int(msg.offset() or 0)))
        if self.stopping:
            raise SinkStopped
