"""The webhook sink: POST each alert (contradictions, version alarms) as JSON, retry with bounded exponential backoff,
and dead-letter what cannot be delivered.

Per alert: up to `attempts` POSTs (connection errors, timeouts, 408, 429 and 5xx are retried; other
4xx are final at once). An alert that is not delivered goes to the dead-letters topic with stage
`webhook`, the reason and the original message bytes. The consumer group's offset moves past a message
only after it was delivered or dead-lettered, so a crash re-sends (receivers dedupe on the
`Idempotency-Key` header: the alert id, or a version alarm's event id) and never loses an alert.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from consumers.alerts import ALERT_TYPES, TOPICS, alert_json, alert_key
from streams import ids
from streams._log_support import GroupOffsets
from streams.embedded import DecodeError, EmbeddedRuntime, dead_letter
from streams.embedded_log import EmbeddedLog, LogRecord
from streams.events import DeadLettered, Event
from streams.kafka.codec import KafkaCodec, SourceRef
from streams.kafka.codec import dead_letter as kafka_dead_letter
from streams.kafka.naming import Naming
from streams.log_reader import ReadOnlyLog, consumer_dir
from streams.publisher import Publisher

STAGE = "webhook"
GROUP = "alerts-webhook"
UNDELIVERABLE = "WEBHOOK_UNDELIVERABLE"
REJECTED = "WEBHOOK_REJECTED"
_RETRYABLE_STATUS = frozenset({408, 425, 429})
Sleep = Callable[[float], None]
ShouldStop = Callable[[], bool]


@dataclass(frozen=True)
class Delivery:
    ok: bool
    attempts: int
    reason: str = ""  # dead-letter reason code when not ok
    detail: str = ""  # the last error


@dataclass
class WebhookStats:
    delivered: int = 0
    dead_lettered: int = 0
    attempts: int = 0


class WebhookSender:
    """POSTs JSON bodies to one URL. `sleep` is injectable so tests do not wait."""

    def __init__(
        self,
        url: str,
        *,
        attempts: int = 5,
        base_delay_s: float = 0.5,
        max_delay_s: float = 30.0,
        timeout_s: float = 10.0,
        headers: dict[str, str] | None = None,
        sleep: Sleep = time.sleep,
        client: httpx.Client | None = None,
    ) -> None:
        self.url = url
        self.attempts = max(1, attempts)
        self.base_delay_s, self.max_delay_s = base_delay_s, max_delay_s
        self.headers = dict(headers or {})
        self.sleep = sleep
        self._client = client or httpx.Client(timeout=timeout_s)

    def close(self) -> None:
        self._client.close()

    def delay(self, attempt: int) -> float:
        """Backoff before attempt `attempt + 1`: base x 2^(attempt-1), capped."""
        return float(min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1)))

    def deliver(self, body: str, alert_id: str) -> Delivery:
        headers = {**self.headers, "Content-Type": "application/json", "Idempotency-Key": alert_id}
        detail = ""
        for attempt in range(1, self.attempts + 1):
            try:
                response = self._client.post(self.url, content=body.encode("utf-8"), headers=headers)
            except httpx.HTTPError as exc:
                detail = f"{type(exc).__name__}: {exc}"
            else:
                if response.is_success:
                    return Delivery(True, attempt)
                detail = f"HTTP {response.status_code}"
                if response.status_code < 500 and response.status_code not in _RETRYABLE_STATUS:
                    return Delivery(False, attempt, REJECTED, detail)
            if attempt < self.attempts:
                self.sleep(self.delay(attempt))
        return Delivery(False, self.attempts, UNDELIVERABLE, f"{detail} after {self.attempts} attempt(s)")


def _letter(letter: DeadLettered, group: str, delivery: Delivery | None = None) -> DeadLettered:
    """A webhook dead letter, one per (group, cause, message): two groups (two targets) failing on one alert,
    or one message failing for two causes, are separate letters, never one row."""
    event_id = ids.event_id(
        "DeadLettered", STAGE, group, letter.error_class, letter.source_topic, letter.source_partition,
        letter.source_offset,
    )
    attempts = delivery.attempts if delivery is not None else letter.attempt
    return dataclasses.replace(letter, event_id=event_id, attempt=attempts)


def _handle(
    group: str,
    decode: Callable[[], Event],
    letter_of: Callable[[str, BaseException | str], DeadLettered],
    dead_letters: Callable[[list[Event]], object],
    sender: WebhookSender,
    stats: WebhookStats,
) -> None:
    """One message, from either log: its alert POSTed with retries, or a dead letter saying why not."""
    delivery: Delivery | None = None
    try:
        event = decode()
    except DecodeError as exc:
        letter = letter_of(exc.reason, exc)
    else:
        if not isinstance(event, ALERT_TYPES):
            letter = letter_of("UNEXPECTED_EVENT", event.event_type)
        else:
            delivery = sender.deliver(alert_json(event), alert_key(event))
            stats.attempts += delivery.attempts
            if delivery.ok:
                stats.delivered += 1
                return
            letter = letter_of(delivery.reason, delivery.detail)
    stats.dead_lettered += 1
    dead_letters([_letter(letter, group, delivery)])


# --- embedded log -----------------------------------------------------------------------------------------


def _embedded_letter(record: LogRecord, reason: str, error: BaseException | str) -> DeadLettered:
    return dead_letter(STAGE, reason, str(error), record)  # the embedded letter keeps the error's own text


def _deliver(
    group: str,
    log: EmbeddedLog,
    decode: Callable[[LogRecord], Event],
    dead_letters: Callable[[list[Event]], object],
    committed: Callable[[str], int],
    commit: Callable[[str, int], None],
    sender: WebhookSender,
    *,
    follow: bool,
    poll_s: float,
    stop: ShouldStop,
) -> WebhookStats:
    stats = WebhookStats()
    while True:
        for topic in TOPICS:
            if topic not in log.topics():
                continue
            for record in log.read(topic, committed(topic)):
                _handle(
                    group,
                    functools.partial(decode, record),
                    functools.partial(_embedded_letter, record),
                    dead_letters,
                    sender,
                    stats,
                )
                commit(topic, record.offset + 1)
        if not follow or stop():
            return stats
        time.sleep(poll_s)


def webhook_embedded(
    runtime: EmbeddedRuntime,
    sender: WebhookSender,
    *,
    group: str = GROUP,
    follow: bool = False,
    poll_s: float = 0.5,
    stop: ShouldStop = lambda: False,
) -> WebhookStats:
    """Deliver the alerts after the group's committed offset, committing after each one (this process writes
    the data directory: offsets and dead letters go to its log)."""
    log = runtime.log
    return _deliver(
        group,
        log,
        runtime.decode,
        runtime.publish,
        lambda topic: log.committed(group, topic),
        lambda topic, offset: log.commit(group, topic, offset),
        sender,
        follow=follow,
        poll_s=poll_s,
        stop=stop,
    )


def webhook_beside_writer(
    data_dir: Path,
    sender: WebhookSender,
    *,
    group: str = GROUP,
    follow: bool = False,
    poll_s: float = 0.5,
    stop: ShouldStop = lambda: False,
) -> WebhookStats:
    """The same while another process writes the data directory (streams/log_reader.py): the log is read
    read-only; the group's offset and its dead letters live in `<data dir>/consumers/webhook-<group>/`, whose
    lock admits one webhook per group; the writer adopts those dead letters into its `dead-letters` topic.
    It starts after whichever is further: its own offset or the group's offset in the writer's log."""
    with EmbeddedRuntime(consumer_dir(data_dir, f"webhook-{group}")) as side, ReadOnlyLog(data_dir) as reader:
        (side.data_dir / "progress").mkdir(exist_ok=True)
        progress = GroupOffsets(side.data_dir / "progress", fsync=True, cache=True)
        for topic in TOPICS:
            start = max(progress.get(group, topic), reader.log.committed(group, topic))
            if progress.get(group, topic) != start:
                progress.put(group, topic, start)
        return _deliver(
            group,
            reader.log,
            reader.decode,
            side.publish,
            lambda topic: progress.get(group, topic),
            lambda topic, offset: progress.put(group, topic, offset),
            sender,
            follow=follow,
            poll_s=poll_s,
            stop=stop,
        )


# --- Kafka ------------------------------------------------------------------------------------------------


def webhook_kafka(
    bootstrap: str,
    sender: WebhookSender,
    dead_letters: Publisher,
    *,
    group: str = GROUP,
    naming: Naming | None = None,
    follow: bool = True,
    idle_s: float = 5.0,
    max_messages: int | None = None,
    stop: ShouldStop = lambda: False,
) -> WebhookStats:
    """The same over a Kafka consumer group; dead letters go through `dead_letters` (durable) before
    the commit."""
    from confluent_kafka import Consumer

    from streams.kafka.clients import consumer_config

    names = naming or Naming()
    codec = KafkaCodec(names)
    consumer = Consumer(consumer_config(bootstrap, names.group(group)))
    consumer.subscribe([names.topic(t) for t in TOPICS])
    stats, seen, idle_since = WebhookStats(), 0, time.monotonic()
    try:
        while not stop() and (max_messages is None or seen < max_messages):
            msg = consumer.poll(0.5)
            if msg is None:
                if not follow and time.monotonic() - idle_since >= idle_s:
                    break
                continue
            if msg.error():
                continue
            idle_since, seen = time.monotonic(), seen + 1
            value = msg.value() or b""
            source = SourceRef(msg.topic() or "", msg.partition() or 0, msg.offset() or 0, msg.key(), value)
            _handle(
                group,
                functools.partial(codec.decode, msg.value()),
                functools.partial(kafka_dead_letter, STAGE, source=source),
                dead_letters.publish,
                sender,
                stats,
            )
            consumer.commit(message=msg, asynchronous=False)
    finally:
        consumer.close()
    return stats
