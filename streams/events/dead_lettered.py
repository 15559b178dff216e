"""A message a stage could not decode or process, kept with its original bytes."""

from __future__ import annotations

from dataclasses import dataclass

from streams.events._base import Event


@dataclass(frozen=True, kw_only=True)
class DeadLettered(Event):
    """Schema: schemas/avro/dead_lettered.avsc. Topic `dead-letters`, keyed by `source_topic`."""

    SCHEMA = "dev.agenttwin.events.DeadLettered"
    TOPIC = "dead-letters"
    KEY_FIELD = "source_topic"

    stage: str
    reason: str
    error_class: str
    source_topic: str
    source_partition: int
    source_offset: int
    original_value: bytes
    attempt: int
    original_key: str | None = None
    evaluator_version: str | None = None
