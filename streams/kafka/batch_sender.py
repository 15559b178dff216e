"""A worker's writes as batches: produce every message of a batch, then wait once for all their acks.

The faust workers used to send through faust's producer one `await topic.send(...)` per message, each
message framed and queued by aiokafka in Python (a quarter of a busy worker's CPU). Here a batch goes
through one confluent-kafka producer (idempotent, acks=all, murmur2 keys like every producer of the
project: streams/kafka/clients.py) in a thread: `send` returns only when every message is acknowledged,
producing the whole batch again after a pause when the cluster refused any of it (as faust's sends did:
the writes are idempotent downstream, outputs carry fixed event ids, changelog records are keyed
last-value-wins).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

from streams.kafka.clients import producer_config

log = logging.getLogger(__name__)

RETRY_MAX_S = 5.0
FLUSH_SLICE_S = 1.0
# flush() sends at once whatever it waits for, so lingering only delays writes between batches
LINGER_MS = 1


@dataclass(frozen=True, slots=True)
class Outgoing:
    topic: str
    key: bytes
    value: bytes | None  # None: a tombstone
    headers: list[tuple[str, str | bytes | None]] | None = None
    partition: int | None = None  # None: the key's partition
    timestamp_ms: int | None = None  # None: now


class _Reports:
    """Counts one attempt's delivery reports; one bound method for every message (no closure each)."""

    def __init__(self) -> None:
        self.errors: list[KafkaError] = []

    def delivered(self, err: KafkaError | None, _msg: Message) -> None:
        if err is not None:  # called on the thread that flushes (this one): no lock needed
            self.errors.append(err)


class BatchSender:
    def __init__(self, bootstrap: str, name: str, **config: Any) -> None:
        self._bootstrap, self.name, self._config = bootstrap, name, config
        self._lock = threading.Lock()  # one batch at a time: flush() waits for everything queued
        self._producer: Producer | None = None  # made on the first send, let go by close()

    def _new_producer(self) -> Producer:
        return Producer(producer_config(self._bootstrap, **{"linger.ms": LINGER_MS, **self._config}))

    def send(self, messages: Sequence[Outgoing]) -> None:
        """Blocking (call it in a thread): every message acknowledged by all in-sync replicas on return."""
        if not messages:
            return
        with self._lock:
            delay = 0.2
            while True:
                if self._producer is None:
                    self._producer = self._new_producer()
                producer = self._producer
                reports = _Reports()
                for m in messages:
                    self._produce(producer, m, reports.delivered)
                while producer.flush(FLUSH_SLICE_S):  # librdkafka retries until message.timeout.ms
                    pass
                if not reports.errors:
                    return
                log.warning("%s: %d of %d send(s) failed (%s); sending the batch again in %.1f s", self.name,
                            len(reports.errors), len(messages), reports.errors[0], delay)  # fmt: skip
                if any(e.fatal() for e in reports.errors):  # an idempotent producer that cannot go on
                    self._producer = self._new_producer()
                time.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)

    @staticmethod
    def _produce(producer: Producer, m: Outgoing, on_delivery: Any) -> None:
        while True:
            try:
                producer.produce(
                    m.topic,
                    m.value,
                    m.key,
                    partition=-1 if m.partition is None else m.partition,  # -1: the partitioner's (the key's)
                    on_delivery=on_delivery,
                    timestamp=m.timestamp_ms or 0,  # 0: now
                    headers=m.headers or None,
                )
                return
            except BufferError:  # the local queue is full: let deliveries drain, then go on
                producer.poll(0.1)

    def close(self, timeout_s: float = 10.0) -> None:
        """Wait for what is queued, then let the producer go: its librdkafka threads end with it (kept, every
        stopped worker's producer would go on reconnecting to the cluster for the life of the process).
        A later send makes a new one."""
        with self._lock:
            producer, self._producer = self._producer, None
            if producer is not None:
                producer.flush(timeout_s)
