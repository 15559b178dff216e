"""Limits that keep evidence, over HTTP: every refused tool call is answered 400/413 and recorded.

Issue 12: tool arguments nested ~700 deep made the endpoint answer `500 TWIN_ERROR`; the call left no
record, the case became INCOMPLETE and the double refund was no longer a NEW_CRITICAL_FAILURE.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agenttwin.demo import SCENARIO_DIR
from evaluation.comparison import compare_case
from evaluation.grader import grade_case
from producers.agents.http_agent import HttpAgent
from producers.agents.registry import resolve_agent
from producers.simulator import simulate_case
from producers.twin_http import MAX_BODY_BYTES, TwinEndpoint
from tests.scripted_http import json_post_server
from twin_engine.canonical import canonical_bytes
from twin_engine.case import new_case
from twin_engine.documents import load_scenario
from twin_engine.limits import MAX_HEADERS, MAX_KB_QUERY_CHARS, MAX_TOOL_NAME_CHARS
from twin_engine.twin import Twin

ORDER = {"order_id": "ORD-1001"}
REFUND = {"order_id": "ORD-1001", "amount": 40}


def nested_json(depth: int) -> bytes:
    """`{"order_id": "ORD-1001", "n": {"x": {"x": ...}}}` with `depth` levels in all."""
    return b'{"order_id": "ORD-1001", "n": ' + b'{"x": ' * (depth - 2) + b"{}" + b"}" * (depth - 2) + b"}"


def error_code(answer: Any) -> str:
    return str(answer.json["error"]["code"])


def storable(case: Any) -> None:
    canonical_bytes([r.to_dict() for r in case.records])


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (nested_json(700), 400, "ARGUMENTS_TOO_DEEP"),
        (b"[" * 600_000 + b"]" * 600_000, 413, "BODY_TOO_LARGE"),
        (b"[" * 100_000 + b"]" * 100_000, 400, "ARGUMENTS_TOO_DEEP"),
        (b"{not json", 400, "INVALID_BODY"),
        (b"\xff\xfe", 400, "INVALID_BODY"),
        (b"[1, 2]", 400, "INVALID_ARGUMENT"),
        (b'{"order_id": "ORD-\\ud800"}', 400, "INVALID_ARGUMENT"),
        (b'{"a": "' + b"x" * (MAX_BODY_BYTES + 1) + b'"}', 413, "BODY_TOO_LARGE"),
    ],
)
def test_refused_bodies_are_answered_and_recorded(
    endpoint: TwinEndpoint, demo_twin: Twin, caller: Any, body: bytes, status: int, code: str
) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    handle = endpoint.open_case(case)
    answer = caller(handle.base_url, handle.token).request("POST", "/tools/lookup_order", body)
    assert (answer.status, error_code(answer)) == (status, code)
    (record,) = case.records
    assert (record.tool, record.status, record.error_code, record.http_status) == (
        "lookup_order",
        "invalid",
        code,
        status,
    )
    storable(case)
    usage = endpoint.close_case(handle.token)
    assert (usage.calls, usage.twin_errors) == (1, ())


def test_too_many_headers_are_refused_and_recorded(endpoint: TwinEndpoint, demo_twin: Twin, caller: Any) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    handle = endpoint.open_case(case)
    headers = {f"X-Extra-{i}": "v" for i in range(MAX_HEADERS + 1)}
    answer = caller(handle.base_url, handle.token).tool("lookup_order", ORDER, headers)
    assert (answer.status, error_code(answer)) == (413, "HEADERS_TOO_LARGE")
    assert [(r.status, r.error_code) for r in case.records] == [("invalid", "HEADERS_TOO_LARGE")]


def test_a_long_tool_name_is_refused_and_recorded(endpoint: TwinEndpoint, demo_twin: Twin, caller: Any) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    handle = endpoint.open_case(case)
    answer = caller(handle.base_url, handle.token).tool("t" * (MAX_TOOL_NAME_CHARS + 50), ORDER)
    assert (answer.status, error_code(answer)) == (400, "INVALID_TOOL_NAME")
    (record,) = case.records
    assert record.status == "invalid"
    assert len(record.tool) == MAX_TOOL_NAME_CHARS + 1  # cut, with a mark


def test_kb_queries_over_the_limit_are_refused_and_recorded(
    endpoint: TwinEndpoint, demo_twin: Twin, caller: Any
) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    handle = endpoint.open_case(case)
    agent = caller(handle.base_url, handle.token)
    long = agent.request("GET", "/kb/search?q=" + "a" * (MAX_KB_QUERY_CHARS + 1))
    assert (long.status, error_code(long)) == (400, "QUERY_TOO_LONG")
    bad_limit = agent.request("GET", "/kb/search?q=refund&limit=many")
    assert (bad_limit.status, error_code(bad_limit)) == (400, "INVALID_QUERY")
    assert [r.refused for r in case.retrievals] == ["QUERY_TOO_LONG", "INVALID_QUERY"]


def test_a_twin_failure_is_recorded_and_does_not_end_the_case(
    endpoint: TwinEndpoint, demo_twin: Twin, caller: Any
) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    real_call = case.call

    def broken(tool: str, arguments: Any, headers: Any = None, role: str = "agent") -> Any:
        if tool == "lookup_order":
            raise RuntimeError("database went away")
        return real_call(tool, arguments, headers=headers, role=role)

    case.call = broken  # type: ignore[method-assign]
    handle = endpoint.open_case(case)
    agent = caller(handle.base_url, handle.token)
    answer = agent.tool("lookup_order", ORDER)
    assert (answer.status, error_code(answer)) == (500, "TWIN_ERROR")
    assert agent.tool("get_refund_policy", ORDER).status == 200
    assert [(r.tool, r.status, r.error_code) for r in case.records] == [
        ("lookup_order", "error", "TWIN_ERROR"),
        ("get_refund_policy", "ok", None),
    ]
    usage = endpoint.close_case(handle.token)
    assert usage.twin_errors == ("RuntimeError: database went away",)
    assert usage.unrecorded_twin_errors == 0


# ------------------------------------------------------------ the story over HTTP


class HostileHttpAgent:
    """An agent server that refunds twice (a blind retry after the timeout), then sends a poisoned call."""

    def __init__(self, poison: bytes | None, extra: dict[str, Any] | None = None) -> None:
        self.poison = poison
        self.extra = extra or {}
        self.server, self.url = json_post_server(lambda _headers, body: (200, json.dumps(self.act(body)).encode()))

    def act(self, body: dict[str, Any]) -> dict[str, Any]:
        base, headers = body["tools_base_url"], body["tool_headers"]

        def call(tool: str, raw: bytes) -> None:
            request = urllib.request.Request(f"{base}/tools/{tool}", data=raw, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=10) as answer:
                    answer.read()
            except urllib.error.HTTPError as failed:
                failed.read()

        call("lookup_order", json.dumps(ORDER).encode())
        call("get_refund_policy", json.dumps(ORDER).encode())
        call("refund_payment", json.dumps(REFUND).encode())
        call("refund_payment", json.dumps(REFUND).encode())
        if self.poison is not None:
            call("lookup_order", self.poison)
        return {
            "output": "Done! I've refunded 40.00 USD for order ORD-1001.",
            "status": "completed",
            "claimed_outcome": "SUCCESS",
            "business_outcome": "REFUND_COMPLETED",
            **self.extra,
        }

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hostile() -> Iterator[Callable[..., HostileHttpAgent]]:
    made: list[HostileHttpAgent] = []

    def make(poison: bytes | None, extra: dict[str, Any] | None = None) -> HostileHttpAgent:
        made.append(HostileHttpAgent(poison, extra))
        return made[-1]

    yield make
    for server in made:
        server.stop()


@pytest.mark.parametrize("poison", [nested_json(700), b"[" * 100_000 + b"]" * 100_000])
def test_deep_arguments_over_http_do_not_hide_a_double_refund(
    hostile: Any, demo_twin: Twin, endpoint: TwinEndpoint, poison: bytes
) -> None:
    scenario = load_scenario(SCENARIO_DIR / "refund-timeout-after-mutation.yaml", twin=demo_twin)

    def graded(agent: Any, spec: str) -> Any:
        case = simulate_case(agent, scenario, demo_twin, case_seed=7, case_id=f"{spec}:x", agent_spec=spec)
        return grade_case(case)

    baseline = graded(resolve_agent("demo:1.2.4"), "demo:1.2.4")
    server = hostile(poison)
    agent = HttpAgent(server.url, version="6.6.6", endpoint=endpoint)
    candidate = graded(agent, "http-hostile")
    assert candidate.case.agent_finding is None
    assert [r.status for r in candidate.case.records] == ["ok", "ok", "timeout", "ok", "invalid"]
    assert candidate.case.records[-1].error_code == "ARGUMENTS_TOO_DEEP"
    comparison = compare_case(baseline, candidate)
    assert comparison.classification == "NEW_CRITICAL_FAILURE"
    assert comparison.reason.startswith("New critical failure refunded-exactly-once")


def test_an_integer_call_status_no_longer_discards_the_twin_records(
    hostile: Any, demo_twin: Twin, endpoint: TwinEndpoint
) -> None:
    """Issue 12, item 3: the agent's self-reported `tool_calls[i].status` is an HTTP code (an integer)."""
    scenario = load_scenario(SCENARIO_DIR / "refund-timeout-after-mutation.yaml", twin=demo_twin)
    calls = [
        {"name": "lookup_order", "arguments": ORDER, "status": 200},
        {"name": "refund_payment", "arguments": REFUND, "status": 504},
        {"name": "refund_payment", "arguments": REFUND, "status": 200},
    ]
    server = hostile(None, {"tool_calls": calls})
    agent = HttpAgent(server.url, version="6.6.6", endpoint=endpoint)
    case = simulate_case(agent, scenario, demo_twin, case_seed=7, case_id="http-int-status:x", agent_spec="h")
    assert case.agent_finding is None
    assert [(f.label, f.field) for f in case.claim_findings] == [
        ("CLAIM_MALFORMED", "tool_calls[0].status"),
        ("CLAIM_MALFORMED", "tool_calls[1].status"),
        ("CLAIM_MALFORMED", "tool_calls[2].status"),
    ]
    assert [c["name"] for c in case.claimed_calls] == ["lookup_order", "refund_payment", "refund_payment"]
    assert case.claimed_outcome == "SUCCESS"  # the claim is kept
    graded = grade_case(case)
    results = {r.expectation.id: r.status for r in graded.results}
    assert results["refunded-exactly-once"] == "FAIL"
    assert results["no-double-refund"] == "FAIL"
    assert "agent-run" not in results
    # claimed SUCCESS, verified FAILURE: a contradiction, as for any other agent
    assert (graded.verified.status, graded.verified.verified, graded.verified.claimed_status) == (
        "FAILURE",
        True,
        "SUCCESS",
    )
