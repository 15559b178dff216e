"""The embedded event log: offsets, reads, group commits, reopen, crash repair, the directory lock."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import fastavro
import pytest

from streams._log_index import ENTRY_SIZE
from streams.embedded_log import EmbeddedLog, EventLogError, LogLockedError, NewRecord


def _values(log: EmbeddedLog, topic: str, start: int = 0, limit: int | None = None) -> list[bytes]:
    return [record.value for record in log.read(topic, start, limit)]


def _fill(log: EmbeddedLog, topic: str, batches: int, per_batch: int) -> None:
    for b in range(batches):
        records = [
            NewRecord(f"{b}-{i}".encode(), key=f"k{i}", timestamp_ms=b * 1000 + i) for i in range(per_batch)
        ]
        log.append_many(topic, records)


@pytest.fixture
def log(tmp_path: Path) -> Iterator[EmbeddedLog]:
    with EmbeddedLog(tmp_path / "data", fsync=False) as opened:
        yield opened


def test_append_assigns_consecutive_offsets_and_read_returns_fields(log: EmbeddedLog) -> None:
    assert log.append("cases", "case-1", b"a", {"source": "sim"}, 1_700_000_000_000) == 0
    assert log.append("cases", None, b"b") == 1
    assert log.append_many("cases", [NewRecord(b"c"), NewRecord(b"d", "case-2")]) == range(2, 4)
    assert log.append_many("cases", []) == range(4, 4)
    first, second, *_ = log.read("cases")
    assert (first.topic, first.offset, first.key, first.value) == ("cases", 0, "case-1", b"a")
    assert dict(first.headers) == {"source": "sim"}
    assert first.timestamp_ms == 1_700_000_000_000
    assert (second.key, second.headers, second.timestamp_ms) == (None, {}, None)
    assert [r.offset for r in log.read("cases", 1)] == [1, 2, 3]
    assert log.end_offset("cases") == 4
    assert log.topics() == ["cases"]


def test_read_seeks_by_offset_across_blocks(log: EmbeddedLog) -> None:
    _fill(log, "t", batches=5, per_batch=7)
    assert _values(log, "t", 13, 3) == [b"1-6", b"2-0", b"2-1"]
    assert [r.offset for r in log.read("t", 30)] == [30, 31, 32, 33, 34]
    assert _values(log, "t", 35) == []
    assert _values(log, "t", 99) == []
    assert _values(log, "unknown-topic") == []
    assert log.end_offset("unknown-topic") == 0
    every = list(log.read("t"))
    assert [r.offset for r in every] == list(range(35))
    with pytest.raises(EventLogError):
        list(log.read("t", -1))


def test_reads_see_appends_made_in_between(log: EmbeddedLog) -> None:
    log.append("t", None, b"0")
    pending = log.read("t")  # a snapshot: records up to the end at call time
    log.append("t", None, b"1")
    assert [r.value for r in pending] == [b"0"]
    assert _values(log, "t", 1) == [b"1"]
    for n in range(2, 50):  # a poll loop over a growing topic
        log.append("t", None, str(n).encode())
        assert _values(log, "t", n) == [str(n).encode()]


def test_reopen_sees_everything_and_files_are_standard_avro(tmp_path: Path) -> None:
    with EmbeddedLog(tmp_path) as log:
        _fill(log, "t", batches=3, per_batch=4)
        log.append("other", "k", b"x")
    with EmbeddedLog(tmp_path) as log:
        assert log.topics() == ["other", "t"]
        assert log.end_offset("t") == 12
        assert _values(log, "t", 10) == [b"2-2", b"2-3"]
        assert log.append("t", None, b"more") == 12
    with (tmp_path / "topics" / "t.avro").open("rb") as handle:
        rows = list(fastavro.reader(handle))
    assert len(rows) == 13
    assert rows[0] == {"key": "k0", "value": b"0-0", "headers": {}, "timestamp_ms": 0}


def test_same_appends_give_the_same_bytes(tmp_path: Path) -> None:
    for name in ("a", "b"):
        with EmbeddedLog(tmp_path / name, fsync=False) as log:
            _fill(log, "t", batches=2, per_batch=3)
    assert (tmp_path / "a/topics/t.avro").read_bytes() == (tmp_path / "b/topics/t.avro").read_bytes()


def test_commit_and_committed(tmp_path: Path) -> None:
    with EmbeddedLog(tmp_path) as log:
        _fill(log, "t", batches=1, per_batch=5)
        assert log.committed("judge-v1", "t") == 0
        log.commit("judge-v1", "t", 3)
        log.commit("judge-v1", "t", 5)
        log.commit("judge-v2", "t", 1)
        with pytest.raises(EventLogError, match="outside"):
            log.commit("judge-v1", "t", 6)
        with pytest.raises(EventLogError, match="invalid group"):
            log.commit("../escape", "t", 0)
    stored = json.loads((tmp_path / "offsets" / "judge-v1.json").read_text())
    assert stored == {"t": 5}
    assert sorted(p.name for p in (tmp_path / "offsets").iterdir()) == ["judge-v1.json", "judge-v2.json"]
    with EmbeddedLog(tmp_path) as log:
        assert log.committed("judge-v1", "t") == 5
        assert log.committed("judge-v2", "t") == 1
        assert log.committed("judge-v1", "other") == 0


@pytest.mark.parametrize("cut", [1, 5, 17])
def test_truncated_last_block_is_reported_and_cut(tmp_path: Path, cut: int) -> None:
    with EmbeddedLog(tmp_path) as log:
        _fill(log, "t", batches=3, per_batch=4)
    path = tmp_path / "topics" / "t.avro"
    index = tmp_path / "topics" / "t.idx"
    whole = path.read_bytes()
    path.write_bytes(whole[:-cut])  # a crash in the middle of the last block's write...
    index.write_bytes(index.read_bytes()[:-ENTRY_SIZE])  # ...before its fsync: its entry was never written
    with EmbeddedLog(tmp_path) as log:
        (repair,) = log.repairs
        assert repair.topic == "t"
        assert repair.dropped_bytes > 0
        assert repair.kept_bytes == path.stat().st_size
        assert repair.quarantine is not None and repair.quarantine.stat().st_size == repair.dropped_bytes
        assert log.end_offset("t") == 8  # never acknowledged, never listed: no reader saw offsets 8-11
        assert _values(log, "t", 7) == [b"1-3"]
        assert log.append("t", None, b"after") == 8
    with path.open("rb") as handle:
        assert [row["value"] for row in fastavro.reader(handle)][-2:] == [b"1-3", b"after"]
    with EmbeddedLog(tmp_path) as log:
        assert log.repairs == []


def test_garbage_tail_is_cut(tmp_path: Path) -> None:
    with EmbeddedLog(tmp_path) as log:
        log.append("t", None, b"good")
    path = tmp_path / "topics" / "t.avro"
    size = path.stat().st_size
    with path.open("ab") as handle:
        handle.write(b"\x02\x80\x01" + b"x" * 30)  # a block promising 128 bytes: a write cut short
    with EmbeddedLog(tmp_path) as log:
        assert "cut short" in log.repairs[0].problem
        assert path.stat().st_size == size
        assert _values(log, "t") == [b"good"]


def test_foreign_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "topics").mkdir()
    (tmp_path / "topics" / "t.avro").write_bytes(b"PK\x03\x04 not avro")
    with pytest.raises(EventLogError, match=r"bad magic.*agenttwin log repair"):
        EmbeddedLog(tmp_path)
    # the failed open released the lock
    (tmp_path / "topics" / "t.avro").unlink()
    with EmbeddedLog(tmp_path) as log:
        assert log.topics() == []


def test_second_writer_is_locked_out(tmp_path: Path) -> None:
    with EmbeddedLog(tmp_path):
        with pytest.raises(LogLockedError, match="already open for writing"):
            EmbeddedLog(tmp_path)
        # readers do not need the lock
        with EmbeddedLog(tmp_path, read_only=True) as reader:
            assert reader.topics() == []
    with EmbeddedLog(tmp_path) as log:
        assert log.append("t", None, b"x") == 0


def test_lock_held_by_another_process(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys\n"
            f"fd = os.open({str(tmp_path / 'LOCK')!r}, os.O_RDWR | os.O_CREAT)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('locked', flush=True)\n"
            "sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(LogLockedError):
            EmbeddedLog(tmp_path)
    finally:
        holder.communicate("")
    with EmbeddedLog(tmp_path) as log:
        assert log.end_offset("t") == 0


def test_read_only_view_follows_the_writer(tmp_path: Path) -> None:
    with EmbeddedLog(tmp_path) as writer:
        writer.append("t", None, b"1")
        writer.commit("g", "t", 1)
        with EmbeddedLog(tmp_path, read_only=True) as reader:
            assert _values(reader, "t") == [b"1"]
            writer.append_many("t", [NewRecord(b"2"), NewRecord(b"3")])
            writer.commit("g", "t", 3)
            assert _values(reader, "t", 1) == [b"2", b"3"]
            assert reader.committed("g", "t") == 3
            with pytest.raises(EventLogError, match="read-only"):
                reader.append("t", None, b"no")


def test_invalid_names_and_values(log: EmbeddedLog) -> None:
    for bad in ("", "a/b", "..", "x" * 250, "spaces are bad"):
        with pytest.raises(EventLogError, match="invalid topic"):
            log.append(bad, None, b"x")
    with pytest.raises(EventLogError, match="must be bytes"):
        log.append("t", None, "text")  # type: ignore[arg-type]


def test_lock_file_names_the_holder(tmp_path: Path) -> None:
    with EmbeddedLog(tmp_path):
        assert (tmp_path / "LOCK").read_text().strip() == str(os.getpid())
    fd = os.open(tmp_path / "LOCK", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released on close
    finally:
        os.close(fd)
