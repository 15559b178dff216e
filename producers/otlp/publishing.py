"""One Publisher shared by several threads (the receiver's request threads, an SDK reporter's sender)."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from streams.events import Event
from streams.publisher import Publisher


class SerializedPublisher:
    """Publishes under a lock: the embedded log has one writer, and each batch stays whole on a topic."""

    def __init__(self, inner: Publisher) -> None:
        self.inner = inner
        self.lock = threading.RLock()  # also held by whoever else writes the same log (LiveProcessor)

    def publish(self, events: Iterable[Event]) -> int:
        batch = list(events)
        with self.lock:
            return self.inner.publish(batch)


def serialized(publisher: Publisher) -> SerializedPublisher:
    return publisher if isinstance(publisher, SerializedPublisher) else SerializedPublisher(publisher)
