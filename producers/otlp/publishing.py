"""One Publisher shared by several threads (the receiver's request threads, an SDK reporter's sender, the
live joins beside the receiver).

`SerializedPublisher` wraps any Publisher (Kafka's) with a lock. `GroupCommitPublisher` is the embedded
log's: callers queue their batches and wait; one committer thread appends every queued batch (each
still whole, one block per topic) under the lock, releases it, fsyncs each touched topic once, and only
then wakes the callers — so batches that arrive while the disk works share the next fsync, a caller
returns (a request is answered 200) only after the fsync that covers its batch, and the lock is never
held across an fsync. After each fsync the committed events go to the subscribers (the live joins) in
memory, in offset order, so a join never decodes back what the receiver just encoded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from streams.embedded import EmbeddedRuntime
from streams.events import Event
from streams.publisher import Publisher

# What a subscriber gets: (topic, first offset, the events at first.. in order) — or (topic, first, n)
# when the records at first..first+n-1 must be read from the log (a batch the log partly held already).
Committed = tuple[str, int, list[Event] | int]


class OwnedLock:
    """A re-entrant lock that can tell whether the calling thread holds it (and whether anyone does)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._owner: int | None = None
        self._depth = 0

    def acquire(self) -> None:
        self._lock.acquire()
        self._owner = threading.get_ident()
        self._depth += 1

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._owner = None
        self._lock.release()

    def __enter__(self) -> OwnedLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def held(self) -> bool:
        """The calling thread holds it."""
        return self._owner == threading.get_ident()

    def locked(self) -> bool:
        return self._owner is not None


class LockedPublisher(Protocol):
    """A Publisher callable from many threads, with the lock other writers of the same log take."""

    @property
    def lock(self) -> threading.RLock | OwnedLock: ...

    def publish(self, events: Iterable[Event]) -> int: ...


class SerializedPublisher:
    """Publishes under a lock: the embedded log has one writer, and each batch stays whole on a topic."""

    def __init__(self, inner: Publisher) -> None:
        self.inner = inner
        self.lock = threading.RLock()  # also held by whoever else writes the same log (LiveProcessor)

    def publish(self, events: Iterable[Event]) -> int:
        batch = list(events)
        with self.lock:
            return self.inner.publish(batch)


class ConcurrentPublisher:
    """A Publisher already safe to call from many threads at once (KafkaPublisher: each call waits for its
    own acks), so requests wait for their acks side by side instead of one after another under a lock.
    The lock is there for the LockedPublisher interface; publishing never takes it."""

    def __init__(self, inner: Publisher) -> None:
        self.inner = inner
        self.lock = threading.RLock()

    def publish(self, events: Iterable[Event]) -> int:
        return self.inner.publish(list(events))


@dataclass
class _Batch:
    events: list[Event]
    done: threading.Event = field(default_factory=threading.Event)
    written: int = 0
    error: BaseException | None = None


class GroupCommitPublisher:
    """Group commit onto the embedded log (see the module docstring). `linger_s` > 0 waits that long after
    the first queued batch before committing, to gather more per fsync; 0 relies on the batches that queue
    while the previous fsync runs. Close it before the runtime."""

    def __init__(self, runtime: EmbeddedRuntime, *, linger_s: float = 0.0) -> None:
        self.runtime = runtime
        self.linger_s = linger_s
        self.lock = OwnedLock()  # held while appending, never across an fsync; other writers take it too
        self.groups = 0  # commits (one fsync per touched topic each)
        self._cond = threading.Condition()
        self._queue: list[_Batch] = []
        self._closed = False
        self._subscribers: list[tuple[frozenset[str], Callable[[Committed], None]]] = []
        self._thread = threading.Thread(target=self._run, name="agenttwin-group-commit", daemon=True)
        self._thread.start()

    def publish(self, events: Iterable[Event]) -> int:
        """Append the events (skipping those the log holds); returns once they are durable."""
        batch = _Batch(list(events))
        if not batch.events:
            return 0
        if self.lock.held():  # a writer already inside the lock would wait for itself: append directly
            return self.runtime.publish(batch.events)
        with self._cond:
            if self._closed:
                raise RuntimeError("the group-commit publisher is closed")
            self._queue.append(batch)
            self._cond.notify()
        batch.done.wait()
        if batch.error is not None:
            raise batch.error
        return batch.written

    def queued(self) -> int:
        with self._cond:
            return len(self._queue)

    def subscribe(self, topics: Collection[str], callback: Callable[[Committed], None]) -> dict[str, int]:
        """Hand `callback` every batch committed on `topics` from now on (on the committer thread: it must
        not block). Returns each topic's end offset at subscription: records before it are the log's."""
        with self.lock:
            self._subscribers.append((frozenset(topics), callback))
            log = self.runtime.log
            return {t: log.end_offset(t) if t in log.topics() else 0 for t in topics}

    def close(self) -> None:
        """Commit what is queued, then stop the committer."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join()

    def __enter__(self) -> GroupCommitPublisher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
            if self.linger_s > 0:
                time.sleep(self.linger_s)
            self._commit()

    def _commit(self) -> None:
        log = self.runtime.log
        committed: list[Committed] = []
        batches: list[_Batch] = []
        try:
            with self.lock:
                with self._cond:
                    batches, self._queue = self._queue, []
                with log.deferred_sync() as touched:
                    for batch in batches:
                        try:
                            committed += self._append(batch)
                        except Exception as exc:  # the batch's caller gets it; the others go on
                            batch.error = exc
            try:
                log.sync(touched)
            except Exception as exc:  # not durable: every caller of this group hears it (answers 503)
                for batch in batches:
                    batch.error = batch.error or exc
                committed = []
            self.groups += 1
            for item in committed:  # before waking the callers: a join stepped right after sees its inputs
                for topics, callback in self._subscribers:
                    if item[0] in topics:
                        callback(item)
        except BaseException as exc:  # never leave a caller waiting
            for batch in batches:
                batch.error = batch.error or exc
            raise
        finally:
            for batch in batches:
                batch.done.set()

    def _append(self, batch: _Batch) -> list[Committed]:
        log = self.runtime.log
        by_topic: dict[str, list[Event]] = {}
        for event in batch.events:
            by_topic.setdefault(event.TOPIC, []).append(event)
        wanted = {t for topics, _ in self._subscribers for t in topics}
        before = {t: log.end_offset(t) for t in by_topic if t in wanted}
        batch.written = self.runtime.publish(batch.events)
        out: list[Committed] = []
        for topic, first in before.items():
            appended = log.end_offset(topic) - first
            if appended == len(by_topic[topic]):
                out.append((topic, first, by_topic[topic]))
            elif appended:  # some events were there already: which ones only the log knows
                out.append((topic, first, appended))
        return out


def serialized(publisher: Publisher) -> LockedPublisher:
    if isinstance(publisher, SerializedPublisher | GroupCommitPublisher | ConcurrentPublisher):
        return publisher
    return SerializedPublisher(publisher)
