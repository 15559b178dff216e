"""report_outcome: normalization into OutcomeVerified, the bounded queue, and the never-raise boundary."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import UTC, datetime

import pytest

from producers.sdk import OutcomeReporter
from producers.sdk.outcome import SYSTEM_OF_RECORD, normalize_source, normalize_status, outcome_event
from streams.embedded import EmbeddedRuntime
from streams.events import Event, OutcomeVerified

TRACE = "0af7651916cd43dd8448eb211c80319c"
AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("success", "SUCCESS"),
        (" Failure ", "FAILURE"),
        ("PARTIAL", "PARTIAL"),
        ("ESCALATED", "UNKNOWN"),
        ("", "UNKNOWN"),
        (None, "UNKNOWN"),
    ],
)
def test_statuses_are_normalized(given: str | None, expected: str) -> None:
    assert normalize_status(given) == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("external_callback", "external_callback"),
        ("Human_Review", "human_review"),
        ("crm", "unavailable"),
        (None, "unavailable"),
    ],
)
def test_sources_are_normalized(given: str | None, expected: str) -> None:
    assert normalize_source(given) == expected


def test_an_unknown_source_forces_unverified() -> None:
    event = outcome_event(TRACE.upper(), "failure", True, "my-crm", {"refund_count": 2}, tenant="acme", at=AT)
    assert (event.status, event.source, event.verified) == ("FAILURE", "unavailable", False)
    assert event.trace_id == TRACE and event.reason == '{"refund_count":2}'
    assert event.evaluator_version == SYSTEM_OF_RECORD and event.occurred_at == AT


def test_event_ids_dedupe_repeats_but_not_corrections() -> None:
    a = outcome_event(TRACE, "FAILURE", True, "tool_result", "two refunds", tenant="acme", at=AT)
    again = outcome_event(
        TRACE, "failure", True, "tool_result", "two refunds", tenant="acme", at=datetime(2027, 1, 1, tzinfo=UTC)
    )
    corrected = outcome_event(TRACE, "SUCCESS", True, "tool_result", "one refund", tenant="acme", at=AT)
    assert a.event_id == again.event_id != corrected.event_id


def test_reports_are_published_to_the_log(runtime: EmbeddedRuntime) -> None:
    reporter = OutcomeReporter(runtime, tenant="acme", clock=lambda: AT)
    assert reporter.report_outcome(
        TRACE,
        "FAILURE",
        True,
        "external_callback",
        "order shows refund_count: 2",
        business_outcome="x" * 300,
        claimed_status="success",
        agent="refund-agent",
    )
    assert reporter.close()
    (event,) = runtime.read_events("verified-outcomes")
    assert isinstance(event, OutcomeVerified)
    assert (event.tenant, event.status, event.verified, event.claimed_status) == ("acme", "FAILURE", True, "SUCCESS")
    assert event.business_outcome == "x" * 200 and event.agent == "refund-agent"
    assert reporter.stats().sent == 1 and reporter.stats().dropped == 0
    assert reporter.report_outcome(TRACE, "FAILURE", True, "tool_result") is False  # after close: dropped
    assert reporter.stats().dropped == 1


class _Gate:
    """A publisher that blocks until released (a slow broker), then records what it got."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.got: list[Event] = []

    def publish(self, events: Iterable[Event]) -> int:
        self.entered.set()
        self.release.wait(10)
        batch = list(events)
        self.got.extend(batch)
        return len(batch)


def test_a_full_queue_drops_and_counts_without_blocking() -> None:
    gate = _Gate()
    reporter = OutcomeReporter(gate, tenant="acme", max_queue=3, batch_size=1, clock=lambda: AT)
    assert reporter.report_outcome(TRACE, "FAILURE", True, "tool_result", "first")
    assert gate.entered.wait(5)  # the sender holds the first one inside publish
    results = [reporter.report_outcome(TRACE, "FAILURE", True, "tool_result", f"r{n}") for n in range(10)]
    assert results == [True] * 3 + [False] * 7
    stats = reporter.stats()
    assert (stats.queued, stats.dropped, stats.sent) == (4, 7, 0)
    gate.release.set()
    assert reporter.close()
    assert reporter.stats().sent == 4 and len(gate.got) == 4


class _Failing:
    def __init__(self, failures: int) -> None:
        self.failures, self.calls = failures, 0

    def publish(self, events: Iterable[Event]) -> int:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError("broker down")
        return len(list(events))


def test_publish_failures_are_retried_then_counted_never_raised() -> None:
    sleeps: list[float] = []
    flaky = _Failing(failures=1)
    reporter = OutcomeReporter(flaky, tenant="acme", attempts=3, sleep=sleeps.append, clock=lambda: AT)
    assert reporter.report_outcome(TRACE, "FAILURE", True, "tool_result")
    assert reporter.flush()
    assert reporter.stats().sent == 1 and reporter.stats().errors == 1 and sleeps == [0.2]
    down = _Failing(failures=99)
    dead = OutcomeReporter(down, tenant="acme", attempts=3, sleep=sleeps.append, clock=lambda: AT)
    assert dead.report_outcome(TRACE, "FAILURE", True, "tool_result")
    assert dead.close()
    stats = dead.stats()
    assert (stats.failed, stats.errors, stats.sent) == (1, 3, 0)
    assert stats.last_error == "ConnectionError: broker down"
    reporter.close()


def test_a_malformed_trace_id_is_counted_not_raised(runtime: EmbeddedRuntime) -> None:
    reporter = OutcomeReporter(runtime, tenant="acme", clock=lambda: AT)
    assert reporter.report_outcome("not-a-trace", "FAILURE", True, "tool_result") is False
    assert reporter.report_outcome("0" * 32, "FAILURE", True, "tool_result") is False
    assert reporter.stats().errors == 2 and "ValueError" in (reporter.stats().last_error or "")
    reporter.close()
