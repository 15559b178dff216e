"""Client settings shared by every confluent-kafka client, and idempotent topic creation.

Producers partition with `murmur2_random` (librdkafka's default is CRC32 `consistent_random`; Java,
aiokafka and faust use murmur2), are idempotent and wait for all in-sync replicas. Consumers never
auto-commit and read only committed transactions. Group members (these and the faust workers) have a
session timeout of SESSION_TIMEOUT_S: a member killed without leaving holds its partitions that long, and a
restarted one waits for it (librdkafka's default is 45 s, faust's 60 s).
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined, unused-ignore]

from streams.kafka.naming import Naming

ADMIN_TIMEOUT_S = 30.0
SESSION_TIMEOUT_S = 10.0
HEARTBEAT_INTERVAL_S = SESSION_TIMEOUT_S / 10
# Group errors (commits, committed offsets) that mean "not now" rather than "not yours": the coordinator is
# moving or loading, the cluster away (librdkafka does not flag them all retriable).
NOT_NOW = frozenset(
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

_ANY_MS = str(2**63 - 1)
EVENT_TIME_CONFIG = {
    "message.timestamp.type": "CreateTime",
    "message.timestamp.before.max.ms": _ANY_MS,
    "message.timestamp.after.max.ms": _ANY_MS,
}


def producer_config(bootstrap: str, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "partitioner": "murmur2_random",
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "log_level": 3,
        **extra,
    }


def consumer_config(bootstrap: str, group: str, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
        "enable.partition.eof": False,
        "session.timeout.ms": int(SESSION_TIMEOUT_S * 1000),
        "heartbeat.interval.ms": int(HEARTBEAT_INTERVAL_S * 1000),
        "log_level": 3,
        **extra,
    }


def consume_ready(consumer: Consumer, max_messages: int, timeout_s: float) -> list[Message]:
    """Up to `max_messages`, waiting at most `timeout_s` for the first one, then taking only what is already
    fetched. confluent-kafka's `consume(n, timeout)` waits the whole timeout unless n messages come: a loop
    that asks for a batch of 1000 and gets 20 would sit out its timeout on every batch (each stage of the
    pipeline adding it again)."""
    first = consumer.consume(num_messages=1, timeout=timeout_s)
    if not first or max_messages <= 1:
        return first
    return first + consumer.consume(num_messages=max_messages - 1, timeout=0)


def ensure_topics(bootstrap: str, naming: Naming, *, timeout_s: float = ADMIN_TIMEOUT_S) -> list[str]:
    """Create every topic of streams/topics.py that does not exist yet; returns the ones created.

    Event topics are delete-policy with the declared retention (never compacted: replay re-reads them).
    Record timestamps are the events' occurred_at (CreateTime, set by every producer), which may lie far
    in the past (a pinned simulation clock) or the future (a scenario's `context.now`): the broker is told
    to accept any. An existing topic with a different partition count is an error: joins depend on equal
    counts.
    """
    wanted = {
        naming.topic(t.name): (
            t.partitions,
            {"cleanup.policy": "delete", "retention.ms": str(t.retention_ms), **EVENT_TIME_CONFIG},
        )
        for t in naming.topics()
    }
    return _ensure(bootstrap, wanted, timeout_s)


def ensure_changelog(bootstrap: str, topic: str, partitions: int, *, timeout_s: float = ADMIN_TIMEOUT_S) -> bool:
    """Create a processor store's changelog (compacted, one partition per input partition); True if created."""
    return bool(_ensure(bootstrap, {topic: (partitions, {"cleanup.policy": "compact"})}, timeout_s))


def _ensure(bootstrap: str, wanted: dict[str, tuple[int, dict[str, str]]], timeout_s: float) -> list[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    cluster = admin.list_topics(timeout=timeout_s)
    existing, replication = cluster.topics, min(3, max(1, len(cluster.brokers)))
    new = [
        NewTopic(name, num_partitions=partitions, replication_factor=replication, config=config)
        for name, (partitions, config) in wanted.items()
        if name not in existing
    ]
    created: list[str] = []
    if new:
        for name, future in admin.create_topics(new, request_timeout=timeout_s).items():
            try:
                future.result(timeout=timeout_s)
                created.append(name)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise
    # A just-created topic (ours or a concurrent creator's) can show up in metadata without its partitions
    # for a moment: re-read until every count is there, then insist on the declared ones.
    deadline = time.monotonic() + timeout_s
    while True:
        metadata = admin.list_topics(timeout=timeout_s).topics
        counts = {name: len(metadata[name].partitions) if name in metadata else 0 for name in wanted}
        if all(counts.values()) or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    for name, (partitions, _config) in wanted.items():
        if counts[name] != partitions:
            raise RuntimeError(f"topic {name} has {counts[name]} partitions, {partitions} are declared")
    return created
