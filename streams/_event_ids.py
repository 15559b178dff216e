"""Which event ids each topic of the embedded log holds: the runtime's dedupe, on disk and derived from the log.

`<data dir>/checkpoints/event-ids.sqlite` holds ids(topic, id) and progress(topic, indexed_to). Before a
topic's ids are looked up, the records appended since `indexed_to` (by anyone: this runtime, a raw append,
another process earlier) are read and indexed, so the index follows the log and a command reads only what
is new. A lookup is an indexed query; memory does not grow with history. An index that is unreadable, of
another format, or ahead of its log (a log restored from a copy) is moved aside and rebuilt from the log.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from streams.checkpoints import set_aside
from streams.embedded_log import EmbeddedLog

FORMAT = "agenttwin-event-ids/1"
EVENT_ID_HEADER = "event_id"
_CHUNK = 500  # ids per query (well under SQLite's variable limit)

_log = logging.getLogger(__name__)


class EventIdIndex:
    def __init__(self, path: Path, log: EmbeddedLog) -> None:
        self.path = path
        self.log = log
        self._lock = threading.RLock()  # the receiver publishes from several threads
        self._progress: dict[str, int] = {}
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
                db.execute("CREATE TABLE progress (topic TEXT PRIMARY KEY, indexed_to INTEGER NOT NULL)")
                db.execute("COMMIT")
            (found,) = db.execute("SELECT format FROM meta").fetchone() or (None,)
            if found != FORMAT:
                raise sqlite3.DatabaseError(f"format {found!r}, expected {FORMAT!r}")
            self._progress = {str(t): int(n) for t, n in db.execute("SELECT topic, indexed_to FROM progress")}
        except BaseException:
            db.close()
            raise
        return db

    def close(self) -> None:
        with self._lock:
            self._db.close()

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
            if self._progress.get(topic, 0) != offsets.start:
                self._catch_up(topic)  # someone else appended in between: read it all from the log
                return
            self._insert(topic, event_ids, offsets.stop)

    def _insert(self, topic: str, event_ids: Sequence[str], indexed_to: int) -> None:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany("INSERT OR IGNORE INTO ids (topic, id) VALUES (?, ?)", [(topic, i) for i in event_ids])
            self._db.execute("INSERT OR REPLACE INTO progress (topic, indexed_to) VALUES (?, ?)", (topic, indexed_to))
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._progress[topic] = indexed_to

    def _catch_up(self, topic: str) -> None:
        start = self._progress.get(topic, 0)
        end = self.log.end_offset(topic)
        if start == end:
            return
        if start > end:  # the index knows records the log does not have: never trust it for this topic
            _log.warning("%s: event-id index of topic %s is ahead of its log (%d > %d); re-indexing the topic",
                         self.path, topic, start, end)  # fmt: skip
            self._db.execute("DELETE FROM ids WHERE topic = ?", (topic,))
            self._progress[topic] = start = 0
        batch: list[str] = []
        offset = start
        for record in self.log.read(topic, start):
            event_id = record.headers.get(EVENT_ID_HEADER)
            if event_id:
                batch.append(event_id)
            offset = record.offset + 1
            if len(batch) >= 5000:
                self._insert(topic, batch, offset)
                batch = []
        self._insert(topic, batch, max(offset, end))
