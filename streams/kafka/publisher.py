"""`KafkaPublisher`: the Publisher port on confluent-kafka (idempotent, acks=all, murmur2 keys).

Kafka has no event-id dedup: publishing an event twice writes it twice. Downstream that is harmless
(processors keep done markers, ClickHouse tables are ReplacingMergeTree read with FINAL).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

from streams.closing import Closing
from streams.events import Event
from streams.kafka.clients import producer_config
from streams.kafka.codec import Headers, KafkaCodec, OutMessage
from streams.kafka.naming import Naming

FLUSH_TIMEOUT_S = 60.0
POLL_S = 0.005  # how long a publishing thread waits in poll() before looking at its own batch again


class _Batch:
    """The delivery reports one publish() waits for (called on whichever thread polls)."""

    def __init__(self, count: int) -> None:
        self.remaining = count
        self.errors: list[str] = []
        self.done = threading.Event()
        self._lock = threading.Lock()

    def delivered(self, err: KafkaError | None, _msg: Message) -> None:
        with self._lock:
            if err is not None:
                self.errors.append(str(err))
            self.remaining -= 1
            if self.remaining == 0:
                self.done.set()


class PublishError(Exception):
    """Some messages were not acknowledged by the cluster."""


class KafkaPublisher(Closing):
    def __init__(
        self, bootstrap: str, naming: Naming | None = None, *, codec: KafkaCodec | None = None, **config: Any
    ) -> None:
        self.naming = naming or Naming()
        self.codec = codec or KafkaCodec(self.naming)
        self._producer = Producer(producer_config(bootstrap, **config))
        self._errors: list[KafkaError] = []

    def _on_delivery(self, err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            self._errors.append(err)

    def send(self, message: OutMessage) -> None:
        """Queue one message (not yet durable: call `flush`)."""
        self.send_raw(message.topic, message.key, message.value, message.headers, message.timestamp_ms)

    def send_raw(
        self,
        topic: str,
        key: bytes | None,
        value: bytes,
        headers: Headers | None = None,
        timestamp_ms: int | None = None,
    ) -> None:
        """Queue bytes as they are (tests inject undecodable messages with it); timestamp 0/None = now."""
        self._produce(topic, key, value, headers, timestamp_ms, self._on_delivery)

    def _produce(
        self,
        topic: str,
        key: bytes | None,
        value: bytes,
        headers: Headers | None,
        timestamp_ms: int | None,
        on_delivery: Callable[[KafkaError | None, Message], None],
    ) -> None:
        while True:
            try:
                self._producer.produce(
                    topic, key=key, value=value, headers=headers, timestamp=timestamp_ms or 0, on_delivery=on_delivery
                )
                return
            except BufferError:  # local queue full: let deliveries drain, then retry
                self._producer.poll(0.1)

    def flush(self, timeout_s: float = FLUSH_TIMEOUT_S) -> None:
        left = self._producer.flush(timeout_s)
        errors, self._errors = self._errors, []
        if left or errors:
            raise PublishError(f"{left} message(s) not delivered; errors: {[str(e) for e in errors[:5]]}")

    def publish(self, events: Iterable[Event]) -> int:
        """Put events on their topics keyed by their `key`; durable (acknowledged by all replicas) on return.

        Safe to call from many threads at once: each call waits for its own messages' acknowledgements
        (not a flush of everyone's), so concurrent calls share the producer's batches and round trips."""
        messages = [self.codec.encode(event) for event in events]
        if not messages:
            return 0
        batch = _Batch(len(messages))
        for m in messages:
            self._produce(m.topic, m.key, m.value, m.headers, m.timestamp_ms, batch.delivered)
        deadline = time.monotonic() + FLUSH_TIMEOUT_S
        while not batch.done.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                raise PublishError(f"{batch.remaining} message(s) not delivered within {FLUSH_TIMEOUT_S:g} s")
            self._producer.poll(min(POLL_S, left))  # serves delivery reports: this call's or another's
        if batch.errors:
            raise PublishError(f"{len(batch.errors)} message(s) not delivered; errors: {batch.errors[:5]}")
        return len(messages)

    def close(self) -> None:
        self._producer.flush(FLUSH_TIMEOUT_S)
