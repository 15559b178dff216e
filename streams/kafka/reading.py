"""Reading topics back: tail a topic's committed events incrementally, and check consumer-group lag."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from streams.closing import Closing
from streams.embedded import DecodeError
from streams.events import Event
from streams.kafka.clients import NOT_NOW, consume_ready, consumer_config
from streams.kafka.codec import KafkaCodec
from streams.kafka.naming import Naming
from streams.topics import TOPIC_BY_NAME

READ_TIMEOUT_S = 30.0


class TopicTail(Closing):
    """Every committed event of some topics from offset 0; `read_new()` returns what arrived since."""

    def __init__(self, bootstrap: str, naming: Naming, topics: Sequence[str]) -> None:
        self.codec = KafkaCodec(naming)
        self._consumer = Consumer(consumer_config(bootstrap, naming.group("reader"), **{"enable.partition.eof": True}))
        parts = [
            TopicPartition(naming.topic(t), p, OFFSET_BEGINNING)
            for t in topics
            for p in range(TOPIC_BY_NAME[t].partitions)
        ]
        self._at_end = {(tp.topic, tp.partition): False for tp in parts}
        self._consumer.assign(parts)
        self.undecodable = 0

    def read_new(self, timeout_s: float = READ_TIMEOUT_S) -> list[Event]:
        """Consume until every partition reported its end (read_committed: the last stable offset)."""
        out: list[Event] = []
        deadline = time.monotonic() + timeout_s
        quiet = False
        while time.monotonic() < deadline:
            msgs = consume_ready(self._consumer, 1000, 0.1)
            for msg in msgs:
                err = msg.error()
                key = (str(msg.topic()), int(msg.partition() or 0))
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        self._at_end[key] = True
                    continue
                self._at_end[key] = False
                try:
                    out.append(self.codec.decode(msg.value()))
                except DecodeError:
                    self.undecodable += 1
            if all(self._at_end.values()):
                if not msgs and quiet:
                    return out
                quiet = not msgs
        raise TimeoutError(f"topics not read to their end within {timeout_s} s")

    def close(self) -> None:
        self._consumer.close()


def read_all(bootstrap: str, naming: Naming, topics: Sequence[str]) -> list[Event]:
    with TopicTail(bootstrap, naming, topics) as tail:
        return tail.read_new()


def partition_lags(
    bootstrap: str, naming: Naming, groups: Mapping[str, Sequence[str]]
) -> dict[tuple[str, str, int], int]:
    """(group, topic, partition) -> messages the consumer group has not committed yet (logical names)."""
    lags: dict[tuple[str, str, int], int] = {}
    for group, topics in groups.items():
        consumer = Consumer(consumer_config(bootstrap, naming.group(group)))
        try:
            parts = [TopicPartition(naming.topic(t), p) for t in topics for p in range(TOPIC_BY_NAME[t].partitions)]
            for tp in committed_positions(consumer, parts):
                _low, high = consumer.get_watermark_offsets(tp, timeout=READ_TIMEOUT_S)
                lags[(group, naming.logical(tp.topic), tp.partition)] = max(0, high - max(tp.offset, 0))
        finally:
            consumer.close()
    return lags


def committed_positions(
    consumer: Consumer, parts: Sequence[TopicPartition], *, timeout_s: float = READ_TIMEOUT_S
) -> list[TopicPartition]:
    """`consumer.committed(parts)`, asked again while the answer is "not now" (the group's coordinator moving or
    still loading, as for a fresh cluster's first groups, or the cluster away) until `timeout_s` has passed."""
    deadline = time.monotonic() + timeout_s
    delay = 0.1
    while True:
        try:
            return list(consumer.committed(list(parts), timeout=max(1.0, deadline - time.monotonic())))
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            if not (err.retriable() or err.code() in NOT_NOW) or time.monotonic() + delay >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 2.0)


def group_lag(bootstrap: str, naming: Naming, groups: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """Messages each consumer group (logical name -> logical input topics) has not committed yet."""
    totals = dict.fromkeys(groups, 0)
    for (group, _topic, _partition), lag in partition_lags(bootstrap, naming, groups).items():
        totals[group] += lag
    return totals


def ends_without_data(
    bootstrap: str, starts: Mapping[tuple[str, int], int], *, timeout_s: float = READ_TIMEOUT_S
) -> dict[tuple[str, int], int]:
    """For each (physical topic, partition) -> start offset: the partition's end offset when nothing but
    transaction markers (or aborted records) lies between start and the end, i.e. when a group whose
    committed offset is `start` has read every record and can commit the end. Partitions with a
    record at or after `start` are left out."""
    if not starts:
        return {}
    consumer = Consumer(consumer_config(bootstrap, "agenttwin-end-probe", **{"enable.partition.eof": True}))
    pending = dict(starts)
    ends: dict[tuple[str, int], int] = {}
    try:
        consumer.assign([TopicPartition(t, p, o) for (t, p), o in starts.items()])
        deadline = time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            for msg in consume_ready(consumer, 100, 0.2):
                key = (str(msg.topic()), int(msg.partition() or 0))
                if key not in pending:
                    continue
                err = msg.error()
                if err is None:
                    del pending[key]  # a record: the group has work there, nothing to skip
                    consumer.pause([TopicPartition(*key)])
                elif err.code() == KafkaError._PARTITION_EOF:
                    offset = int(msg.offset() or 0)
                    if offset > pending.pop(key):
                        ends[key] = offset
    finally:
        consumer.close()
    return ends
