"""Run a processor live beside the receiver on the embedded log: incremental, in the writer process.

`EmbeddedRuntime.run` drives processors to quiescence, opening and committing their checkpoints on each
call — right for batch runs, too much per second. `LiveProcessor` opens a stateful processor's checkpoint
once and keeps it open: it resumes from the checkpoint's offsets, then only reads new offsets, and commits
the store's changes with the offsets at most every `commit_every_s` (or once CHECKPOINT_EVERY keys
changed), always after the outputs they stand for are in the log. Between commits the checkpoint keeps
`state_budget` store keys in memory (the most recently changed); the rest of the state is on disk in the
checkpoint, so memory stays bounded whatever the join's horizon (docs/guides/live-join-state.md). With
checkpoints off (`EmbeddedRuntime(checkpoints=False)`) the store is a dict rebuilt from offset 0 on start.
It runs under the publisher's lock, because the embedded log has a single writer and request threads
publish concurrently. A poison event goes to the dead letters, like in EmbeddedRuntime.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from datetime import datetime

from producers.otlp.publishing import Committed, GroupCommitPublisher, LockedPublisher
from streams.checkpoints import STATE_BUDGET, Checkpoint, CheckpointCorrupt, set_aside
from streams.embedded import CHECKPOINT_EVERY, DecodeError, EmbeddedRuntime, dead_letter
from streams.embedded_log import LogRecord
from streams.events import Event
from streams.processors.base import Processor, Store

_log = logging.getLogger(__name__)
BATCH = 500  # outputs appended at once at most
COMMIT_EVERY_S = 1.0
# Events the feed holds in memory for a join that has not stepped yet. A join slower than the receiver
# would otherwise hold every event it is behind on; past this many, the feed only notes that the log
# has them, and the join reads them from there (decoding costs more than a handover, memory does not grow).
INBOX_BUDGET = 20_000
# The receiver holds a request's spans (producers/otlp/admission.py) while a join has this many events
# to handle: about a quarter of a second of its work, so an alert trails its verification by about that
# much (bench_soak, 10 minutes: 3,158 spans/s and alert p99 1.08 s with 1,000; 2,922 and 1.49 s with 2,000).
ADMIT_BELOW = 1_000


class LiveProcessor:
    def __init__(
        self,
        runtime: EmbeddedRuntime,
        processor: Processor,
        publisher: LockedPublisher,
        *,
        tick_every_s: float = 0.0,
        monotonic: Callable[[], float] = time.monotonic,
        state_budget: int = STATE_BUDGET,
        commit_every_s: float = COMMIT_EVERY_S,
        inbox_budget: int = INBOX_BUDGET,
        admit_below: int = ADMIT_BELOW,
    ) -> None:
        self.runtime = runtime
        # the timers (the join's horizon, minutes long) need not run on every step: a full pass over the
        # store 50 times a second is what a short --join-every would otherwise cost
        self.tick_every_s = tick_every_s
        self._monotonic = monotonic
        self._ticked_at: float | None = None
        self.processor = processor
        self.publisher = publisher
        self.state_budget = state_budget
        self.commit_every_s = commit_every_s
        self.checkpoint: Checkpoint | None = None
        self.store: Store = {}
        self.cursors = {topic: 0 for topic in processor.inputs}
        self.latest: datetime | None = None
        if processor.stateful and runtime.checkpoints:
            self._open_checkpoint()
        self._committed_at = monotonic()
        self.produced = 0
        self.fed = 0  # input events handed over in memory (not decoded from the log)
        self.inbox_budget = inbox_budget
        self.admit_below = admit_below
        self.spilled = 0  # fed events left to the log because the inbox was full
        self._inbox: list[Committed] = []
        self._inbox_events = 0  # events the inbox holds
        self._spilling = False  # the inbox filled up since the last step: only notes until the next one
        self._notes: dict[str, int] = {}  # topic -> its note's index in the inbox
        self._stepping = 0  # events taken from the inbox by the step under way
        self._inbox_lock = threading.Lock()  # the committer thread feeds, the stepping thread takes
        self._horizon: dict[str, int] | None = None  # with a group-commit publisher: where its feed starts
        if isinstance(publisher, GroupCommitPublisher):
            self._horizon = publisher.subscribe(processor.inputs, self._feed)

    def _feed(self, item: Committed) -> None:
        """The publisher's callback (on its committer thread): keep the events, or note where they are.

        Once the inbox is full, every later batch until the next step is only noted, one note per topic
        stretched over its offsets, so a join far behind holds a note per topic, not one per batch."""
        topic, first, carried = item
        with self._inbox_lock:
            if isinstance(carried, list):
                if self._spilling or self._inbox_events + len(carried) > self.inbox_budget:
                    self._spilling = True
                    self.spilled += len(carried)
                    at = self._notes.get(topic)
                    if at is not None:  # stretch the topic's note (it is the topic's last item)
                        noted_topic, noted_first, _ = self._inbox[at]
                        self._inbox[at] = (noted_topic, noted_first, first + len(carried) - noted_first)
                    else:
                        self._notes[topic] = len(self._inbox)
                        self._inbox.append((topic, first, len(carried)))
                    return
                self._inbox_events += len(carried)
            self._inbox.append(item)

    def _open_checkpoint(self) -> None:
        self.checkpoint = self.runtime.open_checkpoint(self.processor, budget=self.state_budget)
        self.store = self.checkpoint
        self.cursors = {t: self.checkpoint.offsets.get(t, 0) for t in self.processor.inputs}
        self.latest = self.checkpoint.clock

    def _rebuild(self, exc: CheckpointCorrupt) -> None:
        """A checkpoint row that fails its checks: set the file aside and start again from offset 0."""
        assert self.checkpoint is not None
        self.checkpoint.close()
        _log.warning("%s; rebuilding %s from offset 0 (the old file is kept as %s)", exc, self.processor.name,
                     set_aside(self.checkpoint.path))  # fmt: skip
        self._open_checkpoint()
        if self._horizon is not None:  # what was fed before now is in the log: read it from there
            with self.publisher.lock:
                log = self.runtime.log
                self._horizon = {t: log.end_offset(t) if t in log.topics() else 0 for t in self.processor.inputs}

    def _commit(self, force: bool = False) -> None:
        """Commit the store's changes with the offsets (the outputs they stand for are in the log)."""
        if self.checkpoint is None:
            return
        now = self._monotonic()
        if force or self.checkpoint.pending >= CHECKPOINT_EVERY or now - self._committed_at >= self.commit_every_s:
            self.checkpoint.commit(self.cursors, self.latest)
            self._committed_at = now

    def close(self) -> None:
        """Commit what was handled and close the checkpoint (a process that just stops resumes from the last
        commit: the events after it are handled again, their outputs deduplicated)."""
        if self.checkpoint is not None:
            self._commit(force=True)
            self.checkpoint.close()
            self.checkpoint = None

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
        try:
            return self._step()
        except CheckpointCorrupt as exc:
            if self.checkpoint is not None:
                self.checkpoint.discard()
            self._rebuild(exc)
            return self._step()

    def _step(self) -> int:
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
            self._commit()
        return self.produced - before

    def _step_fed(self) -> int:
        assert self._horizon is not None
        before = self.produced
        pending: list[Event] = []
        with self._inbox_lock:
            items, self._inbox = self._inbox, []
            self._stepping, self._inbox_events, self._spilling = self._inbox_events, 0, False
            self._notes.clear()
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
        self._commit()
        self._stepping = 0
        return self.produced - before

    @property
    def name(self) -> str:
        return self.processor.name

    def behind(self) -> bool:
        """`admit_below` events or more wait for this join, or some wait in the log only (the inbox filled)."""
        return self._spilling or self._inbox_events + self._stepping >= self.admit_below

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
        except CheckpointCorrupt:
            raise
        except Exception as exc:  # the stream boundary: a poison event is dead-lettered
            detail = "".join(traceback.format_exception_only(exc)).strip()
            pending.append(dead_letter(self.processor.name, "PROCESSING_ERROR", detail, record()))
        held = self.checkpoint.pending if self.checkpoint is not None else 0
        if len(pending) >= BATCH or held >= CHECKPOINT_EVERY:
            self._out(pending[:])
            pending.clear()
            if held >= CHECKPOINT_EVERY:  # a long step (a rebuild) commits as it goes: memory stays bounded
                self._commit(force=True)

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
