"""Random byte flips anywhere in a log's files: every damaged block is reported, no valid block is lost,
and repair keeps every record of a damaged block it can prove intact.

A log with several topics and blocks of varying sizes is written once; each trial copies it, flips one
(or several) bits at seeded random positions — block bodies, record framing, count and size varints,
sync markers, the container header, the index — and checks that opening refuses in one line, that
`verify_log` names exactly the damaged blocks, and that after `repair_log` every record of every
undamaged block is read back with its original offset while offsets and committed group offsets hold.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from streams._avro_container import Block, parse_header, scan_blocks
from streams.embedded_log import EmbeddedLog, LogDamagedError, NewRecord
from streams.log_integrity import repair_log, verify_log

SEED = 11_2026
TOPICS = {"a": [1, 7, 2, 30, 5, 1, 12, 3], "b": [4, 4, 9]}  # records per block
Record = tuple[str | None, bytes, dict[str, str], int | None]


@dataclass(frozen=True)
class Layout:
    data_start: int
    blocks: list[Block]
    firsts: list[int]
    size: int


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pristine")
    rng = random.Random(SEED)
    with EmbeddedLog(root, fsync=False) as log:
        for topic, counts in TOPICS.items():
            for b, n in enumerate(counts):
                log.append_many(
                    topic,
                    [
                        NewRecord(
                            rng.randbytes(rng.randrange(1, 300)),
                            key=None if i % 3 == 0 else f"{topic}-{b}-{i}",
                            headers={"event_id": f"{topic}{b}.{i}"} if i % 2 else {},
                            timestamp_ms=None if i % 4 == 0 else 1_767_225_600_000 + i,
                        )
                        for i in range(n)
                    ],
                )
        log.commit("sink", "a", sum(TOPICS["a"]))
        log.commit("half", "a", 15)
        log.commit("sink", "b", sum(TOPICS["b"]))
    return root


def _layout(path: Path) -> Layout:
    data = path.read_bytes()
    header = parse_header(data, len(data))
    blocks, problem = scan_blocks(data, header.data_start, len(data), header.sync)
    assert problem is None
    firsts, n = [], 0
    for block in blocks:
        firsts.append(n)
        n += block.count
    return Layout(header.data_start, blocks, firsts, len(data))


def _records(root: Path) -> dict[str, dict[int, Record]]:
    with EmbeddedLog(root, read_only=True) as log:
        return {t: {r.offset: (r.key, r.value, dict(r.headers), r.timestamp_ms) for r in log.read(t)} for t in TOPICS}


def _block_at(layout: Layout, position: int) -> int | None:
    for k, block in enumerate(layout.blocks):
        if block.position <= position < block.end:
            return k
    return None


def _block_bytes(root: Path, pristine: Path, topic: str, k: int) -> bytes:
    block = _layout(pristine / "topics" / f"{topic}.avro").blocks[k]
    return (root / "topics" / f"{topic}.avro").read_bytes()[block.position : block.end]


def _flip(path: Path, position: int, mask: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= mask
    path.write_bytes(bytes(data))


def _check_after_repair(
    root: Path, expected: dict[str, dict[int, Record]], may_lose: dict[str, set[int]]
) -> dict[str, set[int]]:
    """Every record kept is the one written, at its offset; only records of damaged blocks are missing
    (repair keeps those it proves intact). Returns the offsets missing per topic."""
    report = verify_log(root)
    assert report.ok, [d.line() for d in report.damaged]
    lost: dict[str, set[int]] = {}
    with EmbeddedLog(root, fsync=False) as log:
        for topic, records in expected.items():
            got = {r.offset: (r.key, r.value, dict(r.headers), r.timestamp_ms) for r in log.read(topic)}
            assert got == {o: r for o, r in records.items() if o in got}, topic
            lost[topic] = set(records) - set(got)
            assert lost[topic] <= may_lose[topic], topic
            assert log.end_offset(topic) == sum(TOPICS[topic])
            assert log.committed("sink", topic) == sum(TOPICS[topic])
        assert log.committed("half", "a") == 15
        assert log.append("a", None, b"new") == sum(TOPICS["a"])  # offsets are never reused
    return lost


def _open_refuses_in_one_line(root: Path) -> str:
    with pytest.raises(LogDamagedError) as caught:
        EmbeddedLog(root, fsync=False)
    line = str(caught.value)
    assert "\n" not in line and "agenttwin log repair" in line
    return line


@pytest.mark.parametrize("trial", range(120))
def test_one_random_flip(pristine: Path, tmp_path: Path, trial: int) -> None:
    rng = random.Random(SEED * 1000 + trial)
    root = tmp_path / "log"
    shutil.copytree(pristine, root)
    expected = _records(pristine)
    topic = rng.choice(sorted(TOPICS))
    in_index = rng.random() < 0.2
    path = root / "topics" / (f"{topic}.idx" if in_index else f"{topic}.avro")
    layout = _layout(pristine / "topics" / f"{topic}.avro")
    if in_index:
        position = rng.randrange(path.stat().st_size)
    else:
        kind = rng.choice(["anywhere", "anywhere", "sync", "framing", "header"])
        block = rng.choice(layout.blocks)
        position = {
            "anywhere": rng.randrange(layout.data_start, layout.size),
            "sync": block.end - 1 - rng.randrange(16),
            "framing": rng.randrange(block.position, block.body_position + min(block.body_size, 4)),
            "header": rng.randrange(layout.data_start),
        }[kind]
    _flip(path, position, 1 << rng.randrange(8))

    line = _open_refuses_in_one_line(root)
    assert f"topic {topic}" in line
    report = verify_log(root)
    assert not report.ok
    lost: dict[str, set[int]] = {t: set() for t in TOPICS}
    damaged_block = None if in_index else _block_at(layout, position)
    if in_index or damaged_block is None:  # index or container header: no record is lost
        assert [d.block for d in report.damaged if d.block is not None] == []
        assert {d.topic for d in report.damaged} == {topic}
    else:
        assert [(d.topic, d.block) for d in report.damaged] == [(topic, damaged_block)]
        first, count = layout.firsts[damaged_block], layout.blocks[damaged_block].count
        assert (report.damaged[0].first_offset, report.damaged[0].count) == (first, count)
        lost[topic] = set(range(first, first + count))

    repaired = repair_log(root)
    for q in repaired.quarantined:
        block = layout.blocks[damaged_block]  # type: ignore[index]
        assert len(q.path.read_bytes()) <= block.end - block.position
    missing = _check_after_repair(root, expected, lost)
    assert sum(q.count or 0 for q in repaired.quarantined) == sum(len(v) for v in missing.values())
    assert sum(len(v) for v in missing.values()) <= 1  # one flipped bit: the checksum finds it, one record at most


@pytest.mark.parametrize("trial", range(30))
def test_several_random_flips_in_several_blocks_and_topics(pristine: Path, tmp_path: Path, trial: int) -> None:
    rng = random.Random(SEED * 7 + trial)
    root = tmp_path / "log"
    shutil.copytree(pristine, root)
    expected = _records(pristine)
    lost: dict[str, set[int]] = {t: set() for t in TOPICS}
    hit: set[tuple[str, int]] = set()
    for _ in range(rng.randrange(2, 6)):
        topic = rng.choice(sorted(TOPICS))
        layout = _layout(pristine / "topics" / f"{topic}.avro")
        position = rng.randrange(layout.data_start, layout.size)
        _flip(root / "topics" / f"{topic}.avro", position, 1 << rng.randrange(8))
        k = _block_at(layout, position)
        assert k is not None
        hit.add((topic, k))
    for topic, k in hit:
        layout = _layout(pristine / "topics" / f"{topic}.avro")
        first = layout.firsts[k]
        lost[topic] |= set(range(first, first + layout.blocks[k].count))
    # two flips of the same bit in one block cancel out: that block is intact again
    intact = {(t, k) for t, k in hit if _block_bytes(root, pristine, t, k) == _block_bytes(pristine, pristine, t, k)}
    for topic, k in intact:
        layout = _layout(pristine / "topics" / f"{topic}.avro")
        lost[topic] -= set(range(layout.firsts[k], layout.firsts[k] + layout.blocks[k].count))
    report = verify_log(root)
    assert sorted((d.topic, d.block) for d in report.damaged) == sorted(hit - intact)
    if hit - intact:
        _open_refuses_in_one_line(root)
    repaired = repair_log(root)
    missing = _check_after_repair(root, expected, lost)
    assert sum(q.count or 0 for q in repaired.quarantined) == sum(len(v) for v in missing.values())
