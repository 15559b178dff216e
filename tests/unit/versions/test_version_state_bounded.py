"""The version tally's and the version watch's stores stay bounded over a long run (a trace and a window row are
dropped a retention after their last change) and what they emit is the same as with nothing dropped.
Processors are called directly, ticked every minute of event time, with no dedupe in between (as on Kafka)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from producers.production_traffic import canary_events
from streams.events import Event, TraceTallied, VersionRegressed
from streams.processors import OutcomeJoin, VersionTally, VersionWatch
from streams.processors._expiry import INDEX_PREFIX

T0 = datetime(2026, 6, 1, 0, 0, tzinfo=UTC)
HORIZON = timedelta(minutes=5)
CUSTOMERS = 2400  # one every 10 s: almost 7 hours


def _entries(store: dict[str, Any]) -> int:
    return sum(1 for k in store if not k.startswith(INDEX_PREFIX))


def _run(events: list[Event], retention: timedelta) -> tuple[list[Event], int, int]:
    """What the watch emits, and the most entries the tally's and the watch's stores held at once."""
    join, tally, watch = OutcomeJoin(horizon=HORIZON), VersionTally(retention), VersionWatch(retention=retention)
    joined: dict[str, Any] = {}
    tallied: dict[str, Any] = {}
    watched: dict[str, Any] = {}
    out: list[Event] = []
    most = [0, 0]

    def to_watch(tallies: list[Event]) -> None:
        for t in tallies:
            assert isinstance(t, TraceTallied)
            out.extend(watch.handle(watched, t))

    def to_tally(events: list[Event]) -> None:
        for e in events:
            to_watch(tally.handle(tallied, e))

    next_tick = T0
    for e in events:
        now = e.received_time
        if now >= next_tick:
            to_tally(join.tick(joined, now))
            to_watch(tally.tick(tallied, now))
            out.extend(watch.tick(watched, now))
            next_tick = now + timedelta(minutes=1)
            most = [max(most[0], _entries(tallied)), max(most[1], _entries(watched))]
        to_tally([e, *join.handle(joined, e)])
    return out, most[0], most[1]


def test_the_version_stores_stay_flat_and_emit_what_an_unbounded_run_emits() -> None:
    events = list(canary_events(CUSTOMERS, "1.3.0", seed=7, start=T0, every=timedelta(seconds=10)))
    bounded, tally_most, watch_most = _run(events, timedelta(minutes=30))
    unbounded, tally_all, watch_all = _run(events, timedelta(days=100))
    print(f"tally {tally_most} vs {tally_all}, watch {watch_most} vs {watch_all} entries at most")
    assert bounded == unbounded
    assert any(isinstance(e, VersionRegressed) for e in bounded)
    # 30 minutes of traces at one per 10 s is 180; the time index's buckets add a little
    assert tally_all > 0.95 * CUSTOMERS and tally_most < 300
    assert watch_all > 0.95 * CUSTOMERS and watch_most < 400  # traces plus a window row per minute and version
