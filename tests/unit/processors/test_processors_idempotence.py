"""Processors are pure steps: any interleaving of their inputs, and any redelivery, gives the same outputs."""

from __future__ import annotations

import dataclasses
import random
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agenttwin.pipeline import evaluation_request
from streams.events import (
    CaseFinished,
    CasePlanned,
    CaseVerdicted,
    ContradictionDetected,
    Event,
    OutcomeVerified,
    PairPlanned,
    SpanRecorded,
    TwinCallRecorded,
)
from streams.processors import Comparator, Grader, OutcomeJoin, Planner, Processor, Simulator
from streams.processors.planner import PairConflictError

VERSION = "1.1.0"


def _feed(processor: Processor, events: list[Event]) -> dict[str, Event]:
    store: dict[str, object] = {}
    out: dict[str, Event] = {}
    for e in events:
        for o in processor.handle(store, e):
            out.setdefault(o.event_id, o)
    return out


@pytest.fixture(scope="module")
def timeout_pair() -> dict[str, list[Event]]:
    """Every event of the timeout story, 1.2.4 (baseline) vs 1.3.0 (candidate), by stage."""
    request = evaluation_request(
        "demo:1.2.4", "demo:1.3.0", suite=["demo"], twin=None, seed=42, evaluation_id=None, evaluator_version=VERSION
    )
    planned = Planner().handle({}, request)
    plans = [e for e in planned if isinstance(e, CasePlanned) and e.scenario_name == "refund-timeout-after-mutation"]
    sim = Simulator()
    simulated = [o for p in plans for o in sim.handle({}, p)]
    graded = list(_feed(Grader(VERSION), simulated).values())
    return {"request": [request], "planned": planned, "simulated": simulated, "graded": graded}


def test_planner_emits_the_pair_once_and_refuses_a_conflicting_request(timeout_pair: dict[str, list[Event]]) -> None:
    request = timeout_pair["request"][0]
    planner, store = Planner(), {}
    first = planner.handle(store, request)
    assert sum(isinstance(e, PairPlanned) for e in first) == 1
    assert sum(isinstance(e, CasePlanned) for e in first) == 18
    assert planner.handle(store, request) == []  # a retried request yields the same (already planned) pair
    other = evaluation_request(
        "demo:1.2.4",
        "demo:1.3.1",
        suite=["demo"],
        twin=None,
        seed=42,
        evaluation_id=request.evaluation_id,
        evaluator_version=VERSION,
    )
    with pytest.raises(PairConflictError):
        planner.handle(store, other)


def test_both_sides_of_the_pair_share_seeds_and_hashes(timeout_pair: dict[str, list[Event]]) -> None:
    plans = [e for e in timeout_pair["planned"] if isinstance(e, CasePlanned)]
    by_scenario: dict[str, set[tuple[int, str]]] = {}
    for p in plans:
        by_scenario.setdefault(p.scenario_name, set()).add((p.case_seed, p.scenario_hash))
    assert len(by_scenario) == 9 and all(len(v) == 1 for v in by_scenario.values())


@settings(max_examples=25, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(min_value=0, max_value=5))
def test_grader_output_ignores_order_and_redelivery(rnd: random.Random, dupes: int) -> None:
    base = _TIMEOUT_EVENTS or []
    reference = _feed(Grader(VERSION), base)
    shuffled = list(base) + [rnd.choice(base) for _ in range(dupes)]
    rnd.shuffle(shuffled)
    assert _feed(Grader(VERSION), shuffled) == reference
    assert sum(isinstance(e, CaseVerdicted) for e in reference.values()) == 2


_TIMEOUT_EVENTS: list[Event] = []


@pytest.fixture(autouse=True)
def _share(timeout_pair: dict[str, list[Event]]) -> None:
    _TIMEOUT_EVENTS[:] = [e for e in timeout_pair["simulated"] if isinstance(e, TwinCallRecorded | CaseFinished)]


def test_comparator_in_either_order_and_twice(timeout_pair: dict[str, list[Event]]) -> None:
    verdicts = [e for e in timeout_pair["graded"] if isinstance(e, CaseVerdicted)]
    # the pair plan says how many trials a scenario has; verdicts that arrive before it wait for it
    pair = [e for e in timeout_pair["planned"] if isinstance(e, PairPlanned)]
    forward = _feed(Comparator(VERSION), pair + verdicts)
    backward = _feed(Comparator(VERSION), list(reversed(verdicts)) + verdicts + pair + pair)
    assert forward == backward and len(forward) == 1
    assert _feed(Comparator(VERSION), verdicts) == {}  # without the plan nothing is decided
    (comparison,) = forward.values()
    assert comparison.classification == "NEW_CRITICAL_FAILURE"  # type: ignore[attr-defined]
    assert _feed(Comparator("1.0.0"), pair + verdicts) == {}  # a comparator limited to another version ignores them
    assert _feed(Comparator(), pair + verdicts) == forward  # the one comparator of every version


def test_one_comparator_compares_each_version_on_its_own(timeout_pair: dict[str, list[Event]]) -> None:
    verdicts = [e for e in timeout_pair["graded"] if isinstance(e, CaseVerdicted)]
    other = [dataclasses.replace(v, evaluator_version="1.0.0", event_id=v.event_id + "-old") for v in verdicts]
    pair = [e for e in timeout_pair["planned"] if isinstance(e, PairPlanned)]
    both = _feed(Comparator(), [verdicts[0], other[1], *pair, other[0], verdicts[1]])
    assert sorted(c.evaluator_version for c in both.values()) == ["1.0.0", VERSION]  # type: ignore[attr-defined]
    assert both == {**_feed(Comparator(VERSION), pair + verdicts), **_feed(Comparator("1.0.0"), pair + other)}


def test_outcome_join_alerts_in_either_order_exactly_once(timeout_pair: dict[str, list[Event]]) -> None:
    spans = [e for e in timeout_pair["simulated"] if isinstance(e, SpanRecorded)]
    verified = [e for e in timeout_pair["graded"] if isinstance(e, OutcomeVerified)]
    claims_first = _feed(OutcomeJoin(), spans + verified + verified)
    verified_first = _feed(OutcomeJoin(), verified + spans + spans)
    assert claims_first == verified_first
    (alert,) = claims_first.values()
    assert isinstance(alert, ContradictionDetected)
    assert (alert.agent_version, alert.claimed_status, alert.verified_status) == ("1.3.0", "SUCCESS", "FAILURE")
    assert alert.tool == "refund_payment"


def test_unverifiable_claims_are_never_disproved_but_are_reported_after_the_horizon(
    timeout_pair: dict[str, list[Event]],
) -> None:
    spans = [e for e in timeout_pair["simulated"] if isinstance(e, SpanRecorded)]
    verified = [e for e in timeout_pair["graded"] if isinstance(e, OutcomeVerified)]
    unverified = [
        OutcomeVerified(**{**v.to_record(), "verified": False, "status": "UNKNOWN", "source": "unavailable"})
        for v in verified
    ]
    join, store = OutcomeJoin(horizon=timedelta(minutes=5)), {}
    assert [o for e in spans + unverified for o in join.handle(store, e)] == []
    # A claim nobody verifies, past the horizon: reported once, not dropped. Simulated entries run on the
    # simulation's own clock: a later wall-clock `now` alone (traffic from outside) does not make them due...
    lonely, store2 = OutcomeJoin(horizon=timedelta(minutes=5)), {}
    for e in spans:
        lonely.handle(store2, e)
    late = max(e.occurred_at for e in spans) + timedelta(minutes=10)
    assert lonely.tick(store2, late) == []
    # ...a later simulated event does (here a tool span of another simulated case, ten minutes on).
    tool_span = next(e for e in spans if "gen_ai.tool.name" in e.attributes)
    later = SpanRecorded(**{**tool_span.to_record(), "trace_id": "f" * 32, "received_at": late, "occurred_at": late})
    assert lonely.handle(store2, later) == []
    reported = lonely.tick(store2, late)
    assert {a.kind for a in reported if isinstance(a, ContradictionDetected)} == {"claim_never_verified"}
    assert len(reported) == 2  # one per side's trace
    assert lonely.tick(store2, late) == []
