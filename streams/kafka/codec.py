"""Events <-> Kafka messages: the entity key, the Avro value, identity headers, event time as timestamp.

The value is Avro single-object encoded by default, or Confluent-framed (`00` + registry id + body) when
the naming's wire format says so; `decode` reads either framing. Headers and timestamps: streams/identity.py.
Anything that does not decode to a known event raises `DecodeError` with a dead-letter reason code; the
dead letter keeps the original key and value bytes and the message's topic, partition and offset.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass

from schemas import AVRO_DIR
from streams import ids
from streams.embedded import DecodeError
from streams.events import EVENT_BY_SCHEMA, DeadLettered, Event
from streams.identity import (
    CONFLUENT,
    EVENT_ID_HEADER,
    EVENT_TYPE_HEADER,
    SINGLE_OBJECT,
    event_time_ms,
    record_headers,
)
from streams.kafka.naming import Naming
from streams.kafka.naming_defaults import CONFLUENT_WIRE
from streams.registry import CONFLUENT_HEADER_SIZE, RegistryError, SchemaRegistry, frame, schema_id_of
from streams.wire import DecodedEvent, SchemaStore, WireError

__all__ = ["DecodeError", "Headers", "KafkaCodec", "OutMessage", "SourceRef", "dead_letter"]

Headers = list[tuple[str, str | bytes | None]]


@dataclass(frozen=True)
class OutMessage:
    topic: str  # physical
    key: bytes
    value: bytes
    headers: Headers
    timestamp_ms: int | None = None  # the event's occurred_at (CreateTime)


@dataclass(frozen=True)
class SourceRef:
    """Where a consumed message came from (physical topic)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes


class KafkaCodec:
    def __init__(
        self, naming: Naming, schemas: SchemaStore | None = None, *, registry: SchemaRegistry | None = None
    ) -> None:
        self.naming = naming
        self.schemas = schemas or SchemaStore.from_directory(AVRO_DIR)
        url = naming.wire.registry_url
        self.registry = registry or (SchemaRegistry(url) if url else None)
        self.confluent = naming.wire.mode == CONFLUENT_WIRE
        self._single: dict[type[Event], tuple[str, Headers]] = {}  # per event type: topic, fixed headers

    def encode(self, event: Event) -> OutMessage:
        if not self.confluent or self.registry is None:
            return self._encode_single_object(event)
        topic = self.naming.topic(event.TOPIC)
        schema = self.schemas.current(event.SCHEMA)
        schema_id = self.registry.register(f"{topic}-{event.SCHEMA}", schema)
        value = frame(schema_id, self.schemas.encode_body(event.SCHEMA, event.to_record()))
        text = record_headers(event, event.SCHEMA, schema.fingerprint, content_type=CONFLUENT, schema_id=schema_id)
        headers: Headers = [(name, v.encode()) for name, v in text.items()]
        return OutMessage(topic, event.key.encode(), value, headers, event_time_ms(event))

    def _encode_single_object(self, event: Event) -> OutMessage:
        """The headers that follow from the schema are made once per event type (every worker's outputs go
        this way); the same bytes and order as record_headers gives, whose first two are the event's own."""
        known = self._single.get(type(event))
        if known is None:
            schema = self.schemas.current(event.SCHEMA)
            text = list(record_headers(event, event.SCHEMA, schema.fingerprint, content_type=SINGLE_OBJECT).items())
            if [name for name, _ in text[:2]] != [EVENT_ID_HEADER, EVENT_TYPE_HEADER]:
                raise AssertionError(f"record_headers begins with {text[:2]}")
            known = self._single[type(event)] = (self.naming.topic(event.TOPIC), [(n, v.encode()) for n, v in text[2:]])
        topic, fixed = known
        value = self.schemas.encode(event.SCHEMA, event.to_record())
        headers: Headers = [(EVENT_ID_HEADER, event.event_id.encode()), (EVENT_TYPE_HEADER, event.event_type.encode())]
        return OutMessage(topic, event.key.encode(), value, headers + fixed, event_time_ms(event))

    def decode_value(self, value: bytes) -> DecodedEvent:
        """The Avro record of a value in either framing (WireError / DecodeError when it is not one)."""
        schema_id = schema_id_of(value)
        if schema_id is None:
            return self.schemas.decode(value)
        if self.registry is None:
            raise DecodeError("NO_SCHEMA_REGISTRY", f"Confluent-framed value (schema id {schema_id}) and no registry")
        try:
            writer = self.registry.schema(schema_id)
        except RegistryError as exc:
            if exc.status is None or exc.status >= 500:
                raise  # the registry is away: not the message's fault, never a dead letter
            raise DecodeError("UNKNOWN_SCHEMA_ID", f"schema id {schema_id}: {exc}") from None
        known = self.schemas.writer(writer.fingerprint)
        return self.schemas.decode_body(known or writer, value, CONFLUENT_HEADER_SIZE)

    def decode(self, value: bytes | None) -> Event:
        if value is None:
            raise DecodeError("NULL_VALUE", "message has no value")
        try:
            decoded = self.decode_value(value)
        except WireError as exc:
            raise DecodeError(exc.reason.value, exc.message) from None
        event_type = EVENT_BY_SCHEMA.get(decoded.name)
        if event_type is None:
            raise DecodeError("UNKNOWN_EVENT_TYPE", f"no event model for schema {decoded.name}")
        try:
            return event_type.from_record(decoded.record)
        except (TypeError, ValueError) as exc:
            raise DecodeError("INVALID_EVENT", str(exc)) from None


def error_text(error: BaseException | str) -> str:
    if isinstance(error, str):
        return error
    return " ".join("".join(traceback.format_exception_only(error)).split())


def dead_letter(
    stage: str, reason: str, error: BaseException | str, source: SourceRef, *, evaluator_version: str | None = None
) -> DeadLettered:
    """The dead letter of one message; its id is fixed by (stage, topic, partition, offset), so a
    redelivered poison message dead-letters to the same row."""
    key = source.key.decode("utf-8", "replace") if source.key is not None else None
    return DeadLettered(
        event_id=ids.event_id("DeadLettered", stage, source.topic, source.partition, source.offset),
        occurred_at=ids.PINNED_NOW,
        correlation_id=key or "",
        stage=stage,
        reason=f"{reason}: {error_text(error)}"[:2000],
        error_class=reason,
        source_topic=source.topic,
        source_partition=source.partition,
        source_offset=source.offset,
        original_key=key,
        original_value=source.value,
        attempt=1,
        evaluator_version=evaluator_version,
    )
