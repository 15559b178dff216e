"""Which event ids each topic of the embedded log holds: the runtime's dedupe, on disk and derived from the log.

`<data dir>/checkpoints/event-ids.sqlite` holds ids(topic, id) and progress(topic, indexed_to, readable).
Before a topic's ids are looked up, the records appended since `indexed_to` (by anyone: this runtime, a
raw append, another process earlier) are read and indexed, so the index follows the log and a command
reads only what is new. A lookup is an indexed query; memory does not grow with history. An index that is
unreadable or of another format is moved aside and rebuilt from the log; a topic whose log is behind the
index (restored from a copy) or lost records since (`agenttwin log repair` moved a block to quarantine) is
indexed again from offset 0, and `vanished()` names it so the runtime can rebuild what was derived from it.
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

_log = logging.getLogger(__name__)


class EventIdIndex:
    def __init__(self, path: Path, log: EmbeddedLog) -> None:
        self.path = path
        self.log = log
        self._lock = threading.RLock()  # the receiver publishes from several threads
        self._progress: dict[str, tuple[int, int]] = {}  # topic -> (indexed_to, readable records then)
        self._vanished: set[str] = set()
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = self._open()
        except sqlite3.DatabaseError as exc:
            _log.warning("%s: unreadable event-id index (%s); rebuilding it from the log (old file kept as %s)",
                         path, exc, set_aside(path))  # fmt: skip
            self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        fresh = not self.path.exists()
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            # not fsync'ed: ids are indexed after their records are durable in the log, and a lost or torn
            # index is caught up or rebuilt from the log
            db.execute("PRAGMA synchronous=OFF")
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
        except BaseException:
            db.close()
            raise
        return db

    def close(self) -> None:
        with self._lock:
            self._db.close()

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
            self._catch_up(topic)
            found: set[str] = set()
            unique = list(dict.fromkeys(event_ids))
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                query = f"SELECT id FROM ids WHERE topic = ? AND id IN ({','.join('?' * len(chunk))})"
                found.update(row[0] for row in self._db.execute(query, (topic, *chunk)))
            return found

    def appended(self, topic: str, event_ids: Sequence[str], offsets: range) -> None:
        """Record ids just appended at `offsets` (right after the append returned)."""
        with self._lock:
            indexed_to, readable = self._progress.get(topic, (0, 0))
            if indexed_to != offsets.start:
                self._catch_up(topic)  # someone else appended in between: read it all from the log
                return
            self._insert(topic, event_ids, offsets.stop, readable + len(offsets))

    def _insert(self, topic: str, event_ids: Sequence[str], indexed_to: int, readable: int) -> None:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany("INSERT OR IGNORE INTO ids (topic, id) VALUES (?, ?)", [(topic, i) for i in event_ids])
            self._db.execute(
                "INSERT OR REPLACE INTO progress (topic, indexed_to, readable) VALUES (?, ?, ?)",
                (topic, indexed_to, readable),
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._progress[topic] = (indexed_to, readable)

    def _catch_up(self, topic: str) -> None:
        start, readable = self._progress.get(topic, (0, 0))
        end, now_readable = self.log.end_offset(topic), self.log.readable(topic)
        if start == end and readable == now_readable:
            return
        if start <= end:
            tail, count = self._ids_from(topic, start)
            if readable + count == now_readable:  # grown by exactly the records past `start`
                self._insert(topic, tail, end, now_readable)
                return
        # The log went back (restored from a copy) or lost records (repaired into quarantine).
        _log.warning(
            "%s: topic %s has %d readable records up to offset %d, the event-id index knew %d up to %d; "
            "indexing the topic again",
            *(self.path, topic, now_readable, end, readable, start),
        )
        self._vanished.add(topic)
        self._db.execute("DELETE FROM ids WHERE topic = ?", (topic,))
        every, count = self._ids_from(topic, 0)
        self._insert(topic, every, end, count)

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
