"""The per-topic index beside each container file: where every block is, and its checksum.

`<topic>.idx` is a 40-byte header followed by one 40-byte entry per block (little-endian):

    header  magic "ATLOGIX1" | container header length (= first block's position) u64
            | CRC-32 of the container header u32 | the container's sync marker (16) | CRC-32 of the above u32
    entry   kind u8 (1 block, 2 gap) | 3 zero bytes | record count u32 | position u64 | size u64
            | first offset u64 | CRC-32 of the block's bytes u32 | CRC-32 of the above 36 bytes u32

A block entry covers the block's bytes from its count varint to the end of its sync marker. A gap
entry stands for records that were moved to quarantine: their offsets stay taken forever, so every
other record keeps its offset and committed group offsets keep pointing at the same records.
Every header and entry checks itself, so a damaged index is told apart from a damaged block.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

MAGIC = b"ATLOGIX1"
BLOCK = 1
GAP = 2
_HEADER = struct.Struct("<8sQI16s")
_ENTRY = struct.Struct("<BxxxIQQQI")
_CRC = struct.Struct("<I")
HEADER_SIZE = _HEADER.size + _CRC.size
ENTRY_SIZE = _ENTRY.size + _CRC.size


def checksum(data: bytes) -> int:
    """CRC-32 (zlib's, in C in the standard library): every single-bit and burst-under-32-bit error."""
    return zlib.crc32(data)


@dataclass(frozen=True)
class IndexHeader:
    data_start: int
    header_crc: int
    sync: bytes

    def encode(self) -> bytes:
        raw = _HEADER.pack(MAGIC, self.data_start, self.header_crc, self.sync)
        return raw + _CRC.pack(checksum(raw))


@dataclass(frozen=True)
class Entry:
    kind: int
    count: int
    position: int  # container byte position; 0 for a gap
    size: int  # bytes in the container; 0 for a gap
    first_offset: int
    crc: int  # CRC-32 of the block's bytes; 0 for a gap

    @property
    def end(self) -> int:
        return self.position + self.size

    @property
    def end_offset(self) -> int:
        return self.first_offset + self.count

    def encode(self) -> bytes:
        raw = _ENTRY.pack(self.kind, self.count, self.position, self.size, self.first_offset, self.crc)
        return raw + _CRC.pack(checksum(raw))


def block_entry(position: int, data: bytes, count: int, first_offset: int) -> Entry:
    return Entry(BLOCK, count, position, len(data), first_offset, checksum(data))


def gap_entry(first_offset: int, count: int) -> Entry:
    return Entry(GAP, count, 0, 0, first_offset, 0)


@dataclass(frozen=True)
class ParsedIndex:
    header: IndexHeader | None  # None: the header is damaged
    slots: list[Entry | None]  # None: a damaged entry (its bytes fail their own checksum)
    lagging: int  # entries lost at the end (zero-filled or partial): a crash before the page cache was flushed

    def slot_position(self, slot: int) -> int:
        return HEADER_SIZE + slot * ENTRY_SIZE


def parse_index(data: bytes) -> ParsedIndex:
    header = _parse_header(data[:HEADER_SIZE])
    slots: list[Entry | None] = []
    raw_slots = [data[p : p + ENTRY_SIZE] for p in range(HEADER_SIZE, len(data), ENTRY_SIZE)]
    for raw in raw_slots:
        slots.append(parse_entry(raw))
    # Trailing slots that are zeros or cut short were never written through: a lagging index, not damage.
    lagging = 0
    while slots and slots[-1] is None:
        raw = raw_slots[len(slots) - 1]
        if len(raw) == ENTRY_SIZE and any(raw):
            break
        slots.pop()
        lagging += 1
    return ParsedIndex(header, slots, lagging)


def _parse_header(raw: bytes) -> IndexHeader | None:
    if len(raw) != HEADER_SIZE or _CRC.unpack_from(raw, _HEADER.size)[0] != checksum(raw[: _HEADER.size]):
        return None
    magic, data_start, header_crc, sync = _HEADER.unpack_from(raw)
    if magic != MAGIC:
        return None
    return IndexHeader(data_start, header_crc, sync)


def parse_entry(raw: bytes) -> Entry | None:
    """One entry, or None if its bytes fail their own checksum."""
    if len(raw) != ENTRY_SIZE or _CRC.unpack_from(raw, _ENTRY.size)[0] != checksum(raw[: _ENTRY.size]):
        return None
    kind, count, position, size, first, crc = _ENTRY.unpack_from(raw)
    if kind not in (BLOCK, GAP) or raw[1:4] != b"\x00\x00\x00":
        return None
    return Entry(kind, count, position, size, first, crc)
