"""The record schema of the embedded log's container files, and decoding one block's records."""

from __future__ import annotations

import io
from typing import Any

from fastavro import schemaless_reader
from fastavro.schema import parse_schema, to_parsing_canonical_form

LOG_RECORD_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "LogRecord",
    "namespace": "agenttwin.embedded_log",
    "doc": "One message of an embedded topic; value holds an Avro single-object-encoded event.",
    "fields": [
        {"name": "key", "type": ["null", "string"], "default": None},
        {"name": "value", "type": "bytes"},
        {"name": "headers", "type": {"type": "map", "values": "string"}, "default": {}},
        # Caller-supplied event time in ms since the epoch; the log itself never reads a clock.
        {"name": "timestamp_ms", "type": ["null", "long"], "default": None},
    ],
}
PARSED = parse_schema(LOG_RECORD_SCHEMA)
CANONICAL = to_parsing_canonical_form(PARSED)
MIN_RECORD_SIZE = 4  # key union index, value length, headers block count, timestamp union index


def decode_records(body: bytes, count: int) -> list[dict[str, Any]]:
    """`count` records that fill `body` exactly; ValueError when the bytes are anything else."""
    if count < 0 or count * MIN_RECORD_SIZE > len(body):
        raise ValueError(f"{count} record(s) cannot fit in {len(body)} byte(s)")
    stream = io.BytesIO(body)
    out: list[dict[str, Any]] = []
    try:
        for _ in range(count):
            record: dict[str, Any] = schemaless_reader(stream, PARSED, None)  # type: ignore[assignment]
            out.append(record)
    except Exception as exc:  # fastavro raises EOFError, IndexError, UnicodeDecodeError... on garbage
        raise ValueError(f"records do not decode: {type(exc).__name__}: {exc}") from None
    if stream.tell() != len(body):
        raise ValueError(f"{len(body) - stream.tell()} byte(s) left after {count} record(s)")
    return out


def records_fit(body: bytes, count: int) -> bool:
    """Whether `body` is exactly `count` log records (how a block without a checksum is validated)."""
    try:
        decode_records(body, count)
    except ValueError:
        return False
    return True
