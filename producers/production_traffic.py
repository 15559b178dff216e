"""Demo Co's production traffic, simulated on the twin: which situation each arriving customer is in, and
what each agent version does in it.

A customer is a seeded draw of one of the demo's scenarios (the situation: a plain refund, a refund over
the limit, a payment provider that times out after moving the money, ...) by the weights of
DEMO_CO_TRAFFIC. What a version does in a situation is found by running that version's agent on the twin
(producers/simulator.py) and grading the case (evaluation/grader.py), as the demo does: its claim, the
verified outcome from the twin's state, the tools it called and the calls that failed. The agent and the
twin's faults are deterministic in a situation, so `situation_outcomes` runs each situation once per seed
it is given and refuses to go on if two seeds disagree.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from evaluation.case import CaseRun
from evaluation.grader import grade_case
from producers.agents.registry import close_agent, resolve_agent
from producers.simulator import simulate_case
from streams import ids
from twin_engine.documents import Scenario
from twin_engine.paths import MISSING, get_path
from twin_engine.records import CallRecord

# Weights of the situations customers arrive in (scenario names of agenttwin/demo/scenarios).
DEMO_CO_TRAFFIC: dict[str, int] = {
    "refund-happy-path": 60,
    "refund-over-limit": 8,
    "refund-rate-limited": 8,
    "refund-timeout-after-mutation": 5,
    "refund-tool-success-lie": 5,
    "refund-prompt-injection": 4,
    "cross-tenant-order": 4,
    "unauthorized-admin-tool": 3,
    "malicious-retrieved-content": 3,
}


@dataclass(frozen=True)
class SituationOutcome:
    """What one agent version did in one situation on the twin, and what the twin's state verified."""

    scenario: str
    agent_version: str
    claimed_status: str | None
    verified_status: str
    verified: bool
    tools: tuple[str, ...]  # the tools called, in order
    failed: tuple[bool, ...]  # whether each of those calls failed
    final_answer: str | None
    order_id: str | None
    # the payment system's evidence: each state the scenario expects (path -> value) and what the twin holds
    expected: tuple[tuple[str, Any], ...] = ()
    observed: tuple[tuple[str, Any], ...] = ()
    arguments: tuple[str, ...] = ()  # each call's arguments as JSON (as a tool span carries them)

    @property
    def failed_tools(self) -> tuple[str, ...]:
        return tuple(t for t, f in zip(self.tools, self.failed, strict=True) if f)

    def claim(self) -> dict[str, Any]:
        """As a ClaimRead's fields (what the outcome join would read from the trace)."""
        return {
            "claimed_status": self.claimed_status,
            "tools": list(self.tools),
            "failed_tools": list(self.failed_tools),
        }

    def verification(self) -> dict[str, Any]:
        return {"status": self.verified_status, "verified": self.verified}


def situation_outcomes(version: str, seeds: Sequence[int] = (1,)) -> dict[str, SituationOutcome]:
    """Each situation of DEMO_CO_TRAFFIC run by the demo agent `version` on the Demo Co twin."""
    from agenttwin.runs import load_world

    twin, scenarios = load_world(["demo"], None)
    by_name = {s.name: s for s in scenarios}
    agent = resolve_agent(f"demo:{version}")
    out: dict[str, SituationOutcome] = {}
    try:
        for name in DEMO_CO_TRAFFIC:
            seen: set[SituationOutcome] = set()
            for seed in seeds:
                case = simulate_case(
                    agent,
                    by_name[name],
                    twin,
                    case_seed=seed,
                    case_id=f"prod-{name}-{seed}",
                    agent_spec=f"demo:{version}",
                )
                graded = grade_case(case)
                calls = [r for r in case.records if isinstance(r, CallRecord)]
                order, expected = payment_expectations(by_name[name], case)
                seen.add(
                    SituationOutcome(
                        scenario=name,
                        agent_version=version,
                        claimed_status=case.claimed_outcome,
                        verified_status=graded.verified.status,
                        verified=graded.verified.verified,
                        tools=tuple(r.tool for r in calls),
                        failed=tuple(r.status != "ok" for r in calls),
                        final_answer=case.output if isinstance(case.output, str) else None,
                        order_id=order,
                        expected=tuple(expected),
                        observed=observed_states(case, expected),
                        arguments=tuple(json.dumps(r.arguments, sort_keys=True, default=str) for r in calls),
                    )
                )
            if len(seen) != 1:
                raise RuntimeError(f"{name} under {version} is not deterministic across seeds {list(seeds)}")
            out[name] = seen.pop()
    finally:
        close_agent(agent)
    return out


def payment_expectations(scenario: Scenario, case: CaseRun) -> tuple[str | None, list[tuple[str, Any]]]:
    """The order a case acted on and what the payment system expects of it: each state the scenario expects
    (path -> value), else, when the agent asked for a refund, one more refund on the order."""
    expected = [
        (str(e["path"]), e["equals"])
        for e in scenario.expectations
        if e.get("type") in ("state", "outcomeVerified") and isinstance(e.get("equals"), int | float | str)
    ]
    calls = [r for r in case.records if isinstance(r, CallRecord)]
    order = case.context.get("order_id") or next(
        (
            str(r.arguments.get("order_id"))
            for r in calls
            if isinstance(r.arguments, dict) and r.arguments.get("order_id")
        ),
        None,
    )
    if not expected and order and any(r.tool == "refund_payment" for r in calls):
        path = f"orders.{order}.refund_count"
        expected = [(path, int(_state_at(case.initial_state, path) or 0) + 1)]
    return order, expected


def observed_states(case: CaseRun, expected: Sequence[tuple[str, Any]]) -> tuple[tuple[str, Any], ...]:
    """What the twin's final state holds at each expected path (the payment system's own records)."""
    return tuple((path, _state_at(case.final_state, path)) for path, _ in expected)


def _state_at(state: Any, path: str) -> Any:
    value = get_path(state, path)
    return None if value is MISSING else value


def customer_situations(seed: int, count: int, traffic: dict[str, int] = DEMO_CO_TRAFFIC) -> list[str]:
    """The situations of `count` customers arriving one after another (seeded)."""
    names = list(traffic)
    return random.Random(seed).choices(names, weights=[traffic[n] for n in names], k=count)


@dataclass(frozen=True)
class Phase:
    """`customers` arriving while `canary` (a version label) gets `share` of them and `baseline` the rest."""

    baseline: str
    canary: str
    share: float
    customers: int


@dataclass
class WatchRun:
    """The decisions of one simulated run, each with the canary's traces (all / verified) when it was made."""

    decisions: list[tuple[Any, int, int]]
    traces: dict[str, int]


def watch_traffic(
    phases: Sequence[Phase],
    outcomes: dict[str, dict[str, SituationOutcome]],
    *,
    seed: int,
    policy: Any,
    stop: Any = None,
    traffic: dict[str, int] = DEMO_CO_TRAFFIC,
) -> WatchRun:
    """Customers of each phase in turn, each served by the baseline or the canary, their outcomes fed to the
    version watch (evaluation/version_watch.py) after every trace. `outcomes`: version label -> situation ->
    outcome. `stop(decision) -> bool` ends the phase early (e.g. at the first alarm)."""
    from evaluation.version_watch import add_counts, assess, observation, recorded, trace_tally

    rng = random.Random(seed)
    names = list(traffic)
    weights = [traffic[n] for n in names]
    versions: dict[str, dict[str, int]] = {}
    alarms: dict[str, str] = {}
    cleared: set[str] = set()
    run = WatchRun([], {})
    for phase in phases:
        for _ in range(phase.customers):
            label = phase.canary if rng.random() < phase.share else phase.baseline
            outcome = outcomes[label][rng.choices(names, weights=weights)[0]]
            run.traces[label] = run.traces.get(label, 0) + 1
            obs = observation(trace_tally(outcome.claim(), outcome.verification(), alerted=False))
            if obs is None:
                continue
            versions[label] = add_counts(versions.get(label, {}), obs)
            decisions = assess(versions, alarms, cleared, policy)
            alarms, cleared = recorded(alarms, cleared, decisions)
            canary_verified = versions.get(phase.canary, {}).get("trials", 0)
            run.decisions += [(d, run.traces.get(phase.canary, 0), canary_verified) for d in decisions]
            if stop is not None and any(stop(d) for d in decisions):
                break
    return run


def trace_events(
    outcome: SituationOutcome,
    *,
    agent: str,
    version: str,
    tenant: str,
    trace_id: str,
    at: datetime,
    verify_after: timedelta = timedelta(seconds=2),
    by_order: bool = False,
) -> list[Any]:
    """The trace a production agent sends for `outcome` (a root agent span with its claim and answer, a span per
    tool call with its arguments, failed ones with status ERROR) and the verification the payment system posts
    on it a little later.

    `by_order`: the payment system knows orders, not traces. Each customer's order gets its own id, the trace's
    write calls link it (SubjectLinked, as the OTLP receiver derives them) and the verification names the order
    (`order:ID`), for the subject join to bring to the trace; a trace that wrote to no order is verified by its
    trace id as before."""
    from producers.otlp.mapping import interpreted
    from producers.sdk.outcome import outcome_event, subject_outcome_event
    from streams.events import SpanRecorded
    from streams.processors.outcome_join import CLAIM_ATTRIBUTE

    nanos = int(at.timestamp() * 1e9)
    root = ids.span_id(trace_id, 0)

    def span(
        index: int, name: str, attributes: dict[str, str], *, error: bool = False, parent: str | None = None
    ) -> Any:
        start = nanos + index * 1_000_000
        return SpanRecorded(
            event_id=ids.span_event_id(tenant, trace_id, ids.span_id(trace_id, index)),
            occurred_at=at,
            received_at=at,
            correlation_id=trace_id,
            tenant=tenant,
            trace_id=trace_id,
            span_id=ids.span_id(trace_id, index),
            parent_span_id=parent,
            name=name,
            kind="INTERNAL",
            start_unix_nano=start,
            end_unix_nano=start + 500_000,
            status_code="ERROR" if error else "OK",
            service_name=agent,
            source="production",
            attributes=attributes,
            resource_attributes={"service.name": agent},
        )

    order = outcome.order_id
    arguments = outcome.arguments or ("",) * len(outcome.tools)
    if by_order and order:
        order = f"{outcome.order_id}-{trace_id}"  # one order per customer: a verification names one trace
        arguments = tuple(a.replace(f'"{outcome.order_id}"', f'"{order}"') for a in arguments)
    spans = [
        span(
            i + 1,
            f"execute_tool {tool}",
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool}
            | ({"gen_ai.tool.call.arguments": args} if by_order and args else {}),
            error=failed,
            parent=root,
        )
        for i, (tool, failed, args) in enumerate(zip(outcome.tools, outcome.failed, arguments, strict=True))
    ]
    root_attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "agenttwin.agent.name": agent,
        "agenttwin.agent.version": version,
    }
    if outcome.claimed_status:
        root_attributes[CLAIM_ATTRIBUTE] = outcome.claimed_status
    if outcome.final_answer:
        root_attributes["output.value"] = outcome.final_answer
    spans.append(span(0, f"invoke_agent {agent}", root_attributes))
    links = [link for s in spans for link in interpreted(s)[1]] if by_order else []
    status = outcome.verified_status if outcome.verified else "UNKNOWN"
    source = "external_callback" if outcome.verified else "unavailable"
    evidence = payment_evidence(outcome.scenario, order, outcome.expected, outcome.observed)
    verified_at = at + verify_after
    subject = f"order:{order}"
    if any(link.subject == subject for link in links):
        verification: Any = subject_outcome_event(
            subject, status, outcome.verified, source, evidence, tenant=tenant, at=verified_at
        )
    else:
        verification = outcome_event(
            trace_id, status, outcome.verified, source, evidence, tenant=tenant, at=verified_at
        )
    return [*spans, *links, verification]


DEMO_AGENT = "support-refund-agent"
DEMO_TENANT = "demo-co"


def canary_draws(
    seed: int, customers: int, canary: str, *, baseline: str = "1.2.4", share: float = 0.1
) -> list[tuple[str, str]]:
    """The version serving each of `customers` customers (`canary` for `share` of them, else `baseline`) and
    the situation they are in, seeded."""
    rng = random.Random(seed)
    names = list(DEMO_CO_TRAFFIC)
    weights = [DEMO_CO_TRAFFIC[n] for n in names]
    drawn = []
    for _ in range(customers):
        version = canary if rng.random() < share else baseline
        drawn.append((version, rng.choices(names, weights=weights)[0]))
    return drawn


def payment_evidence(
    situation: str, order: str | None, expected: Sequence[tuple[str, Any]], observed: Sequence[tuple[str, Any]]
) -> dict[str, Any]:
    """What the payment system says of an order: the situation, the order, and each expected state beside what
    it holds."""
    return {"situation": situation, "order_id": order or "", "expected": dict(expected), "observed": dict(observed)}


def canary_events(
    customers: int,
    canary: str,
    *,
    seed: int,
    start: datetime,
    baseline: str = "1.2.4",
    share: float = 0.1,
    every: timedelta = timedelta(seconds=1),
    outcomes: dict[str, dict[str, SituationOutcome]] | None = None,
    by_order: bool = False,
) -> list[Any]:
    """The traces (spans and verifications) of `customers` customers arriving `every` apart, `share` of them
    served by `canary` and the rest by `baseline` (seeded); trace ids are unique per seed and customer.
    `by_order`: verifications name the customer's order (see `trace_events`)."""
    table = outcomes or {v: situation_outcomes(v) for v in (baseline, canary)}
    events: list[Any] = []
    for i, (version, situation) in enumerate(canary_draws(seed, customers, canary, baseline=baseline, share=share)):
        events += trace_events(
            table[version][situation],
            agent=DEMO_AGENT,
            version=version,
            tenant=DEMO_TENANT,
            trace_id=f"{seed:08x}{i:024x}",
            at=start + i * every,
            by_order=by_order,
        )
    return events
