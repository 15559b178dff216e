"""Events <-> Kafka messages: Avro single-object value, the entity key, `event_id`/`event_type` headers.

Anything that does not decode to a known event raises `DecodeError` with a dead-letter reason code; the
dead letter keeps the original key and value bytes and the message's topic, partition and offset.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass

from schemas import AVRO_DIR
from streams import ids
from streams.embedded import EVENT_ID_HEADER, EVENT_TYPE_HEADER, DecodeError
from streams.events import EVENT_BY_SCHEMA, DeadLettered, Event
from streams.kafka.naming import Naming
from streams.wire import SchemaStore, WireError

__all__ = ["DecodeError", "Headers", "KafkaCodec", "OutMessage", "SourceRef", "dead_letter"]

Headers = list[tuple[str, str | bytes | None]]


@dataclass(frozen=True)
class OutMessage:
    topic: str  # physical
    key: bytes
    value: bytes
    headers: Headers


@dataclass(frozen=True)
class SourceRef:
    """Where a consumed message came from (physical topic)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes


class KafkaCodec:
    def __init__(self, naming: Naming, schemas: SchemaStore | None = None) -> None:
        self.naming = naming
        self.schemas = schemas or SchemaStore.from_directory(AVRO_DIR)

    def encode(self, event: Event) -> OutMessage:
        value = self.schemas.encode(event.SCHEMA, event.to_record())
        headers: Headers = [(EVENT_ID_HEADER, event.event_id.encode()), (EVENT_TYPE_HEADER, event.event_type.encode())]
        return OutMessage(self.naming.topic(event.TOPIC), event.key.encode(), value, headers)

    def decode(self, value: bytes | None) -> Event:
        if value is None:
            raise DecodeError("NULL_VALUE", "message has no value")
        try:
            decoded = self.schemas.decode(value)
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
