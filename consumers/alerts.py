"""Alerts for people: a line (or JSON object) per ContradictionDetected, VersionRegressed or VersionCleared.

Sources: the embedded log, opened read-only so a tail can run beside the process that writes it
(ingest, a pipeline run), following new offsets; or a Kafka topic through a consumer group that
commits after each printed alert. Anything undecodable on the topic is shown as such, never hidden,
except to a tail filtered to one tenant (`--tenant`), which shows that tenant's alerts and nothing else.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from evaluation.claim_status import describe_inference
from streams.embedded_log import EmbeddedLog, LogRecord
from streams.events import ContradictionDetected, Event, VersionCleared, VersionRegressed
from streams.kafka.codec import DecodeError, KafkaCodec
from streams.kafka.naming import Naming
from streams.topics import CONTRADICTIONS, VERSION_ALERTS

TOPIC = CONTRADICTIONS.name
TOPICS = (TOPIC, VERSION_ALERTS.name)  # contradictions, then the version watch's alarms
Alert = ContradictionDetected | VersionRegressed | VersionCleared
ALERT_TYPES = (ContradictionDetected, VersionRegressed, VersionCleared)
EMBEDDED_LOG_DIR = "topics-log"  # where EmbeddedRuntime(data_dir) keeps its log
Emit = Callable[[str], None]
ShouldStop = Callable[[], bool]


def _never() -> bool:
    return False


def alert_key(alert: Alert) -> str:
    """The alert's identity (the webhook's Idempotency-Key): a contradiction's alert id, a version alarm's event id
    (one VersionRegressed and at most one VersionCleared per alarm)."""
    return alert.alert_id if isinstance(alert, ContradictionDetected) else alert.event_id


def alert_document(alert: Alert) -> dict[str, Any]:
    """The alert as JSON-ready data (also the webhook body): every field, times in ISO 8601."""
    doc: dict[str, Any] = {}
    for key, value in alert.to_record().items():
        doc[key] = value.isoformat() if isinstance(value, datetime) else value
    return doc


def alert_json(alert: Alert) -> str:
    return json.dumps(alert_document(alert), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def alert_line(alert: Alert) -> str:
    """One human line: when, kind, who, which trace and tool, claimed vs verified, why."""
    if not isinstance(alert, ContradictionDetected):
        return version_alert_line(alert)
    who = " ".join(p for p in (alert.agent, alert.agent_version) if p) or "unknown agent"
    where = f"trace {alert.trace_id or '-'}" + (f" tool {alert.tool}" if alert.tool else "")
    where += f" subject {alert.subject}" if alert.subject else ""
    by = alert.claim_inferred_by
    inferred = f" ({describe_inference(by, alert.claim_rule, alert.claim_confidence)})" if by else ""
    verdict = f"claimed {alert.claimed_status or '-'}{inferred}, verified {alert.verified_status or '-'}"
    if alert.source:
        verdict += f" ({alert.source})"
    tenant = f"[{alert.tenant}] " if alert.tenant else ""
    return f"{alert.detected_at.isoformat()}  {alert.kind.upper()}  {tenant}{who}  {where}  {verdict}: {alert.detail}"


def version_alert_line(alert: VersionRegressed | VersionCleared) -> str:
    """When, VERSION_REGRESSED or VERSION_CLEARED, who, which versions, and the evidence in one line."""
    tenant = f"[{alert.tenant}] " if alert.tenant else ""
    if isinstance(alert, VersionRegressed):
        traces = f"  contradicted traces: {' '.join(alert.contradicted_traces)}" if alert.contradicted_traces else ""
        return (
            f"{alert.detected_at.isoformat()}  VERSION_REGRESSED  {tenant}{alert.agent} {alert.candidate_version} "
            f"vs {alert.baseline_version}  {alert.metric}: {alert.detail}{traces}"
        )
    what = f"alarm on {alert.metric} closed" if alert.metric else "no regression"
    return (
        f"{alert.cleared_at.isoformat()}  VERSION_CLEARED  {tenant}{alert.agent} {alert.candidate_version} "
        f"vs {alert.baseline_version}  {what}: {alert.detail}"
    )


@dataclass(frozen=True)
class TailItem:
    offset: int
    alert: Alert | None  # None: undecodable or not an alert
    problem: str | None = None
    topic: str = TOPIC


def render(item: TailItem, *, as_json: bool) -> str:
    if item.alert is None:
        if as_json:
            return json.dumps({"offset": item.offset, "undecodable": item.problem}, sort_keys=True)
        return f"offset {item.offset}: UNDECODABLE {item.problem}"
    return alert_json(item.alert) if as_json else alert_line(item.alert)


def decode_alert(codec: KafkaCodec, value: bytes | None, offset: int, topic: str = TOPIC) -> TailItem:
    try:
        event: Event = codec.decode(value)
    except DecodeError as exc:
        return TailItem(offset, None, f"{exc.reason}: {exc}", topic)
    if not isinstance(event, ALERT_TYPES):
        return TailItem(offset, None, f"UNEXPECTED_EVENT: {event.event_type}", topic)
    return TailItem(offset, event, None, topic)


def _matches(item: TailItem, tenant: str | None) -> bool:
    """Without a tenant: everything, undecodable records included. With one: only that tenant's alerts (an
    undecodable record belongs to no tenant it could be shown to; the unfiltered tail shows it)."""
    if tenant is None:
        return True
    return item.alert is not None and item.alert.tenant == tenant


def embedded_alerts(
    data_dir: Path,
    *,
    from_offsets: dict[str, int] | None = None,
    follow: bool = False,
    poll_s: float = 0.5,
    stop: ShouldStop = _never,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[TailItem]:
    """Alerts of the embedded log under `data_dir` (read-only: no lock taken, nothing committed): each round,
    the new contradictions, then the new version alarms."""
    codec = KafkaCodec(Naming())
    with EmbeddedLog(data_dir / EMBEDDED_LOG_DIR, read_only=True) as log:
        offsets = {t: (from_offsets or {}).get(t, 0) for t in TOPICS}
        while True:
            record: LogRecord
            for topic in TOPICS:
                for record in log.read(topic, offsets[topic]):
                    yield decode_alert(codec, record.value, record.offset, topic)
                    offsets[topic] = record.offset + 1
            if not follow or stop():
                return
            sleep(poll_s)


def embedded_end(data_dir: Path) -> dict[str, int]:
    with EmbeddedLog(data_dir / EMBEDDED_LOG_DIR, read_only=True) as log:
        return {t: log.end_offset(t) for t in TOPICS}


def tail_embedded(
    data_dir: Path,
    emit: Emit,
    *,
    as_json: bool = False,
    from_beginning: bool = True,
    follow: bool = False,
    tenant: str | None = None,
    poll_s: float = 0.5,
    stop: ShouldStop = _never,
) -> int:
    """Print alerts (all of them, or only new ones); returns how many lines were emitted."""
    start = None if from_beginning else embedded_end(data_dir)
    n = 0
    for item in embedded_alerts(data_dir, from_offsets=start, follow=follow, poll_s=poll_s, stop=stop):
        if _matches(item, tenant):
            emit(render(item, as_json=as_json))
            n += 1
    return n


def tail_kafka(
    bootstrap: str,
    emit: Emit,
    *,
    group: str = "agenttwin-alerts-tail",
    naming: Naming | None = None,
    as_json: bool = False,
    follow: bool = True,
    idle_s: float = 5.0,
    max_alerts: int | None = None,
    tenant: str | None = None,
    stop: ShouldStop = _never,
) -> int:
    """Print alerts from Kafka through consumer group `group`, committing after each printed line.

    Without `follow`, stops once no message arrived for `idle_s` seconds.
    """
    from confluent_kafka import Consumer

    from streams.kafka.clients import consumer_config

    names = naming or Naming()
    codec = KafkaCodec(names)
    consumer = Consumer(consumer_config(bootstrap, names.group(group)))
    consumer.subscribe([names.topic(t) for t in TOPICS])
    n, idle_since = 0, time.monotonic()
    try:
        while not stop() and (max_alerts is None or n < max_alerts):
            msg = consumer.poll(0.5)
            if msg is None:
                if not follow and time.monotonic() - idle_since >= idle_s:
                    break
                continue
            if msg.error():
                emit(f"kafka: {msg.error()}")
                continue
            idle_since = time.monotonic()
            item = decode_alert(codec, msg.value(), msg.offset() or 0, msg.topic() or TOPIC)
            if _matches(item, tenant):
                emit(render(item, as_json=as_json))
                n += 1
            consumer.commit(message=msg, asynchronous=False)
    finally:
        consumer.close()
    return n
