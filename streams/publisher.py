"""The publishing port: anything that puts events on their topics (embedded log or Kafka)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from streams.events import Event


class Publisher(Protocol):
    def publish(self, events: Iterable[Event]) -> int:
        """Put events on their topics (each event's TOPIC, keyed by its `key`); durable on return.

        Returns how many were written (the embedded log skips event ids it already holds).
        """
        ...
