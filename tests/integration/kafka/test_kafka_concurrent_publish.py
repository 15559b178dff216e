"""KafkaPublisher.publish called from many threads at once (the receiver's request threads, no lock): each
call returns once its own messages are acknowledged, and every message is on its topic exactly once."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime

from confluent_kafka import Consumer

from producers.sdk.outcome import outcome_event
from streams.events import Event
from streams.kafka.clients import consumer_config, ensure_topics
from streams.kafka.codec import KafkaCodec
from streams.kafka.naming import Naming
from streams.kafka.publisher import KafkaPublisher
from tests.integration.kafka_broker import unique_name

AT = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
THREADS, PER_THREAD = 8, 25


def _outcome(thread: int, n: int) -> Event:
    trace = uuid.uuid5(uuid.NAMESPACE_OID, f"{thread}-{n}").hex
    return outcome_event(trace, "FAILURE", True, "tool_result", "x", tenant="acme", at=AT)


def _ids_on(bootstrap: str, naming: Naming, topic: str, wanted: int) -> list[str]:
    codec = KafkaCodec(naming)
    consumer = Consumer(consumer_config(bootstrap, naming.group(f"check-{uuid.uuid4().hex[:6]}")))
    consumer.subscribe([naming.topic(topic)])
    seen: list[str] = []
    idle = 0
    try:
        while idle < 20 and len(seen) <= wanted:  # reads on past `wanted` for a while: a duplicate would show
            msgs = consumer.consume(num_messages=500, timeout=0.5)
            idle = 0 if msgs else idle + 1
            seen += [codec.decode(m.value()).event_id for m in msgs if m.error() is None]
            if len(seen) >= wanted:
                idle += 4
    finally:
        consumer.close()
    return seen


def test_concurrent_publishes_each_return_after_their_own_acks(kafka_bootstrap: str) -> None:
    naming = Naming(unique_name("concurrent") + ".")
    ensure_topics(kafka_bootstrap, naming)
    publisher = KafkaPublisher(kafka_bootstrap, naming)
    returned: list[int] = []
    errors: list[BaseException] = []

    def worker(thread: int) -> None:
        try:
            for n in range(PER_THREAD):
                returned.append(publisher.publish([_outcome(thread, n)]))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    assert returned == [1] * (THREADS * PER_THREAD)
    topic = _outcome(0, 0).TOPIC
    seen = _ids_on(kafka_bootstrap, naming, topic, THREADS * PER_THREAD)
    wanted = {_outcome(t, n).event_id for t in range(THREADS) for n in range(PER_THREAD)}
    assert sorted(seen) == sorted(wanted)  # each once, read before any flush or close
    assert publisher.publish([]) == 0
    publisher.close()
