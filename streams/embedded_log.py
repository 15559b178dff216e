"""The embedded event log: Kafka-like topics as append-only Avro object container files.

Layout under a data directory::

    <data_dir>/LOCK                    flock'ed by the one process that writes
    <data_dir>/topics/<topic>.avro     one container file per topic; any Avro tool reads it
    <data_dir>/topics/<topic>.idx      its index: each block's position, size, count, first offset, CRC-32
    <data_dir>/offsets/<group>.json    committed offsets of a consumer group, {topic: next offset}
    <data_dir>/quarantine/             bytes moved out of a topic file (a torn tail, a repaired block)

Each record is {key, value (the single-object-encoded event), headers, timestamp_ms}. The log never
reads a clock: timestamps are whatever the caller passes.

Integrity (see streams/_log_index.py and streams/_log_scan.py). Avro container files carry no
checksum and must stay readable by any Avro tool, so the checksums live beside them: one index entry
per block with the CRC-32 of the block's bytes (framing, records, sync marker) and the block's position,
size, record count and first offset. Opening a topic checks every block against its entry. Damage
anywhere stops the open with one line (topic, block, byte offset, what to run); `agenttwin log verify`
lists all of it and `agenttwin log repair` moves damaged blocks to quarantine. The only bytes an open
cuts are a torn tail — bytes after the last indexed block whose framing promises more than there is, an
append that never returned — and only a writer cuts them, after moving them to quarantine; a read-only
view skips them and changes nothing. A record keeps its offset forever: the offsets of quarantined records stay
taken (a gap entry in the index), so committed group offsets keep pointing at the same records.

Durability. An append is one write of the block, one fsync of the container, then one write of its
index entry before it returns: an index entry is written only once its block is on disk, so a block the
index lists was acknowledged, and one cut short is damage (`log repair`), never a torn write. The index
is fsynced on close; if power is lost before its page reaches the disk, the next open finds complete
blocks the index lacks, checks their structure (framing, sync marker, every record decodes and fills the
block) and indexes them again. Only bytes after the last listed block can be a torn write. A new topic
file is created whole (temporary file, fsync, rename, directory fsync). Directories written before the
index existed open as they are: the first writer builds their index.
"""

from __future__ import annotations

import bisect
import io
import logging
import mmap
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, TracebackType

from fastavro import schemaless_writer

from streams import _log_files
from streams._avro_container import ContainerFormatError, block_body, frame_block, header_bytes, scan_region
from streams._avro_writer import NotCompiled, Writer, compile_writer
from streams._log_index import (
    BLOCK,
    ENTRY_SIZE,
    HEADER_SIZE,
    Entry,
    IndexHeader,
    block_entry,
    checksum,
    parse_entry,
    parse_index,
)
from streams._log_record import LOG_RECORD_SCHEMA, PARSED, decode_records, records_fit
from streams._log_scan import TopicScan, scan_topic, topic_sync
from streams._log_support import (
    RUNTIME_LOG_DIR,
    EventLogError,
    GroupOffsets,
    LogDamagedError,
    LogLockedError,
    acquire_lock,
    check_name,
    repair_hint,
)

__all__ = [
    "LOG_RECORD_SCHEMA",
    "RUNTIME_LOG_DIR",
    "EmbeddedLog",
    "EventLogError",
    "LogDamagedError",
    "LogLockedError",
    "LogRecord",
    "NewRecord",
    "TailRepair",
]

_log = logging.getLogger(__name__)
_BLOCK_CACHE_SIZE = 16


# A NewRecord's attributes are the log record schema's fields: written without a dict per record
def _record_writer() -> Writer:
    writer = compile_writer(PARSED, attributes=True)
    if writer is None:
        raise RuntimeError("the log record schema does not compile")
    return writer


_WRITE_RECORD = _record_writer()


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
    """A torn tail found when a topic file was opened (and, in write mode, moved to quarantine)."""

    topic: str
    kept_bytes: int
    dropped_bytes: int
    problem: str
    quarantined: _log_files.Quarantined | None = None

    @property
    def quarantine(self) -> Path | None:
        return self.quarantined.path if self.quarantined is not None else None


@dataclass
class _Topic:
    name: str
    path: Path
    fd: int
    sync: bytes
    file_end: int
    index_fd: int | None = None
    index_end: int = HEADER_SIZE  # where the next index entry goes (read-only: how far the index was read)
    index_dirty: bool = False
    unindexed: list[bytes] = field(default_factory=list)  # entries of appended blocks not yet fsynced
    unindexed_from: int = 0  # sequence number of unindexed[0] (appends since open, counted)
    blocks: list[Entry] = field(default_factory=list)  # the readable blocks, in offset order
    firsts: list[int] = field(default_factory=list)  # first offset of each block, for bisect
    end_offset: int = 0
    readable: int = 0  # records in readable blocks (end_offset minus the quarantined ones)

    def add(self, entry: Entry) -> None:
        if entry.kind == BLOCK:  # a block (a gap only moves the end: its offsets stay taken)
            self.readable += entry.count
            self.blocks.append(entry)
            self.firsts.append(entry.first_offset)
            self.file_end = entry.end
        self.end_offset = max(self.end_offset, entry.end_offset)


class EmbeddedLog:
    """Append-only topics in one data directory. Use as a context manager or call close()."""

    def __init__(self, data_dir: Path, *, read_only: bool = False, fsync: bool = True) -> None:
        self.data_dir = Path(data_dir)
        self.read_only = read_only
        self._fsync = fsync
        self._mutex = threading.RLock()
        self._deferred = threading.local()  # appends of a thread inside deferred_sync()
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
            problems: list[str] = []
            for path in sorted(self._topic_dir.glob("*.avro")):
                try:
                    self._open_topic(path.stem, create=False, hint=False)
                except LogDamagedError as exc:
                    problems.append(str(exc))
            if problems:
                more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
                raise LogDamagedError(f"{problems[0]}{more}; {repair_hint(self.data_dir)}")
        except BaseException:
            self.close()
            raise

    # -- lifecycle -------------------------------------------------------------------------------------

    def close(self) -> None:
        with self._mutex:
            for topic in self._topics.values():
                if topic.index_fd is not None:
                    if topic.unindexed:  # appended under deferred_sync, never synced: make them durable first
                        if self._fsync:
                            os.fsync(topic.fd)
                        self._index_synced(topic, topic.unindexed_from + len(topic.unindexed))
                    if topic.index_dirty and self._fsync:
                        os.fsync(topic.index_fd)
                    os.close(topic.index_fd)
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

    def _open_topic(self, name: str, *, create: bool, hint: bool = True) -> _Topic | None:
        try:
            return self._open_checked(name, create=create)
        except LogDamagedError as exc:
            if not hint:
                raise
            raise LogDamagedError(f"{exc}; {repair_hint(self.data_dir)}") from None

    def _open_checked(self, name: str, *, create: bool) -> _Topic | None:
        check_name("topic", name)
        path = self._topic_dir / f"{name}.avro"
        if self.read_only:
            if _log_files.replace_pending(self._topic_dir, name):
                raise LogDamagedError(f"topic {name}: a repair was interrupted (the next writer finishes it)")
        else:
            _log_files.recover_replace(self._topic_dir, name)
        if not path.exists():
            if not create:
                return None
            self._create(name, path)
        fd = os.open(path, os.O_RDONLY if self.read_only else os.O_RDWR)
        try:
            topic = self._load(name, path, fd)
        except BaseException:
            os.close(fd)
            raise
        self._topics[name] = topic
        return topic

    def _create(self, name: str, path: Path) -> None:
        sync = topic_sync(name)
        header = header_bytes(PARSED, sync)
        _log_files.write_durably(path, header, fsync=self._fsync)  # the topic exists once its entry is durable
        index = IndexHeader(len(header), checksum(header), sync).encode()
        _log_files.write_durably(path.with_suffix(".idx"), index, fsync=self._fsync)

    def _load(self, name: str, path: Path, fd: int) -> _Topic:
        index_path = path.with_suffix(".idx")
        # the index first: a writer appends a block before its entry, so the container then covers the index
        index = parse_index(index_path.read_bytes()) if index_path.exists() else None
        size = os.fstat(fd).st_size
        if size == 0:
            raise LogDamagedError(f"topic {name}: {path} is empty, not an Avro container")
        with mmap.mmap(fd, size, access=mmap.ACCESS_READ) as buf:
            scan = scan_topic(name, buf, index)
        problems = scan.problems()
        if problems:
            more = f" (and {len(problems) - 1} more in this topic)" if len(problems) > 1 else ""
            raise LogDamagedError(problems[0] + more)
        topic = _Topic(name=name, path=path, fd=fd, sync=scan.sync, file_end=scan.data_start)
        entries = scan.entries()
        for entry in entries:
            topic.add(entry)
        torn = scan.torn
        if torn is not None:
            self._cut(topic, scan, fd, size)
            topic.file_end = torn.position
        if self.read_only:
            topic.index_end = HEADER_SIZE + (len(index.slots) if index else 0) * ENTRY_SIZE
            return topic
        if scan.stale_index or torn is not None:
            data = IndexHeader(scan.data_start, _header_crc(fd, scan.data_start), scan.sync).encode()
            data += b"".join(e.encode() for e in entries)
            _log_files.write_durably(index_path, data, fsync=self._fsync)
        topic.index_fd = os.open(index_path, os.O_RDWR)
        topic.index_end = HEADER_SIZE + len(entries) * ENTRY_SIZE
        return topic

    def _cut(self, topic: _Topic, scan: TopicScan, fd: int, size: int) -> None:
        """A torn tail: quarantine its bytes (durably), then cut them; read-only views just skip them."""
        torn = scan.torn
        assert torn is not None
        if self.read_only:
            _log.warning(
                "topic %s: torn tail of %d byte(s) ignored (%s)", topic.name, size - torn.position, torn.problem
            )
            return
        data = os.pread(fd, size - torn.position, torn.position)
        held = _log_files.quarantine(
            self.data_dir,
            topic.name,
            data,
            kind="torn",
            position=torn.position,
            first_offset=torn.first_offset,
            count=torn.count,
            reason=torn.problem,
        )
        os.ftruncate(fd, torn.position)
        os.fsync(fd)
        self.repairs.append(TailRepair(topic.name, torn.position, len(data), torn.problem, held))
        _log.warning(
            "topic %s: moved %d byte(s) of a torn tail to %s (%s)", topic.name, len(data), held.path, torn.problem
        )

    def _topic(self, name: str, *, create: bool = False) -> _Topic | None:
        topic = self._topics.get(name)
        if topic is None:
            topic = self._open_topic(name, create=create)
        elif self.read_only:
            self._refresh(topic)
        return topic

    def _refresh(self, topic: _Topic) -> None:
        """Read-only mode: take in blocks another process appended since the last look."""
        size = os.fstat(topic.fd).st_size
        if size <= topic.file_end:
            return
        index_path = topic.path.with_suffix(".idx")
        if index_path.exists():
            with index_path.open("rb") as handle:
                handle.seek(topic.index_end)
                fresh = handle.read()
            for k in range(0, len(fresh) - ENTRY_SIZE + 1, ENTRY_SIZE):
                entry = parse_entry(fresh[k : k + ENTRY_SIZE])
                if entry is None:
                    break  # being written: look again next time
                if entry.kind == BLOCK and entry.position >= topic.file_end:  # not taken in by structure yet
                    if entry.position > topic.file_end or entry.end > size:
                        break
                    if checksum(os.pread(topic.fd, entry.size, entry.position)) != entry.crc:
                        break
                    topic.add(entry)
                elif entry.kind != BLOCK and entry.first_offset >= topic.end_offset:
                    topic.add(entry)
                topic.index_end += ENTRY_SIZE
        if size <= topic.file_end:
            return
        with mmap.mmap(topic.fd, size, access=mmap.ACCESS_READ) as buf:
            for piece in scan_region(buf, topic.file_end, size, topic.sync, records_fit):
                if not piece.valid:
                    break  # a block still being written
                data = bytes(buf[piece.position : piece.end])
                topic.add(block_entry(piece.position, data, piece.count or 0, topic.end_offset))

    def topics(self) -> list[str]:
        with self._mutex:
            on_disk = {p.stem for p in self._topic_dir.glob("*.avro")} if self._topic_dir.is_dir() else set()
            return sorted(on_disk | set(self._topics))

    def end_offset(self, topic: str) -> int:
        """The offset the next appended record will get (offsets of quarantined records stay taken)."""
        with self._mutex:
            state = self._topic(topic)
            return state.end_offset if state else 0

    def readable(self, topic: str) -> int:
        """Records the topic can still give (its end offset minus the records moved to quarantine)."""
        with self._mutex:
            state = self._topic(topic)
            return state.readable if state else 0

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
        """Append records as one block, in one write and one fsync (unless fsync=False); returns their offsets.

        When this returns, the block is on disk: the caller may acknowledge it.
        """
        if self.read_only:
            raise EventLogError(f"{self.data_dir} is open read-only")
        body = bytearray()
        count = 0
        for record in records:
            if not isinstance(record.value, bytes):
                raise EventLogError(f"topic {topic}: value must be bytes, got {type(record.value).__name__}")
            mark = len(body)
            try:
                _WRITE_RECORD(body, record)
            except NotCompiled:  # e.g. headers in another Mapping than a dict: fastavro writes it
                del body[mark:]
                entry = {
                    "key": record.key,
                    "value": record.value,
                    "headers": dict(record.headers),
                    "timestamp_ms": record.timestamp_ms,
                }
                one = io.BytesIO()
                schemaless_writer(one, PARSED, entry)
                body += one.getvalue()
            count += 1
        with self._mutex:
            state = self._topic(topic, create=True)
            assert state is not None
            assert state.index_fd is not None
            if count == 0:
                return range(state.end_offset, state.end_offset)
            data = frame_block(count, bytes(body), state.sync)
            position = state.file_end
            index_entry = block_entry(position, data, count, state.end_offset)
            if os.pwrite(state.fd, data, position) != len(data):
                os.ftruncate(state.fd, position)
                raise EventLogError(f"topic {topic}: short write at byte {position}")
            state.add(index_entry)
            state.unindexed.append(index_entry.encode())
            deferred = getattr(self._deferred, "topics", None)
            if deferred is not None:
                deferred.add(topic)  # the caller fsyncs it with sync() after releasing its lock
            else:
                if self._fsync:
                    os.fsync(state.fd)  # one fsync per batch
                self._index_synced(state, state.unindexed_from + len(state.unindexed))
            return range(index_entry.first_offset, state.end_offset)

    def _index_synced(self, state: _Topic, upto: int) -> None:
        """Write the index entries of appends before sequence number `upto`, whose blocks are on disk now.

        Called with the mutex held, in append order, so entries land in their slots in order."""
        assert state.index_fd is not None
        while state.unindexed and state.unindexed_from < upto:
            raw = state.unindexed.pop(0)
            if os.pwrite(state.index_fd, raw, state.index_end) != len(raw):
                raise EventLogError(f"topic {state.name}: short write of its index at byte {state.index_end}")
            state.unindexed_from += 1
            state.index_end += ENTRY_SIZE
            state.index_dirty = True

    @contextmanager
    def deferred_sync(self) -> Iterator[set[str]]:
        """Appends on this thread inside the block skip their fsync and name their topics in the set;
        the caller must `sync` them before acknowledging anything (group commit: one fsync for many
        batches, taken outside every lock)."""
        topics: set[str] = set()
        self._deferred.topics = topics
        try:
            yield topics
        finally:
            self._deferred.topics = None

    def sync(self, topics: Iterable[str]) -> None:
        """fsync the container of each topic (blocks appended under `deferred_sync`); holds no lock while
        the disk works, so appends to other topics and reads go on."""
        with self._mutex:
            states = [state for name in sorted(set(topics)) if (state := self._topics.get(name)) is not None]
            marks = [state.unindexed_from + len(state.unindexed) for state in states]
        if self._fsync:
            for state in states:
                os.fsync(state.fd)
        with self._mutex:  # the blocks appended before the fsync are on disk: their entries may say so
            for state, mark in zip(states, marks, strict=True):
                if state.index_fd is not None:
                    self._index_synced(state, mark)

    # -- read ----------------------------------------------------------------------------------------------

    def read(self, topic: str, from_offset: int = 0, max_records: int | None = None) -> Iterator[LogRecord]:
        """Records with offsets in [from_offset, from_offset + max_records), as of the call; seeks by block.

        Offsets whose records were moved to quarantine are skipped (fewer records than max_records).
        """
        if from_offset < 0:
            raise EventLogError(f"from_offset must be >= 0, got {from_offset}")
        with self._mutex:
            state = self._topic(topic)
            if state is None:
                return iter(())
            stop = state.end_offset if max_records is None else min(state.end_offset, from_offset + max_records)
            index = max(bisect.bisect_right(state.firsts, from_offset) - 1, 0)
            return self._iterate(state, index, from_offset, stop, len(state.blocks))

    def _iterate(self, state: _Topic, index: int, start: int, stop: int, blocks: int) -> Iterator[LogRecord]:
        offset = start
        while offset < stop and index < blocks:
            with self._mutex:
                entry = state.blocks[index]
                records = self._decoded(state, index) if entry.first_offset < stop else []
            yield from records[max(offset, entry.first_offset) - entry.first_offset : stop - entry.first_offset]
            offset = entry.end_offset
            index += 1

    def _decoded(self, state: _Topic, index: int) -> list[LogRecord]:
        key = (state.name, index)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        entry = state.blocks[index]
        data = os.pread(state.fd, entry.size, entry.position)
        try:
            if checksum(data) != entry.crc:
                raise ValueError("checksum mismatch (the file changed after it was opened)")
            count, body = block_body(data)
            raws = decode_records(body, count)
        except (ValueError, ContainerFormatError) as exc:
            raise LogDamagedError(
                f"topic {state.name}: the block at byte {entry.position} (offsets {entry.first_offset}-"
                f"{entry.end_offset - 1}) is damaged: {exc}; {repair_hint(self.data_dir)}"
            ) from None
        records = [
            LogRecord(
                state.name,
                entry.first_offset + i,
                raw["key"],
                raw["value"],
                MappingProxyType(raw["headers"]),
                raw["timestamp_ms"],
            )
            for i, raw in enumerate(raws)
        ]
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


def _header_crc(fd: int, data_start: int) -> int:
    return checksum(os.pread(fd, data_start, 0))
