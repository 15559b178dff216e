"""Run several workers in one process (one asyncio loop: faust apps in it, confluent loops in threads)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Self

from streams.kafka.worker import Worker

log = logging.getLogger(__name__)


class WorkerFailedError(RuntimeError):
    """A worker stopped on an error; the message names it."""


class WorkerGroup:
    def __init__(self, workers: Sequence[Worker]) -> None:
        self.workers = list(workers)

    async def __aenter__(self) -> Self:
        started: list[Worker] = []
        try:
            for w in self.workers:
                await w.start()
                started.append(w)
        except BaseException:
            for w in reversed(started):
                await w.stop()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def stop(self) -> None:
        for w in reversed(self.workers):
            await w.stop()

    def check(self) -> None:
        for w in self.workers:
            if w.failure is not None:
                raise WorkerFailedError(f"worker {w.name} failed: {w.failure!r}") from w.failure

    async def wait_for(
        self, condition: Callable[[], bool], *, timeout_s: float, poll_s: float = 0.5, what: str = "condition"
    ) -> None:
        """Poll a blocking condition (in a thread) until it holds; worker failures and the timeout raise."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.check()
            if await asyncio.to_thread(condition):
                return
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{what} not reached within {timeout_s:.0f} s")
            await asyncio.sleep(poll_s)

    async def wait_idle(self, *, idle_s: float, timeout_s: float) -> None:
        """Until no worker has handled anything for `idle_s` seconds."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.check()
            last = max((w.last_progress for w in self.workers), default=0.0)
            if time.monotonic() - last >= idle_s:
                return
            if time.monotonic() >= deadline:
                raise TimeoutError(f"workers still busy after {timeout_s:.0f} s")
            await asyncio.sleep(min(0.2, idle_s))

    async def run_until_stopped(self, stop: asyncio.Event, poll_s: float = 1.0) -> None:
        while not stop.is_set():
            self.check()
            try:
                await asyncio.wait_for(stop.wait(), poll_s)
            except TimeoutError:
                continue
