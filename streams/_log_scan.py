"""Checking one topic: its container file read against its index, block by block.

The index vouches for each block with a CRC-32 and says where it is, so a damaged block is found and
skipped precisely: the next entry says where the next block starts. Bytes no valid entry accounts for
(a file written before the index existed, a tail the index has not caught up with after a power
loss, entries that are themselves damaged) are checked by structure instead — framing, sync marker,
and records that fill the block exactly — resynchronising on the next valid block after damage.

Only an incomplete block after the last indexed one is a torn write: with no entry, its framing
promises more bytes than there are. The writer indexes a block only once it is on disk, so a listed
block cut short lost acknowledged records: damage, like anything else that fails.
"""

from __future__ import annotations

import json
import mmap
from dataclasses import dataclass, field
from hashlib import sha256

from fastavro.schema import parse_schema, to_parsing_canonical_form

from streams._avro_container import MAGIC, SYNC_SIZE, ContainerFormatError, Header, Piece, parse_header, scan_region
from streams._log_index import BLOCK, GAP, Entry, ParsedIndex, checksum, gap_entry
from streams._log_record import CANONICAL, records_fit

Buffer = bytes | mmap.mmap

VALID = "block"
HOLE = "gap"  # offsets whose records are in quarantine
DAMAGED = "damaged"
TORN = "torn"


GAPS_KEY = "agenttwin.gaps"  # container metadata: [[first offset, count], ...] of quarantined records


def gaps_metadata(gaps: list[tuple[int, int]]) -> dict[str, str]:
    """Header metadata naming the offsets in quarantine, so the container alone keeps every offset."""
    return {GAPS_KEY: json.dumps([list(g) for g in gaps], separators=(",", ":"))} if gaps else {}


def _header_gaps(header: Header | None) -> dict[int, int]:
    try:
        raw = json.loads(header.metadata.get(GAPS_KEY, b"[]")) if header is not None else []
        return {int(first): int(count) for first, count in raw if int(count) > 0}
    except (ValueError, TypeError):
        return {}


def topic_sync(name: str) -> bytes:
    """Deterministic sync marker: the same appends give the same file bytes."""
    return sha256(f"agenttwin-log:{name}".encode()).digest()[:SYNC_SIZE]


@dataclass(frozen=True)
class Segment:
    kind: str  # VALID, HOLE, DAMAGED or TORN
    position: int  # container byte position (0 for a hole)
    size: int
    count: int | None  # records; None when nothing says (damaged bytes without an entry or intact framing)
    first_offset: int
    crc: int = 0  # VALID: the block's CRC-32
    block: int | None = None  # the block's number in the container (None for a hole)
    problem: str = ""
    indexed: bool = True  # a valid index entry described it
    source: Entry | None = None  # that entry (a valid block's is reused as it is when the index is written again)

    @property
    def end(self) -> int:
        return self.position + self.size

    @property
    def end_offset(self) -> int:
        return self.first_offset + (self.count or 0)

    def entry(self) -> Entry:
        if self.source is not None:
            return self.source
        if self.kind == VALID:
            return Entry(BLOCK, self.count or 0, self.position, self.size, self.first_offset, self.crc)
        return gap_entry(self.first_offset, self.count or 0)

    def describe(self, topic: str) -> str:
        where = f"topic {topic}: block {self.block} at byte {self.position} ({self.size} bytes"
        if self.count:
            where += f", offsets {self.first_offset}-{self.end_offset - 1}"
        return f"{where}) is {'torn' if self.kind == TORN else 'damaged'}: {self.problem}"


@dataclass(frozen=True)
class Finding:
    """Damage that holds no record: the container header, or the index itself."""

    where: str  # "header" (the container's) or "index"
    position: int  # byte position in that file
    problem: str

    def describe(self, topic: str) -> str:
        name = "container header" if self.where == "header" else "index"
        return f"topic {topic}: {name} damaged at byte {self.position}: {self.problem}"


@dataclass
class TopicScan:
    name: str
    size: int
    sync: bytes
    data_start: int
    header_ok: bool
    segments: list[Segment] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    stale_index: bool = False  # the index misses blocks or was never written: rewrite it
    header_gaps: dict[int, int] = field(default_factory=dict)  # first offset -> count, from the container header

    @property
    def damaged(self) -> list[Segment]:
        return [s for s in self.segments if s.kind == DAMAGED]

    @property
    def torn(self) -> Segment | None:
        return next((s for s in self.segments if s.kind == TORN), None)

    @property
    def valid(self) -> list[Segment]:
        return [s for s in self.segments if s.kind == VALID]

    @property
    def end_offset(self) -> int:
        return max((s.end_offset for s in self.segments), default=0)

    def problems(self) -> list[str]:
        """One line per damaged block or damaged index/header, in file order (torn tails are not damage)."""
        return [f.describe(self.name) for f in self.findings if f.where == "header"] + [
            *(s.describe(self.name) for s in self.damaged),
            *(f.describe(self.name) for f in self.findings if f.where == "index"),
        ]

    def entries(self) -> list[Entry]:
        """The index of the file as it stands once a torn tail is cut (its records' offsets stay taken)."""
        return [s.entry() for s in self.segments if s.kind in (VALID, HOLE) or (s.kind == TORN and s.count)]


def scan_topic(name: str, buf: Buffer, index: ParsedIndex | None) -> TopicScan:
    size = len(buf)
    scan = _header(name, buf, size, index)
    walker = _Walker(scan, buf, size, index)
    walker.indexed()
    walker.tail()
    if index is None or index.lagging or index.header is None:
        scan.stale_index = True
    return scan


def _header(name: str, buf: Buffer, size: int, index: ParsedIndex | None) -> TopicScan:
    parsed, error = _container_header(buf, size)
    ih = index.header if index is not None else None
    findings: list[Finding] = []
    if index is not None and ih is None:
        findings.append(Finding("index", 0, "the index header fails its checksum"))
    gaps = _header_gaps(parsed) if error is None else {}
    if ih is not None:
        ok = size >= ih.data_start and checksum(bytes(buf[: ih.data_start])) == ih.header_crc
        if not ok:
            findings.append(Finding("header", 0, "the container header fails its checksum"))
        return TopicScan(name, size, ih.sync, ih.data_start, ok, findings=findings, header_gaps=gaps if ok else {})
    if parsed is not None and error is None:
        return TopicScan(name, size, parsed.sync, parsed.data_start, True, findings=findings, header_gaps=gaps)
    # No index to say where the blocks start: after the header, or after its sync marker.
    sync = topic_sync(name)
    if parsed is not None:
        data_start = parsed.data_start
    else:
        found = buf.find(sync)
        data_start = size if found == -1 else found + SYNC_SIZE
    findings.append(Finding("header", 0, error or "unreadable"))
    return TopicScan(name, size, sync, data_start, False, findings=findings)


def _container_header(buf: Buffer, size: int) -> tuple[Header | None, str | None]:
    """The header as parsed (None if its structure is broken) and what is wrong with it (None: ours)."""
    bad_magic = "not an Avro object container file (bad magic)"
    try:
        header = parse_header(buf, size, check_magic=False)
    except ContainerFormatError as exc:
        return None, bad_magic if bytes(buf[:4]) != MAGIC else str(exc)
    if bytes(buf[:4]) != MAGIC:
        return header, bad_magic
    try:
        schema = json.loads(header.metadata.get("avro.schema", b"{}"))
        ours = to_parsing_canonical_form(parse_schema(schema)) == CANONICAL
    except Exception as exc:  # damaged JSON or schema: fastavro's SchemaParseException is no ValueError
        return header, f"unreadable schema in the container header: {type(exc).__name__}: {exc}"
    if not ours or header.metadata.get("avro.codec", b"null") != b"null":
        return header, "not an embedded-log topic file (schema or codec differs)"
    return header, None


class _Walker:
    """Walks the container along the index, then the bytes after the last indexed block."""

    def __init__(self, scan: TopicScan, buf: Buffer, size: int, index: ParsedIndex | None) -> None:
        self.scan, self.buf, self.size, self.index = scan, buf, size, index
        self.pos, self.offset, self.block = scan.data_start, 0, 0

    def _add(
        self,
        kind: str,
        position: int,
        size: int,
        count: int | None,
        first_offset: int,
        crc: int = 0,
        *,
        problem: str = "",
        indexed: bool = True,
        source: Entry | None = None,
    ) -> None:
        """A block of the container (valid, damaged or torn), numbered in file order."""
        self.scan.segments.append(
            Segment(kind, position, size, count, first_offset, crc, self.block, problem, indexed, source)
        )
        self.block += 1

    def indexed(self) -> None:
        if self.index is None:
            return
        slots = self.index.slots
        for k, entry in enumerate(slots):
            if entry is None or entry.first_offset < self.offset or (entry.kind == BLOCK and entry.position < self.pos):
                problem = "the entry fails its checksum" if entry is None else "the entry contradicts those before it"
                self.scan.findings.append(Finding("index", self.index.slot_position(k), f"entry {k}: {problem}"))
                continue
            if (entry.kind == BLOCK and entry.position > self.pos) or entry.first_offset > self.offset:
                region_end = min(entry.position, self.size) if entry.kind == BLOCK else self.pos
                self._explain(region_end, entry.first_offset)
                if entry.kind == BLOCK:
                    self.pos = entry.position
            if entry.kind == GAP:
                self.scan.segments.append(Segment(HOLE, 0, 0, entry.count, entry.first_offset, source=entry))
            else:
                self._indexed_block(entry)
            self.offset = entry.end_offset

    def _indexed_block(self, entry: Entry) -> None:
        pos, end, size = entry.position, entry.end, self.size
        if end > size:
            problem = f"the file ends {end - size} byte(s) before the block does (acknowledged bytes are missing)"
            self._add(DAMAGED, pos, max(0, size - pos), entry.count, entry.first_offset, problem=problem, source=entry)
        elif checksum(bytes(self.buf[pos:end])) != entry.crc:
            problem = "checksum mismatch"
            self._add(DAMAGED, pos, entry.size, entry.count, entry.first_offset, problem=problem, source=entry)
        else:
            self.scan.segments.append(
                Segment(VALID, pos, entry.size, entry.count, entry.first_offset, entry.crc, self.block, source=entry)
            )
            self.block += 1
        self.pos = end

    def _explain(self, region_end: int, target_offset: int) -> None:
        """Bytes [pos, region_end) and offsets [offset, target_offset) that no valid entry describes."""
        pieces = (
            scan_region(self.buf, self.pos, region_end, self.scan.sync, records_fit) if region_end > self.pos else []
        )
        counts = [p.count for p in pieces]
        missing = target_offset - self.offset - sum(c or 0 for c in counts)
        unknown = [i for i, c in enumerate(counts) if c is None]
        if missing < 0:  # more records than the entries around allow: keep the bytes as one damaged stretch
            problem = "holds more records than the index allows"
            count = target_offset - self.offset
            self._add(DAMAGED, self.pos, region_end - self.pos, count, self.offset, problem=problem, indexed=False)
            self.scan.stale_index = True
            return
        if len(unknown) == 1:
            counts[unknown[0]] = missing
            missing = 0
        offset = self.offset
        for piece, claimed in zip(pieces, counts, strict=True):
            self._piece(piece, offset, claimed)
            offset += claimed or 0
        if missing:
            self.scan.segments.append(Segment(HOLE, 0, 0, missing, offset))
        self.scan.stale_index = True

    def _piece(self, piece: Piece, offset: int, count: int | None) -> None:
        if piece.valid:
            crc = checksum(bytes(self.buf[piece.position : piece.end]))
            self._add(VALID, piece.position, piece.size, count, offset, crc, indexed=False)
        else:
            problem = "not a valid block (framing, sync marker or records)"
            self._add(DAMAGED, piece.position, piece.size, count, offset, problem=problem, indexed=False)

    def tail(self) -> None:
        """Bytes after the last indexed block: blocks whose entries never reached the disk, or a torn write."""
        offset = self.offset
        pieces = scan_region(self.buf, self.pos, self.size, self.scan.sync, records_fit) if self.pos < self.size else []
        for piece in pieces:
            offset = self._header_holes(offset)
            if piece.valid:
                self._piece(piece, offset, piece.count)
            elif piece.last and not piece.complete:
                problem = "fewer bytes than its framing promises after the last complete block (a write cut short)"
                self._add(TORN, piece.position, piece.size, None, offset, problem=problem, indexed=False)
            else:
                self._piece(piece, offset, piece.count)
            offset += piece.count or 0
            self.scan.stale_index = True
        if self._header_holes(offset) != offset:
            self.scan.stale_index = True

    def _header_holes(self, offset: int) -> int:
        """Offsets the container's header says are in quarantine, where the index does not say so."""
        while offset in self.scan.header_gaps:
            count = self.scan.header_gaps.pop(offset)
            self.scan.segments.append(Segment(HOLE, 0, 0, count, offset))
            offset += count
        return offset
