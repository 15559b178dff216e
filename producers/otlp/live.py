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
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from datetime import datetime

from producers.otlp.publishing import Committed, GroupCommitPublisher, LockedPublisher
from streams.embedded import DecodeError, EmbeddedRuntime, dead_letter
from streams.embedded_log import LogRecord
from streams.events import Event
from streams.processors.base import Processor, Store

_log = logging.getLogger(__name__)
BATCH = 500  # outputs appended at once at most


class LiveProcessor:
    def __init__(
        self,
        runtime: EmbeddedRuntime,
        processor: Processor,
        publisher: LockedPublisher,
        *,
        tick_every_s: float = 0.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.runtime = runtime
        # the timers (the join's horizon, minutes long) need not run on every step: a full pass over the
        # store 50 times a second is what a short --join-every would otherwise cost
        self.tick_every_s = tick_every_s
        self._monotonic = monotonic
        self._ticked_at: float | None = None
        self.processor = processor
        self.publisher = publisher
        self.store: Store = {}
        self.cursors = {topic: 0 for topic in processor.inputs}
        self.latest: datetime | None = None
        self.produced = 0
        self.fed = 0  # input events handed over in memory (not decoded from the log)
        self._inbox: deque[Committed] = deque()
        self._horizon: dict[str, int] | None = None  # with a group-commit publisher: where its feed starts
        if isinstance(publisher, GroupCommitPublisher):
            self._horizon = publisher.subscribe(processor.inputs, self._inbox.append)

    def _out(self, events: list[Event]) -> None:
        if events:
            self.produced += (
                self.publisher.publish(events) if self._horizon is not None else self.runtime.publish(events)
            )

    def step(self) -> int:
        """Handle every new input event, then the processor's timers (at most once per `tick_every_s`);
        returns events produced.

        Outputs are appended in batches of up to BATCH events (one write and one fsync per topic each),
        not one by one: a crash before they are appended loses nothing, since the store is rebuilt from
        offset 0 on the next start and the outputs come out again (deduplicated by their event ids).

        With a GroupCommitPublisher, the inputs come from its feed (durable events, in offset order) and
        the outputs go through it (sharing fsyncs with requests); the log is read only for what the feed
        does not carry (what was there before it started, batches the log partly held). Otherwise the step
        reads new offsets from the log under the publisher's lock."""
        if self._horizon is not None:
            return self._step_fed()
        before = self.produced
        pending: list[Event] = []
        with self.publisher.lock:
            log = self.runtime.log
            for topic in self.processor.inputs:
                if topic in log.topics():
                    self._read_log(topic, None, pending)
            self._tick(pending)
            self._out(pending)
        return self.produced - before

    def _step_fed(self) -> int:
        assert self._horizon is not None
        before = self.produced
        pending: list[Event] = []
        items: list[Committed] = []
        while self._inbox:
            items.append(self._inbox.popleft())
        for topic in self.processor.inputs:
            if self.cursors[topic] < self._horizon[topic]:  # the first step: what the log held before the feed
                self._read_log(topic, self._horizon[topic], pending)
            for item_topic, first, carried in items:
                if item_topic != topic:
                    continue
                count = carried if isinstance(carried, int) else len(carried)
                if first + count <= self.cursors[topic]:
                    continue
                if first > self.cursors[topic]:  # written beside the feed (a direct append): the log has it
                    self._read_log(topic, first, pending)
                if isinstance(carried, int):
                    self._read_log(topic, first + count, pending)
                    continue
                for offset, event in enumerate(carried, start=first):
                    if offset < self.cursors[topic]:
                        continue
                    self.cursors[topic] = offset + 1
                    self.fed += 1
                    self._handle(event, pending, lambda e=event, o=offset: self._record(e, o))  # type: ignore[misc]
        self._tick(pending)
        self._out(pending)
        return self.produced - before

    def _tick(self, pending: list[Event]) -> None:
        if self.latest is None:
            return
        now = self._monotonic()
        if self._ticked_at is not None and now - self._ticked_at < self.tick_every_s:
            return
        self._ticked_at = now
        pending.extend(self.processor.tick(self.store, self.latest))

    def _record(self, event: Event, offset: int) -> LogRecord:
        """The log record of a fed event (for its dead letter)."""
        new = self.runtime.encode(event)
        return LogRecord(event.TOPIC, offset, new.key, new.value, new.headers, new.timestamp_ms)

    def _read_log(self, topic: str, stop: int | None, pending: list[Event]) -> None:
        """Handle the log's records of `topic` from the cursor up to `stop` (None: its end)."""
        start = self.cursors[topic]
        limit = None if stop is None else stop - start
        if limit is not None and limit <= 0:
            return
        for record in self.runtime.log.read(topic, start, limit):
            self.cursors[topic] = record.offset + 1
            try:
                event = self.runtime.decode(record)
            except DecodeError as exc:
                pending.append(dead_letter(self.processor.name, exc.reason, str(exc), record))
                continue
            self._handle(event, pending, lambda r=record: r)  # type: ignore[misc]
        if stop is not None:
            self.cursors[topic] = max(self.cursors[topic], stop)  # offsets moved to quarantine stay taken

    def _handle(self, event: Event, pending: list[Event], record: Callable[[], LogRecord]) -> None:
        if self.latest is None or event.received_time > self.latest:  # never a sender's clock
            self.latest = event.received_time
        try:
            pending.extend(self.processor.handle(self.store, event))
        except Exception as exc:  # the stream boundary: a poison event is dead-lettered
            detail = "".join(traceback.format_exception_only(exc)).strip()
            pending.append(dead_letter(self.processor.name, "PROCESSING_ERROR", detail, record()))
        if len(pending) >= BATCH:
            self._out(pending[:])
            pending.clear()

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
