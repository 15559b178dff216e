"""The embedded runtime: topics as Avro container files, processors driven in-process until quiescent.

No services. Stateless processors (planner, simulator) resume from their committed offsets. Stateful ones
(grader, comparator, outcome join) resume from a checkpoint (streams/checkpoints.py) that holds their
store, input offsets and clock together, committed after the outputs it stands for are in the log: a
command handles only events it has not handled. A checkpoint that cannot be trusted is set aside and the
processor rebuilds from offset 0 (the topics are the source of truth); `checkpoints=False` always does.
Every output is appended at most once (deduplicated by its deterministic event id through an on-disk
index, streams/_event_ids.py), so re-running, redelivery and replay under the same version add nothing.
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import itertools
import logging
import sys
import traceback
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from schemas import AVRO_DIR
from streams import ids
from streams._event_ids import EventIdIndex
from streams._log_files import Quarantined
from streams.checkpoints import FORMAT as CHECKPOINT_FORMAT
from streams.checkpoints import Checkpoint, CheckpointCorrupt, open_checkpoint, set_aside
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
    "state_tag",
]
CHECKPOINT_DIR = "checkpoints"
CHECKPOINT_EVERY = 5000  # changed store keys held in memory before a checkpoint is committed anyway

_log = logging.getLogger(__name__)


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
    rebuilt: list[str] = field(default_factory=list)  # groups whose checkpoint was untrusted and rebuilt


def state_tag(processor: Processor) -> str:
    """What a checkpoint must have been written by: the checkpoint format and the processor's code.

    The source of the processor's module and of the store's indexes and codec: any change to how the state
    is built or encoded makes older checkpoints rebuild from offset 0 rather than be misread."""
    digest = hashlib.sha256(CHECKPOINT_FORMAT.encode())
    for module in (type(processor).__module__, "streams.processors._expiry", "streams.kafka.store_codec"):
        try:
            digest.update(inspect.getsource(sys.modules[module]).encode())
        except (KeyError, OSError, TypeError):
            digest.update(module.encode())  # no source (a frozen build): the module's name at least
    return f"{type(processor).__qualname__}:{digest.hexdigest()[:32]}"


@dataclass
class _State:
    """A processor's store, input positions and clock during a run; `checkpoint` when it is persisted."""

    store: Store
    cursors: dict[str, int]
    clock: datetime | None = None
    checkpoint: Checkpoint | None = None


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


def decodable_events(log: EmbeddedLog, schemas: SchemaStore, topic: str) -> list[Event]:
    """Every decodable event of a topic of `log`, in offset order (undecodable ones are skipped here)."""
    out: list[Event] = []
    if topic not in log.topics():
        return out
    for record in log.read(topic):
        try:
            out.append(decode_record(schemas, record))
        except DecodeError:
            continue
    return out


class EmbeddedRuntime:
    def __init__(
        self,
        data_dir: Path,
        *,
        schemas: SchemaStore | None = None,
        fsync: bool = True,
        batch_size: int = 500,
        checkpoints: bool = True,
    ) -> None:
        self.data_dir = data_dir
        self.batch_size = batch_size
        self.checkpoints = checkpoints
        self.log = EmbeddedLog(data_dir / RUNTIME_LOG_DIR, fsync=fsync)
        try:
            self.schemas = schemas or SchemaStore.from_directory(AVRO_DIR)
            self._ids = EventIdIndex(self.checkpoint_dir / "event-ids.sqlite", self.log)
            self._forget_checkpoints_if_records_vanished()
            # a torn tail that held records was cut into quarantine on open: say so where people look
            self.publish(
                quarantine_dead_letter(r.quarantined, "log-open")
                for r in self.log.repairs
                if r.quarantined is not None and r.quarantined.count != 0
            )
        except BaseException:
            if hasattr(self, "_ids"):
                self._ids.close()
            self.log.close()
            raise

    @property
    def checkpoint_dir(self) -> Path:
        return self.data_dir / CHECKPOINT_DIR

    def _forget_checkpoints_if_records_vanished(self) -> None:
        """Records moved to quarantine (`agenttwin log repair`) may be outputs nobody derives again from a
        checkpoint past them: every stateful processor then rebuilds from offset 0, as without checkpoints."""
        vanished = self._ids.vanished()
        if not vanished:
            return
        for path in sorted(self.checkpoint_dir.glob("*.sqlite")):
            if path.name != "event-ids.sqlite":
                aside = set_aside(path)
                _log.warning("records of %s left the log; %s is kept as %s and its processor rebuilds from offset 0",
                             ", ".join(sorted(vanished)), path.name, aside.name)  # fmt: skip

    def close(self) -> None:
        self._ids.close()
        self.log.close()

    def __enter__(self) -> EmbeddedRuntime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- events <-> records ---------------------------------------------------------------------------

    def encode(self, event: Event) -> NewRecord:
        """The log record of an event: single-object value, identity headers, event time as its timestamp."""
        value = self.schemas.encode_event(event)
        headers = record_headers(event, event.SCHEMA, self.schemas.current(event.SCHEMA).fingerprint)
        return NewRecord(value=value, key=event.key, headers=headers, timestamp_ms=event_time_ms(event))

    def decode(self, record: LogRecord) -> Event:
        return decode_record(self.schemas, record)

    def publish(self, events: Iterable[Event]) -> int:
        """Append events to their topics, skipping any whose event id a topic already holds."""
        wanted: dict[str, list[Event]] = defaultdict(list)
        for event in events:
            wanted[event.TOPIC].append(event)
        appended = 0
        for topic, batch in wanted.items():
            known = self._ids.known(topic, [e.event_id for e in batch])
            fresh: dict[str, Event] = {}
            for event in batch:
                if event.event_id not in known and event.event_id not in fresh:
                    fresh[event.event_id] = event
            if not fresh:
                continue
            offsets = self.log.append_many(topic, [self.encode(e) for e in fresh.values()])
            self._ids.appended(topic, list(fresh), offsets)
            appended += len(fresh)
        return appended

    def append_raw(self, topic: str, value: bytes, key: str | None = None) -> int:
        """Append bytes as they are (tests use it to inject undecodable messages)."""
        if topic not in TOPIC_BY_NAME:
            raise ValueError(f"unknown topic {topic!r}")
        return self.log.append(topic, key, value)

    def read_events(self, topic: str) -> list[Event]:
        """Every decodable event of a topic, in offset order (undecodable ones are skipped here)."""
        return decodable_events(self.log, self.schemas, topic)

    # --- driving processors --------------------------------------------------------------------------

    def run(self, processors: Sequence[Processor], *, progress: Progress | None = None) -> RunStats:
        """Feed each processor its inputs until none has anything left, then run their timers once."""
        stats = RunStats()
        states: dict[str, _State] = {}
        try:
            for p in processors:
                state = states[p.name] = self._open_state(p)
                if state.checkpoint is not None and state.checkpoint.replaced is not None:
                    stats.rebuilt.append(p.name)
            while True:
                moved = 0
                for p in processors:
                    for topic in p.inputs:
                        moved |= self._step(p, states, stats, topic, progress)
                if moved:
                    continue
                ticked = 0
                for p in processors:
                    ticked += self._step(p, states, stats, None, progress)
                if not ticked:
                    return stats
        finally:
            for state in states.values():
                if state.checkpoint is not None:
                    state.checkpoint.close()

    def _step(
        self, p: Processor, states: dict[str, _State], stats: RunStats, topic: str | None, progress: Progress | None
    ) -> int:
        """Drain one input (or tick when `topic` is None). A checkpoint found corrupt on the way is set
        aside and the processor starts again from offset 0 with an empty store."""
        state = states[p.name]
        try:
            if topic is None:
                return self._tick(p, state, stats)
            return self._drain(p, topic, state, stats, progress)
        except CheckpointCorrupt as exc:
            assert state.checkpoint is not None
            state.checkpoint.close()
            _log.warning("%s; rebuilding %s from offset 0 (the old file is kept as %s)", exc, p.name,
                         set_aside(state.checkpoint.path))  # fmt: skip
            checkpoint = open_checkpoint(self.checkpoint_dir, p.name, state_tag(p))
            states[p.name] = _State(checkpoint, dict.fromkeys(p.inputs, 0), None, checkpoint)
            stats.rebuilt.append(p.name)
            return 1

    def _open_state(self, p: Processor) -> _State:
        if not p.stateful:
            return _State({}, {t: self.log.committed(p.name, t) for t in p.inputs})
        if not self.checkpoints:
            return _State({}, dict.fromkeys(p.inputs, 0))
        checkpoint = self.open_checkpoint(p)
        cursors = {t: checkpoint.offsets.get(t, 0) for t in p.inputs}
        return _State(checkpoint, cursors, checkpoint.clock, checkpoint)

    def open_checkpoint(self, p: Processor, *, budget: int | None = None) -> Checkpoint:
        """The stateful processor's checkpoint, trusted (else set aside: a fresh one, `replaced` set).

        `budget`: the store keys it keeps in memory across commits (streams/checkpoints.py)."""
        checkpoint = open_checkpoint(self.checkpoint_dir, p.name, state_tag(p), budget=budget)
        past = sorted(t for t in p.inputs if checkpoint.offsets.get(t, 0) > self.log.end_offset(t))
        if past:  # the topics were replaced under it (deleted, an older copy): it describes other records
            checkpoint.close()
            aside = set_aside(checkpoint.path)
            _log.warning("the checkpoint of %s is past the end of %s; rebuilding it from offset 0 (the old file "
                         "is kept as %s)", p.name, ", ".join(past), aside.name)  # fmt: skip
            checkpoint = open_checkpoint(self.checkpoint_dir, p.name, state_tag(p), budget=budget)
            checkpoint.replaced = aside
        return checkpoint

    def _save(self, p: Processor, state: _State) -> None:
        """Commit what the processor has handled; its outputs are in the log already."""
        if state.checkpoint is not None:
            state.checkpoint.commit(state.cursors, state.clock)  # its offsets are the ones it resumes from
        elif not p.stateful:
            for topic, offset in state.cursors.items():
                if topic in self.log.topics() and self.log.committed(p.name, topic) != offset:
                    self.log.commit(p.name, topic, offset)

    def _tick(self, p: Processor, state: _State, stats: RunStats) -> int:
        if state.clock is None:
            return 0
        ticked = self._emit(p.tick(state.store, state.clock), stats)
        if state.checkpoint is not None and state.checkpoint.pending:
            self._save(p, state)
        return ticked

    def _drain(
        self,
        p: Processor,
        topic: str,
        state: _State,
        stats: RunStats,
        progress: Progress | None,
    ) -> int:
        start = state.cursors[topic]
        if topic not in self.log.topics() or self.log.end_offset(topic) <= start:
            return 0
        offset = start
        pending: list[Event] = []  # outputs are made durable before the offsets that produced them commit
        for record, event, error in self._decoded_chunks(p, self.log.read(topic, start)):
            if error is not None:
                pending.append(dead_letter(p.name, error.reason, str(error), record))
                stats.dead_letters += 1
            elif event is not None:
                if state.clock is None or event.received_time > state.clock:  # never a sender's clock
                    state.clock = event.received_time
                try:
                    pending.extend(p.handle(state.store, event))
                except CheckpointCorrupt:
                    raise
                except Exception as exc:  # the stream boundary: a poison event goes to the dead letters
                    detail = "".join(traceback.format_exception_only(exc)).strip()
                    pending.append(dead_letter(p.name, "PROCESSING_ERROR", detail, record))
                    stats.dead_letters += 1
            offset = record.offset + 1
            stats.consumed[p.name] += 1
            if progress is not None:
                progress(p.name, 1)
            held = state.checkpoint.pending if state.checkpoint is not None else 0
            if len(pending) >= self.batch_size or held >= CHECKPOINT_EVERY:
                self._emit(pending, stats)
                pending = []
                state.cursors[topic] = offset
                self._save(p, state)
        self._emit(pending, stats)
        state.cursors[topic] = offset
        self._save(p, state)
        return int(offset > start)

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
