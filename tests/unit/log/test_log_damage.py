"""A damaged embedded log: detected, reported in one line, never truncated past a valid block.

Each test writes a real log with EmbeddedLog, damages its files the way a failing disk or a crash would,
and checks what opening, `verify_log` and `repair_log` do. Layouts come from the clean file's own blocks
(`scan_blocks`), not from the index under test.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import fastavro
import pytest

from streams import _log_files
from streams._avro_container import Block, parse_header, scan_blocks
from streams._log_index import ENTRY_SIZE
from streams._log_salvage import record_spans
from streams.embedded_log import EmbeddedLog, EventLogError, LogDamagedError, NewRecord
from streams.log_integrity import repair_log, verify_log


def _fill(log: EmbeddedLog, topic: str, batches: int, per_batch: int) -> None:
    for b in range(batches):
        log.append_many(topic, [NewRecord(f"{b}-{i}".encode(), key=f"k{i}") for i in range(per_batch)])


def _blocks(path: Path) -> tuple[int, list[Block]]:
    data = path.read_bytes()
    header = parse_header(data, len(data))
    blocks, problem = scan_blocks(data, header.data_start, len(data), header.sync)
    assert problem is None
    return header.data_start, blocks


def _flip(path: Path, position: int, mask: int = 0x01) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= mask
    path.write_bytes(bytes(data))


def _wreck(path: Path, block: Block) -> None:
    """Two damaged bytes in a block: the checksum cannot say where, so repair keeps none of its records."""
    _flip(path, block.body_position + 1)
    _flip(path, block.end - 5)


def _records(log: EmbeddedLog, topic: str, start: int = 0) -> list[tuple[int, bytes]]:
    return [(r.offset, r.value) for r in log.read(topic, start)]


EXPECTED = [(b * 4 + i, f"{b}-{i}".encode()) for b in range(5) for i in range(4)]


@pytest.fixture
def written(tmp_path: Path) -> Path:
    with EmbeddedLog(tmp_path) as log:
        _fill(log, "t", batches=5, per_batch=4)  # offsets 0..19, 4 per block
        log.append("other", "k", b"x")
        log.commit("sink", "t", 20)
        log.commit("slow", "t", 6)
    return tmp_path


def test_a_flipped_sync_byte_in_the_middle_is_reported_and_nothing_is_truncated(written: Path) -> None:
    path = written / "topics" / "t.avro"
    _, blocks = _blocks(path)
    size = path.stat().st_size
    _flip(path, blocks[2].end - 5)  # two bytes of block 2's sync marker: no record can be proven intact
    _flip(path, blocks[2].end - 9)
    with pytest.raises(LogDamagedError) as caught:
        EmbeddedLog(written)
    line = str(caught.value)
    assert "\n" not in line
    assert "topic t" in line and "block 2" in line and f"byte {blocks[2].position}" in line
    assert "agenttwin log repair" in line
    assert path.stat().st_size == size  # the open did not cut anything
    with pytest.raises(LogDamagedError):
        EmbeddedLog(written, read_only=True)

    report = verify_log(written)
    assert [(d.topic, d.block, d.position, d.first_offset, d.count) for d in report.damaged] == [
        ("t", 2, blocks[2].position, 8, 4)
    ]
    assert not report.ok

    repaired = repair_log(written)
    assert [(q.topic, q.first_offset, q.count, q.position) for q in repaired.quarantined] == [
        ("t", 8, 4, blocks[2].position)
    ]
    quarantined = repaired.quarantined[0].path.read_bytes()
    assert len(quarantined) == blocks[2].end - blocks[2].position
    assert verify_log(written).ok

    with EmbeddedLog(written) as log:
        kept = [r for r in EXPECTED if not 8 <= r[0] < 12]
        assert _records(log, "t") == kept  # every valid block, with its original offsets
        assert log.end_offset("t") == 20
        assert log.committed("sink", "t") == 20 and log.committed("slow", "t") == 6
        assert _records(log, "t", 6) == [r for r in kept if r[0] >= 6]
        assert _records(log, "t", 9) == [r for r in kept if r[0] >= 12]  # inside the gap: the next block
        assert [r.offset for r in log.read("t", 9, max_records=5)] == [12, 13]
        assert log.append("t", None, b"after") == 20  # offsets are never reused
        assert _records(log, "other") == [(0, b"x")]
    with path.open("rb") as handle:  # still a standard Avro file
        assert len(list(fastavro.reader(handle))) == 17


def test_a_flipped_byte_in_a_record_framing_is_damage_not_a_crash(written: Path) -> None:
    path = written / "topics" / "t.avro"
    _, blocks = _blocks(path)
    _flip(path, blocks[1].body_position + 1, 0x40)  # the key's union index / string length
    with pytest.raises(LogDamagedError, match="block 1"):
        EmbeddedLog(written)
    report = verify_log(written)
    assert [d.block for d in report.damaged] == [1]
    (held,) = repair_log(written).quarantined
    assert (held.first_offset, held.count) == (4, 1)  # the record that holds the byte; its block's others stay
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == [r for r in EXPECTED if r[0] != 4]


def test_a_flipped_block_count_or_size_varint_is_damage(written: Path) -> None:
    path = written / "topics" / "t.avro"
    _, blocks = _blocks(path)
    _flip(path, blocks[3].position)  # the count varint of block 3
    _flip(path, blocks[0].position + 1)  # the size varint of block 0
    report = verify_log(written)
    assert sorted(d.block for d in report.damaged) == [0, 3]
    assert [q.count for q in repair_log(written).quarantined] == [0, 0]  # framing only: every record kept
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == EXPECTED


def test_damage_in_the_last_complete_block_is_not_a_torn_tail(written: Path) -> None:
    path = written / "topics" / "t.avro"
    _, blocks = _blocks(path)
    _flip(path, blocks[4].body_position + 3)
    with pytest.raises(LogDamagedError, match="block 4"):
        EmbeddedLog(written)
    repaired = repair_log(written)
    assert [(q.first_offset, q.count) for q in repaired.quarantined] == [(16, 1)]
    with EmbeddedLog(written) as log:
        assert log.end_offset("t") == 20
        assert log.append("t", None, b"new") == 20
        assert _records(log, "t", 15) == [(15, b"3-3"), (17, b"4-1"), (18, b"4-2"), (19, b"4-3"), (20, b"new")]


def test_a_damaged_container_header_keeps_every_block(written: Path) -> None:
    path = written / "topics" / "t.avro"
    _flip(path, 20)  # inside the schema JSON of the header
    with pytest.raises(LogDamagedError, match="header"):
        EmbeddedLog(written)
    assert [d.block for d in verify_log(written).damaged] == [None]
    repair_log(written)
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == EXPECTED
    with path.open("rb") as handle:
        assert len(list(fastavro.reader(handle))) == 20


def test_a_damaged_header_sync_marker_keeps_every_block(written: Path) -> None:
    path = written / "topics" / "t.avro"
    data_start, _ = _blocks(path)
    _flip(path, data_start - 3)
    with pytest.raises(LogDamagedError):
        EmbeddedLog(written)
    repair_log(written)
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == EXPECTED


@pytest.mark.parametrize("where", ["header", "first-entry", "middle-entry", "last-entry"])
def test_a_damaged_index_is_reported_and_rebuilt_without_losing_a_block(written: Path, where: str) -> None:
    index = written / "topics" / "t.idx"
    size = index.stat().st_size
    entry = 40
    position = {
        "header": 10,
        "first-entry": size - 5 * entry + 12,
        "middle-entry": size - 3 * entry + 20,
        "last-entry": size - entry + 30,
    }[where]
    _flip(index, position)
    with pytest.raises(LogDamagedError, match="index"):
        EmbeddedLog(written)
    report = verify_log(written)
    assert report.damaged and all(d.topic == "t" for d in report.damaged)
    assert repair_log(written).quarantined == []  # no block was damaged: nothing to quarantine
    assert verify_log(written).ok
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == EXPECTED
        assert log.append("t", None, b"next") == 20


@pytest.mark.parametrize("cut", [1, 5, 17])
def test_a_torn_last_block_goes_to_quarantine(written: Path, cut: int) -> None:
    """The append never returned: its block is cut short and its index entry was never written."""
    path = written / "topics" / "t.avro"
    index = written / "topics" / "t.idx"
    whole = path.read_bytes()
    _, blocks = _blocks(path)
    path.write_bytes(whole[:-cut])
    index.write_bytes(index.read_bytes()[:-ENTRY_SIZE])  # the entry is written only after the block's fsync
    (written / "offsets" / "sink.json").write_text('{"t": 16}')  # nobody read what was never acknowledged
    assert verify_log(written).ok  # a torn tail is not damage: it was never acknowledged
    with EmbeddedLog(written) as log:
        (repair,) = log.repairs
        assert (repair.topic, repair.kept_bytes, repair.dropped_bytes) == (
            "t",
            blocks[4].position,
            len(whole) - cut - blocks[4].position,
        )
        assert repair.quarantine is not None
        assert repair.quarantine.read_bytes() == whole[blocks[4].position : -cut]
        assert _records(log, "t") == EXPECTED[:16]
        assert log.append("t", None, b"after") == 16  # no reader was ever told of offsets 16-19
    with EmbeddedLog(written) as log:
        assert log.repairs == []
        assert _records(log, "t", 15) == [(15, b"3-3"), (16, b"after")]


@pytest.mark.parametrize("cut", [1, 5, 17])
def test_a_last_block_the_index_lists_cut_short_is_damage_and_nothing_is_cut(written: Path, cut: int) -> None:
    """Its entry says it was on disk when the append returned: acknowledged records are missing."""
    path = written / "topics" / "t.avro"
    path.write_bytes(path.read_bytes()[:-cut])
    size = path.stat().st_size
    for read_only in (True, False):
        with pytest.raises(LogDamagedError, match=r"topic t: block 4 .*acknowledged bytes are missing.*log repair"):
            EmbeddedLog(written, read_only=read_only)
    assert path.stat().st_size == size and not (written / "quarantine").exists()
    (damage,) = verify_log(written).damaged
    assert (damage.block, damage.first_offset, damage.count) == (4, 16, 4)
    (held,) = repair_log(written).quarantined
    lost = [19] if cut > 16 else []  # the sync marker is 16 bytes: a longer cut reaches the last record
    assert (held.first_offset, held.count) == ((19, 1) if lost else (16, 0))
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == [r for r in EXPECTED if r[0] not in lost]  # the whole records are kept
        assert log.append("t", None, b"after") == 20  # the lost records' offsets stay taken


def test_an_unindexed_incomplete_tail_is_quarantined(written: Path) -> None:
    path = written / "topics" / "t.avro"
    size = path.stat().st_size
    garbage = b"\x02\x80\x01" + b"x" * 30  # framing promises 128 bytes, 30 arrived
    with path.open("ab") as handle:
        handle.write(garbage)
    with EmbeddedLog(written) as log:
        (repair,) = log.repairs
        assert repair.quarantine is not None and repair.quarantine.read_bytes() == garbage
        assert path.stat().st_size == size
        assert log.append("t", None, b"next") == 20


def test_unindexed_bytes_with_every_promised_byte_are_damage_not_a_torn_tail(written: Path) -> None:
    path = written / "topics" / "t.avro"
    size = path.stat().st_size
    with path.open("ab") as handle:
        handle.write(b"\x02\x10" + b"x" * 8 + b"not-the-sync-mark")  # all 26 promised bytes, wrong sync marker
    with pytest.raises(LogDamagedError, match="block 5"):
        EmbeddedLog(written)
    assert path.stat().st_size == size + 27
    (quarantined,) = repair_log(written).quarantined
    assert quarantined.size == 27
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == EXPECTED


def test_a_complete_block_without_its_index_entry_is_adopted(written: Path) -> None:
    """Power lost after the container's fsync but before the index page reached the disk."""
    index = written / "topics" / "t.idx"
    index.write_bytes(index.read_bytes()[:-40])
    assert verify_log(written).ok
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == EXPECTED
        assert log.append("t", None, b"next") == 20
    with EmbeddedLog(written) as log:
        assert log.end_offset("t") == 21


def test_a_zeroed_index_tail_is_a_lagging_index_not_damage(written: Path) -> None:
    index = written / "topics" / "t.idx"
    data = index.read_bytes()
    index.write_bytes(data[:-40] + b"\x00" * 40)
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == EXPECTED


def test_a_truncated_container_with_acknowledged_blocks_missing_is_damage(written: Path) -> None:
    path = written / "topics" / "t.avro"
    _, blocks = _blocks(path)
    path.write_bytes(path.read_bytes()[: blocks[3].position + 3])  # blocks 3 and 4 gone: not a torn write
    with pytest.raises(LogDamagedError, match="block 3"):
        EmbeddedLog(written)
    repaired = repair_log(written)
    assert [(q.first_offset, q.count, q.size) for q in repaired.quarantined] == [(12, 4, 3), (16, 4, 0)]
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == EXPECTED[:12]
        assert log.end_offset("t") == 20


def test_legacy_data_dirs_without_an_index_open_and_get_one(written: Path) -> None:
    for index in (written / "topics").glob("*.idx"):
        index.unlink()
    with EmbeddedLog(written, read_only=True) as log:
        assert _records(log, "t") == EXPECTED
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == EXPECTED
    assert (written / "topics" / "t.idx").exists()
    assert verify_log(written).ok


def test_a_legacy_file_with_a_flipped_sync_byte_is_not_truncated(written: Path) -> None:
    for index in (written / "topics").glob("*.idx"):
        index.unlink()
    path = written / "topics" / "t.avro"
    _, blocks = _blocks(path)
    size = path.stat().st_size
    _flip(path, blocks[1].end - 1)
    with pytest.raises(LogDamagedError, match="block 1"):
        EmbeddedLog(written)
    assert path.stat().st_size == size
    assert [d.block for d in verify_log(written).damaged] == [1]
    repair_log(written)
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == [r for r in EXPECTED if not 4 <= r[0] < 8]


@pytest.mark.parametrize("where", ["sync", "count", "size"])
def test_the_last_block_of_a_legacy_file_is_never_taken_for_a_torn_tail(written: Path, where: str) -> None:
    """The issue's case on a data dir from before the index: one flipped byte of the last, complete block.

    (Without a checksum a flipped byte inside a record's content can go unseen: such files get their
    index, and so their checksums, from the first writer that opens them.)"""
    for index in (written / "topics").glob("*.idx"):
        index.unlink()
    path = written / "topics" / "t.avro"
    _, blocks = _blocks(path)
    size = path.stat().st_size
    last = blocks[-1]
    _flip(path, {"sync": last.end - 9, "count": last.position, "size": last.position + 1}[where])
    with pytest.raises(LogDamagedError, match="block 4"):
        EmbeddedLog(written)
    assert path.stat().st_size == size
    repair_log(written)
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == EXPECTED[:16]
        # a damaged framing's count cannot be trusted without a checksum: those offsets are not kept
        assert log.end_offset("t") == (20 if where == "sync" else 16)


@pytest.mark.parametrize("damaged", [[1], [4], [0, 2]])
def test_after_a_repair_the_container_alone_keeps_every_offset(written: Path, damaged: list[int]) -> None:
    """The index is lost (or only the .avro files were copied): the header's gap list keeps the offsets."""
    path = written / "topics" / "t.avro"
    _, blocks = _blocks(path)
    for b in damaged:
        _wreck(path, blocks[b])
    repair_log(written)
    (written / "topics" / "t.idx").unlink()
    kept = [r for r in EXPECTED if r[0] // 4 not in damaged]
    with EmbeddedLog(written, read_only=True) as log:
        assert _records(log, "t") == kept
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == kept
        assert log.end_offset("t") == 20
    assert verify_log(written).ok
    with path.open("rb") as handle:
        assert len(list(fastavro.reader(handle))) == len(kept)


def test_several_damaged_blocks_are_all_reported_and_all_quarantined(written: Path) -> None:
    path = written / "topics" / "t.avro"
    _, blocks = _blocks(path)
    for b in (0, 2, 3):
        _wreck(path, blocks[b])
    assert [d.block for d in verify_log(written).damaged] == [0, 2, 3]
    assert len(repair_log(written).quarantined) == 3
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == [r for r in EXPECTED if 4 <= r[0] < 8 or r[0] >= 16]
    assert repair_log(written).quarantined == []  # a second repair finds nothing


class _Crash(Exception):
    pass


def test_an_interrupted_repair_is_finished_on_the_next_open(written: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = written / "topics" / "t.avro"
    _, blocks = _blocks(path)
    _wreck(path, blocks[1])

    def crash(*args: object) -> None:
        raise _Crash  # power lost right after the repair's commit point

    monkeypatch.setattr(_log_files, "complete_replace", crash)
    with pytest.raises(_Crash):
        repair_log(written)
    monkeypatch.undo()
    assert list((written / "topics").glob("*.repair*"))
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == [r for r in EXPECTED if not 4 <= r[0] < 8]
    assert not list((written / "topics").glob("*.repair*"))


def test_an_abandoned_repair_before_its_commit_point_changes_nothing(written: Path) -> None:
    path = written / "topics" / "t.avro"
    _flip(path, _blocks(path)[1][1].body_position)
    (written / "topics" / "t.avro.repair").write_bytes(b"half written")
    with pytest.raises(LogDamagedError):
        EmbeddedLog(written)
    assert not (written / "topics" / "t.avro.repair").exists()


@pytest.mark.parametrize("content", ["{not json", '{"t": "seven"}', "[1, 2]", ""])
def test_a_corrupt_offsets_file_is_one_clear_error_and_repair_resets_it(written: Path, content: str) -> None:
    offsets = written / "offsets" / "slow.json"
    offsets.write_text(content)
    with EmbeddedLog(written) as log, pytest.raises(EventLogError) as caught:
        log.committed("slow", "t")
    assert "slow" in str(caught.value) and "agenttwin log repair" in str(caught.value)
    assert any("slow" in d.problem or d.topic == "slow" for d in verify_log(written).damaged)
    repaired = repair_log(written)
    assert [r.group for r in repaired.offsets_reset] == ["slow"]
    assert repaired.offsets_reset[0].quarantine.read_text() == content
    with EmbeddedLog(written) as log:
        assert log.committed("slow", "t") == 0  # documented: the group starts over from offset 0
        assert log.committed("sink", "t") == 20


def test_a_committed_offset_past_the_end_is_reported(written: Path) -> None:
    (written / "offsets" / "sink.json").write_text(json.dumps({"t": 99}))
    report = verify_log(written)
    assert any("sink" in d.problem and "99" in d.problem for d in report.damaged)


def test_verify_of_a_clean_log_reports_nothing(written: Path) -> None:
    report = verify_log(written)
    assert report.ok and report.damaged == []
    assert report.topics == 2 and report.blocks == 6 and report.records == 21
    assert os.path.exists(written / "topics" / "t.idx")


def test_a_reader_follows_a_writer_across_a_repaired_gap(written: Path) -> None:
    path = written / "topics" / "t.avro"
    _wreck(path, _blocks(path)[1][4])  # the last block: offsets 16-19 go to quarantine
    repair_log(written)
    with EmbeddedLog(written) as writer, EmbeddedLog(written, read_only=True) as reader:
        assert reader.end_offset("t") == 20
        writer.append_many("t", [NewRecord(b"a"), NewRecord(b"b")])
        assert _records(reader, "t", 14) == [(14, b"3-2"), (15, b"3-3"), (20, b"a"), (21, b"b")]
        assert reader.end_offset("t") == 22


def test_verify_beside_a_busy_writer_never_reports_damage(tmp_path: Path) -> None:
    import threading

    stop = threading.Event()
    with EmbeddedLog(tmp_path, fsync=False) as log:
        log.append("t", None, b"first")

        def write() -> None:
            n = 0
            while not stop.is_set() and n < 3000:
                log.append_many("t", [NewRecord(f"{n}-{i}".encode()) for i in range(3)])
                n += 1

        writer = threading.Thread(target=write)
        writer.start()
        try:
            for _ in range(40):
                report = verify_log(tmp_path)
                assert report.ok, [d.line() for d in report.damaged]
        finally:
            stop.set()
            writer.join()


def _record_positions(path: Path, block: Block) -> list[tuple[int, int]]:
    """[start, end) in the file of each record of a clean block."""
    body = path.read_bytes()[block.body_position : block.body_position + block.body_size]
    spans = record_spans(body, block.count)
    assert spans is not None
    return [(block.body_position + a, block.body_position + b) for a, b in spans]


@pytest.mark.parametrize("record", [0, 1, 3])
@pytest.mark.parametrize("part", ["first byte", "last byte"])
def test_repair_keeps_every_record_of_a_damaged_block_but_the_damaged_one(
    written: Path, record: int, part: str
) -> None:
    path = written / "topics" / "t.avro"
    _, blocks = _blocks(path)
    start, end = _record_positions(path, blocks[2])[record]
    _flip(path, start if part == "first byte" else end - 1, 0x24)
    lost = 8 + record
    (held,) = repair_log(written).quarantined
    assert (held.first_offset, held.count, held.kind) == (lost, 1, "damaged")
    assert f"offsets {lost}-{lost}" in held.reason and "other records were kept" in held.reason
    assert verify_log(written).ok
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == [r for r in EXPECTED if r[0] != lost]  # every other record, same offset
        assert log.append("t", None, b"next") == 20
    with EmbeddedLog(written) as log:  # and the repaired file opens as it is
        assert len(_records(log, "t")) == 20


@pytest.mark.parametrize("where", ["count", "size", "sync"])
def test_damage_in_a_blocks_framing_loses_no_record(written: Path, where: str) -> None:
    path = written / "topics" / "t.avro"
    _, blocks = _blocks(path)
    b = blocks[1]
    _flip(path, {"count": b.position, "size": b.position + 1, "sync": b.end - 3}[where], 0x40)
    (held,) = repair_log(written).quarantined
    assert held.count == 0 and "every record was kept" in held.reason
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == EXPECTED


def test_two_damaged_bytes_in_a_block_quarantine_the_whole_block(written: Path) -> None:
    path = written / "topics" / "t.avro"
    _, blocks = _blocks(path)
    spans = _record_positions(path, blocks[2])
    _flip(path, spans[0][0] + 1, 0x01)
    _flip(path, spans[3][0] + 1, 0x01)
    (held,) = repair_log(written).quarantined
    assert (held.first_offset, held.count) == (8, 4)  # nothing can be proven intact
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == EXPECTED[:8] + EXPECTED[12:]


def test_a_cut_block_keeps_the_records_that_are_whole(written: Path) -> None:
    path = written / "topics" / "t.avro"
    _, blocks = _blocks(path)
    spans = _record_positions(path, blocks[4])
    path.write_bytes(path.read_bytes()[: spans[2][0] + 2])  # records 16 and 17 whole, 18 cut, 19 gone
    (held,) = repair_log(written).quarantined
    assert (held.first_offset, held.count) == (18, 2)
    with EmbeddedLog(written) as log:
        assert _records(log, "t") == EXPECTED[:18]
        assert log.append("t", None, b"next") == 20
