"""Run a processor live beside the receiver on the embedded log: incremental, in the writer process.

`EmbeddedRuntime.run` drives processors to quiescence, opening and committing their checkpoints on each
call — right for batch runs, too much per second. `LiveProcessor` keeps its store in memory: it rebuilds
it once (the first step reads from offset 0) and then only reads new offsets. It runs under the publisher's lock,
because the embedded log has a single writer and request threads publish concurrently. A poison event
goes to the dead letters, like in EmbeddedRuntime.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable, Sequence
from datetime import datetime

from producers.otlp.publishing import SerializedPublisher
from streams.embedded import DecodeError, EmbeddedRuntime, dead_letter
from streams.events import Event
from streams.processors.base import Processor, Store

_log = logging.getLogger(__name__)
BATCH = 500  # outputs appended at once at most


class LiveProcessor:
    def __init__(self, runtime: EmbeddedRuntime, processor: Processor, publisher: SerializedPublisher) -> None:
        self.runtime = runtime
        self.processor = processor
        self.publisher = publisher
        self.store: Store = {}
        self.cursors = {topic: 0 for topic in processor.inputs}
        self.latest: datetime | None = None
        self.produced = 0

    def _out(self, events: list[Event]) -> None:
        if events:
            self.produced += self.runtime.publish(events)

    def step(self) -> int:
        """Handle every new input event (then the processor's timers once); returns events produced.

        Outputs are appended in batches of up to BATCH events (one write and one fsync per topic each),
        not one by one: a crash before they are appended loses nothing, since the store is rebuilt from
        offset 0 on the next start and the outputs come out again (deduplicated by their event ids)."""
        before = self.produced
        pending: list[Event] = []
        with self.publisher.lock:
            log = self.runtime.log
            for topic in self.processor.inputs:
                if topic not in log.topics():
                    continue
                for record in log.read(topic, self.cursors[topic]):
                    self.cursors[topic] = record.offset + 1
                    try:
                        event = self.runtime.decode(record)
                    except DecodeError as exc:
                        pending.append(dead_letter(self.processor.name, exc.reason, str(exc), record))
                        continue
                    if self.latest is None or event.received_time > self.latest:  # never a sender's clock
                        self.latest = event.received_time
                    try:
                        pending.extend(self.processor.handle(self.store, event))
                    except Exception as exc:  # the stream boundary: a poison event is dead-lettered
                        detail = "".join(traceback.format_exception_only(exc)).strip()
                        pending.append(dead_letter(self.processor.name, "PROCESSING_ERROR", detail, record))
                    if len(pending) >= BATCH:
                        self._out(pending)
                        pending = []
            if self.latest is not None:
                pending.extend(self.processor.tick(self.store, self.latest))
            self._out(pending)
        return self.produced - before

    def run_every(self, interval_s: float, stop: threading.Event) -> threading.Thread:
        """Step on a daemon thread every `interval_s` until `stop` is set."""
        return run_every([self], interval_s, stop)


def run_every(
    live: list[LiveProcessor],
    interval_s: float,
    stop: threading.Event,
    *,
    also: Sequence[Callable[[], object]] = (),
) -> threading.Thread:
    """Step each processor in turn (so one's outputs reach the next in the same round), then the `also`
    callables, on a daemon thread every `interval_s` until `stop` is set."""

    def loop() -> None:
        while not stop.wait(interval_s):
            for processor in live:
                try:
                    processor.step()
                except Exception:  # keep the receiver's joins alive; the error is logged, the step retried
                    _log.exception("live %s step failed", processor.processor.name)
            for step in also:
                try:
                    step()
                except Exception:
                    _log.exception("live step %r failed", step)

    names = "+".join(p.processor.name for p in live)
    thread = threading.Thread(target=loop, name=f"live-{names}", daemon=True)
    thread.start()
    return thread
