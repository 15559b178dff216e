"""What the runner needs from any worker (faust app or confluent-kafka loop): start, stop, progress."""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Worker(Protocol):
    name: str

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    @property
    def last_progress(self) -> float:
        """time.monotonic() of the last message this worker handled (or of its start)."""
        ...

    @property
    def failure(self) -> BaseException | None:
        """The error that stopped the worker, if one did."""
        ...


class Progress:
    """Counters a worker updates from its own thread and the runner reads from another."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.handled = 0
        self.produced = 0
        self.dead_letters = 0
        self.last = time.monotonic()

    def tick(self, handled: int = 0, produced: int = 0, dead_letters: int = 0) -> None:
        with self._lock:
            self.handled += handled
            self.produced += produced
            self.dead_letters += dead_letters
            self.last = time.monotonic()
