"""Backpressure from the live joins to the receiver on the embedded log.

The receiver and the joins beside it share one process, so a receiver that answers as fast as it can
takes the CPU the joins need: they fall behind, their alerts come later and later, and what they are
behind on piles up. So a request for `/v1/traces`, once its API key and length are checked and before
its body is read (the body waits in the kernel's buffers, not in this process), waits while a join is
behind (`LiveProcessor.behind`: about half a second of its work waits). The joins catch up meanwhile;
the client sees a slower answer, as from any loaded server. A request that waited `wait_s` is answered
503 with Retry-After, which OTLP exporters retry: nothing was written, nothing is lost.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

WAIT_S = 5.0  # under the OTLP exporters' 10 s default timeout
POLL_S = 0.005


class Joined(Protocol):
    def behind(self) -> bool: ...


class Admission:
    """`admit()` returns once no join is behind (True), or after `wait_s` (False)."""

    def __init__(
        self,
        joins: Sequence[Joined],
        *,
        wait_s: float = WAIT_S,
        poll_s: float = POLL_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.joins = list(joins)
        self.wait_s = wait_s
        self.poll_s = poll_s
        self._monotonic = monotonic
        self.held = 0  # requests that waited for the joins
        self.refused = 0  # requests that waited wait_s and were answered 503
        self._lock = threading.Lock()

    def admit(self) -> bool:
        if not any(j.behind() for j in self.joins):
            return True
        with self._lock:
            self.held += 1
        deadline = self._monotonic() + self.wait_s
        while any(j.behind() for j in self.joins):
            if self._monotonic() >= deadline:
                with self._lock:
                    self.refused += 1
                return False
            time.sleep(self.poll_s)  # the joins get the CPU meanwhile
        return True
