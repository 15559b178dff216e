"""Verify and repair an embedded log directory (`agenttwin log verify`, `agenttwin log repair`).

`verify_log` reads every topic file against its index (read-only, no lock) and reports every damaged
block, damaged container header, damaged index entry and damaged or impossible group offsets.
`repair_log` takes the writer's lock and, per damaged topic, keeps every record of a damaged block it
can prove intact (streams/_log_salvage.py: one damaged byte located by the checksum, or a block cut
short) and moves the bytes of the other records — or of the whole block when nothing can be proven — to
`quarantine/` (with a JSON note saying what they were), rewrites the container with every valid block
in order (a fresh header if the old one was damaged) and rewrites the index: valid blocks keep their
first offsets, quarantined records leave a gap entry so their offsets stay taken and every committed
group offset still points at the same record. Damaged offsets files are set aside in quarantine (the
group starts again from offset 0; its consumers are idempotent), and an offset committed past a
topic's end is brought back to the end, so the group receives what is appended next.
"""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from itertools import groupby
from pathlib import Path

from streams import _log_files
from streams._avro_container import frame_block, header_bytes
from streams._log_files import Quarantined
from streams._log_index import (
    BLOCK,
    GAP,
    Entry,
    IndexHeader,
    ParsedIndex,
    block_entry,
    checksum,
    gap_entry,
    parse_index,
)
from streams._log_record import PARSED
from streams._log_salvage import salvage_block
from streams._log_scan import DAMAGED, HOLE, TORN, VALID, Finding, Segment, gaps_metadata, scan_topic
from streams._log_support import acquire_lock, read_offsets

__all__ = ["Damage", "OffsetsReset", "Quarantined", "RepairReport", "VerifyReport", "repair_log", "verify_log"]


@dataclass(frozen=True)
class Damage:
    topic: str  # the topic (for a damaged offsets file: the consumer group)
    kind: str  # "block", "header", "index", "offsets" or "repair" (a repair that was interrupted)
    problem: str
    block: int | None = None
    position: int | None = None
    size: int | None = None
    first_offset: int | None = None
    count: int | None = None
    text: str = ""

    def line(self) -> str:
        return self.text or f"topic {self.topic}: {self.problem}"


@dataclass
class VerifyReport:
    log_dir: Path
    topics: int = 0
    blocks: int = 0
    records: int = 0
    damaged: list[Damage] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.damaged


@dataclass(frozen=True)
class OffsetsReset:
    group: str
    quarantine: Path
    problem: str


@dataclass
class RepairReport:
    log_dir: Path
    quarantined: list[Quarantined] = field(default_factory=list)  # bytes that held records
    headers: list[Quarantined] = field(default_factory=list)  # damaged container headers, replaced
    reindexed: list[str] = field(default_factory=list)  # topics whose index was rebuilt
    offsets_reset: list[OffsetsReset] = field(default_factory=list)
    offsets_moved: list[str] = field(default_factory=list)  # "group/topic: N -> end"

    @property
    def changed(self) -> bool:
        return bool(self.quarantined or self.headers or self.reindexed or self.offsets_reset or self.offsets_moved)


def _topic_names(log_dir: Path) -> list[str]:
    topic_dir = log_dir / "topics"
    return sorted(p.stem for p in topic_dir.glob("*.avro")) if topic_dir.is_dir() else []


@contextmanager
def _mapped(path: Path) -> Iterator[bytes | mmap.mmap]:
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            yield b""
            return
        with mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ) as buf:
            yield buf


def _index(log_dir: Path, name: str) -> ParsedIndex | None:
    """Read before the container: a writer appends a block before its entry, so the container covers it."""
    path = log_dir / "topics" / f"{name}.idx"
    return parse_index(path.read_bytes()) if path.exists() else None


def _segment_damage(name: str, seg: Segment) -> Damage:
    return Damage(
        name, "block", seg.problem, seg.block, seg.position, seg.size, seg.first_offset, seg.count, seg.describe(name)
    )


def _finding_damage(name: str, finding: Finding) -> Damage:
    return Damage(name, finding.where, finding.problem, position=finding.position, text=finding.describe(name))


def verify_log(log_dir: Path) -> VerifyReport:
    report = VerifyReport(log_dir)
    ends: dict[str, int] = {}
    topic_dir = log_dir / "topics"
    for name in _topic_names(log_dir):
        if _log_files.replace_pending(topic_dir, name):
            report.damaged.append(
                Damage(name, "repair", "a repair was interrupted; `agenttwin log repair` finishes it")
            )
            continue
        index = _index(log_dir, name)
        with _mapped(topic_dir / f"{name}.avro") as buf:
            scan = scan_topic(name, buf, index)
        report.topics += 1
        report.blocks += len(scan.valid)
        report.records += sum(s.count or 0 for s in scan.valid)
        ends[name] = scan.end_offset
        report.damaged += [_finding_damage(name, f) for f in scan.findings if f.where == "header"]
        report.damaged += [_segment_damage(name, s) for s in scan.damaged]
        report.damaged += [_finding_damage(name, f) for f in scan.findings if f.where == "index"]
        torn = scan.torn
        if torn is not None:
            report.notices.append(
                f"topic {name}: {torn.size} byte(s) of a torn last block at byte {torn.position} ({torn.problem}); "
                "never acknowledged: the next writer moves them to quarantine"
            )
        elif not (topic_dir / f"{name}.idx").exists():
            report.notices.append(
                f"topic {name}: no index yet (written before checksums existed; blocks checked by structure); "
                "the next writer builds it"
            )
        elif scan.stale_index and not scan.problems():
            report.notices.append(f"topic {name}: the index lacks some blocks; the next writer rebuilds it")
    for group, offsets in _offsets_files(log_dir, report):
        for topic, offset in sorted(offsets.items()):
            if offset > ends.get(topic, 0):
                problem = f"group {group} committed offset {offset}, past the end {ends.get(topic, 0)} of topic {topic}"
                report.damaged.append(Damage(topic, "offsets", problem))
    return report


def _offsets_files(log_dir: Path, report: VerifyReport | None) -> Iterator[tuple[str, dict[str, int]]]:
    offset_dir = log_dir / "offsets"
    for path in sorted(offset_dir.glob("*.json")) if offset_dir.is_dir() else []:
        try:
            yield path.stem, read_offsets(path)
        except ValueError as exc:
            if report is not None:
                problem = f"committed offsets of group {path.stem} are damaged ({exc}): {path}"
                report.damaged.append(Damage(path.stem, "offsets", problem, text=problem))


def repair_log(log_dir: Path) -> RepairReport:
    """Quarantine every damaged block and keep every valid one; see the module docstring."""
    report = RepairReport(log_dir)
    if not (log_dir / "topics").is_dir():
        return report
    lock = acquire_lock(log_dir)
    try:
        ends: dict[str, int] = {}
        for name in _topic_names(log_dir):
            _log_files.recover_replace(log_dir / "topics", name)
            ends[name] = _repair_topic(log_dir, name, report)
        _repair_offsets(log_dir, ends, report)
    finally:
        os.close(lock)
    return report


def _repair_topic(log_dir: Path, name: str, report: RepairReport) -> int:
    topic_dir = log_dir / "topics"
    index = _index(log_dir, name)
    data = (topic_dir / f"{name}.avro").read_bytes()
    scan = scan_topic(name, data, index)
    if not (scan.problems() or scan.torn or scan.stale_index):
        return scan.end_offset
    if not scan.header_ok and scan.data_start:
        report.headers.append(
            _log_files.quarantine(
                log_dir,
                name,
                data[: scan.data_start],
                kind="header",
                position=0,
                first_offset=0,
                count=0,
                reason="damaged container header",
            )
        )
    blocks = bytearray()
    entries: list[Entry] = []  # positions relative to the end of the header, written below
    for seg in scan.segments:
        if seg.kind == VALID:
            entries.append(Entry(BLOCK, seg.count or 0, len(blocks), seg.size, seg.first_offset, seg.crc))
            blocks += data[seg.position : seg.end]
        elif seg.kind == HOLE:
            entries.append(seg.entry())
        elif seg.kind == DAMAGED and (kept := _salvaged(log_dir, name, seg, data, scan.sync, report)) is not None:
            for entry, body in kept:  # blocks of the records proven intact, gaps for the others
                if entry.kind == BLOCK:
                    entries.append(replace(entry, position=len(blocks)))
                    blocks += body
                else:
                    entries.append(entry)
        elif seg.kind in (DAMAGED, TORN):
            if seg.size or seg.count:  # bytes that are gone entirely still get their note and dead letter
                report.quarantined.append(
                    _log_files.quarantine(
                        log_dir,
                        name,
                        data[seg.position : seg.end],
                        kind="damaged" if seg.kind == DAMAGED else "torn",
                        position=seg.position,
                        first_offset=seg.first_offset,
                        count=seg.count,
                        reason=seg.describe(name),
                    )
                )
            if seg.count:
                entries.append(gap_entry(seg.first_offset, seg.count))  # the offsets stay taken
    # The header names the gaps too, so the container alone keeps every offset if the index is lost.
    header = header_bytes(
        PARSED, scan.sync, gaps_metadata([(e.first_offset, e.count) for e in entries if e.kind == GAP])
    )
    entries = [replace(e, position=e.position + len(header)) if e.kind == BLOCK else e for e in entries]
    out = header + bytes(blocks)
    new_index = IndexHeader(len(header), checksum(header), scan.sync).encode() + b"".join(e.encode() for e in entries)
    _log_files.stage_replace(topic_dir, name, out, new_index)
    _log_files.complete_replace(topic_dir, name)
    if not scan.damaged and not scan.torn and scan.header_ok:
        report.reindexed.append(name)
    return scan.end_offset


def _salvaged(
    log_dir: Path, name: str, seg: Segment, data: bytes, sync: bytes, report: RepairReport
) -> list[tuple[Entry, bytes]] | None:
    """A damaged indexed block as blocks of the records it still holds intact (streams/_log_salvage.py) and
    gaps for the others, whose bytes go to quarantine (one note, one dead letter, per run of lost records);
    None when nothing can be proven and the whole block goes to quarantine."""
    entry = seg.source
    if entry is None or not seg.count:
        return None
    found = salvage_block(data[seg.position : seg.end], seg.count, entry.size, entry.crc)
    if found is None:
        return None
    out: list[tuple[Entry, bytes]] = []
    index = 0
    for kept, run in groupby(found.records, key=lambda r: r[1]):
        records = [raw for raw, _ in run]
        first = seg.first_offset + index
        index += len(records)
        if kept:
            framed = frame_block(len(records), b"".join(records), sync)
            out.append((block_entry(0, framed, len(records), first), framed))
            continue
        lost = b"".join(records)
        reason = (
            f"topic {name}: {len(records)} record(s) of block {seg.block} at byte {seg.position} (offsets {first}-"
            f"{first + len(records) - 1}) are damaged: {found.problem}; the block's other records were kept"
        )
        report.quarantined.append(
            _log_files.quarantine(
                log_dir,
                name,
                lost,
                kind="damaged",
                position=seg.position,
                first_offset=first,
                count=len(records),
                reason=reason,
            )
        )
        out.append((gap_entry(first, len(records)), b""))
    if index == seg.count and all(e.kind == BLOCK for e, _ in out):  # framing or sync damage: no record lost
        report.quarantined.append(
            _log_files.quarantine(
                log_dir,
                name,
                data[seg.position : seg.end],
                kind="damaged",
                position=seg.position,
                first_offset=seg.first_offset,
                count=0,
                reason=f"{seg.describe(name)} ({found.problem}); every record was kept",
            )
        )
    return out


def _repair_offsets(log_dir: Path, ends: dict[str, int], report: RepairReport) -> None:
    offset_dir = log_dir / "offsets"
    for path in sorted(offset_dir.glob("*.json")) if offset_dir.is_dir() else []:
        group = path.stem
        try:
            offsets = read_offsets(path)
        except ValueError as exc:
            held = _log_files.quarantine(
                log_dir,
                f"offsets-{group}",
                path.read_bytes(),
                kind="offsets",
                position=0,
                first_offset=0,
                count=None,
                reason=f"damaged committed offsets: {exc}",
            )
            path.unlink()
            _log_files.fsync_dir(offset_dir)
            report.offsets_reset.append(OffsetsReset(group, held.path, str(exc)))
            continue
        fixed = {t: min(o, ends.get(t, 0)) for t, o in offsets.items()}
        if fixed != offsets:
            report.offsets_moved += [
                f"{group}/{t}: {offsets[t]} -> {fixed[t]}" for t in offsets if fixed[t] != offsets[t]
            ]
            _log_files.write_durably(path, (json.dumps(fixed, sort_keys=True, indent=1) + "\n").encode())
