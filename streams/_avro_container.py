"""Just enough of the Avro object container file format to append blocks and index them.

fastavro writes the header (so any Avro tool reads our files); we frame the blocks ourselves so an
append is one write without re-reading the file, and we index block positions so a read can seek
straight to the block that holds an offset.

Block layout (Avro spec): zigzag-varint record count, zigzag-varint byte size, the serialized
records, the file's 16-byte sync marker.
"""

from __future__ import annotations

import io
import mmap
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


def header_bytes(schema: Any, sync: bytes) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, schema, [], codec="null", sync_marker=sync)
    return out.getvalue()


def parse_header(buf: bytes | mmap.mmap, limit: int) -> Header:
    if limit < len(MAGIC) or buf[: len(MAGIC)] != MAGIC:
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
