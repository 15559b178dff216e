"""Which event ids each topic of the embedded log holds: the runtime's dedupe, on disk and derived from the log.

`<data dir>/checkpoints/event-ids.sqlite` holds ids(topic, id) and progress(topic, indexed_to, readable).
Before a topic's ids are looked up, the records appended since `indexed_to` (by anyone: this runtime, a
raw append, another process earlier) are read and indexed, so the index follows the log and a command
reads only what is new. A lookup is an indexed query; memory does not grow with history. An index that is
unreadable or of another format is moved aside and rebuilt from the log; a topic whose log is behind the
index (restored from a copy) or lost records since (`agenttwin log repair` moved a block to quarantine) is
indexed again from offset 0, and `vanished()` names it so the runtime can rebuild what was derived from it.

Ids just appended are written to the index by a writer thread, off the appender's path: until that
transaction commits they are held in memory (`_pending`) and a lookup checks them there first, so a
lookup never misses an appended id. Inserting ids into the B-tree was 15-18 % of the live ingest's CPU a
span, and its time grew with the index (docs/guides/live-join-state.md). The database is in WAL mode so
lookups read beside the writer's transaction. Ids queued beyond `QUEUE_LIMIT` make the appender wait for
the writer (memory stays bounded); a writer that fails makes every later call raise, and a restart indexes
the records the failure left out from the log, as after a crash.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from streams.checkpoints import set_aside
from streams.embedded_log import EmbeddedLog
from streams.identity import EVENT_ID_HEADER

FORMAT = "agenttwin-event-ids/2"
_CHUNK = 500  # ids per query (well under SQLite's variable limit)
QUEUE_LIMIT = 200_000  # ids appended and not yet written to the index, at most

_log = logging.getLogger(__name__)


class EventIdIndex:
    def __init__(self, path: Path, log: EmbeddedLog) -> None:
        self.path = path
        self.log = log
        # guards everything below and the reader connection; the writer thread takes it only to pick up
        # a batch and to drop what it committed, never across a transaction
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._progress: dict[str, tuple[int, int]] = {}  # topic -> (indexed_to, readable records then), queued included
        self._pending: dict[str, set[str]] = {}  # topic -> ids queued or being written, not committed yet
        self._queue: list[tuple[str, list[str], int, int]] = []  # (topic, ids, indexed_to, readable)
        self._queued = 0  # ids in _queue
        self._writing = False
        self._closing = False
        self._failed: BaseException | None = None
        self._writer: threading.Thread | None = None
        self._vanished: set[str] = set()
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db, self._reader = self._open()
        except sqlite3.DatabaseError as exc:
            _log.warning("%s: unreadable event-id index (%s); rebuilding it from the log (old file kept as %s)",
                         path, exc, set_aside(path))  # fmt: skip
            self._db, self._reader = self._open()

    def _open(self) -> tuple[sqlite3.Connection, sqlite3.Connection]:
        fresh = not self.path.exists()
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            # not fsync'ed: ids are indexed after their records are durable in the log, and a lost or torn
            # index is caught up or rebuilt from the log
            db.execute("PRAGMA synchronous=OFF")
            db.execute("PRAGMA journal_mode=WAL")  # lookups read beside the writer's transaction
            if fresh:
                db.execute("BEGIN IMMEDIATE")
                db.execute("CREATE TABLE meta (format TEXT NOT NULL)")
                db.execute("INSERT INTO meta VALUES (?)", (FORMAT,))
                db.execute("CREATE TABLE ids (topic TEXT, id TEXT, PRIMARY KEY (topic, id)) WITHOUT ROWID")
                db.execute(
                    "CREATE TABLE progress "
                    "(topic TEXT PRIMARY KEY, indexed_to INTEGER NOT NULL, readable INTEGER NOT NULL)"
                )
                db.execute("COMMIT")
            (found,) = db.execute("SELECT format FROM meta").fetchone() or (None,)
            if found != FORMAT:
                raise sqlite3.DatabaseError(f"format {found!r}, expected {FORMAT!r}")
            rows = db.execute("SELECT topic, indexed_to, readable FROM progress")
            self._progress = {str(t): (int(n), int(r)) for t, n, r in rows}
            reader = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except BaseException:
            db.close()
            raise
        return db, reader

    def close(self) -> None:
        """Write what is queued, stop the writer, close the database."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
            writer = self._writer
        if writer is not None:
            writer.join()
        with self._lock:
            self._reader.close()
            self._db.close()
        if self._failed is not None:
            _log.error("%s: the event-id index could not be written (%s); the next start indexes those "
                       "records from the log", self.path, self._failed)  # fmt: skip

    def vanished(self) -> set[str]:
        """Topics that lost records since they were indexed (checked for every topic of the log, and every
        topic indexed before: a topic whose file went is a topic that lost its records)."""
        with self._lock:
            for topic in sorted({*self.log.topics(), *self._progress}):
                self._catch_up(topic)
            return set(self._vanished)

    def known(self, topic: str, event_ids: Sequence[str]) -> set[str]:
        """Those of `event_ids` the topic already holds."""
        with self._lock:
            self._raise_if_failed()
            self._catch_up(topic)
            pending = self._pending.get(topic, set())
            found = {i for i in event_ids if i in pending}
            unique = [i for i in dict.fromkeys(event_ids) if i not in found]
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                query = f"SELECT id FROM ids WHERE topic = ? AND id IN ({','.join('?' * len(chunk))})"
                found.update(row[0] for row in self._reader.execute(query, (topic, *chunk)))
            return found

    def appended(self, topic: str, event_ids: Sequence[str], offsets: range) -> None:
        """Record ids just appended at `offsets` (right after the append returned)."""
        with self._lock:
            self._raise_if_failed()
            indexed_to, readable = self._progress.get(topic, (0, 0))
            if indexed_to != offsets.start:
                self._catch_up(topic)  # someone else appended in between: read it all from the log
                return
            self._enqueue(topic, list(event_ids), offsets.stop, readable + len(offsets))

    def flush(self) -> None:
        """Wait until every id queued so far is in the database."""
        with self._changed:
            while (self._queue or self._writing) and self._failed is None:
                self._changed.wait()
            self._raise_if_failed()

    # -- writing ------------------------------------------------------------------------------------------

    def _raise_if_failed(self) -> None:
        if self._failed is not None:
            raise RuntimeError(f"{self.path}: the event-id index could not be written") from self._failed

    def _enqueue(self, topic: str, event_ids: list[str], indexed_to: int, readable: int) -> None:
        """Hold the ids as known and queue them for the writer (called with the lock held)."""
        while self._queued >= QUEUE_LIMIT and self._failed is None:
            self._changed.wait()  # the writer is far behind: the appender waits, memory stays bounded
        self._raise_if_failed()
        self._pending.setdefault(topic, set()).update(event_ids)
        self._queue.append((topic, event_ids, indexed_to, readable))
        self._queued += len(event_ids)
        self._progress[topic] = (indexed_to, readable)
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_loop, name="agenttwin-event-ids", daemon=True)
            self._writer.start()
        self._changed.notify_all()

    def _write_loop(self) -> None:
        while True:
            with self._changed:
                while not self._queue and not self._closing:
                    self._changed.wait()
                if not self._queue:
                    return
                batch, self._queue, self._queued = self._queue, [], 0
                self._writing = True
            try:
                self._write(batch)
            except BaseException as exc:  # kept (the ids stay pending, so lookups in this process stay right)
                with self._changed:
                    self._failed, self._writing = exc, False
                    self._changed.notify_all()
                return
            with self._changed:
                for topic, event_ids, _, _ in batch:
                    self._pending[topic].difference_update(event_ids)
                self._writing = False
                self._changed.notify_all()

    def _write(self, batch: list[tuple[str, list[str], int, int]]) -> None:
        """One transaction: every id of the batch, and each topic's progress after it."""
        progress: dict[str, tuple[int, int]] = {}
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for topic, event_ids, indexed_to, readable in batch:
                self._db.executemany(
                    "INSERT OR IGNORE INTO ids (topic, id) VALUES (?, ?)", [(topic, i) for i in event_ids]
                )
                progress[topic] = (indexed_to, readable)
            self._db.executemany(
                "INSERT OR REPLACE INTO progress (topic, indexed_to, readable) VALUES (?, ?, ?)",
                [(t, n, r) for t, (n, r) in progress.items()],
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def _catch_up(self, topic: str) -> None:
        start, readable = self._progress.get(topic, (0, 0))
        end, now_readable = self.log.end_offset(topic), self.log.readable(topic)
        if start == end and readable == now_readable:
            return
        if start <= end:
            tail, count = self._ids_from(topic, start)
            if readable + count == now_readable:  # grown by exactly the records past `start`
                self._enqueue(topic, tail, end, now_readable)
                return
        # The log went back (restored from a copy) or lost records (repaired into quarantine).
        _log.warning(
            "%s: topic %s has %d readable records up to offset %d, the event-id index knew %d up to %d; "
            "indexing the topic again",
            *(self.path, topic, now_readable, end, readable, start),
        )
        self._vanished.add(topic)
        self.flush()  # the writer idle, nothing queued: the topic's rows are rewritten here
        every, count = self._ids_from(topic, 0)
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute("DELETE FROM ids WHERE topic = ?", (topic,))
            self._db.executemany("INSERT OR IGNORE INTO ids (topic, id) VALUES (?, ?)", [(topic, i) for i in every])
            self._db.execute(
                "INSERT OR REPLACE INTO progress (topic, indexed_to, readable) VALUES (?, ?, ?)", (topic, end, count)
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._pending.pop(topic, None)
        self._progress[topic] = (end, count)

    def _ids_from(self, topic: str, start: int) -> tuple[list[str], int]:
        """The event ids of the records from `start` on, and how many records there were."""
        found: list[str] = []
        count = 0
        for record in self.log.read(topic, start):
            count += 1
            event_id = record.headers.get(EVENT_ID_HEADER)
            if event_id:
                found.append(event_id)
        return found, count
