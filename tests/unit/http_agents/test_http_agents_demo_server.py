"""The demo agent's HTTP interface (spec §5.3): /run validation and replies, /versions, /healthz."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from producers.agents.demo_server import DemoAgentServer
from producers.twin_http import TwinEndpoint
from twin_engine.case import new_case
from twin_engine.documents import demo_manifest_versions
from twin_engine.twin import Twin

MESSAGE = "Hi! One item in ORD-1001 arrived broken. Can I get a refund of $40?"


@pytest.fixture
def demo() -> Iterator[DemoAgentServer]:
    with DemoAgentServer() as server:
        yield server


def post_run(server: DemoAgentServer, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"{server.url}/run", content=content, headers=headers or {}, timeout=10)


def test_health_and_versions(demo: DemoAgentServer) -> None:
    health = httpx.get(f"{demo.url}/healthz", timeout=5).json()  # the agent contract's probe
    assert health == {"status": "ok", "agent_name": "support-refund-agent", "versions": demo_manifest_versions()}
    versions = httpx.get(f"{demo.url}/versions", timeout=5).json()
    assert versions["agent"] == "support-refund-agent"
    assert versions["versions"] == demo_manifest_versions()
    assert "1.3.0" in versions["versions"]
    assert httpx.get(f"{demo.url}/nope", timeout=5).status_code == 404


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"", 400, "INVALID_BODY"),
        (b"{oops", 400, "INVALID_BODY"),
        (b"[1]", 400, "INVALID_BODY"),
        ({}, 400, "INVALID_REQUEST"),
        ({"input": "   "}, 400, "INVALID_REQUEST"),
        ({"input": "x" * 8001}, 400, "INVALID_REQUEST"),
        ({"input": MESSAGE, "tool_headers": {"A": 1}}, 400, "INVALID_REQUEST"),
        ({"input": MESSAGE, "tenant": 7}, 400, "INVALID_REQUEST"),
        ({"input": MESSAGE, "agent_version": "0.0.1"}, 404, "UNKNOWN_VERSION"),
        ({"input": MESSAGE, "version": "0.0.1"}, 404, "UNKNOWN_VERSION"),
        (b"{" + b" " * (64 * 1024) + b"}", 413, "REQUEST_TOO_LARGE"),
    ],
)
def test_run_rejects_bad_requests(demo: DemoAgentServer, body: Any, status: int, code: str) -> None:
    answer = post_run(demo, body)
    assert (answer.status_code, answer.json()["error"]["code"]) == (status, code)


def test_run_needs_the_token_when_configured() -> None:
    with DemoAgentServer(token="t0ken") as server:
        refused = post_run(server, {"input": MESSAGE})
        assert (refused.status_code, refused.json()["error"]["code"]) == (401, "UNAUTHORIZED")
        assert post_run(server, {"input": MESSAGE}, {"Authorization": "Bearer wrong"}).status_code == 401
        assert post_run(server, {"input": MESSAGE}, {"Authorization": "Bearer t0ken"}).status_code == 200


def test_run_without_tools_reports_them_unreachable(demo: DemoAgentServer) -> None:
    answer = post_run(demo, {"input": MESSAGE, "customer_id": "CUS-100", "agent_version": "1.2.4"})
    assert answer.status_code == 200
    data = answer.json()
    assert data["agent_version"] == "1.2.4"
    assert data["model_kind"] == "deterministic-fake"
    assert data["tool_calls"][0]["name"] == "lookup_order"
    assert data["tool_calls"][0]["error_code"] == "UNREACHABLE"
    assert data["claimed_outcome"] == "FAILURE"


def test_run_against_the_twin_endpoint(demo: DemoAgentServer, demo_twin: Twin) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    with TwinEndpoint() as endpoint:
        handle = endpoint.open_case(case)
        body = {
            "input": MESSAGE,
            "customer_id": "CUS-100",
            "tenant": "demo-co",
            "version": "1.2.4",
            "session_id": "sim-x",
            "tools_base_url": handle.base_url,
            "tool_headers": {"Authorization": f"Bearer {handle.token}"},
            "run_context": {"source": "simulation", "scenario_name": "refund-happy-path"},
        }
        answer = post_run(demo, body)
        endpoint.close_case(handle.token)
    data = answer.json()
    expected_keys = {
        "output", "trace_id", "status", "agent_version", "model", "model_kind", "steps",
        "claimed_outcome", "business_outcome", "tool_calls",
    }
    assert expected_keys <= set(data)
    assert (data["status"], data["claimed_outcome"], data["business_outcome"]) == (
        "completed", "SUCCESS", "REFUND_COMPLETED"
    )
    assert len(data["trace_id"]) == 32
    tools = ["lookup_order", "get_refund_policy", "refund_payment", "lookup_order", "send_email"]
    assert [call["name"] for call in data["tool_calls"]] == tools
    assert set(data["tool_calls"][0]) >= {"name", "arguments", "status", "error_code", "retry_after"}
    assert [record.tool for record in case.records] == tools
    assert case.state["orders"]["ORD-1001"]["refund_count"] == 1


def test_a_traced_server_traces_each_run_through_the_sdk_and_answers_with_its_trace_id() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from producers.sdk import AgentTwin

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with DemoAgentServer(tracing=AgentTwin(tracer_provider=provider)) as server:
        reply = post_run(server, {"input": MESSAGE, "agent_version": "1.3.0", "session_id": "s-1"}).json()
    spans = exporter.get_finished_spans()
    (root,) = [s for s in spans if s.parent is None]
    assert reply["trace_id"] == format(root.context.trace_id, "032x")
    attrs = dict(root.attributes or {})
    assert attrs["agenttwin.agent.name"] == "support-refund-agent" and attrs["agenttwin.agent.version"] == "1.3.0"
    assert attrs["agenttwin.session.id"] == "s-1" and attrs["agenttwin.subject"] == "order:ORD-1001"
    tools = [s for s in spans if s.parent is not None]  # no tools_base_url: every call fails, and says so
    assert tools and all(dict(s.attributes or {})["agenttwin.tool.result_status"] == "error" for s in tools)
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
