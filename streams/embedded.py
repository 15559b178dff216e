"""The embedded runtime: topics as Avro container files, processors driven in-process until quiescent.

No services. Stateless processors (planner, simulator) resume from their committed offsets; stateful
ones (grader, comparator, outcome join) rebuild their stores from offset 0 of their inputs on start —
the topics are the source of truth — and every output is appended at most once (deduplicated by its
deterministic event id), so re-running, redelivery and replay under the same version add nothing.
"""

from __future__ import annotations

import base64
import itertools
import traceback
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from schemas import AVRO_DIR
from streams import ids
from streams._log_files import Quarantined
from streams.embedded_log import RUNTIME_LOG_DIR, EmbeddedLog, LogRecord, NewRecord
from streams.events import EVENT_BY_SCHEMA, DeadLettered, Event
from streams.identity import EVENT_ID_HEADER, EVENT_TYPE_HEADER, event_time_ms, record_headers
from streams.processors.base import Processor, Store
from streams.topics import TOPIC_BY_NAME
from streams.wire import SchemaStore, WireError

Progress = Callable[[str, int], None]
PREFETCH_CHUNK = 64  # events a processor may look ahead at (Processor.prefetch)
__all__ = [
    "EVENT_ID_HEADER",
    "EVENT_TYPE_HEADER",
    "DecodeError",
    "EmbeddedRuntime",
    "Progress",
    "RunStats",
    "dead_letter",
    "encode_bytes",
]


class DecodeError(Exception):
    """A record that is not a known event: `reason` is the dead-letter reason code."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass
class RunStats:
    consumed: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    produced: int = 0
    dead_letters: int = 0


def dead_letter(stage: str, reason: str, error: BaseException | str, record: LogRecord) -> DeadLettered:
    text = error if isinstance(error, str) else f"{type(error).__name__}: {' '.join(str(error).split())}"
    return DeadLettered(
        event_id=ids.event_id("DeadLettered", stage, record.topic, record.offset),
        occurred_at=ids.PINNED_NOW,
        correlation_id=record.key or "",
        stage=stage,
        reason=f"{reason}: {text}"[:2000],
        error_class=reason,
        source_topic=record.topic,
        source_partition=0,
        source_offset=record.offset,
        original_key=record.key,
        original_value=record.value,
        attempt=1,
    )


MAX_DEAD_LETTER_BYTES = 1 << 20  # larger quarantined stretches are referenced, not copied


def quarantine_dead_letter(item: Quarantined, stage: str) -> DeadLettered:
    """The dead letter of records moved to the log's quarantine (a damaged block, a torn tail)."""
    data = item.path.read_bytes()
    where = f"{item.path.parent.name}/{item.path.name}"
    kept = data if len(data) <= MAX_DEAD_LETTER_BYTES else b""
    note = "" if kept else f" ({len(data)} bytes: see the quarantine file)"
    count = "an unknown number of" if item.count is None else str(item.count)
    reason = f"{count} record(s) from offset {item.first_offset}: {item.reason}; bytes kept in {where}{note}"
    error_class = "TORN_TAIL" if item.kind == "torn" else "DAMAGED_BLOCK"
    return DeadLettered(
        event_id=ids.event_id("DeadLettered", stage, item.topic, item.first_offset, item.position, item.size),
        occurred_at=ids.PINNED_NOW,
        correlation_id="",
        stage=stage,
        reason=f"{error_class}: {reason}"[:2000],
        error_class=error_class,
        source_topic=item.topic,
        source_partition=0,
        source_offset=item.first_offset,
        original_key=None,
        original_value=kept,
        attempt=1,
    )


def decode_record(schemas: SchemaStore, record: LogRecord) -> Event:
    """The event a log record holds; DecodeError (with its dead-letter reason) when it holds none."""
    try:
        decoded = schemas.decode(record.value)
    except WireError as exc:
        raise DecodeError(exc.reason.value, exc.message) from None
    event_type = EVENT_BY_SCHEMA.get(decoded.name)
    if event_type is None:
        raise DecodeError("UNKNOWN_EVENT_TYPE", f"no event model for schema {decoded.name}")
    try:
        return event_type.from_record(decoded.record)
    except (TypeError, ValueError) as exc:
        raise DecodeError("INVALID_EVENT", str(exc)) from None


class EmbeddedRuntime:
    def __init__(
        self, data_dir: Path, *, schemas: SchemaStore | None = None, fsync: bool = True, batch_size: int = 500
    ) -> None:
        self.data_dir = data_dir
        self.batch_size = batch_size
        self.log = EmbeddedLog(data_dir / RUNTIME_LOG_DIR, fsync=fsync)
        self.schemas = schemas or SchemaStore.from_directory(AVRO_DIR)
        self._ids: dict[str, set[str]] = {}
        try:  # a torn tail that held records was cut into quarantine on open: say so where people look
            self.publish(
                quarantine_dead_letter(r.quarantined, "log-open")
                for r in self.log.repairs
                if r.quarantined is not None and r.quarantined.count != 0
            )
        except BaseException:
            self.log.close()
            raise

    def close(self) -> None:
        self.log.close()

    def __enter__(self) -> EmbeddedRuntime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- events <-> records ---------------------------------------------------------------------------

    def encode(self, event: Event) -> NewRecord:
        """The log record of an event: single-object value, identity headers, event time as its timestamp."""
        value = self.schemas.encode(event.SCHEMA, event.to_record())
        headers = record_headers(event, event.SCHEMA, self.schemas.current(event.SCHEMA).fingerprint)
        return NewRecord(value=value, key=event.key, headers=headers, timestamp_ms=event_time_ms(event))

    def decode(self, record: LogRecord) -> Event:
        return decode_record(self.schemas, record)

    def _known_ids(self, topic: str) -> set[str]:
        known = self._ids.get(topic)
        if known is None:
            known = (
                {r.headers.get(EVENT_ID_HEADER, "") for r in self.log.read(topic)}
                if topic in self.log.topics()
                else set()
            )
            self._ids[topic] = known
        return known

    def publish(self, events: Iterable[Event]) -> int:
        """Append events to their topics, skipping any whose event id a topic already holds."""
        by_topic: dict[str, list[NewRecord]] = defaultdict(list)
        for event in events:
            known = self._known_ids(event.TOPIC)
            if event.event_id in known:
                continue
            known.add(event.event_id)
            by_topic[event.TOPIC].append(self.encode(event))
        for topic, records in by_topic.items():
            self.log.append_many(topic, records)
        return sum(len(r) for r in by_topic.values())

    def append_raw(self, topic: str, value: bytes, key: str | None = None) -> int:
        """Append bytes as they are (tests use it to inject undecodable messages)."""
        if topic not in TOPIC_BY_NAME:
            raise ValueError(f"unknown topic {topic!r}")
        return self.log.append(topic, key, value)

    def read_events(self, topic: str) -> list[Event]:
        """Every decodable event of a topic, in offset order (undecodable ones are skipped here)."""
        out: list[Event] = []
        if topic not in self.log.topics():
            return out
        for record in self.log.read(topic):
            try:
                out.append(self.decode(record))
            except DecodeError:
                continue
        return out

    # --- driving processors --------------------------------------------------------------------------

    def run(self, processors: Sequence[Processor], *, progress: Progress | None = None) -> RunStats:
        """Feed each processor its inputs until none has anything left, then run their timers once."""
        stats = RunStats()
        stores: dict[str, Store] = {p.name: {} for p in processors}
        cursors: dict[tuple[str, str], int] = {}
        latest: dict[str, datetime] = {}
        for p in processors:
            for topic in p.inputs:
                cursors[(p.name, topic)] = 0 if p.stateful else self.log.committed(p.name, topic)
        while True:
            moved = False
            for p in processors:
                for topic in p.inputs:
                    moved |= self._drain(p, topic, stores[p.name], cursors, latest, stats, progress)
            if moved:
                continue
            ticked = 0
            for p in processors:
                if p.name in latest:
                    ticked += self._emit(p.tick(stores[p.name], latest[p.name]), stats)
            if not ticked:
                return stats

    def _drain(
        self,
        p: Processor,
        topic: str,
        store: Store,
        cursors: dict[tuple[str, str], int],
        latest: dict[str, datetime],
        stats: RunStats,
        progress: Progress | None,
    ) -> bool:
        start = cursors[(p.name, topic)]
        if topic not in self.log.topics() or self.log.end_offset(topic) <= start:
            return False
        offset = start
        pending: list[Event] = []  # outputs are made durable before the offsets that produced them commit
        for record, event, error in self._decoded_chunks(p, self.log.read(topic, start)):
            if error is not None:
                pending.append(dead_letter(p.name, error.reason, str(error), record))
                stats.dead_letters += 1
            elif event is not None:
                if p.name not in latest or event.received_time > latest[p.name]:  # never a sender's clock
                    latest[p.name] = event.received_time
                try:
                    pending.extend(p.handle(store, event))
                except Exception as exc:  # the stream boundary: a poison event goes to the dead letters
                    detail = "".join(traceback.format_exception_only(exc)).strip()
                    pending.append(dead_letter(p.name, "PROCESSING_ERROR", detail, record))
                    stats.dead_letters += 1
            offset = record.offset + 1
            stats.consumed[p.name] += 1
            if progress is not None:
                progress(p.name, 1)
            if len(pending) >= self.batch_size:
                self._emit(pending, stats)
                pending = []
                self.log.commit(p.name, topic, offset)
        self._emit(pending, stats)
        cursors[(p.name, topic)] = offset
        self.log.commit(p.name, topic, offset)
        return offset > start

    def _decoded_chunks(
        self, p: Processor, records: Iterable[LogRecord]
    ) -> Iterator[tuple[LogRecord, Event | None, DecodeError | None]]:
        """Records decoded a chunk at a time; the processor sees each chunk (`prefetch`) before handling it."""
        iterator = iter(records)
        while chunk := list(itertools.islice(iterator, PREFETCH_CHUNK)):
            decoded: list[tuple[LogRecord, Event | None, DecodeError | None]] = []
            for record in chunk:
                try:
                    decoded.append((record, self.decode(record), None))
                except DecodeError as exc:
                    decoded.append((record, None, exc))
            p.prefetch([e for _, e, _ in decoded if e is not None])
            yield from decoded

    def _emit(self, events: Sequence[Event], stats: RunStats) -> int:
        n = self.publish(events)
        stats.produced += n
        return n


def encode_bytes(value: bytes) -> str:
    """Binary columns travel as base64 text (ClickHouse String holds it; JSON inserts need text)."""
    return base64.b64encode(value).decode("ascii")
