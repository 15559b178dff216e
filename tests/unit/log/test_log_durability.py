"""Acknowledged means durable: `append_many`, `publish()` and the OTLP receiver's 200 come after the fsync.

The checks watch the real system calls (os.pwrite/os.write/os.fsync/os.replace, resolved to paths through
/proc/self/fd) while the real log, runtime and HTTP receiver run, and assert at the moment of the
acknowledgement that every byte written to a topic file was fsynced, and that a topic file created for
the batch had its directory entry fsynced too. A block's index entry is written after that fsync (and
before the acknowledgement): a block the index lists was on disk, so one cut short is damage, never a torn
write. The index is rebuilt from the container if power is lost before the page cache reaches it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from producers.otlp import ApiKeys, make_server
from producers.otlp import server as otlp_server
from streams._log_index import ENTRY_SIZE
from streams.embedded import EmbeddedRuntime
from streams.embedded_log import EmbeddedLog, NewRecord
from tests.unit.traces.conftest import agent_trace


@dataclass
class Calls:
    events: list[tuple[str, str]] = field(default_factory=list)

    def check_durable(self, upto: int | None = None) -> None:
        """Everything written to a topic file before event `upto` was fsynced (file and, if new, its directory)."""
        events = self.events[:upto]
        dirty: dict[str, int] = {}
        created_dirs: dict[str, int] = {}
        for i, (op, path) in enumerate(events):
            if op in ("pwrite", "write", "ftruncate") and ".avro" in Path(path).name:
                dirty[path] = i
            elif op in ("fsync", "fdatasync"):
                dirty.pop(path, None)
                created_dirs.pop(path, None)
            elif op in ("replace", "rename") and Path(path.split("\0")[1]).name.endswith(".avro"):
                src, dst = path.split("\0")
                assert src not in dirty, f"{src} renamed to {dst} before its fsync"
                created_dirs[str(Path(dst).parent)] = i
        assert not dirty, f"acknowledged before fsync of {sorted(dirty)}"
        assert not created_dirs, f"new topic file's directory not fsynced: {sorted(created_dirs)}"

    def index_of(self, op: str) -> int:
        return next(i for i, (o, _) in enumerate(self.events) if o == op)


def _path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return f"fd:{fd}"


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Calls]:
    seen = Calls()

    def spy(name: str, real: Callable[..., Any], arg: Callable[..., str]) -> None:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            seen.events.append((name, arg(*args)))
            return real(*args, **kwargs)

        monkeypatch.setattr(os, name, wrapper)

    spy("pwrite", os.pwrite, lambda fd, *_: _path(fd))
    spy("write", os.write, lambda fd, *_: _path(fd))
    spy("ftruncate", os.ftruncate, lambda fd, *_: _path(fd))
    spy("fsync", os.fsync, lambda fd: _path(fd if isinstance(fd, int) else fd.fileno()))
    spy("fdatasync", os.fdatasync, lambda fd: _path(fd))
    spy("replace", os.replace, lambda src, dst, **_: f"{Path(src).resolve()}\0{Path(dst).resolve()}")
    spy("rename", os.rename, lambda src, dst, **_: f"{Path(src).resolve()}\0{Path(dst).resolve()}")
    return seen


def test_append_many_returns_after_the_fsync_of_the_block_and_of_a_new_topic_file(tmp_path: Path, calls: Calls) -> None:
    with EmbeddedLog(tmp_path) as log:
        calls.events.clear()
        log.append_many("t", [NewRecord(b"a"), NewRecord(b"b")])
        calls.check_durable()
        topic_file = str((tmp_path / "topics" / "t.avro").resolve())
        assert ("pwrite", topic_file) in calls.events
        assert ("pwrite", str((tmp_path / "topics" / "t.idx").resolve())) in calls.events  # same window
        calls.events.clear()
        log.append_many("t", [NewRecord(b"c")])
        calls.check_durable()
        fsyncs = [p for op, p in calls.events if op in ("fsync", "fdatasync")]
        assert fsyncs == [topic_file]  # one fsync per batch
        index_file = str((tmp_path / "topics" / "t.idx").resolve())
        assert calls.events.index(("pwrite", index_file)) > calls.events.index(("fsync", topic_file))


def test_an_index_entry_is_written_only_once_its_block_is_on_disk(tmp_path: Path, calls: Calls) -> None:
    index_file = tmp_path / "topics" / "t.idx"
    with EmbeddedLog(tmp_path) as log:
        log.append("t", None, b"first")
        listed = index_file.stat().st_size
        calls.events.clear()
        with log.deferred_sync() as touched:  # group commit: the caller fsyncs later
            log.append_many("t", [NewRecord(b"a"), NewRecord(b"b")])
            log.append_many("t", [NewRecord(b"c")])
        assert index_file.stat().st_size == listed  # not on disk yet: not listed
        assert not any(op == "pwrite" and path == str(index_file.resolve()) for op, path in calls.events)
        log.sync(touched)
        assert index_file.stat().st_size == listed + 2 * ENTRY_SIZE
        topic_file = str((tmp_path / "topics" / "t.avro").resolve())
        first_index_write = calls.events.index(("pwrite", str(index_file.resolve())))
        assert calls.events.index(("fsync", topic_file)) < first_index_write
        with log.deferred_sync():
            log.append("t", None, b"never synced by its caller")
    with EmbeddedLog(tmp_path, read_only=True) as log:  # close() made it durable, then listed it
        assert [r.value for r in log.read("t")] == [b"first", b"a", b"b", b"c", b"never synced by its caller"]
    assert index_file.stat().st_size == listed + 3 * ENTRY_SIZE


def test_runtime_publish_returns_durable(tmp_path: Path, calls: Calls) -> None:
    from streams import ids
    from streams.events import DeadLettered

    with EmbeddedRuntime(tmp_path) as runtime:
        calls.events.clear()
        event = DeadLettered(
            event_id=ids.event_id("DeadLettered", "test", "t", 0),
            occurred_at=ids.PINNED_NOW,
            correlation_id="",
            stage="test",
            reason="test",
            error_class="TEST",
            source_topic="spans",
            source_partition=0,
            source_offset=0,
            original_value=b"x",
            attempt=1,
        )
        assert runtime.publish([event]) == 1
        calls.check_durable()


def test_the_receivers_200_comes_after_the_fsync(tmp_path: Path, calls: Calls, monkeypatch: pytest.MonkeyPatch) -> None:
    real_reply = otlp_server._Handler._reply

    def reply(self: Any, status: int, *args: Any, **kwargs: Any) -> None:
        calls.events.append(("reply", str(status)))
        real_reply(self, status, *args, **kwargs)

    monkeypatch.setattr(otlp_server._Handler, "_reply", reply)
    with EmbeddedRuntime(tmp_path / "data") as runtime:
        server = make_server("127.0.0.1", 0, runtime, ApiKeys.from_mapping({"k": "acme"}))
        server.start()
        try:
            calls.events.clear()
            resp = httpx.post(
                f"{server.url}/v1/traces",
                content=agent_trace().SerializeToString(),
                headers={"Content-Type": "application/x-protobuf", "x-agenttwin-api-key": "k"},
                timeout=30,
            )
        finally:
            server.close()
        assert resp.status_code == 200
        assert runtime.log.end_offset("spans") == 2
    replied = calls.index_of("reply")
    assert any(op == "pwrite" and p.endswith("spans.avro") for op, p in calls.events[:replied])
    calls.check_durable(replied)
