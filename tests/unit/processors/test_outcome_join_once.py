"""OutcomeJoin.handle and tick called directly, with NO deduplication by event id in between (unlike the
runtimes): every alert still comes out exactly once per (tenant, trace, evaluator version, kind), in any
arrival order, with any event delivered any number of times."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from producers.otlp.mapping import map_request
from producers.sdk.outcome import outcome_event
from streams.events import ClaimRead, ContradictionDetected, Event
from streams.processors.outcome_join import OutcomeJoin
from tests.unit.traces.conftest import TRACE, agent_trace, request, span

RECEIVED = datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC)
LATER = RECEIVED + timedelta(minutes=2)
LONELY = bytes.fromhex("5eed5eed5eed5eed5eed5eed5eed5eed")


def _events() -> list[Event]:
    trace = TRACE.hex()
    beta_claims = map_request(agent_trace(), "beta", received_at=RECEIVED).events  # SUCCESS after refund_payment
    # acme, on the same trace id: its own claim and verification, which must never meet beta's
    acme_claim = map_request(
        request(span(attrs={"agenttwin.outcome.claimed": "FAILURE"})), "acme", received_at=RECEIVED
    ).events
    lonely_claim = map_request(
        request(span(trace_id=LONELY, attrs={"agenttwin.outcome.claimed": "SUCCESS"})), "beta", received_at=RECEIVED
    ).events
    verifications = [
        outcome_event(trace, "FAILURE", True, "external_callback", "2 refunds", tenant="beta", at=LATER),
        # a corrected report for the same version: a new event, still one alert for the version
        outcome_event(trace, "PARTIAL", True, "external_callback", "1.5 refunds", tenant="beta", at=LATER),
        outcome_event(
            trace, "FAILURE", True, "tool_twin_state", "count 2", tenant="beta", at=LATER, verifier_version="1.1.0"
        ),
        outcome_event(trace, "FAILURE", True, "external_callback", "acme's own", tenant="acme", at=LATER),
    ]
    return [*beta_claims, *acme_claim, *lonely_claim, *verifications]


def _run(events: list[Event], ticks: int) -> Counter[tuple[str | None, str, str]]:
    join, store = OutcomeJoin(horizon=timedelta(minutes=30)), {}
    out: list[Event] = []
    for e in events:
        out += join.handle(store, e)
    for _ in range(ticks):
        out += join.tick(store, LATER + timedelta(hours=2))
    assert all(isinstance(a, ContradictionDetected | ClaimRead) for a in out)  # ClaimRead: production traces
    return Counter((a.tenant, a.evaluator_version, a.kind) for a in out if isinstance(a, ContradictionDetected))


EXPECTED = Counter(
    {
        ("beta", "system-of-record", "contradiction"): 1,
        ("beta", "1.1.0", "contradiction"): 1,
        ("beta", "*", "claim_never_verified"): 1,  # the lonely claim, once however often the timer fires
    }
)


def test_in_order_each_alert_once() -> None:
    assert _run(_events(), ticks=1) == EXPECTED


def test_everything_twice_and_reversed_each_alert_once() -> None:
    events = _events()
    assert _run(events + events, ticks=3) == EXPECTED
    assert _run(list(reversed(events)) + events, ticks=2) == EXPECTED


@settings(max_examples=40, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(min_value=0, max_value=8), st.integers(min_value=1, max_value=3))
def test_any_order_any_redelivery_each_alert_once(rnd: random.Random, dupes: int, ticks: int) -> None:
    events = _events()
    shuffled = events + [rnd.choice(events) for _ in range(dupes)]
    rnd.shuffle(shuffled)
    assert _run(shuffled, ticks) == EXPECTED
