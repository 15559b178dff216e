"""The embedded event log: Kafka-like topics as append-only Avro object container files.

Layout under a data directory::

    <data_dir>/LOCK                    flock'ed by the one process that writes
    <data_dir>/topics/<topic>.avro     one container file per topic; offset = record index
    <data_dir>/offsets/<group>.json    committed offsets of a consumer group, {topic: next offset}

Each record is {key, value (the single-object-encoded event), headers, timestamp_ms}. The log never
reads a clock: timestamps are whatever the caller passes. The files are standard Avro containers,
so any Avro reader can open them. A block that a crash left half-written at the end of a file is
reported and cut off when the log is opened for writing.
"""

from __future__ import annotations

import bisect
import io
import json
import logging
import mmap
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any

from fastavro import schemaless_reader, schemaless_writer
from fastavro.schema import parse_schema, to_parsing_canonical_form

from streams._avro_container import (
    Block,
    ContainerFormatError,
    frame_block,
    header_bytes,
    parse_header,
    scan_blocks,
)
from streams._log_support import EventLogError, GroupOffsets, LogLockedError, acquire_lock, check_name

__all__ = [
    "LOG_RECORD_SCHEMA",
    "EmbeddedLog",
    "EventLogError",
    "LogLockedError",
    "LogRecord",
    "NewRecord",
    "TailRepair",
]

_log = logging.getLogger(__name__)

LOG_RECORD_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "LogRecord",
    "namespace": "agenttwin.embedded_log",
    "doc": "One message of an embedded topic; value holds an Avro single-object-encoded event.",
    "fields": [
        {"name": "key", "type": ["null", "string"], "default": None},
        {"name": "value", "type": "bytes"},
        {"name": "headers", "type": {"type": "map", "values": "string"}, "default": {}},
        # Caller-supplied event time in ms since the epoch; the log itself never reads a clock.
        {"name": "timestamp_ms", "type": ["null", "long"], "default": None},
    ],
}
_PARSED = parse_schema(LOG_RECORD_SCHEMA)
_CANONICAL = to_parsing_canonical_form(_PARSED)
_BLOCK_CACHE_SIZE = 16


@dataclass(frozen=True)
class NewRecord:
    value: bytes
    key: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timestamp_ms: int | None = None


@dataclass(frozen=True)
class LogRecord:
    topic: str
    offset: int
    key: str | None
    value: bytes
    headers: Mapping[str, str]
    timestamp_ms: int | None


@dataclass(frozen=True)
class TailRepair:
    """A half-written tail found (and, in write mode, cut off) when a topic file was opened."""

    topic: str
    kept_bytes: int
    dropped_bytes: int
    problem: str


@dataclass
class _Topic:
    name: str
    path: Path
    fd: int
    sync: bytes
    file_end: int
    blocks: list[Block] = field(default_factory=list)
    firsts: list[int] = field(default_factory=list)  # first offset of each block, for bisect
    end_offset: int = 0

    def add(self, block: Block) -> None:
        self.blocks.append(block)
        self.firsts.append(self.end_offset)
        self.end_offset += block.count
        self.file_end = block.end


class EmbeddedLog:
    """Append-only topics in one data directory. Use as a context manager or call close()."""

    def __init__(self, data_dir: Path, *, read_only: bool = False, fsync: bool = True) -> None:
        self.data_dir = Path(data_dir)
        self.read_only = read_only
        self._fsync = fsync
        self._mutex = threading.RLock()
        self._topics: dict[str, _Topic] = {}
        self._offsets = GroupOffsets(self.data_dir / "offsets", fsync=fsync, cache=not read_only)
        self._cache: OrderedDict[tuple[str, int], list[LogRecord]] = OrderedDict()
        self.repairs: list[TailRepair] = []
        self._lock_fd: int | None = None
        self._topic_dir = self.data_dir / "topics"
        self._offset_dir = self.data_dir / "offsets"
        if not read_only:
            self._topic_dir.mkdir(parents=True, exist_ok=True)
            self._offset_dir.mkdir(parents=True, exist_ok=True)
            self._lock_fd = acquire_lock(self.data_dir)
        try:
            for path in sorted(self._topic_dir.glob("*.avro")):
                self._open_topic(path.stem, create=False)
        except BaseException:
            self.close()
            raise

    # -- lifecycle -------------------------------------------------------------------------------------

    def close(self) -> None:
        with self._mutex:
            for topic in self._topics.values():
                os.close(topic.fd)
            self._topics.clear()
            self._cache.clear()
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # closing the descriptor releases the flock
                self._lock_fd = None

    def __enter__(self) -> EmbeddedLog:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- topics --------------------------------------------------------------------------------------------

    def _open_topic(self, name: str, *, create: bool) -> _Topic | None:
        check_name("topic", name)
        path = self._topic_dir / f"{name}.avro"
        if not path.exists():
            if not create:
                return None
            # deterministic sync marker: the same appends give the same file bytes
            header = header_bytes(_PARSED, sha256(f"agenttwin-log:{name}".encode()).digest()[:16])
            tmp = path.with_suffix(".avro.tmp")
            tmp.write_bytes(header)
            os.replace(tmp, path)
        flags = os.O_RDONLY if self.read_only else os.O_RDWR
        fd = os.open(path, flags)
        try:
            topic = self._index(name, path, fd)
        except BaseException:
            os.close(fd)
            raise
        self._topics[name] = topic
        return topic

    def _index(self, name: str, path: Path, fd: int) -> _Topic:
        size = os.fstat(fd).st_size
        if size == 0:
            raise EventLogError(f"{path}: empty file, not an Avro container (delete it to recreate the topic)")
        with mmap.mmap(fd, size, access=mmap.ACCESS_READ) as buf:
            try:
                header = parse_header(buf, size)
            except ContainerFormatError as exc:
                raise EventLogError(f"{path}: {exc}") from exc
            schema = header.metadata.get("avro.schema", b"{}")
            codec = header.metadata.get("avro.codec", b"null")
            try:
                ours = codec == b"null" and to_parsing_canonical_form(parse_schema(json.loads(schema))) == _CANONICAL
            except (ValueError, TypeError, KeyError) as exc:
                raise EventLogError(f"{path}: unreadable schema in the container header: {exc}") from exc
            if not ours:
                raise EventLogError(f"{path}: not an embedded-log topic file (schema or codec differs)")
            topic = _Topic(name=name, path=path, fd=fd, sync=header.sync, file_end=header.data_start)
            blocks, problem = scan_blocks(buf, header.data_start, size, header.sync)
        for block in blocks:
            topic.add(block)
        if problem is not None:
            repair = TailRepair(name, topic.file_end, size - topic.file_end, problem)
            self.repairs.append(repair)
            if self.read_only:
                _log.warning("topic %s: incomplete tail ignored (%s)", name, problem)
            else:
                os.ftruncate(fd, topic.file_end)
                os.fsync(fd)
                _log.warning(
                    "topic %s: cut %d byte(s) of a half-written block (%s)",
                    name,
                    repair.dropped_bytes,
                    problem,
                )
        return topic

    def _topic(self, name: str, *, create: bool = False) -> _Topic | None:
        topic = self._topics.get(name)
        if topic is None:
            topic = self._open_topic(name, create=create)
        elif self.read_only:
            self._refresh(topic)
        return topic

    def _refresh(self, topic: _Topic) -> None:
        """Read-only mode: index blocks another process appended since the last look."""
        size = os.fstat(topic.fd).st_size
        if size <= topic.file_end:
            return
        with mmap.mmap(topic.fd, size, access=mmap.ACCESS_READ) as buf:
            blocks, _ = scan_blocks(buf, topic.file_end, size, topic.sync)
        for block in blocks:
            topic.add(block)

    def topics(self) -> list[str]:
        with self._mutex:
            on_disk = {p.stem for p in self._topic_dir.glob("*.avro")} if self._topic_dir.is_dir() else set()
            return sorted(on_disk | set(self._topics))

    def end_offset(self, topic: str) -> int:
        """The offset the next appended record will get (= number of records)."""
        with self._mutex:
            state = self._topic(topic)
            return state.end_offset if state else 0

    # -- append --------------------------------------------------------------------------------------------

    def append(
        self,
        topic: str,
        key: str | None,
        value: bytes,
        headers: Mapping[str, str] | None = None,
        timestamp_ms: int | None = None,
    ) -> int:
        """Append one record; returns its offset."""
        return self.append_many(topic, [NewRecord(value, key, headers or {}, timestamp_ms)]).start

    def append_many(self, topic: str, records: Iterable[NewRecord]) -> range:
        """Append records as one block, in one write (fsync'ed unless fsync=False); returns their offsets."""
        if self.read_only:
            raise EventLogError(f"{self.data_dir} is open read-only")
        body = io.BytesIO()
        count = 0
        for record in records:
            if not isinstance(record.value, bytes):
                raise EventLogError(f"topic {topic}: value must be bytes, got {type(record.value).__name__}")
            entry = {
                "key": record.key,
                "value": record.value,
                "headers": dict(record.headers),
                "timestamp_ms": record.timestamp_ms,
            }
            schemaless_writer(body, _PARSED, entry)
            count += 1
        with self._mutex:
            state = self._topic(topic, create=True)
            assert state is not None
            if count == 0:
                return range(state.end_offset, state.end_offset)
            data = frame_block(count, body.getvalue(), state.sync)
            position = state.file_end
            written = os.pwrite(state.fd, data, position)
            if written != len(data):
                os.ftruncate(state.fd, position)
                raise EventLogError(f"topic {topic}: short write ({written} of {len(data)} bytes)")
            if self._fsync:
                os.fsync(state.fd)
            header_len = len(data) - len(body.getvalue()) - len(state.sync)
            first = state.end_offset
            state.add(Block(position, position + header_len, len(body.getvalue()), count))
            return range(first, state.end_offset)

    # -- read ----------------------------------------------------------------------------------------------

    def read(self, topic: str, from_offset: int = 0, max_records: int | None = None) -> Iterator[LogRecord]:
        """Records from `from_offset` on (at most `max_records`), as of the call; seeks by block index."""
        if from_offset < 0:
            raise EventLogError(f"from_offset must be >= 0, got {from_offset}")
        with self._mutex:
            state = self._topic(topic)
            if state is None:
                return iter(())
            stop = state.end_offset if max_records is None else min(state.end_offset, from_offset + max_records)
            index = bisect.bisect_right(state.firsts, from_offset) - 1
            return self._iterate(state, max(index, 0), from_offset, stop)

    def _iterate(self, state: _Topic, index: int, start: int, stop: int) -> Iterator[LogRecord]:
        offset = start
        while offset < stop:
            with self._mutex:
                records = self._decoded(state, index)
                first = state.firsts[index]
            yield from records[offset - first : stop - first]
            offset = first + len(records)
            index += 1

    def _decoded(self, state: _Topic, index: int) -> list[LogRecord]:
        key = (state.name, index)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        block = state.blocks[index]
        body = io.BytesIO(os.pread(state.fd, block.body_size, block.body_position))
        first = state.firsts[index]
        records = []
        for i in range(block.count):
            raw: Any = schemaless_reader(body, _PARSED, None)
            records.append(
                LogRecord(
                    state.name,
                    first + i,
                    raw["key"],
                    raw["value"],
                    MappingProxyType(raw["headers"]),
                    raw["timestamp_ms"],
                )
            )
        self._cache[key] = records
        if len(self._cache) > _BLOCK_CACHE_SIZE:
            self._cache.popitem(last=False)
        return records

    # -- consumer group offsets ----------------------------------------------------------------------------

    def commit(self, group: str, topic: str, offset: int) -> None:
        """Record that `group` has consumed `topic` up to (not including) `offset` (Kafka's convention)."""
        if self.read_only:
            raise EventLogError(f"{self.data_dir} is open read-only")
        check_name("group", group)
        with self._mutex:
            end = self.end_offset(topic)
            if not 0 <= offset <= end:
                raise EventLogError(f"commit {group}/{topic}: offset {offset} outside [0, {end}]")
            self._offsets.put(group, topic, offset)

    def committed(self, group: str, topic: str) -> int:
        """The next offset `group` should read from `topic`; 0 if it never committed."""
        with self._mutex:
            return self._offsets.get(group, topic)
