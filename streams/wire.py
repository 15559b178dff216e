"""Avro single-object encoding: the bytes every event carries on a topic.

Layout (Avro specification): ``C3 01`` + the 8-byte little-endian CRC-64-AVRO fingerprint of the
writer schema's Parsing Canonical Form + the schemaless binary body. Readers find the writer
schema by fingerprint in a `SchemaStore` loaded from the package's .avsc files (no registry) and
resolve it against the current version of the same name, so events written with an old version
stay readable. Old versions live in an `old/` subfolder and only register fingerprints.
"""

from __future__ import annotations

import dataclasses
import io
import json
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import avro.errors
import avro.schema
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType
from fastavro import schemaless_reader, schemaless_writer
from fastavro.read import SchemaResolutionError
from fastavro.schema import parse_schema

from streams._avro_schemas import (
    ParsedSchema,
    SchemaStoreError,
    fingerprint_text,
    identify,
    parse_current,
    parse_old,
    self_contained,
)
from streams._avro_writer import NotCompiled, Writer, compile_writer
from streams._errors import StreamsError

__all__ = [
    "MAGIC",
    "DecodedEvent",
    "SchemaStore",
    "SchemaStoreError",
    "WireError",
    "WireErrorReason",
    "check_backward_compatible",
    "fingerprint_text",
]

MAGIC = b"\xc3\x01"
HEADER_SIZE = 10

# What fastavro raises on a body that does not match its schema (truncated, garbage, bad UTF-8,
# out-of-range union index or enum symbol, impossible timestamps).
_BODY_ERRORS = (EOFError, ValueError, IndexError, KeyError, TypeError, OverflowError, struct.error)
# What fastavro raises on a record that does not match the writer schema.
_RECORD_ERRORS = (ValueError, TypeError, KeyError, AttributeError, OverflowError, struct.error)


class WireErrorReason(StrEnum):
    BAD_MAGIC = "BAD_MAGIC"
    UNKNOWN_FINGERPRINT = "UNKNOWN_FINGERPRINT"
    CORRUPT_BODY = "CORRUPT_BODY"
    SCHEMA_RESOLUTION = "SCHEMA_RESOLUTION"
    UNKNOWN_SCHEMA = "UNKNOWN_SCHEMA"  # encode, or decode with a reader name the store does not hold
    INVALID_RECORD = "INVALID_RECORD"  # encode: the record does not match the schema


class WireError(StreamsError):
    """Bytes that cannot be decoded (or a record that cannot be encoded); `reason` says why."""

    def __init__(self, reason: WireErrorReason, message: str) -> None:
        self.reason = reason
        self.message = message
        super().__init__(f"{reason.value}: {message}")


@dataclass(frozen=True)
class DecodedEvent:
    name: str  # full name of the reader schema the record was resolved to
    record: Any  # a dict for record schemas
    fingerprint: int  # writer fingerprint, as the spec's little-endian 64-bit integer (unsigned)
    writer: ParsedSchema | None = None  # the writer schema version (its .fingerprint bytes: fingerprint_text)


class SchemaStore:
    """Current reader schemas by name and every known writer schema by fingerprint."""

    def __init__(self, current: Iterable[ParsedSchema], old: Iterable[ParsedSchema] = ()) -> None:
        self._readers: dict[str, ParsedSchema] = {}
        self._writers: dict[bytes, ParsedSchema] = {}
        self._compiled: dict[str, Writer | None] = {}  # current schema name -> its compiled body writer
        self._by_type: dict[type, Writer | None] = {}  # event class -> a writer reading its attributes
        for schema in current:
            if schema.name in self._readers:
                other = self._readers[schema.name].source
                raise SchemaStoreError(f"{schema.source}: schema {schema.name} is also defined in {other}")
            self._readers[schema.name] = schema
            self._writers[schema.fingerprint] = schema
        for schema in old:
            # an old file identical to the current one is harmless; keep the current entry
            self._writers.setdefault(schema.fingerprint, schema)

    @classmethod
    def from_directory(cls, directory: Path, old_subdir: str = "old") -> SchemaStore:
        """Load `directory/*.avsc` as current schemas and `directory/<old_subdir>/*.avsc` as old ones."""
        if not directory.is_dir():
            raise SchemaStoreError(f"{directory}: not a directory")
        current, named = parse_current(sorted(directory.glob("*.avsc")))
        old_dir = directory / old_subdir
        old = [parse_old(path, named) for path in sorted(old_dir.glob("*.avsc"))] if old_dir.is_dir() else []
        return cls(current, old)

    @classmethod
    def from_schemas(cls, current: Iterable[Any], old: Iterable[Any] = ()) -> SchemaStore:
        """Build a store from in-memory schema documents, dependencies first (a document may use
        named types defined by an earlier current document)."""
        named: dict[str, Any] = {}
        parsed = [identify(parse_schema(doc, named_schemas=named), None) for doc in current]
        old_parsed = [identify(parse_schema(doc, named_schemas=dict(named)), None) for doc in old]
        return cls(parsed, old_parsed)

    def names(self) -> list[str]:
        return sorted(self._readers)

    def current(self, name: str) -> ParsedSchema:
        try:
            return self._readers[name]
        except KeyError:
            raise WireError(WireErrorReason.UNKNOWN_SCHEMA, f"no current schema named {name!r}") from None

    def versions(self, name: str) -> list[ParsedSchema]:
        """Every known writer version of `name`, the current one first."""
        others = [s for s in self._writers.values() if s.name == name and s is not self._readers.get(name)]
        head = [self._readers[name]] if name in self._readers else []
        return head + sorted(others, key=lambda s: s.fingerprint)

    def encode(self, name: str, record: Mapping[str, Any]) -> bytes:
        """Single-object bytes: `C3 01` + the current schema's fingerprint + the body."""
        return MAGIC + self.current(name).fingerprint + self.encode_body(name, record)

    def encode_event(self, event: Any) -> bytes:
        """`encode(event.SCHEMA, event.to_record())` without building the record: the fields are read
        off the event (a dataclass whose fields are exactly its schema's)."""
        name: str = event.SCHEMA
        kind = type(event)
        if kind not in self._by_type:
            schema = self.current(name)
            fields = {f.name for f in dataclasses.fields(kind)} if dataclasses.is_dataclass(kind) else set()
            same = fields == set(schema.field_names)
            self._by_type[kind] = compile_writer(schema.parsed, attributes=True) if same else None
        writer = self._by_type[kind]
        if writer is not None:
            out = bytearray(MAGIC)
            out += self.current(name).fingerprint
            try:
                writer(out, event)
                return bytes(out)
            except NotCompiled:
                pass  # a value only fastavro knows how to write (or to refuse): it decides
        return self.encode(name, event.to_record())

    def encode_body(self, name: str, record: Mapping[str, Any]) -> bytes:
        """The schemaless Avro body of `record` under the current schema `name` (no framing)."""
        schema = self.current(name)
        extra = record.keys() - schema.field_names
        if extra:
            raise WireError(WireErrorReason.INVALID_RECORD, f"{name}: fields not in the schema: {sorted(extra)}")
        if name not in self._compiled:
            self._compiled[name] = compile_writer(schema.parsed)
        compiled = self._compiled[name]
        if compiled is not None:
            body = bytearray()
            try:
                compiled(body, record)
                return bytes(body)
            except NotCompiled:
                pass  # a value only fastavro knows how to write (or to refuse): it decides
        out = io.BytesIO()
        try:
            # not fastavro's strict mode: it rejects a missing field whose default is null
            schemaless_writer(out, schema.parsed, record)
        except _RECORD_ERRORS as exc:
            raise WireError(WireErrorReason.INVALID_RECORD, f"{name}: {exc}") from exc
        return out.getvalue()

    def writer(self, fingerprint: bytes) -> ParsedSchema | None:
        """The known schema version with this fingerprint (current or old), if any."""
        return self._writers.get(bytes(fingerprint))

    def decode(self, data: bytes, reader_name: str | None = None) -> DecodedEvent:
        """Decode single-object bytes. Any input either decodes or raises `WireError`."""
        if len(data) < HEADER_SIZE or data[:2] != MAGIC:
            raise WireError(WireErrorReason.BAD_MAGIC, "not Avro single-object encoding (C3 01 + fingerprint)")
        fp = bytes(data[2:HEADER_SIZE])
        writer = self._writers.get(fp)
        if writer is None:
            raise WireError(WireErrorReason.UNKNOWN_FINGERPRINT, f"no schema with fingerprint {fingerprint_text(fp)}")
        return self.decode_body(writer, data, HEADER_SIZE, reader_name)

    def decode_body(
        self, writer: ParsedSchema, data: bytes, start: int, reader_name: str | None = None
    ) -> DecodedEvent:
        """Decode the body at `data[start:]`, written with `writer`, into the current schema of its name
        (or `reader_name`). Any input either decodes or raises `WireError`."""
        fp = fingerprint_text(writer.fingerprint)
        target = reader_name or writer.name
        reader = self._readers.get(target)
        if reader is None:
            raise WireError(WireErrorReason.SCHEMA_RESOLUTION, f"writer {writer.name} ({fp}): no current {target!r}")
        body = io.BytesIO(data)
        body.seek(start)
        try:
            if reader is writer:
                record = schemaless_reader(body, writer.parsed, None)
            else:
                record = schemaless_reader(body, writer.parsed, reader.parsed)
        except SchemaResolutionError as exc:
            raise WireError(
                WireErrorReason.SCHEMA_RESOLUTION, f"{writer.name} ({fp}) -> reader {target}: {exc}"
            ) from exc
        except _BODY_ERRORS as exc:
            problem = f"{writer.name} ({fp}): {type(exc).__name__}: {exc}"
            raise WireError(WireErrorReason.CORRUPT_BODY, problem) from exc
        if body.tell() != len(data):
            raise WireError(WireErrorReason.CORRUPT_BODY, f"{writer.name}: {len(data) - body.tell()} trailing byte(s)")
        return DecodedEvent(
            name=reader.name,
            record=record,
            fingerprint=int.from_bytes(writer.fingerprint, "little"),
            writer=writer,
        )

    def compatibility_problems(self) -> dict[str, list[str]]:
        """For each old version (by fingerprint hex): why the current version cannot read it; empty = fine."""
        report: dict[str, list[str]] = {}
        for schema in self._writers.values():
            current = self._readers.get(schema.name)
            if current is None or current is schema:
                continue
            report[fingerprint_text(schema.fingerprint)] = check_backward_compatible(current.parsed, schema.parsed)
        return report


def _to_avro(schema: Any) -> avro.schema.Schema:
    named = schema.get("__named_schemas", {}) if isinstance(schema, dict) else {}
    if not named:
        named = {}
        schema = parse_schema(schema, named_schemas=named)
    full = self_contained(schema, named)
    try:
        return avro.schema.parse(json.dumps(full))
    except (avro.errors.AvroException, ValueError, TypeError) as exc:
        raise SchemaStoreError(f"avro cannot parse schema: {exc}") from exc


def check_backward_compatible(new_schema: Any, old_schema: Any) -> list[str]:
    """Problems that stop `new_schema` (reader) from reading data written with `old_schema` (writer).

    Either argument may be a raw schema document or a fastavro-parsed schema. Empty list = compatible.
    """
    checker = ReaderWriterCompatibilityChecker()  # type: ignore[no-untyped-call]
    result = checker.get_compatibility(_to_avro(new_schema), _to_avro(old_schema))
    if result.compatibility is SchemaCompatibilityType.compatible:
        return []
    # avro reports sets of messages and locations that are not paired; keep all of them
    kinds = ", ".join(sorted({kind.value for kind in result.incompatibilities}))
    where = ", ".join(sorted(result.locations))
    messages = sorted(result.messages) or ["incompatible"]
    return [f"{message} ({kinds}) at {where}" for message in messages]
