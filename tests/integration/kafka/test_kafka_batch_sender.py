"""BatchSender (the faust workers' writes): on return every message is on the cluster, where the faust
producer put it before: the key's partition as every other producer of the project computes it (murmur2),
or the partition given; the event time as the record timestamp; headers; tombstones."""

from __future__ import annotations

import gc
import os
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, Message, TopicPartition

from streams.kafka.batch_sender import BatchSender, Outgoing
from streams.kafka.clients import consumer_config, ensure_changelog
from streams.kafka.publisher import KafkaPublisher
from tests.integration.kafka_broker import unique_name

PARTITIONS = 6


def _everything(bootstrap: str, topic: str, expected: int) -> list[Message]:
    # read_committed as every reader of the project: nothing here waits for a transaction
    consumer = Consumer(consumer_config(bootstrap, f"check-{uuid.uuid4().hex[:6]}"))
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    out: list[Message] = []
    try:
        for _ in range(40):
            out += [m for m in consumer.consume(num_messages=1000, timeout=0.25) if m.error() is None]
            if len(out) >= expected:
                break
    finally:
        consumer.close()
    return out


def test_a_batch_is_on_the_cluster_on_return_where_the_other_producers_put_the_same_keys(kafka_bootstrap: str) -> None:
    topic = unique_name("batch-sender")
    reference = f"{topic}-ref"
    for t in (topic, reference):
        ensure_changelog(kafka_bootstrap, t, PARTITIONS)  # any topic with 6 partitions
    keys = [f"trace-{i}".encode() for i in range(60)]
    sender = BatchSender(kafka_bootstrap, "test")
    sender.send(
        [Outgoing(topic, k, b"v" + k, [("event-type", b"X")], None, 1_767_225_600_000 + i) for i, k in enumerate(keys)]
        + [Outgoing(topic, b"pinned", b"p", None, 4), Outgoing(topic, b"gone", None, None, 5)]
    )
    publisher = KafkaPublisher(kafka_bootstrap)
    for k in keys:
        publisher.send_raw(reference, k, b"r")
    publisher.flush()

    sent = _everything(kafka_bootstrap, topic, len(keys) + 2)
    where = {m.key(): m for m in sent}
    assert len(sent) == len(keys) + 2 == len(where)  # each once
    expected = {m.key(): m.partition() for m in _everything(kafka_bootstrap, reference, len(keys))}
    assert {k: where[k].partition() for k in keys} == {k: expected[k] for k in keys}
    assert len({expected[k] for k in keys}) > 1  # the keys did spread over partitions
    for i, k in enumerate(keys):
        assert where[k].value() == b"v" + k
        assert where[k].timestamp()[1] == 1_767_225_600_000 + i
        assert where[k].headers() == [("event-type", b"X")]
    assert (where[b"pinned"].partition(), where[b"pinned"].value()) == (4, b"p")
    assert (where[b"gone"].partition(), where[b"gone"].value()) == (5, None)
    sender.close()


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))  # librdkafka's native threads included


def test_a_closed_sender_lets_its_producer_threads_go_and_a_later_send_opens_a_new_one(kafka_bootstrap: str) -> None:
    topic = unique_name("batch-sender")
    ensure_changelog(kafka_bootstrap, topic, PARTITIONS)
    gc.collect()
    before = _threads()
    sender = BatchSender(kafka_bootstrap, "test")
    sender.send([Outgoing(topic, b"k1", b"first")])
    assert _threads() > before  # the producer's threads
    sender.close()
    deadline = time.monotonic() + 30
    while _threads() > before and time.monotonic() < deadline:  # librdkafka joins its threads on destroy
        gc.collect()
        time.sleep(0.1)
    assert _threads() <= before, "a closed sender kept its producer's threads (a leak per stopped worker)"
    sender.send([Outgoing(topic, b"k2", b"second")])
    sender.close()
    assert sorted(m.value() for m in _everything(kafka_bootstrap, topic, 2)) == [b"first", b"second"]
