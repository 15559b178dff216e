"""A thin contradiction-alert tail: print each alert as it arrives (the full alert consumers live elsewhere)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from confluent_kafka import Consumer

from streams.embedded import DecodeError
from streams.events import ContradictionDetected
from streams.kafka.clients import consumer_config
from streams.kafka.codec import KafkaCodec
from streams.kafka.naming import Naming

ALERTS_GROUP = "alerts-tail"


def format_alert(alert: ContradictionDetected) -> str:
    return (
        f"ALERT {alert.kind} [{alert.evaluator_version}] agent={alert.agent} case={alert.case_id} "
        f"tool={alert.tool}: {alert.detail}"
    )


def tail_alerts(
    bootstrap: str,
    *,
    naming: Naming | None = None,
    out: Callable[[str], None] = print,
    stop: threading.Event | None = None,
    max_alerts: int | None = None,
    timeout_s: float | None = None,
    group: str = ALERTS_GROUP,
) -> int:
    """Print contradiction alerts (from the group's committed offset, else from the start) until `stop`
    is set, `max_alerts` were printed or `timeout_s` passed; returns how many were printed."""
    naming = naming or Naming()
    codec = KafkaCodec(naming)
    consumer = Consumer(consumer_config(bootstrap, naming.group(group), **{"enable.auto.commit": True}))
    consumer.subscribe([naming.topic("contradictions")])
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    printed = 0
    try:
        while (stop is None or not stop.is_set()) and (deadline is None or time.monotonic() < deadline):
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            try:
                event = codec.decode(msg.value())
            except DecodeError:
                continue  # the contradictions topic's sink dead-letters it
            consumer.store_offsets(msg)
            if isinstance(event, ContradictionDetected):
                out(format_alert(event))
                printed += 1
                if max_alerts is not None and printed >= max_alerts:
                    break
    finally:
        consumer.close()
    return printed
