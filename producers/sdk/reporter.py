"""Report verified outcomes without ever blocking or failing the caller.

`report_outcome` builds the event — on a trace, or with `subject=` on a business subject such as
`order:ORD-1001` — and puts it on a bounded queue (never waits): a full queue is a counted drop. One
background thread publishes queued events in batches through the Publisher (the log, Kafka, or the
receiver's HTTP endpoint: producers/sdk/http_outcomes.py), retrying a failed batch a few times before
counting it as failed. `guarded` is the one place the SDK swallows
exceptions; each is counted in `stats()` with its last message, never silently dropped.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TypedDict, TypeVar

from producers.sdk.outcome import SYSTEM_OF_RECORD, Evidence, outcome_event, subject_outcome_event
from streams.clock import wall_clock
from streams.events import OutcomeVerified, SubjectVerified
from streams.publisher import Publisher

T = TypeVar("T")
Verification = OutcomeVerified | SubjectVerified
Clock = Callable[[], datetime]
Sleep = Callable[[float], None]
DEFAULT_QUEUE_SIZE = 1000
DEFAULT_BATCH_SIZE = 100
DEFAULT_ATTEMPTS = 3
_log = logging.getLogger(__name__)


class _Stamps(TypedDict):
    """What the reporter adds to every verification it builds, by trace or by subject."""

    at: datetime
    received_at: datetime
    business_outcome: str | None
    tenant: str


@dataclass(frozen=True)
class SdkStats:
    queued: int = 0  # accepted onto the queue
    sent: int = 0  # published (durable)
    dropped: int = 0  # queue full, or reported after close
    failed: int = 0  # publishing gave up after its attempts
    errors: int = 0  # exceptions swallowed at the SDK boundary (includes failed publish attempts)
    last_error: str | None = None


class Counters:
    """Thread-safe SdkStats."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stats = SdkStats()

    def add(self, **deltas: int) -> None:
        with self._lock:
            values = {k: getattr(self._stats, k) + v for k, v in deltas.items()}
            self._stats = replace(self._stats, **values)

    def error(self, exc: BaseException) -> None:
        with self._lock:
            self._stats = replace(self._stats, errors=self._stats.errors + 1, last_error=f"{type(exc).__name__}: {exc}")

    def snapshot(self) -> SdkStats:
        with self._lock:
            return self._stats


def guarded(counters: Counters, fn: Callable[[], T], default: T) -> T:
    """The SDK boundary: instrumentation must never raise into the agent."""
    try:
        return fn()
    except Exception as exc:  # counted and logged, never swallowed silently
        counters.error(exc)
        _log.debug("agenttwin sdk error", exc_info=True)
        return default


class OutcomeReporter:
    def __init__(
        self,
        publisher: Publisher,
        *,
        max_queue: int = DEFAULT_QUEUE_SIZE,
        batch_size: int = DEFAULT_BATCH_SIZE,
        attempts: int = DEFAULT_ATTEMPTS,
        tenant: str,
        verifier_version: str = SYSTEM_OF_RECORD,
        clock: Clock = wall_clock,
        sleep: Sleep = time.sleep,
        retry_delay_s: float = 0.2,
    ) -> None:
        self.publisher = publisher
        if not tenant or not tenant.strip():
            raise ValueError("OutcomeReporter needs the tenant whose traces it verifies (tenant=...)")
        self.tenant = tenant  # a verification matches only the claims of this tenant
        self.verifier_version = verifier_version
        self._clock, self._sleep, self._retry_delay = clock, sleep, retry_delay_s
        self._batch_size, self._attempts = max(1, batch_size), max(1, attempts)
        self._queue: queue.Queue[Verification | None] = queue.Queue(maxsize=max(1, max_queue))
        self._counters = Counters()
        self._idle = threading.Condition()
        self._pending = 0
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="agenttwin-outcomes", daemon=True)
        self._thread.start()

    def report_outcome(
        self,
        trace_id: str | None,
        status: str,
        verified: bool,
        source: str,
        evidence: Evidence = None,
        *,
        subject: str | None = None,
        business_outcome: str | None = None,
        claimed_status: str | None = None,
        agent: str | None = None,
        agent_version: str | None = None,
        at: datetime | None = None,
    ) -> bool:
        """Queue a verified outcome for publishing; True if queued. Never blocks, never raises.

        Name the work by `trace_id`, or pass `trace_id=None` and `subject="order:ORD-1001"`: the subject join
        then matches it to the tenant's traces that acted on that subject within the horizon."""

        def build() -> Verification:
            now = self._clock()  # the receive time: `at` is what the caller says, flagged beyond the skew
            reported = (status, verified, source, evidence)
            stamps = _Stamps(at=at or now, received_at=now, business_outcome=business_outcome, tenant=self.tenant)
            if trace_id is None:
                if subject is None:
                    raise ValueError("report_outcome needs a trace id or a subject")
                return subject_outcome_event(subject, *reported, **stamps, verifier_version=self.verifier_version)
            return outcome_event(
                trace_id,
                *reported,
                **stamps,
                claimed_status=claimed_status,
                agent=agent,
                agent_version=agent_version,
                verifier_version=self.verifier_version,
            )

        event = guarded(self._counters, build, None)
        if event is None:
            return False
        return self._offer(event)

    def _offer(self, event: Verification) -> bool:
        with self._idle:
            if self._closed:
                self._counters.add(dropped=1)
                return False
            try:
                self._queue.put_nowait(event)
            except queue.Full:
                self._counters.add(dropped=1)
                return False
            self._pending += 1
        self._counters.add(queued=1)
        return True

    def stats(self) -> SdkStats:
        return self._counters.snapshot()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything queued so far was sent or given up on; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def close(self, timeout: float = 5.0) -> bool:
        """Flush, then stop the sender. Later reports count as dropped."""
        done = self.flush(timeout)
        with self._idle:
            self._closed = True
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return False
        self._thread.join(timeout)
        return done and not self._thread.is_alive()

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            stop = False
            while len(batch) < self._batch_size:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                batch.append(item)
            self._send(batch)
            with self._idle:
                self._pending -= len(batch)
                self._idle.notify_all()
            if stop:
                return

    def _send(self, batch: list[Verification]) -> None:
        for attempt in range(1, self._attempts + 1):
            if guarded(self._counters, lambda: self.publisher.publish(batch) >= 0, False):
                self._counters.add(sent=len(batch))
                return
            if attempt < self._attempts:
                self._sleep(self._retry_delay * 2 ** (attempt - 1))
        self._counters.add(failed=len(batch))
