"""Backpressure from the live joins to the receiver on the embedded log.

The receiver and the joins beside it share one process, so a receiver that answers as fast as it can
takes the CPU the joins need: they fall behind, their alerts come later and later, and what they are
behind on piles up. So a request for `/v1/traces`, once its API key and length are checked and before
its body is read (the body waits in the kernel's buffers, not in this process), waits while a join is
behind (`LiveProcessor.behind`: about a quarter of a second of its work waits). The joins catch up meanwhile;
the client sees a slower answer, as from any loaded server.

A request is never refused because of the joins: after `wait_s` it goes on anyway (and a warning names
the joins behind, at most once a minute). A join that stopped keeping up, or stopped altogether, slows
ingestion down to a request per `wait_s` per connection; it does not make exporters drop spans.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

WAIT_S = 5.0  # well under the OTLP exporters' 10 s default timeout
POLL_S = 0.005
WARN_EVERY_S = 60.0
_log = logging.getLogger(__name__)


class Joined(Protocol):
    @property
    def name(self) -> str: ...

    def behind(self) -> bool: ...


class Admission:
    """`admit()` returns once no join is behind, or after `wait_s`."""

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
        self.overdue = 0  # requests that waited wait_s and went on with a join still behind
        self._warned_at: float | None = None
        self._lock = threading.Lock()

    def admit(self) -> None:
        if not any(j.behind() for j in self.joins):
            return
        with self._lock:
            self.held += 1
        deadline = self._monotonic() + self.wait_s
        while True:
            behind = [j.name for j in self.joins if j.behind()]
            if not behind:
                return
            now = self._monotonic()
            if now >= deadline:
                break
            time.sleep(self.poll_s)  # the joins get the CPU meanwhile
        with self._lock:
            self.overdue += 1
            warn = self._warned_at is None or now - self._warned_at >= WARN_EVERY_S
            if warn:
                self._warned_at = now
        if warn:
            _log.warning("live join(s) %s still behind after %.0f s; accepting spans anyway (%d request(s) so far)",
                         ", ".join(behind), self.wait_s, self.overdue)  # fmt: skip
