"""The envelope every event shares, and the conversion to and from Avro records."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Self


@dataclass(frozen=True, kw_only=True)
class Event:
    """Envelope: event id, type, event time, tenant, correlation (join) id."""

    SCHEMA: ClassVar[str]  # full Avro name of the event's schema
    TOPIC: ClassVar[str]  # the topic it travels on (streams.topics lists them all)
    KEY_FIELD: ClassVar[str]  # the join entity used as the message key

    event_id: str
    occurred_at: datetime
    correlation_id: str
    event_type: str = ""
    tenant: str | None = None

    def __post_init__(self) -> None:
        if not self.event_type:
            object.__setattr__(self, "event_type", type(self).__name__)

    @property
    def received_time(self) -> datetime:
        """The pipeline's time for the event, which clocks and horizons run on. Events the pipeline makes
        itself carry it as their event time; events from outside override this with their receive time."""
        return self.occurred_at

    @property
    def key(self) -> str:
        return str(getattr(self, self.KEY_FIELD))

    def to_record(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _field_names(type(self))}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Self:
        names = _field_set(cls)
        return cls(**{k: v for k, v in record.items() if k in names})


# dataclasses.fields() builds its tuple anew on every call: once per event type is enough (hot on Kafka paths)
_NAMES: dict[type, tuple[str, ...]] = {}
_NAME_SETS: dict[type, frozenset[str]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def _field_set(cls: type) -> frozenset[str]:
    names = _NAME_SETS.get(cls)
    if names is None:
        names = _NAME_SETS[cls] = frozenset(_field_names(cls))
    return names
