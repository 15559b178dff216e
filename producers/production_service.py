"""Demo Co in production, served: each arriving customer is served by a version of the demo agent behind its
HTTP interface, traced through the AgentTwin SDK, and the payment system reports what it verified of the
customer's order.

A customer is in one of the demo's situations (a scenario of agenttwin/demo/scenarios, drawn by the weights of
DEMO_CO_TRAFFIC) with an order of their own: `customer_scenario` renames the scenario's order numbers for the
customer (ORD-1001 -> ORD-1001000042) and copies the twin's order under the new number, so that a
verification by order id names one customer's trace, as it does in a real shop. The versions are served by
the demo agent's server (producers/agents/demo_server.py, `POST /run`) on 127.0.0.1, which traces each run
through the SDK (spans exported by whatever tracer provider the caller configured: the production demo's goes
over OTLP/HTTP to an AgentTwin receiver); each customer's case is opened on a twin endpoint, and the agent
reaches its tools there over HTTP with the case's token, as in `agenttwin evaluate --agent http://...`
(producers/agents/http_agent.py). The payment system is the twin's final state, graded as the demo grades it
(evaluation/grader.py): `Served.verification` is what it posts, by the customer's order; it knows orders, not
traces, so a run that named no order gets no verification.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.grader import grade_case
from producers.agents.demo_server import DemoAgentServer
from producers.agents.http_agent import HttpAgent
from producers.production_traffic import (
    DEMO_AGENT,
    DEMO_CO_TRAFFIC,
    observed_states,
    payment_evidence,
    payment_expectations,
)
from producers.sdk.tracing import AgentTwin
from producers.simulator import simulate_case
from producers.twin_http import TwinEndpoint
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


@dataclass(frozen=True)
class Served:
    """One customer served: which order the run named and what the payment system verified of it."""

    customer: int
    situation: str
    version: str
    order_id: str | None  # the customer's own order, when the agent acted on one
    claimed_status: str | None
    verified_status: str
    verified: bool
    evidence: dict[str, Any] = field(default_factory=dict)

    def verification(self) -> dict[str, Any] | None:
        """The report the payment system posts (`sdk.OutcomeReporter.report_outcome`'s keyword arguments), by
        the order; None when the run named no order."""
        if not self.order_id:
            return None
        return {
            "trace_id": None,
            "subject": f"order:{self.order_id}",
            "status": self.verified_status if self.verified else "UNKNOWN",
            "verified": self.verified,
            "source": "external_callback" if self.verified else "unavailable",
            "evidence": self.evidence,
        }


class DemoCoService:
    """The demo agent's `versions` served over HTTP, each run traced through `sdk`, for Demo Co's customers."""

    def __init__(self, sdk: AgentTwin, versions: Sequence[str]) -> None:
        from agenttwin.runs import load_world

        self.twin, scenarios = load_world(["demo"], None)
        self.situations = {s.name: s for s in scenarios if s.name in DEMO_CO_TRAFFIC}
        self.server = DemoAgentServer(tracing=sdk).start()
        self.endpoint = TwinEndpoint()
        self.agents: dict[str, HttpAgent] = {}
        try:
            self.endpoint.start()
            for version in versions:
                self.agents[version] = HttpAgent(
                    self.server.url, version=version, endpoint=self.endpoint, name=DEMO_AGENT
                )
        except BaseException:
            self.close()
            raise

    def serve(self, version: str, situation: str, customer: int) -> Served:
        scenario = customer_scenario(self.situations[situation], self.twin, customer)
        case = simulate_case(
            self.agents[version],
            scenario,
            self.twin,
            case_seed=CASE_SEED,
            case_id=f"prod-{customer}",
            agent_spec=f"{self.server.url}#{version}",
        )
        graded = grade_case(case)
        order, expected = payment_expectations(scenario, case)
        evidence = payment_evidence(situation, order, expected, observed_states(case, expected))
        return Served(
            customer=customer,
            situation=situation,
            version=version,
            order_id=order,
            claimed_status=case.claimed_outcome,
            verified_status=graded.verified.status,
            verified=graded.verified.verified,
            evidence=evidence,
        )

    def close(self) -> None:
        for agent in self.agents.values():
            agent.close()
        self.endpoint.stop()
        self.server.stop()
