"""A confluent-kafka worker loop in its own thread, with the start/stop/progress the runner expects."""

from __future__ import annotations

import asyncio
import logging
import threading

from streams.kafka.worker import Progress

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 60.0


class ThreadLoop:
    def __init__(self, name: str) -> None:
        self.name = name
        self.progress = Progress()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    @property
    def last_progress(self) -> float:
        return self.progress.last

    @property
    def failure(self) -> BaseException | None:
        return self._failure

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True if asked to stop meanwhile."""
        return self._stop.wait(seconds)

    async def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._main, name=self.name, daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, STOP_TIMEOUT_S)
            if self._thread.is_alive():
                raise TimeoutError(f"{self.name} did not stop within {STOP_TIMEOUT_S} s")

    def run_forever(self) -> None:
        """Run in the calling thread until `stop` is requested (the `agenttwin worker` shape)."""
        self._main()
        if self._failure is not None:
            raise self._failure

    def _main(self) -> None:
        try:
            self.run()
        except BaseException as exc:  # thread boundary: record it; the runner re-raises it
            log.exception("%s stopped on an error", self.name)
            self._failure = exc

    def run(self) -> None:
        raise NotImplementedError
