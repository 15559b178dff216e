"""Processor state stays bounded: the outcome join closes entries one horizon after their last event and
evicts them one retention later (one-sided ones reported first), finds them through its time index without
reading the store, and ignores duplicates that arrive after eviction; the grader keeps a bounded FIFO of
"done" markers. Processors are called directly, with no dedupe by event id in between (as on Kafka)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agenttwin.pipeline import evaluation_request
from producers.sdk.outcome import outcome_event
from streams.events import (
    CaseFinished,
    CasePlanned,
    CaseVerdicted,
    ContradictionDetected,
    Event,
    OutcomeVerified,
    SpanRecorded,
    TwinCallRecorded,
)
from streams.processors import Grader, Planner, Simulator
from streams.processors._expiry import INDEX_PREFIX, TimeIndex
from streams.processors.outcome_join import OutcomeJoin
from tests.claim_spans import agent_claim_span

VERSION = "1.1.0"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HORIZON = timedelta(minutes=5)


def _trace(n: int) -> str:
    return f"{n + 1:032x}"  # never all zero


def _claim(n: int, at: datetime, status: str = "success", tenant: str = "acme") -> SpanRecorded:
    return agent_claim_span(_trace(n), at, event_id=f"claim-{tenant}-{n}", status=status, tenant=tenant)


def _verified(n: int, at: datetime, status: str = "FAILURE", version: str = "system-of-record") -> OutcomeVerified:
    return outcome_event(
        _trace(n), status, True, "external_callback", "2 refunds", tenant="acme", at=at, verifier_version=version
    )


def _entries(store: dict[str, Any]) -> list[str]:
    return [k for k in store if not k.startswith(INDEX_PREFIX)]


def _alerts(out: list[Event]) -> list[tuple[str, str]]:
    return [(a.trace_id, a.kind) for a in out if isinstance(a, ContradictionDetected)]


def test_the_join_store_stays_flat_over_a_long_run_and_every_alert_comes_once() -> None:
    join = OutcomeJoin(horizon=HORIZON)  # retention defaults to the horizon
    store: dict[str, Any] = {}
    sizes: dict[int, int] = {}
    alerts: list[tuple[str, str]] = []
    for n in range(3000):  # one complete trace a second for 50 minutes: a claim, then its disproof 2 s later
        at = T0 + timedelta(seconds=n)
        alerts += _alerts(join.handle(store, _claim(n, at)))
        alerts += _alerts(join.handle(store, _verified(n, at + timedelta(seconds=2))))
        if n % 10 == 9:
            alerts += _alerts(join.tick(store, at + timedelta(seconds=2)))
        if n in (1000, 2999):
            sizes[n] = len(store)
    assert sorted(alerts) == sorted((_trace(n), "contradiction") for n in range(3000))
    # live entries span horizon + retention = 600 s: ~600 traces, each with at most a couple of index items
    per_window = 600
    assert len(_entries(store)) <= per_window + 20
    assert sizes[2999] <= 3 * per_window + 300
    assert abs(sizes[2999] - sizes[1000]) <= 0.05 * sizes[1000]  # flat, not growing with the 2,000 traces between


class _Watched(dict[str, Any]):
    """A store that counts reads of entity keys and refuses to be scanned."""

    def __init__(self) -> None:
        super().__init__()
        self.entity_reads = 0

    def get(self, key: str, default: Any = None) -> Any:
        if not key.startswith(INDEX_PREFIX):
            self.entity_reads += 1
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        if not key.startswith(INDEX_PREFIX):
            self.entity_reads += 1
        return super().__getitem__(key)

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("the timer scanned the store")

    def items(self) -> Any:
        raise AssertionError("the timer scanned the store")

    def values(self) -> Any:
        raise AssertionError("the timer scanned the store")


def test_the_timer_reads_only_due_entries_through_its_index() -> None:
    join = OutcomeJoin(horizon=timedelta(hours=1))
    store = _Watched()
    store[f"{INDEX_PREFIX}indexed"] = 1  # a store built by this code (no one-off migration of older entries)
    for n in range(5000):
        join.handle(store, _claim(n, T0 + timedelta(seconds=n % 60)))
    store.entity_reads = 0
    assert join.tick(store, T0 + timedelta(minutes=30)) == []  # nothing due: no entry is even looked at
    assert store.entity_reads == 0
    due = join.tick(store, T0 + timedelta(hours=1, seconds=9))  # the claims of seconds 0..9 are due
    assert sorted(_alerts(due)) == sorted((_trace(n), "claim_never_verified") for n in range(5000) if n % 60 <= 9)
    # each due entry is read a few times (index check, report, close); nothing else is
    assert store.entity_reads <= 4 * len(due) + 4 * 5000 // 120


def test_one_sided_entries_are_reported_before_they_are_evicted() -> None:
    join = OutcomeJoin(horizon=HORIZON, retention=HORIZON)
    store: dict[str, Any] = {}
    assert _alerts(join.handle(store, _claim(1, T0))) == []
    assert join.handle(store, _verified(2, T0)) == []
    assert join.tick(store, T0 + HORIZON - timedelta(seconds=1)) == []
    reported = _alerts(join.tick(store, T0 + HORIZON))
    assert sorted(reported) == [(_trace(1), "claim_never_verified"), (_trace(2), "verification_without_claim")]
    assert len(_entries(store)) == 2  # closed, kept for the retention
    assert join.tick(store, T0 + 2 * HORIZON) == []
    assert _entries(store) == []  # evicted (deleted: a tombstone on Kafka)


def test_a_late_verification_within_the_retention_is_still_compared_with_the_claim() -> None:
    join = OutcomeJoin(horizon=HORIZON)
    store: dict[str, Any] = {}
    join.handle(store, _claim(1, T0))
    assert _alerts(join.tick(store, T0 + HORIZON)) == [(_trace(1), "claim_never_verified")]
    late = join.handle(store, _verified(1, T0 + HORIZON + timedelta(minutes=1)))
    assert _alerts(late) == [(_trace(1), "contradiction")]


def test_duplicates_after_closing_and_after_eviction_change_nothing() -> None:
    join = OutcomeJoin(horizon=HORIZON)
    store: dict[str, Any] = {}
    events: list[Event] = []
    for n in range(20):  # disproved claims, lonely claims and lonely verifications
        at = T0 + timedelta(seconds=n)
        if n % 3 != 2:
            events.append(_claim(n, at))
        if n % 3 != 1:
            events.append(_verified(n, at + timedelta(seconds=1)))
    first: list[Event] = []
    for e in events:
        first += join.handle(store, e)
    first += join.tick(store, T0 + HORIZON + timedelta(minutes=1))  # all closed
    assert len(_alerts(first)) == 20  # one alert per trace, of one kind or another
    for e in events:  # redelivered while closed
        assert join.handle(store, e) == []
    assert join.tick(store, T0 + HORIZON + timedelta(minutes=2)) == []
    assert join.tick(store, T0 + 3 * HORIZON) == []  # evicted
    assert _entries(store) == []
    for e in events:  # redelivered after eviction: they must neither reopen anything nor alert again
        assert join.handle(store, e) == []
    assert _entries(store) == []
    assert join.tick(store, T0 + 10 * HORIZON) == []


def test_a_new_trace_after_eviction_is_joined_as_usual() -> None:
    join = OutcomeJoin(horizon=HORIZON)
    store: dict[str, Any] = {}
    join.handle(store, _claim(1, T0))
    join.tick(store, T0 + 3 * HORIZON)
    later = T0 + 3 * HORIZON + timedelta(seconds=1)
    join.handle(store, _claim(2, later))
    assert _alerts(join.handle(store, _verified(2, later))) == [(_trace(2), "contradiction")]


def test_a_tenant_that_would_collide_with_the_index_is_refused() -> None:
    with pytest.raises(ValueError, match="reserved"):
        OutcomeJoin().handle({}, _claim(1, T0, tenant="\x00due"))


@pytest.fixture(scope="module")
def simulated() -> list[Event]:
    """Every case and twin-call event of one demo evaluation (18 cases)."""
    request = evaluation_request(
        "demo:1.2.4", "demo:1.3.0", suite=["demo"], twin=None, seed=42, evaluation_id=None, evaluator_version=VERSION
    )
    plans = [e for e in Planner().handle({}, request) if isinstance(e, CasePlanned)]
    simulator = Simulator()
    return [o for p in plans for o in simulator.handle({}, p) if isinstance(o, CaseFinished | TwinCallRecorded)]


def test_the_grader_keeps_a_bounded_fifo_of_done_markers(simulated: list[Event]) -> None:
    grader, store = Grader(VERSION, done_markers=4), dict[str, Any]()
    cases: dict[str, list[Event]] = {}
    for e in simulated:
        cases.setdefault(e.correlation_id, []).append(e)
    verdicts, previous = 0, None
    for events in cases.values():
        verdicts += sum(isinstance(o, CaseVerdicted) for e in events for o in grader.handle(store, e))
        if previous is not None:  # the previous case redelivered whole: its marker is still there
            assert [o for e in previous for o in grader.handle(store, e)] == []
        previous = events
    assert verdicts == len(cases) == 18
    assert len(_entries(store)) == 4  # the last four cases' markers; the others were evicted
    assert len(store) == 4 + 4 + 1  # markers, their FIFO items, the FIFO's head and tail


def test_the_time_index_keeps_what_is_not_due_and_drops_what_moved() -> None:
    index = TimeIndex("t", timedelta(seconds=10))
    store: dict[str, Any] = {}
    due = {"a": T0, "b": T0 + timedelta(seconds=5), "c": T0 + timedelta(seconds=25)}
    for key, at in due.items():
        index.add(store, key, at)
    seen: list[str] = []
    index.expire(store, T0 + timedelta(seconds=1), due.get, seen.append)
    assert seen == ["a"]
    due["b"] = T0 + timedelta(seconds=40)  # moved on: its old item is stale
    index.add(store, "b", due["b"])
    index.expire(store, T0 + timedelta(seconds=30), due.get, seen.append)
    assert seen == ["a", "c"]
    index.expire(store, T0 + timedelta(seconds=40), due.get, seen.append)
    assert seen == ["a", "c", "b"]
    assert store == {}  # every bucket drained
