"""Physical names on a cluster: every topic, consumer group and transactional id carries one prefix.

The processors and events speak logical topic names (streams/topics.py); a prefix lets several
pipelines (tests, tenants, environments) share one cluster without seeing each other's data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from streams.topics import ALL_TOPICS, TOPIC_BY_NAME, Topic

_LEGAL = re.compile(r"^[A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class Naming:
    prefix: str = ""

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
