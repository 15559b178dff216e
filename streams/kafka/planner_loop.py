"""The planner on a transactional consume-transform-produce loop (confluent-kafka, not faust EOS).

A batch of requests, every output (PairPlanned + both sides' CasePlanned, dead letters) and the
consumer offsets commit in ONE Kafka transaction: read_committed readers see a pair whole or not at
all, and a crash never leaves half a pair. The planner's store (evaluation id -> request hash) is
rebuilt on assignment by re-planning the committed history of the partition (outputs discarded), so a
retried request after a restart still finds its pair and yields nothing new.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Sequence
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from streams.embedded import DecodeError
from streams.events import EvaluationRequested, Event
from streams.kafka.clients import consume_ready, consumer_config, producer_config
from streams.kafka.codec import KafkaCodec, OutMessage, SourceRef, dead_letter
from streams.kafka.naming import Naming
from streams.kafka.thread_loop import ThreadLoop
from streams.kafka.transactions import ClusterWatch, bounded
from streams.processors.planner import Planner

log = logging.getLogger(__name__)

TXN_TIMEOUT_S = 30.0
BATCH = 100
MAX_BACKOFF_S = 5.0


def _is_end(msg: Message) -> bool:
    err = msg.error()
    return err is not None and err.code() == KafkaError._PARTITION_EOF


def source_of(msg: Message) -> SourceRef:
    value = msg.value()
    return SourceRef(str(msg.topic()), int(msg.partition() or 0), int(msg.offset() or 0), msg.key(), value or b"")


class PlannerLoop(ThreadLoop):
    def __init__(self, bootstrap: str, naming: Naming, *, planner: Planner | None = None) -> None:
        self.planner = planner or Planner()
        super().__init__(naming.group(self.planner.name))
        self.bootstrap = bootstrap
        self.naming = naming
        self.codec = KafkaCodec(naming)
        self.store: dict[str, Any] = {}
        self.topic = naming.topic("evaluations")
        self._cluster = ClusterWatch()

    def _new_producer(self) -> Producer:
        self._cluster.take()
        producer = Producer(
            producer_config(
                self.bootstrap,
                **{
                    "transactional.id": self.naming.transactional_id(self.planner.name),
                    "linger.ms": 1,
                    "error_cb": self._cluster.on_error,
                },
            )
        )
        producer.init_transactions(TXN_TIMEOUT_S)
        return producer

    def run(self) -> None:
        consumer = Consumer(
            consumer_config(
                self.bootstrap, self.name, error_cb=self._cluster.on_error, **{"enable.partition.eof": True}
            )
        )
        producer = self._new_producer()
        consumer.subscribe([self.topic], on_assign=self._rebuild)
        try:
            while not self.stopping:
                got = consume_ready(consumer, BATCH, 0.5)
                msgs = [m for m in got if not self._is_error(m)]
                producer.poll(0)  # serve the producer's error callback while idle
                if msgs:
                    producer = self._transact(producer, consumer, msgs)
                self._commit_ends(consumer, [m for m in got if _is_end(m)])
        finally:
            consumer.close()
            producer.flush(TXN_TIMEOUT_S)

    def _commit_ends(self, consumer: Consumer, ends: Sequence[Message]) -> None:
        """Commit the end offset of partitions read to their end: it lies past the transaction markers that
        follow the last record (the planner's own PairPlanned on `evaluations`), so the group's lag is 0.
        Everything before the end was committed in a transaction already; a failure here is harmless."""
        offsets = [TopicPartition(str(m.topic()), int(m.partition() or 0), int(m.offset() or 0)) for m in ends]
        if not offsets:
            return
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            log.info("%s: end offsets not committed (%s); the next end commits them", self.name, exc.args[0])

    def _is_error(self, msg: Message) -> bool:
        err = msg.error()
        if err is not None and err.code() == KafkaError._PARTITION_EOF:
            return True
        if err is not None:
            log.warning("%s: consumer error: %s", self.name, err)
        return err is not None

    def _outputs(self, msg: Message) -> list[Event]:
        source = source_of(msg)
        try:
            event = self.codec.decode(msg.value())
        except DecodeError as exc:
            return [dead_letter(self.planner.name, exc.reason, exc, source)]
        try:
            return self.planner.handle(self.store, event)
        except Exception as exc:  # the stream boundary: a poison request is dead-lettered
            return [dead_letter(self.planner.name, "PROCESSING_ERROR", exc, source)]

    def _transact(self, producer: Producer, consumer: Consumer, msgs: Sequence[Message]) -> Producer:
        """Process a batch in one transaction; on failure undo the store, abort and redo the batch."""
        snapshot = dict(self.store)
        offsets: dict[tuple[str, int], int] = {}
        for m in msgs:
            offsets[(str(m.topic()), int(m.partition() or 0))] = int(m.offset() or 0) + 1
        delay = 0.2
        if self._cluster.take():
            # a broker restart between transactions: the next send_offsets_to_transaction could hang
            log.warning("%s: the cluster was unreachable; starting a new transactional producer", self.name)
            producer = self._fresh_producer()
        while True:
            produced = 0
            try:
                producer.begin_transaction()
                for m in msgs:
                    for event in self._outputs(m):
                        out = self.codec.encode(event)
                        self._produce(producer, out)
                        produced += 1
                positions = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
                group = consumer.consumer_group_metadata()
                bounded(TXN_TIMEOUT_S, producer.send_offsets_to_transaction, positions, group, TXN_TIMEOUT_S)
                self._commit(producer)
                self.progress.tick(handled=len(msgs), produced=produced)
                return producer
            except KafkaException as exc:
                err: KafkaError = exc.args[0]
                log.warning("%s: transaction failed (%s); redoing the batch", self.name, err)
                self.store = dict(snapshot)
                if self.wait(delay):
                    raise
                delay = min(delay * 2, MAX_BACKOFF_S)
                if err.fatal() or not self._abort(producer):
                    # a new instance with the same transactional id fences the old one and aborts
                    # whatever transaction it left open
                    producer = self._fresh_producer()

    @staticmethod
    def _produce(producer: Producer, out: OutMessage) -> None:
        while True:
            try:
                producer.produce(
                    out.topic, key=out.key, value=out.value, headers=out.headers, timestamp=out.timestamp_ms or 0
                )
                return
            except BufferError:
                producer.poll(0.1)

    def _commit(self, producer: Producer) -> None:
        while True:
            try:
                producer.commit_transaction(TXN_TIMEOUT_S)
                return
            except KafkaException as exc:
                if not exc.args[0].retriable() or self.stopping:
                    raise
                time.sleep(0.2)

    def _abort(self, producer: Producer, attempts: int = 3) -> bool:
        """Abort the open transaction; False if that did not work (the caller replaces the producer)."""
        for _ in range(attempts):
            try:
                producer.abort_transaction(TXN_TIMEOUT_S)
                return True
            except KafkaException as exc:
                log.warning("%s: abort failed (%s)", self.name, exc.args[0])
                if not exc.args[0].retriable() or self.stopping:
                    return False
                time.sleep(0.2)
        return False

    def _fresh_producer(self) -> Producer:
        """A new transactional producer, retried while the cluster is unreachable."""
        delay = 0.2
        while True:
            try:
                return self._new_producer()
            except KafkaException as exc:
                if self.wait(delay):
                    raise
                log.warning("%s: no transactional producer yet (%s); retrying", self.name, exc.args[0])
                delay = min(delay * 2, MAX_BACKOFF_S)

    def _rebuild(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Re-plan each assigned partition's committed history into the store (outputs discarded)."""
        committed = {
            tp.partition: tp.offset for tp in consumer.committed(partitions, timeout=TXN_TIMEOUT_S) if tp.offset > 0
        }
        if not committed:
            return
        reader = Consumer(consumer_config(self.bootstrap, self.name + "-rebuild", **{"enable.partition.eof": True}))
        try:
            reader.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in committed])
            left = dict(committed)
            deadline = time.monotonic() + TXN_TIMEOUT_S
            while left and time.monotonic() < deadline:
                for msg in consume_ready(reader, BATCH, 0.5):
                    p, offset = int(msg.partition() or 0), int(msg.offset() or 0)
                    if _is_end(msg) and p in left and offset >= left[p]:
                        # the committed offset may lie past the markers after the last record
                        del left[p]
                    if msg.error() is not None or p not in left or offset >= left[p]:
                        continue
                    if offset + 1 >= left[p]:
                        del left[p]
                    self._replay(msg)
            if left:
                raise TimeoutError(f"{self.name}: could not re-read partitions {sorted(left)} to rebuild")
        finally:
            reader.close()

    def _replay(self, msg: Message) -> None:
        try:
            event = self.codec.decode(msg.value())
        except DecodeError:
            return  # dead-lettered when it was first consumed
        if isinstance(event, EvaluationRequested):
            # history only: a request that failed was dead-lettered when it was first consumed
            with contextlib.suppress(Exception):
                self.planner.handle(self.store, event)
