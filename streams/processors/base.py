"""The processor contract: a pure step over one event, with its state in a mapping.

`handle(store, event) -> events`. The store is a plain dict in the embedded runtime and a staged view
of a changelog-backed partition store on Kafka, so values are reassigned (never mutated in place) and
kept to plain data. Handling
the same event twice must change nothing: outputs carry deterministic event ids and processors keep
"done" markers.
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

from streams.events import Event

Store = MutableMapping[str, Any]


class Processor:
    """Subclasses set `inputs` (topic names) and implement `handle`."""

    inputs: ClassVar[tuple[str, ...]] = ()
    # Stateless processors resume from their committed offsets; the embedded runtime checkpoints a
    # stateful one's store with its offsets (streams/checkpoints.py) and resumes from there.
    stateful: ClassVar[bool] = False

    @property
    def name(self) -> str:
        """The consumer group (and, on Kafka, the prefix of its changelog topics)."""
        raise NotImplementedError

    def handle(self, store: Store, event: Event) -> list[Event]:
        raise NotImplementedError

    def prefetch(self, events: Sequence[Event]) -> None:
        """A look at the next events before they are handled one by one, in order (e.g. to simulate cases
        concurrently); it must not change what `handle` returns. Nothing by default."""

    def tick(self, store: Store, now: datetime) -> list[Event]:
        """Time-driven work (e.g. reporting one-sided joins past their horizon); none by default."""
        return []

    def close(self) -> None:
        """Release resources (not state) when the runtime stops; nothing by default."""
