"""Physical names and value framing on a cluster: every topic, consumer group and transactional id
carries one prefix (default `agenttwin.`), and values use one wire framing.

The processors and events speak logical topic names (streams/topics.py, the one definition); a prefix
lets several pipelines (tests, tenants, environments) share one cluster without seeing each other's data
and keeps AgentTwin's names apart from everyone else's. An empty prefix gives the bare logical names
(what clusters written before the prefix existed use; see the README's migration notes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from streams.kafka.naming_defaults import CONFLUENT_WIRE, DEFAULT_PREFIX, SINGLE_OBJECT_WIRE, WIRE_MODES, WireMode
from streams.topics import ALL_TOPICS, TOPIC_BY_NAME, Topic

_LEGAL = re.compile(r"^[A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class WireFormat:
    """How event values are framed on Kafka. Readers accept either framing whatever this says; it
    decides what producers write (and a reader needs the registry to resolve Confluent ids)."""

    mode: WireMode = SINGLE_OBJECT_WIRE
    registry_url: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in WIRE_MODES:
            raise ValueError(f"wire format {self.mode!r}: one of {', '.join(WIRE_MODES)}")
        if self.mode == CONFLUENT_WIRE and not self.registry_url:
            raise ValueError("--wire confluent needs --schema-registry URL (or AGENTTWIN_SCHEMA_REGISTRY_URL)")


@dataclass(frozen=True)
class Naming:
    prefix: str = DEFAULT_PREFIX
    wire: WireFormat = field(default_factory=WireFormat)

    def __post_init__(self) -> None:
        if not _LEGAL.match(self.prefix):
            raise ValueError(f"topic prefix {self.prefix!r}: only letters, digits, '.', '_' and '-'")

    def topic(self, logical: str) -> str:
        if logical not in TOPIC_BY_NAME:
            raise ValueError(f"unknown topic {logical!r}")
        return self.prefix + logical

    def logical(self, physical: str) -> str:
        """The logical name of a physical topic of this prefix (ValueError for anything else)."""
        name = physical[len(self.prefix) :] if physical.startswith(self.prefix) else ""
        if name not in TOPIC_BY_NAME:
            raise ValueError(f"topic {physical!r} is not one of this pipeline's (prefix {self.prefix!r})")
        return name

    def group(self, name: str) -> str:
        """A consumer group (= faust app id, the prefix of its changelog topics)."""
        return self.prefix + name

    def changelog(self, name: str) -> str:
        """The compacted topic holding processor `name`'s store (faust's `<app id>-<table>-changelog`)."""
        return self.group(name) + "-store-changelog"

    def transactional_id(self, name: str) -> str:
        return self.prefix + name + "-txn"

    def topics(self) -> tuple[Topic, ...]:
        return ALL_TOPICS

    def all_physical(self) -> list[str]:
        return [self.topic(t.name) for t in ALL_TOPICS]
