"""What `log repair` keeps of a damaged block: every record it can prove is exactly as written.

A block carries one CRC-32 for all its records, so a record read from a damaged block proves nothing
by decoding alone (a flipped byte inside a string still decodes). Two kinds of damage can be proven:

- One damaged byte (a flipped bit, a bad sector's single byte): CRC-32 is linear, so the difference
  between the stored checksum and the damaged bytes' checksum says which byte, and how it changed,
  when exactly one position explains it. Undoing that change gives bytes whose CRC-32 matches the
  index entry — the block as written. Every record that does not contain the damaged byte is kept
  (its bytes are the written ones); the record that contains it goes to quarantine. Damage in the
  framing or sync marker loses no record.
- A block cut short (the file ends inside it): the bytes still there are the written ones; the
  records that decode whole from them are kept, the rest go to quarantine.

Anything else (several damaged bytes, a block without an index entry) is quarantined whole.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from fastavro import schemaless_reader

from streams._avro_container import SYNC_SIZE, ContainerFormatError, block_body
from streams._log_index import checksum
from streams._log_record import PARSED

_POLY = 0xEDB88320  # zlib's CRC-32, reflected
_MAX_LOCATE = 4 * 1024 * 1024  # bytes: locating walks the block once, in Python (about 1.2 s per MB)


@dataclass(frozen=True)
class Salvage:
    """A damaged block's records in order: (bytes, kept). Lost records keep the damaged bytes."""

    records: list[tuple[bytes, bool]]
    problem: str  # what was found (for the quarantine note)


def locate_byte_error(data: bytes, expected_crc: int) -> tuple[int, int] | None:
    """(position, xor mask) of the one damaged byte whose repair gives `expected_crc`, if exactly one does."""
    if len(data) > _MAX_LOCATE:
        return None
    syndrome = checksum(data) ^ expected_crc
    if syndrome == 0:
        return None
    # A change b at position p changes the CRC by b carried through the 8*(n - p) register steps after it;
    # walking the syndrome back one byte at a time finds every (p, b) with b a single byte.
    found: list[tuple[int, int]] = []
    value = syndrome
    for back in range(1, len(data) + 1):
        for _ in range(8):
            value = (((value ^ _POLY) << 1) | 1) & 0xFFFFFFFF if value & 0x80000000 else (value << 1) & 0xFFFFFFFF
        if 0 < value < 256:
            found.append((len(data) - back, value))
            if len(found) > 1:
                return None
    if not found:
        return None
    position, mask = found[0]
    fixed = bytearray(data)
    fixed[position] ^= mask
    return (position, mask) if checksum(bytes(fixed)) == expected_crc else None


def record_spans(body: bytes, count: int) -> list[tuple[int, int]] | None:
    """[start, end) of each of `count` log records filling `body`, or None if they do not."""
    stream = io.BytesIO(body)
    spans: list[tuple[int, int]] = []
    try:
        for _ in range(count):
            start = stream.tell()
            schemaless_reader(stream, PARSED, None)
            spans.append((start, stream.tell()))
    except Exception:  # fastavro raises EOFError, IndexError, UnicodeDecodeError... on garbage
        return None
    return spans if stream.tell() == len(body) else None


def _prefix_records(data: bytes, count: int) -> list[tuple[int, int]]:
    """Records that decode whole from the front of a block cut short (positions in `data`)."""
    stream = io.BytesIO(data)
    try:
        for _ in range(2):  # count and size varints
            schemaless_reader(stream, "long", None)
    except Exception:
        return []
    spans: list[tuple[int, int]] = []
    for _ in range(count):
        start = stream.tell()
        try:
            schemaless_reader(stream, PARSED, None)
        except Exception:
            break
        spans.append((start, stream.tell()))
    return spans


def salvage_block(data: bytes, count: int, size: int, crc: int) -> Salvage | None:
    """The records of a damaged indexed block (`count` records, `size` bytes, CRC-32 `crc` when written)."""
    if count <= 0:
        return None
    if len(data) < size:
        spans = _prefix_records(data, count)
        kept = [(data[a:b], True) for a, b in spans]
        rest = data[spans[-1][1] :] if spans else data
        missing = count - len(spans)  # the first lost record holds what is left of the bytes
        lost = [(rest, False)] + [(b"", False)] * (missing - 1) if missing else []
        problem = f"the file ends {size - len(data)} byte(s) before the block does"
        return Salvage(kept + lost, problem) if spans else None
    if len(data) != size:
        return None
    located = locate_byte_error(data, crc)
    if located is None:
        return None
    position, mask = located
    fixed = bytearray(data)
    fixed[position] ^= mask
    try:
        fixed_count, body = block_body(bytes(fixed))
    except ContainerFormatError:
        return None
    written = record_spans(body, count) if fixed_count == count else None
    if written is None:
        return None
    body_start = len(fixed) - SYNC_SIZE - len(body)
    records = []
    for start, end in written:
        a, b = body_start + start, body_start + end
        records.append((data[a:b], not a <= position < b))
    where = next((i for i, (_, ok) in enumerate(records) if not ok), None)
    part = "the block's framing or sync marker" if where is None else f"its record {where}"
    return Salvage(records, f"one damaged byte at byte {position} of the block, in {part}")
