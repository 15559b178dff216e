"""Demo Co served: customers with orders of their own, the demo agent's versions behind its HTTP interface
traced through the SDK (real OpenTelemetry SDK, spans captured in memory), and the payment system's
verification by order id."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agenttwin.runs import load_world
from producers.production_service import DemoCoService, customer_scenario
from producers.production_traffic import DEMO_AGENT, DEMO_CO_TRAFFIC, situation_outcomes
from producers.sdk import AgentTwin, ContentPolicy

VERSIONS = ("1.2.4", "1.3.0", "1.3.1")


@pytest.fixture(scope="module")
def world() -> Any:
    twin, scenarios = load_world(["demo"], None)
    return twin, {s.name: s for s in scenarios}


def test_a_customer_has_an_order_of_their_own(world: Any) -> None:
    twin, scenarios = world
    happy = scenarios["refund-happy-path"]
    mine = customer_scenario(happy, twin, 42)
    assert "ORD-1001000042" in mine.message and "ORD-1001 " not in mine.message
    order = mine.state["orders"]["ORD-1001000042"]
    assert order == {**twin.initial_state["orders"]["ORD-1001"], "order_id": "ORD-1001000042"}
    assert {e.get("path") for e in mine.expectations} >= {"orders.ORD-1001000042.refund_count"}
    assert mine.raw["spec"]["state"]["orders"]["ORD-1001000042"] == order  # what the twin case is built from
    assert mine.spec_hash != happy.spec_hash and customer_scenario(happy, twin, 43).message != mine.message
    # the scenario's own changes to the order stay on the customer's copy
    over = scenarios["refund-over-limit"]
    patched = (over.state.get("orders") or {}).get("ORD-1002") or {}
    copied = customer_scenario(over, twin, 7).state["orders"]["ORD-1002000007"]
    assert all(copied[k] == v for k, v in patched.items()) and copied["order_id"] == "ORD-1002000007"
    # a situation that names no order of the twin is served as written
    admin = scenarios["unauthorized-admin-tool"]
    assert customer_scenario(admin, twin, 42) is admin


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[DemoCoService, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    service = DemoCoService(AgentTwin(tracer_provider=provider, content=ContentPolicy("full")), VERSIONS)
    yield service, exporter
    service.close()


def _trace(exporter: InMemorySpanExporter, customer: int) -> list[ReadableSpan]:
    """The spans of the customer's run (its root names the session the harness gave it)."""
    spans = exporter.get_finished_spans()
    roots = [
        s
        for s in spans
        if s.parent is None and (s.attributes or {}).get("agenttwin.session.id") == f"sim-prod-{customer}"
    ]
    assert len(roots) == 1
    trace_id = roots[0].context.trace_id
    return [s for s in spans if s.context.trace_id == trace_id]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_served_version_does_what_it_does_on_the_twin_and_its_trace_says_so(
    version: str, served: tuple[DemoCoService, InMemorySpanExporter]
) -> None:
    service, exporter = served
    expected = situation_outcomes(version)
    for n, situation in enumerate(DEMO_CO_TRAFFIC):
        customer = 1000 * (VERSIONS.index(version) + 1) + n  # one run per customer in the shared exporter
        got = service.serve(version, situation, customer)
        want = expected[situation]
        assert (got.claimed_status, got.verified_status, got.verified) == (
            want.claimed_status,
            want.verified_status,
            want.verified,
        ), situation
        spans = _trace(exporter, customer)
        root = next(dict(s.attributes or {}) for s in spans if s.parent is None)
        assert root["agenttwin.agent.name"] == DEMO_AGENT and root["agenttwin.agent.version"] == version
        assert root.get("agenttwin.outcome.claimed") == want.claimed_status
        tools = [s for s in spans if s.parent is not None]
        assert [
            dict(s.attributes or {})["gen_ai.tool.name"] for s in sorted(tools, key=lambda s: s.start_time or 0)
        ] == list(want.tools)
        failed = [dict(s.attributes or {})["agenttwin.tool.result_status"] != "ok" for s in tools]
        assert sum(failed) == sum(want.failed)
        report = got.verification()
        if want.order_id:
            own = f"order:{want.order_id}{customer:06d}"
            assert got.order_id == want.order_id + f"{customer:06d}"
            assert root["agenttwin.subject"] == own  # what the receiver links the verification by
            assert report is not None and report["subject"] == own and report["trace_id"] is None
            assert report["status"] == (want.verified_status if want.verified else "UNKNOWN")
        else:  # the payment system knows orders: a run that named none gets no verification
            assert report is None and "agenttwin.subject" not in root


def test_a_retried_call_counts_its_attempts(served: tuple[DemoCoService, InMemorySpanExporter]) -> None:
    service, exporter = served
    service.serve("1.2.4", "refund-rate-limited", 5000)
    attempts = [
        dict(s.attributes or {})["agenttwin.tool.attempt"]
        for s in _trace(exporter, 5000)
        if dict(s.attributes or {}).get("gen_ai.tool.name") == "refund_payment"
    ]
    assert attempts == list(range(1, len(attempts) + 1)) and len(attempts) >= 2
