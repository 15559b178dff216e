"""Demo Co in production, served: each arriving customer is served by a version of the demo agent, traced
through the AgentTwin SDK, and the payment system reports what it verified of the customer's order.

A customer is in one of the demo's situations (a scenario of agenttwin/demo/scenarios, drawn by the weights of
DEMO_CO_TRAFFIC) with an order of their own: `customer_scenario` renames the scenario's order numbers for the
customer (ORD-1001 -> ORD-1001000042) and copies the twin's order under the new number, so that a
verification by order id names one customer's trace, as it does in a real shop. The agent version runs the
customer's case on the Demo Co twin (producers/simulator.py) inside `TracedAgent`: the spans are the SDK's,
exported by whatever tracer provider the caller configured (the production demo: OTLP/HTTP to an AgentTwin
receiver). The payment system is the twin's final state, graded as the demo grades it (evaluation/grader.py):
`verification` says what it would post, by order id when the agent's writes named the order, else by trace id.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.grader import grade_case
from producers.agents.registry import close_agent, resolve_agent
from producers.agents.traced import TracedAgent
from producers.production_traffic import DEMO_AGENT, DEMO_CO_TRAFFIC, observed_states, payment_expectations
from producers.sdk.tracing import AgentTwin
from producers.simulator import simulate_case
from twin_engine.canonical import sha256_hex
from twin_engine.documents import Scenario
from twin_engine.merge_patch import merge_patch
from twin_engine.twin import Twin

ORDER_NUMBER = re.compile(r"\bORD-\d+\b")
CASE_SEED = 1  # the demo's situations are deterministic: one seed serves every customer


def customer_scenario(scenario: Scenario, twin: Twin, customer: int) -> Scenario:
    """`scenario` with the customer's own orders: each order number of the twin it names, renamed for the
    customer everywhere in the document, and the twin's order copied under the new number (under the
    scenario's own changes to it)."""
    orders = twin.initial_state.get("orders") or {}
    text = json.dumps(scenario.raw, sort_keys=True)
    named = sorted({n for n in ORDER_NUMBER.findall(text) if n in orders})
    if not named:
        return scenario
    renamed = {n: f"{n}{customer:06d}" for n in named}  # still an order number to an agent: ORD-<digits>

    def rename(value: Any) -> Any:
        return json.loads(ORDER_NUMBER.sub(lambda m: renamed.get(m.group(0), m.group(0)), json.dumps(value)))

    doc = rename(scenario.raw)
    spec = doc["spec"]
    state = spec.get("state") or {}
    own = {
        new: merge_patch(rename(orders[old]), (state.get("orders") or {}).get(new) or {})
        for old, new in renamed.items()
    }
    spec["state"] = merge_patch(state, {"orders": own})
    # the scenario was validated against the twin; renaming an order number leaves it as valid
    return dataclasses.replace(
        scenario,
        message=spec["input"]["message"],
        context=rename(scenario.context),
        documents=tuple(rename(list(scenario.documents))),
        state=spec["state"],
        faults=tuple(rename(list(scenario.faults))),
        expectations=tuple(rename(list(scenario.expectations))),
        raw=doc,
        spec_hash=sha256_hex(doc),
        source=f"{scenario.source}#customer-{customer}",
    )


def order_subject(tool: str, arguments: dict[str, Any]) -> str | None:
    """Demo Co's business subject: the order a call names."""
    order = arguments.get("order_id") if isinstance(arguments, dict) else None
    return f"order:{order}" if isinstance(order, str) and order else None


@dataclass(frozen=True)
class Served:
    """One customer served: the trace the agent's run made and what the payment system verified."""

    customer: int
    situation: str
    version: str
    trace_id: str | None
    order_id: str | None  # the customer's own order, when the agent acted on one
    subjects: tuple[str, ...]  # the subjects the trace named
    claimed_status: str | None
    verified_status: str
    verified: bool
    evidence: dict[str, Any] = field(default_factory=dict)

    def verification(self) -> dict[str, Any]:
        """The report the payment system posts (`sdk.OutcomeReporter.report_outcome`'s arguments): by the
        order when the trace named it, else by the trace id."""
        subject = f"order:{self.order_id}" if self.order_id else None
        by_subject = subject is not None and subject in self.subjects
        return {
            "trace_id": None if by_subject else self.trace_id,
            "subject": subject if by_subject else None,
            "status": self.verified_status if self.verified else "UNKNOWN",
            "verified": self.verified,
            "source": "external_callback" if self.verified else "unavailable",
            "evidence": self.evidence,
        }


class _SubjectsSeen:
    """Which subjects a run's calls named (the trace's `agenttwin.subject` list)."""

    def __init__(self) -> None:
        self.named: list[str] = []

    def __call__(self, tool: str, arguments: dict[str, Any]) -> str | None:
        subject = order_subject(tool, arguments)
        if subject and subject not in self.named:
            self.named.append(subject)
        return subject


class DemoCoService:
    """The demo agent's `versions`, each traced through `sdk`, serving Demo Co's customers on the twin."""

    def __init__(self, sdk: AgentTwin, versions: Sequence[str]) -> None:
        from agenttwin.runs import load_world

        self.twin, scenarios = load_world(["demo"], None)
        self.situations = {s.name: s for s in scenarios if s.name in DEMO_CO_TRAFFIC}
        self._subjects = _SubjectsSeen()
        self.agents: dict[str, TracedAgent] = {}
        try:
            for version in versions:
                self.agents[version] = TracedAgent(
                    resolve_agent(f"demo:{version}"), sdk, name=DEMO_AGENT, subject_of=self._subjects
                )
        except BaseException:
            self.close()
            raise

    def serve(self, version: str, situation: str, customer: int) -> Served:
        agent = self.agents[version]
        scenario = customer_scenario(self.situations[situation], self.twin, customer)
        self._subjects.named = []
        case = simulate_case(
            agent,
            scenario,
            self.twin,
            case_seed=CASE_SEED,
            case_id=f"prod-{customer}",
            agent_spec=f"demo:{version}",
        )
        graded = grade_case(case)
        order, expected = payment_expectations(scenario, case)
        evidence = {
            "situation": situation,
            "order_id": order or "",
            "expected": dict(expected),
            "observed": dict(observed_states(case, expected)),
        }
        return Served(
            customer=customer,
            situation=situation,
            version=version,
            trace_id=agent.last_trace_id,
            order_id=order,
            subjects=tuple(self._subjects.named),
            claimed_status=case.claimed_outcome,
            verified_status=graded.verified.status,
            verified=graded.verified.verified,
            evidence=evidence,
        )

    def close(self) -> None:
        for agent in self.agents.values():
            close_agent(agent.agent)
