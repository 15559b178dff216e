"""The event-id index writes appended ids on its own thread (streams/_event_ids.py).

On the real embedded log and a real SQLite index: an id appended is known at once, before the writer
committed it and after; the appender waits when too many ids are queued; a writer that fails makes the
next call raise, and the next start indexes what it left out from the log, so nothing appended is
appended twice.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from streams import _event_ids
from streams._event_ids import EventIdIndex
from streams.embedded_log import EmbeddedLog, NewRecord
from streams.identity import EVENT_ID_HEADER

WAIT_S = 60.0  # generous: a loaded 2-core machine


def _append(log: EmbeddedLog, index: EventIdIndex, topic: str, ids: list[str]) -> None:
    offsets = log.append_many(topic, [NewRecord(i.encode(), headers={EVENT_ID_HEADER: i}) for i in ids])
    index.appended(topic, ids, offsets)


class HeldWriter:
    """Replaces EventIdIndex._write: each transaction waits until released (or fails, when told to)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fail: bool = False) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.fail = fail
        real = EventIdIndex._write

        def held(index: EventIdIndex, batch: Any) -> None:
            self.started.set()
            assert self.release.wait(WAIT_S)
            if self.fail:
                raise sqlite3.OperationalError("database or disk is full")
            real(index, batch)

        monkeypatch.setattr(EventIdIndex, "_write", held)


def _stored(path: Path, topic: str) -> set[str]:
    db = sqlite3.connect(path)
    try:
        return {row[0] for row in db.execute("SELECT id FROM ids WHERE topic = ?", (topic,))}
    finally:
        db.close()


def test_an_appended_id_is_known_before_and_after_the_writer_commits_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = HeldWriter(monkeypatch)
    path = tmp_path / "event-ids.sqlite"
    with EmbeddedLog(tmp_path / "log", fsync=False) as log:
        index = EventIdIndex(path, log)
        _append(log, index, "spans", ["a", "b"])
        assert writer.started.wait(WAIT_S)  # the writer holds the batch, uncommitted
        assert _stored(path, "spans") == set()
        assert index.known("spans", ["a", "b", "c"]) == {"a", "b"}
        writer.release.set()
        index.flush()
        assert _stored(path, "spans") == {"a", "b"}
        assert index.known("spans", ["a", "b", "c"]) == {"a", "b"}
        assert index.known("claims", ["a"]) == set()  # ids are per topic
        index.close()


def test_the_appender_waits_while_the_queue_is_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_event_ids, "QUEUE_LIMIT", 3)
    writer = HeldWriter(monkeypatch)
    with EmbeddedLog(tmp_path / "log", fsync=False) as log:
        index = EventIdIndex(tmp_path / "event-ids.sqlite", log)
        _append(log, index, "spans", ["a"])  # taken by the writer, which is held
        assert writer.started.wait(WAIT_S)
        _append(log, index, "spans", ["b", "c", "d"])  # queued: the queue is full now
        done = threading.Event()
        late = threading.Thread(target=lambda: (_append(log, index, "spans", ["e"]), done.set()))
        late.start()
        assert not done.wait(0.5)  # waits for the writer
        writer.release.set()
        assert done.wait(WAIT_S)
        late.join()
        index.flush()
        assert index.known("spans", list("abcdef")) == set("abcde")
        index.close()


def test_a_failed_writer_raises_on_the_next_call_and_the_next_start_indexes_from_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    writer = HeldWriter(monkeypatch, fail=True)
    path = tmp_path / "event-ids.sqlite"
    with EmbeddedLog(tmp_path / "log", fsync=False) as log:
        index = EventIdIndex(path, log)
        _append(log, index, "spans", ["a", "b"])
        writer.release.set()
        with pytest.raises(RuntimeError, match="could not be written") as raised:
            index.flush()
        assert isinstance(raised.value.__cause__, sqlite3.OperationalError)
        with pytest.raises(RuntimeError, match="could not be written"):
            index.known("spans", ["a"])
        index.close()
        assert "could not be written" in caplog.text
        assert _stored(path, "spans") == set()
        monkeypatch.undo()
        again = EventIdIndex(path, log)  # the records are in the log: indexed from there
        assert again.known("spans", ["a", "b", "c"]) == {"a", "b"}
        again.close()
        assert _stored(path, "spans") == {"a", "b"}
