"""Just enough of the Avro object container file format to append blocks, index them and resynchronise.

fastavro writes the header (so any Avro tool reads our files); we frame the blocks ourselves so an
append is one write without re-reading the file, and we index block positions so a read can seek
straight to the block that holds an offset. Where no checksum vouches for a block (a file written
before the index existed, or a tail the index has not caught up with), `scan_region` checks its
structure instead and finds the next valid block after damaged bytes.

Block layout (Avro spec): zigzag-varint record count, zigzag-varint byte size, the serialized
records, the file's 16-byte sync marker.
"""

from __future__ import annotations

import io
import mmap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import fastavro

MAGIC = b"Obj\x01"
SYNC_SIZE = 16


class ContainerFormatError(ValueError):
    """The bytes are not (or not yet) a valid container header or block."""


@dataclass(frozen=True)
class Header:
    data_start: int
    sync: bytes
    metadata: dict[str, bytes]


@dataclass(frozen=True)
class Block:
    position: int  # where the block's count varint starts
    body_position: int
    body_size: int
    count: int

    @property
    def end(self) -> int:
        return self.body_position + self.body_size + SYNC_SIZE


def encode_long(value: int) -> bytes:
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_long(buf: bytes | mmap.mmap, pos: int, limit: int) -> tuple[int, int]:
    shift = 0
    n = 0
    while True:
        if pos >= limit or shift > 63:
            raise ContainerFormatError("truncated or invalid varint")
        byte = buf[pos]
        pos += 1
        n |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return (n >> 1) ^ -(n & 1), pos


def header_bytes(schema: Any, sync: bytes, metadata: dict[str, str] | None = None) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, schema, [], codec="null", sync_marker=sync, metadata=metadata)
    return out.getvalue()


def parse_header(buf: bytes | mmap.mmap, limit: int, *, check_magic: bool = True) -> Header:
    if limit < len(MAGIC) or (check_magic and buf[: len(MAGIC)] != MAGIC):
        raise ContainerFormatError("not an Avro object container file (bad magic)")
    pos = len(MAGIC)
    metadata: dict[str, bytes] = {}
    while True:
        count, pos = _read_long(buf, pos, limit)
        if count == 0:
            break
        if count < 0:
            count = -count
            _, pos = _read_long(buf, pos, limit)  # block byte size, unused
        for _ in range(count):
            key_len, pos = _read_long(buf, pos, limit)
            key = bytes(buf[pos : pos + key_len])
            pos += key_len
            value_len, pos = _read_long(buf, pos, limit)
            value = bytes(buf[pos : pos + value_len])
            pos += value_len
            if key_len < 0 or value_len < 0 or pos > limit:
                raise ContainerFormatError("truncated header metadata")
            metadata[key.decode("utf-8", "replace")] = value
    if pos + SYNC_SIZE > limit:
        raise ContainerFormatError("truncated header sync marker")
    return Header(data_start=pos + SYNC_SIZE, sync=bytes(buf[pos : pos + SYNC_SIZE]), metadata=metadata)


def frame_block(count: int, body: bytes, sync: bytes) -> bytes:
    return b"".join((encode_long(count), encode_long(len(body)), body, sync))


def scan_blocks(buf: bytes | mmap.mmap, start: int, limit: int, sync: bytes) -> tuple[list[Block], str | None]:
    """Index the complete blocks in buf[start:limit].

    Returns the blocks and, if the bytes after the last complete block are not a complete block,
    a description of the problem (a crash mid-append leaves exactly that).
    """
    blocks: list[Block] = []
    pos = start
    while pos < limit:
        try:
            count, body_pos = _read_long(buf, pos, limit)
            size, body_pos = _read_long(buf, body_pos, limit)
        except ContainerFormatError as exc:
            return blocks, f"block header at byte {pos}: {exc}"
        if count <= 0 or size < 0:
            return blocks, f"block at byte {pos}: invalid count {count} or size {size}"
        end = body_pos + size + SYNC_SIZE
        if end > limit:
            return blocks, f"block at byte {pos}: {end - limit} byte(s) missing"
        if buf[end - SYNC_SIZE : end] != sync:
            return blocks, f"block at byte {pos}: sync marker mismatch"
        blocks.append(Block(position=pos, body_position=body_pos, body_size=size, count=count))
        pos = end
    return blocks, None


Fits = Callable[[bytes, int], bool]  # do these body bytes hold exactly this many records?


def read_block(buf: bytes | mmap.mmap, pos: int, limit: int, sync: bytes, fits: Fits | None) -> Block | None:
    """The block at `pos` if its framing, size, sync marker (and records, with `fits`) are all valid."""
    try:
        count, body_pos = _read_long(buf, pos, limit)
        size, body_pos = _read_long(buf, body_pos, limit)
    except ContainerFormatError:
        return None
    end = body_pos + size + SYNC_SIZE
    if count <= 0 or size < 0 or end > limit or buf[end - SYNC_SIZE : end] != sync:
        return None
    if fits is not None and not fits(bytes(buf[body_pos : body_pos + size]), count):
        return None
    return Block(position=pos, body_position=body_pos, body_size=size, count=count)


@dataclass(frozen=True)
class Piece:
    """A stretch of a region: a valid block, or bytes that are not one (with the count their framing claims)."""

    position: int
    size: int
    count: int | None  # a damaged piece's count when its framing is intact and ends where the next block starts
    valid: bool
    last: bool = False  # damaged bytes with no valid block after them
    complete: bool = True  # every byte its framing promises is there (a torn write leaves fewer)

    @property
    def end(self) -> int:
        return self.position + self.size


def scan_region(buf: bytes | mmap.mmap, start: int, limit: int, sync: bytes, fits: Fits) -> list[Piece]:
    """Split buf[start:limit] into valid blocks and damaged stretches, resynchronising after each."""
    pieces: list[Piece] = []
    pos = start
    while pos < limit:
        block = read_block(buf, pos, limit, sync, fits)
        if block is not None:
            pieces.append(Piece(pos, block.end - pos, block.count, True))
            pos = block.end
            continue
        claimed = _claimed_end(buf, pos, limit)
        resync = _next_block(buf, pos, limit, sync, fits, claimed)
        if resync is None:
            # A write cut short leaves fewer bytes than the framing promises (or a framing cut short), and
            # never ends with the sync marker: that is written last.
            synced = limit - pos > SYNC_SIZE and buf[limit - SYNC_SIZE : limit] == sync
            whole = synced or (claimed is not None and claimed[1] <= limit)
            count = claimed[0] if claimed is not None and claimed[1] == limit else None
            pieces.append(Piece(pos, limit - pos, count, False, True, whole))
            break
        count = claimed[0] if claimed is not None and claimed[1] == resync else None
        pieces.append(Piece(pos, resync - pos, count, False))
        pos = resync
    return pieces


def _claimed_end(buf: bytes | mmap.mmap, pos: int, limit: int) -> tuple[int, int] | None:
    """(count, end) as the framing at `pos` states them, if it parses."""
    try:
        count, body_pos = _read_long(buf, pos, limit)
        size, body_pos = _read_long(buf, body_pos, limit)
    except ContainerFormatError:
        return None
    if count <= 0 or size < 0:
        return None
    return count, body_pos + size + SYNC_SIZE


def _next_block(
    buf: bytes | mmap.mmap, pos: int, limit: int, sync: bytes, fits: Fits, claimed: tuple[int, int] | None
) -> int | None:
    """Where the first valid block after the damaged bytes at `pos` starts: after the next intact sync
    marker, or where the damaged block's own framing says it ends (its sync marker may be the damage)."""
    found: int | None = None
    q = buf.find(sync, pos, limit)
    while q != -1:
        if q + SYNC_SIZE < limit and read_block(buf, q + SYNC_SIZE, limit, sync, fits) is not None:
            found = q + SYNC_SIZE
            break
        q = buf.find(sync, q + 1, limit)
    end = claimed[1] if claimed is not None else limit
    if pos < end < limit and (found is None or end < found) and read_block(buf, end, limit, sync, fits) is not None:
        return end
    return found


def block_body(data: bytes) -> tuple[int, bytes]:
    """(count, body) of one whole block's bytes; ContainerFormatError if its framing does not fit them."""
    count, pos = _read_long(data, 0, len(data))
    size, pos = _read_long(data, pos, len(data))
    if count <= 0 or size < 0 or pos + size + SYNC_SIZE != len(data):
        raise ContainerFormatError(f"block framing (count {count}, size {size}) does not match its {len(data)} bytes")
    return count, data[pos : pos + size]
